"""Scheduler behaviour on a fake clock: no real sleeping anywhere.

Each test builds a scheduler over an in-memory store, real ledgers in tmp_path
and a FakeDelivery, moves the FakeClock and calls ``tick()`` directly.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from registry_support import until
from scheduler_support import T0, Harness, task

from kairosd.core.models import CatchUp, CreatedBy, Overlap, Task
from kairosd.core.records import Outcome
from kairosd.scheduling import scheduler
from kairosd.scheduling.ledger import RunLedger
from kairosd.testing import FakeClock


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_recurring_task_fires_at_each_slot_and_records_delivered(tmp_path):
    """A */5 task fires at :05 and :10, each run delivered with its scheduled time."""

    async def main():
        t = task("*/5 * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        assert await h.at(T0.replace(minute=4)) > 0
        assert h.delivery.handoffs == []
        await h.at(T0.replace(minute=5, second=0))
        await h.at(T0.replace(minute=10, second=0, microsecond=1000))
        runs = h.runs(t.id)
        assert [r.scheduled_for.minute for r in runs] == [5, 10]
        assert all(r.outcome is Outcome.DELIVERED for r in runs)
        assert [j.prompt for j in h.delivery.handoffs] == ["check the PRs"] * 2
        assert h.book.get(t.id).last_scheduled_for == T0.replace(minute=10, second=0)

    run(main())


def test_sleep_is_until_the_next_fire_capped_at_30s(tmp_path):
    """tick() asks to sleep until the next planned fire, never longer than 30 s."""

    async def main():
        h = Harness(tmp_path, [task("0 12 * * *")], FakeClock(T0))
        await h.start()
        assert await h.at(T0) == 30.0
        delay = await h.at(datetime(2026, 3, 2, 11, 59, 50, tzinfo=UTC))
        assert delay == pytest.approx(10.0)

    run(main())


def test_idle_with_ten_thousand_tasks_wakes_at_most_twice_a_minute(tmp_path):
    """With 10,000 tasks and nothing due, a simulated minute costs at most 2 ticks."""

    async def main():
        # One task validated, then copied under 10,000 ids (a Task is frozen: a copy is as valid as it).
        model = task("0 3 * * *", task_id=f"{0:08x}")
        tasks = [model.model_copy(update={"id": f"{i:08x}"}) for i in range(10_000)]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        await h.start()
        ticks, elapsed = 0, 0.0
        while elapsed < 60:
            delay = await h.sched.tick()
            ticks += 1
            h.clock.advance(delay)
            elapsed += delay
        assert ticks <= 2

    run(main())


def test_jitter_moves_the_planned_time_but_not_the_schedule(tmp_path):
    """With claude jitter an hourly task fires late by frac*6min, and the next slot is still on the hour."""

    async def main():
        t = task("0 * * * *", task_id="80000000", jitter="claude")  # frac 0.5 -> 3 min late
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        await h.at(datetime(2026, 3, 2, 11, 2, 59, tzinfo=UTC))
        assert h.delivery.handoffs == []
        await h.at(datetime(2026, 3, 2, 11, 3, tzinfo=UTC))
        (r,) = h.runs()
        assert r.scheduled_for == datetime(2026, 3, 2, 11, tzinfo=UTC)
        assert r.planned_for == datetime(2026, 3, 2, 11, 3, tzinfo=UTC)
        assert h.sched.planned(t.id).scheduled_for == datetime(2026, 3, 2, 12, tzinfo=UTC)

    run(main())


def test_exact_one_shot_fires_once_and_is_removed(tmp_path):
    """A task pinned with 'at' fires at that second, then leaves the schedule."""

    async def main():
        t = task(at=T0 + timedelta(seconds=90))
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        await h.at(T0 + timedelta(seconds=89))
        assert h.delivery.handoffs == []
        await h.at(T0 + timedelta(seconds=90))
        assert len(h.delivery.handoffs) == 1
        assert t.id not in h.book
        assert h.store.load().tasks == []
        await h.at(T0 + timedelta(days=1))
        assert len(h.delivery.handoffs) == 1

    run(main())


def test_expiring_task_fires_one_final_time_then_is_deleted(tmp_path):
    """An agent-created daily task (7-day expiry) fires a last time after 7 days and is removed."""

    async def main():
        t = task("0 11 * * *", created_by=CreatedBy.MCP)
        assert t.expires_after_days == 7
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        for day in range(8):
            await h.at(datetime(2026, 3, 2, 11, tzinfo=UTC) + timedelta(days=day))
        assert len(h.delivery.handoffs) == 8
        assert t.id not in h.book
        assert ("expired", {"task_id": t.id, "task_name": None}) in h.seen

    run(main())


def test_permanent_task_never_expires(tmp_path):
    """permanent exempts a task from its expiry."""

    async def main():
        t = task("0 11 * * *", created_by=CreatedBy.MCP, permanent=True)
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        for day in range(10):
            await h.at(datetime(2026, 3, 2, 11, tzinfo=UTC) + timedelta(days=day))
        assert t.id in h.book

    run(main())


def _down_for_three_days(catch_up: CatchUp | None) -> tuple[Task, FakeClock]:
    t = task("0 * * * *", catch_up=catch_up)
    t = t.model_copy(update={"last_scheduled_for": datetime(2026, 3, 2, 10, tzinfo=UTC)})
    return t, FakeClock(datetime(2026, 3, 5, 10, 30, tzinfo=UTC))


def test_catch_up_once_fires_the_most_recent_miss_and_records_the_rest(tmp_path):
    """Down for 3 days, an hourly task with catch_up=once fires once, late, marked catch-up."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.ONCE)
        h = Harness(tmp_path, [t], clock)
        await h.start()
        (handoff,) = h.delivery.handoffs
        assert handoff.catch_up is True
        assert handoff.scheduled_for == datetime(2026, 3, 5, 10, tzinfo=UTC)
        assert handoff.late_by_s == 1800
        (missed,) = h.missed.list()
        assert missed.count == 71
        assert missed.reason.startswith("kairosd was not running")
        assert h.sched.planned(t.id).scheduled_for == datetime(2026, 3, 5, 11, tzinfo=UTC)

    run(main())


def test_catch_up_skip_fires_nothing_and_records_every_miss(tmp_path):
    """catch_up=skip records the misses and waits for the next slot."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.SKIP)
        h = Harness(tmp_path, [t], clock)
        await h.start()
        assert h.delivery.handoffs == []
        (missed,) = h.missed.list()
        assert missed.count == 72
        assert [r.outcome for r in h.runs()] == [Outcome.MISSED]

    run(main())


def test_catch_up_all_fires_at_most_ten_one_after_another(tmp_path):
    """catch_up=all fires the 10 most recent misses in order, never two at once."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.ALL)
        gate = asyncio.Event()
        h = Harness(tmp_path, [t], clock, gate=gate)
        await h.sched.start()
        await until(lambda: bool(h.delivery.in_flight), "the first catch-up fire to be delivered")
        assert len(h.delivery.in_flight) == 1
        gate.set()
        await h.sched.drain(5)
        scheduled = [j.scheduled_for.hour for j in h.delivery.handoffs]
        assert scheduled == list(range(1, 11))
        assert all(j.catch_up for j in h.delivery.handoffs)
        assert h.missed.list()[0].count == 62

    run(main())


def test_missed_one_shot_is_surfaced_not_fired(tmp_path):
    """A one-shot whose time passed while kairosd was down is recorded as missed and removed."""

    async def main():
        t = task(at=T0 + timedelta(hours=1))
        h = Harness(tmp_path, [t], FakeClock(T0 + timedelta(hours=5)))
        await h.start()
        assert h.delivery.handoffs == []
        (missed,) = h.missed.list()
        assert missed.action == "surfaced"
        assert missed.task_id == t.id
        assert t.id not in h.book

    run(main())


def test_forward_clock_jump_is_a_miss_and_follows_catch_up(tmp_path):
    """A suspend (wall clock jumps, monotonic does not) turns passed fires into misses."""

    async def main():
        t = task("*/10 * * * *", catch_up=CatchUp.ONCE)
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        h.clock.jump(3600)
        await h.sched.tick()
        await h.sched.drain(5)
        (handoff,) = h.delivery.handoffs
        assert handoff.catch_up is True
        assert h.sched.last_jump is not None
        assert h.missed.list()[0].reason.startswith("the clock jumped forward")

    run(main())


def test_backward_clock_jump_never_fires_a_slot_twice(tmp_path):
    """After the clock is stepped back an hour, slots already fired do not fire again."""

    async def main():
        t = task("*/10 * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        await h.at(T0.replace(minute=10, second=0))
        h.clock.jump(-3600)
        await h.sched.tick()
        for minute in (10, 20, 30):  # an hour earlier than the fire, then forward again
            await h.at(T0.replace(minute=minute, second=0) + timedelta(hours=0))
        h.clock.jump(0)
        assert [j.scheduled_for for j in h.delivery.handoffs].count(T0.replace(minute=10, second=0)) == 1

    run(main())


def test_pause_and_resume(tmp_path):
    """A paused task does not fire; on resume it does not catch up the paused slots."""

    async def main():
        t = task("*/5 * * * *").model_copy(update={"paused": True})
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        await h.at(T0.replace(minute=30))
        assert h.delivery.handoffs == []
        resumed = h.book.get(t.id).model_copy(update={"paused": False, "last_scheduled_for": h.clock.now()})
        h.book.put(resumed)
        h.sched.schedule(resumed)
        await h.at(T0.replace(minute=35, second=0))
        assert [j.scheduled_for.minute for j in h.delivery.handoffs] == [35]
        assert h.missed.list() == []

    run(main())


async def held_first_fire(tmp_path: Path, t: Task) -> tuple[Harness, asyncio.Event]:
    """``t`` (an every-minute task) fired at T0 + 30 s, its delivery held until the returned gate is set."""
    gate = asyncio.Event()
    h = Harness(tmp_path, [t], FakeClock(T0), gate=gate)
    await h.start()
    h.clock.advance(30)
    await h.sched.tick()
    return h, gate


def test_overlap_skip_records_a_skipped_run(tmp_path):
    """A fire that comes while the previous run still goes is skipped with a reason."""

    async def main():
        h, gate = await held_first_fire(tmp_path, task("* * * * *"))
        h.clock.advance(60)
        await h.sched.tick()
        gate.set()
        await h.sched.drain(5)
        outcomes = [r.outcome for r in h.runs()]
        assert outcomes == [Outcome.DELIVERED, Outcome.SKIPPED]
        assert "still going" in h.runs()[1].reason

    run(main())


def test_overlap_queue_runs_the_fire_after_the_previous_one(tmp_path):
    """With overlap=queue the second fire waits, then is delivered."""

    async def main():
        h, gate = await held_first_fire(tmp_path, task("* * * * *", overlap=Overlap.QUEUE))
        h.clock.advance(60)
        await h.sched.tick()
        assert [r.outcome for r in h.runs()] == [None, Outcome.QUEUED]
        gate.set()
        await h.sched.drain(5)
        assert [r.outcome for r in h.runs()] == [Outcome.DELIVERED, Outcome.DELIVERED]
        assert len(h.delivery.handoffs) == 2

    run(main())


def test_kill_switch_fires_nothing_and_says_why(tmp_path):
    """With a disabled reason set, due tasks do not fire and status reports the reason."""

    async def main():
        t = task("* * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0), disabled_reason="KAIROS_DISABLE_CRON=1")
        await h.start()
        await h.at(T0 + timedelta(minutes=5))
        assert h.delivery.handoffs == []
        status = h.sched.status()
        assert status["enabled"] is False
        assert "KAIROS_DISABLE_CRON" in status["disabled_reason"]

    run(main())


def test_kill_switch_records_the_skipped_fires_as_disabled_not_as_not_running(tmp_path):
    """Issue 15, item 12: the fires that pass while firing is disabled are missed because of the switch,
    and a later start with firing enabled neither calls them "kairosd was not running" nor catches them up."""

    async def main():
        t = task("0 * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0), disabled_reason="KAIROS_DISABLE_CRON=1 is set")
        await h.start()
        await h.at(T0 + timedelta(hours=2, minutes=1))
        assert h.delivery.handoffs == []
        (record,) = h.missed.list()
        assert record.reason == "firing was disabled (KAIROS_DISABLE_CRON=1 is set)"
        assert (record.count, record.action) == (2, "recorded")
        await h.sched.shutdown(1)
        again = Harness(tmp_path, list(h.book), h.clock)
        await again.start()
        assert again.delivery.handoffs == []
        assert [m.reason for m in again.missed.list()] == [record.reason]

    run(main())


def test_failed_delivery_is_recorded_as_failed_not_delivered(tmp_path):
    """A target that fails or raises leaves a failed run with its reason."""

    async def main():
        t = task("* * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0))
        h.delivery.outcome = "failed"
        h.delivery.reason = "exit code 3"
        await h.start()
        await h.at(T0 + timedelta(seconds=30))
        h.delivery.error = RuntimeError("boom")
        await h.at(T0 + timedelta(seconds=90))
        first, second = h.runs()
        assert (first.outcome, first.reason) == (Outcome.FAILED, "exit code 3")
        assert second.outcome is Outcome.FAILED
        assert "boom" in second.reason

    run(main())


def test_run_now_fires_outside_the_schedule(tmp_path):
    """run_now delivers at once and leaves the schedule as it was."""

    async def main():
        t = task("0 12 * * *")
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        before = h.sched.planned(t.id)
        r = await h.sched.run_now(t.id)
        await h.sched.drain(5)
        assert r.manual is True
        assert len(h.delivery.handoffs) == 1
        assert h.sched.planned(t.id) == before

    run(main())


def test_a_run_is_recorded_before_the_target_answers(tmp_path):
    """While a delivery is in flight the ledger holds it with no outcome (never 'delivered')."""

    async def main():
        h, gate = await held_first_fire(tmp_path, task("* * * * *"))
        (r,) = h.runs()
        assert r.outcome is None
        assert r.dispatched_at is not None
        reloaded = RunLedger(tmp_path / "runs.jsonl", h.clock)
        (interrupted,) = reloaded.load()
        assert interrupted.outcome is Outcome.FAILED
        assert "interrupted" in interrupted.reason
        gate.set()
        await h.sched.drain(5)

    run(main())


def test_a_task_rarer_than_the_catch_up_window_is_planned_again_after_a_long_stop(tmp_path):
    """Monthly, last handled Jan 1, kairosd back on Feb 20 (7-day window): the Feb 1 miss is recorded
    and the task is planned for Mar 1, where it fires. Before, it dropped out of the plan for good."""

    async def main():
        t = task("0 9 1 * *", created_at=datetime(2025, 12, 1, tzinfo=UTC)).model_copy(
            update={"last_scheduled_for": datetime(2026, 1, 1, 9, tzinfo=UTC)}
        )
        back = datetime(2026, 2, 20, 12, tzinfo=UTC)
        h = Harness(tmp_path, [t], FakeClock(back))
        await h.start()
        (missed,) = h.missed.list()
        assert missed.scheduled_for == datetime(2026, 2, 1, 9, tzinfo=UTC)
        planned = h.sched.planned(t.id)
        assert planned is not None
        assert planned.scheduled_for == datetime(2026, 3, 1, 9, tzinfo=UTC)
        await h.at(datetime(2026, 3, 1, 9, 0, 1, tzinfo=UTC))
        assert [(r.scheduled_for.month, r.outcome) for r in h.runs(t.id)] == [
            (2, Outcome.MISSED),
            (3, Outcome.DELIVERED),
        ]

    run(main())


def _refuse_run_ledger(h: Harness, monkeypatch: Any) -> Any:
    """Make the run ledger refuse every write (a read-only file system); call the result to heal it."""
    real = h.ledger.record_many

    def refuse(runs: Any, **_: Any) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(h.ledger, "record_many", refuse)
    return lambda: monkeypatch.setattr(h.ledger, "record_many", real)


def test_a_miss_is_told_once_after_it_is_recorded_even_when_the_ledger_refuses_at_first(tmp_path, monkeypatch):
    """While the run ledger cannot be written no 'missed' event goes out (the pass is retried each
    tick); once it is written, each recorded miss is told exactly once. Told before recording, the
    same misses went out again at every refused tick (and each ran the scheduled_task_missed hooks)."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.SKIP)
        h = Harness(tmp_path, [t], clock, store_retry_s=5.0)
        heal = _refuse_run_ledger(h, monkeypatch)
        await h.start()
        for _ in range(3):
            await h.at(h.clock.now() + timedelta(seconds=5))
        assert h.sched.write_error is not None
        assert [kind for kind, _ in h.seen if kind == "missed"] == []
        heal()
        for _ in range(3):
            await h.at(h.clock.now() + timedelta(seconds=5))
        told = [data["id"] for kind, data in h.seen if kind == "missed"]
        assert told
        assert sorted(told) == sorted(m.id for m in h.missed.list())

    run(main())


def test_fires_missed_while_down_keep_their_reason_when_the_ledger_refuses_the_first_pass(tmp_path, monkeypatch):
    """catch_up=skip, down 3 days, the run ledger refusing at start: once it heals, the misses are
    recorded as missed while kairosd was down and nothing fires. Before, the retried pass had lost
    its reason, fired the latest slot half an hour late and filed the rest as 'too busy'."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.SKIP)
        h = Harness(tmp_path, [t], clock, store_retry_s=5.0)
        heal = _refuse_run_ledger(h, monkeypatch)
        await h.start()
        await h.at(h.clock.now() + timedelta(seconds=5))
        heal()
        await h.at(h.clock.now() + timedelta(seconds=5))
        runs = h.runs(t.id)
        assert runs
        assert all(r.outcome is Outcome.MISSED for r in runs)
        assert all(r.reason.startswith("kairosd was not running") for r in runs)
        assert h.delivery.handoffs == []

    run(main())


def test_a_tick_with_nothing_due_leaves_the_loop_asleep(tmp_path):
    """A tick that finds nothing due plans nothing again, so it does not wake the loop: woken, the loop
    would tick again at once, forever, and never serve a request (a pass's tasks are planned again, and
    the loop woken, only when it had some)."""

    async def main():
        t = task("*/5 * * * *")
        h = Harness(tmp_path, [t], FakeClock(T0))
        await h.start()
        delay = await h.at(T0 + timedelta(seconds=1))
        assert delay > 0
        assert not h.sched._wake.is_set()

    run(main())


@pytest.mark.parametrize("chunk", [1000, 2])
def test_a_kept_reason_goes_once_its_fires_are_recorded(tmp_path, monkeypatch, chunk):
    """The reason kept for fires the run ledger refused is dropped for every task of the pass that records
    them (chunk by chunk, all tasks of a chunk at once): fires the loop is late for afterwards are late,
    not missed while kairosd was down. Each task is planned again after its pass."""
    monkeypatch.setattr(scheduler, "PASS_CHUNK", chunk)

    async def main():
        one, clock = _down_for_three_days(CatchUp.SKIP)
        tasks = [one.model_copy(update={"id": f"{0x10000000 + i:08x}"}) for i in range(5)]
        h = Harness(tmp_path, tasks, clock, store_retry_s=5.0)
        heal = _refuse_run_ledger(h, monkeypatch)
        await h.start()
        await h.at(h.clock.now() + timedelta(seconds=5))
        assert set(h.sched._unrecorded) == {t.id for t in tasks}  # refused: kept
        heal()
        await h.at(h.clock.now() + timedelta(seconds=5))
        assert h.sched._unrecorded == {}
        for t in tasks:
            planned = h.sched.planned(t.id)
            assert planned is not None
            assert planned.planned_for > h.clock.now()
        # The loop late by three slots: too busy, not down (catch_up=skip would record them all).
        await h.at(planned.planned_for + timedelta(hours=2, minutes=30))
        for t in tasks:
            latest = h.runs(t.id)[-2:]  # the two slots missed in one record, the third fired
            assert [r.outcome for r in latest] == [Outcome.MISSED, Outcome.DELIVERED]
            assert latest[0].reason == "kairosd was too busy to fire on time (2 fires recorded)"

    run(main())


@pytest.mark.parametrize("chunk", [1000, 7])
def test_a_catch_up_of_many_tasks_keeps_only_max_concurrent_deliveries_in_flight(tmp_path, monkeypatch, chunk):
    """After a long stop every task's catch-up fire starts at once: at most max_concurrent deliveries exist
    as coroutines, the rest wait as data, in order, and all are delivered. Stopped with some still
    waiting, those are recorded missed at once and surfaced, the ones in flight failed. A pass bigger
    than a chunk is decided and recorded in chunks, all of them before the first delivery starts."""
    monkeypatch.setattr(scheduler, "PASS_CHUNK", chunk)

    async def main():
        anchor = T0.replace(second=0) - timedelta(days=3)
        tasks = [
            task("*/5 * * * *", task_id=f"{0x10000000 + i:08x}", created_at=anchor).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i in range(60)
        ]
        gate = asyncio.Event()
        h = Harness(tmp_path, tasks, FakeClock(T0), gate=gate, max_concurrent=3)
        recorded_at_first: list[int] = []
        deliver = h.delivery.deliver

        async def noting(handoff):
            if not recorded_at_first:
                recorded_at_first.append(len(h.missed.list()))
            return await deliver(handoff)

        h.delivery.deliver = noting  # type: ignore[method-assign]
        await h.sched.start()
        await until(lambda: len(h.delivery.in_flight) == 3, "three deliveries to be held")
        assert len(h.sched._dispatch.inflight) == 3  # not 60 waiting coroutines
        assert recorded_at_first == [60]
        gate.set()
        assert await h.sched.drain(10)
        assert sorted(j.task_id for j in h.delivery.handoffs) == sorted(t.id for t in tasks)
        assert all(r.outcome is Outcome.DELIVERED for r in h.ledger.list(limit=1000) if r.catch_up)

        # Again, stopped while most still wait.
        h2 = Harness(tmp_path / "again", tasks, FakeClock(T0), gate=asyncio.Event(), max_concurrent=3)
        await h2.sched.start()
        await until(lambda: len(h2.delivery.in_flight) == 3, "three deliveries to be held")
        await h2.sched.shutdown(0.05)
        fired = [r for r in h2.ledger.list(limit=1000) if r.catch_up]
        assert len(fired) == 60
        # The three in flight were cancelled (the fake target wrote nothing); the 57 waiting were not
        # waited for: missed, and surfaced as missed fires.
        in_flight = [r for r in fired if r.outcome is Outcome.FAILED]
        assert {r.reason for r in in_flight} == {"kairosd stopped before the target confirmed delivery"}
        assert len(in_flight) == 3
        waiting = [r for r in fired if r.outcome is Outcome.MISSED]
        assert len(waiting) == 57
        assert all(r.reason.startswith("interrupted: kairosd stopped") for r in waiting)
        surfaced = [m for m in h2.missed.list() if m.reason == "kairosd stopped before delivering them"]
        assert sorted(m.task_id for m in surfaced) == sorted(r.task_id for r in waiting)
        assert {m.action for m in surfaced} == {"surfaced"}

    run(main())


def test_a_pass_in_many_chunks_writes_the_store_once_at_its_end(tmp_path, monkeypatch):
    """Anchors move in every chunk; the whole store is written after the last one, not between chunks
    (each write is of every task: 10,000 of them after a long stop)."""
    monkeypatch.setattr(scheduler, "PASS_CHUNK", 7)

    async def main():
        anchor = T0.replace(second=0) - timedelta(days=3)
        tasks = [
            task("*/5 * * * *", task_id=f"{0x10000000 + i:08x}", created_at=anchor, catch_up=CatchUp.SKIP).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i in range(60)
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0), persist_delay_s=0.0)
        saves_in_pass: list[int] = []
        commit = h.sched._commit

        async def slow_commit(decision, *writing):
            recorded = await commit(decision, *writing)
            await asyncio.sleep(0.02)  # room for a background store write between chunks
            saves_in_pass.append(h.store.saves)
            return recorded

        h.sched._commit = slow_commit  # type: ignore[method-assign]
        await h.sched.start()
        await h.sched.drain(5)
        assert len(saves_in_pass) == 9
        assert set(saves_in_pass) == {saves_in_pass[0]}  # nothing written while the pass ran
        assert h.store.saves == saves_in_pass[0] + 1
        assert all(h.book.get(t.id).last_scheduled_for == T0.replace(minute=0, second=0) for t in tasks)
        assert all(t.last_scheduled_for == T0.replace(minute=0, second=0) for t in h.store.load().tasks)

    run(main())


def test_a_catch_up_moves_each_task_once_to_its_newest_slot(tmp_path):
    """Missed slots and the catch-up fire of one task are one move of its anchor (one copy of the task),
    to the fired slot, with last_fired_at set."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.ONCE)
        h = Harness(tmp_path, [t], clock)
        puts: list[Any] = []
        put, put_moved = h.book.put, h.book.put_moved

        def counting(task: Task) -> None:
            puts.append(task.last_scheduled_for)
            put(task)

        def counting_moved(task_id: str, task: Task, old: Task) -> None:
            puts.append(task.last_scheduled_for)
            put_moved(task_id, task, old)

        h.book.put = counting  # type: ignore[method-assign]
        h.book.put_moved = counting_moved  # type: ignore[method-assign]
        await h.start()
        assert len(h.missed.list()) == 1
        (fired,) = h.delivery.handoffs
        assert puts == [fired.scheduled_for]
        assert h.book.get(t.id).last_fired_at == clock.now()

    run(main())


def test_status_names_a_fire_still_due_while_a_pass_decides_it_then_the_next_one(tmp_path, monkeypatch):
    """status() takes the next fire from the heap, not from a scan of every task (clients poll it: 10 ms
    a call with 10,000 tasks). A pass takes its due fires off the heap; until it has decided each,
    status still names the earliest of them (due, in the past), never a later one."""
    monkeypatch.setattr(scheduler, "PASS_CHUNK", 2)

    async def main():
        anchor = T0.replace(second=0) - timedelta(hours=1)
        tasks = [
            task(cron, task_id=f"{0x10000000 + i:08x}", created_at=anchor).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i, cron in enumerate(["*/5 * * * *", "*/10 * * * *", "*/20 * * * *", "7 * * * *", "0 12 * * *"])
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        await h.sched.start(defer_catch_up=True)
        seen: list[Any] = []
        commit = h.sched._commit

        async def noting(decision, writing=None):
            seen.append(h.sched.status()["next_fire"])  # decided, not yet recorded nor planned again
            return await commit(decision, writing)

        h.sched._commit = noting  # type: ignore[method-assign]
        await h.at(T0)
        # Taken off the heap at 09:05 (*/5), 09:07, 09:10 (*/10) and 09:20 (*/20), decided two at a time.
        assert seen == [
            {"task_id": tasks[0].id, "planned_for": (anchor + timedelta(minutes=5)).isoformat()},
            {"task_id": tasks[1].id, "planned_for": (anchor + timedelta(minutes=10)).isoformat()},
        ]
        after = h.sched.status()["next_fire"]
        assert after == {
            "task_id": tasks[0].id,
            "planned_for": (T0.replace(second=0) + timedelta(minutes=5)).isoformat(),
        }

    run(main())


async def _collector_back() -> None:
    import gc

    while not gc.isenabled():  # noqa: ASYNC110 - the collector has no event to wait on
        await asyncio.sleep(0.01)


def test_a_pass_in_many_chunks_makes_no_cycle_collections_and_turns_them_back_on(tmp_path, monkeypatch):
    """A big pass (every task after a long stop) runs without the cycle collector, which walked its
    100,000 new objects again and again; collections are on again after it, also when a chunk fails."""
    import gc

    monkeypatch.setattr(scheduler, "PASS_CHUNK", 7)

    async def main():
        anchor = T0.replace(second=0) - timedelta(days=3)
        tasks = [
            task("*/5 * * * *", task_id=f"{0x10000000 + i:08x}", created_at=anchor).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i in range(20)
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        during: list[bool] = []
        commit = h.sched._commit

        async def noting(decision, writing=None):
            during.append(gc.isenabled())
            return await commit(decision, writing)

        h.sched._commit = noting  # type: ignore[method-assign]
        assert gc.isenabled()
        await h.start()
        assert during == [False, False, False]
        assert gc.isenabled()

        def failing(decision, writing=None):
            raise RuntimeError("a bug in a chunk")

        h2 = Harness(tmp_path / "again", tasks, FakeClock(T0))
        h2.sched._commit = failing  # type: ignore[method-assign]
        with pytest.raises(RuntimeError):
            await h2.sched.start()
        # Back once the pass's group commits have settled (kairosd.system.gcpause), failed pass or not.
        await asyncio.wait_for(_collector_back(), 10)

    run(main())


def test_a_listener_hears_each_miss_recorded_by_a_catch_up(tmp_path):
    """Each missed record of a catch-up is told to whoever listens (``kairos watch``, hooks), as its
    JSON; with nobody listening nothing is built for it, and the records are the same."""

    async def main():
        anchor = T0.replace(second=0) - timedelta(days=1)
        tasks = [
            task("*/5 * * * *", task_id=f"{0x10000000 + i:08x}", created_at=anchor).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i in range(3)
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        misses = h.events.subscribe(frozenset({"missed"}))
        await h.start()
        told = [data for kind, data in h.seen if kind == "missed"]
        heard = [await asyncio.wait_for(anext(misses), 5) for _ in range(3)]
        records = h.missed.list()
        assert sorted(d["id"] for d in told) == sorted(m.id for m in records)
        by_id = {m.id: m.model_dump(mode="json") for m in records}
        assert [{k: v for k, v in e.items() if k not in ("type", "at")} for e in heard] == [
            by_id[e["id"]] for e in heard
        ]

        quiet = Harness(tmp_path / "quiet", tasks, FakeClock(T0))
        await quiet.listener.aclose()
        await quiet.start()
        assert [kind for kind, _ in quiet.seen if kind == "missed"] == []
        assert sorted(m.task_id for m in quiet.missed.list()) == sorted(t.id for t in tasks)

    run(main())


def test_run_started_is_told_to_a_listener_only(tmp_path):
    """Each fire that starts is told (``run_started``) to whoever listens; with nobody listening
    nothing is built for it, and the runs are the same."""

    async def main():
        anchor = T0.replace(second=0) - timedelta(days=1)
        tasks = [
            task("*/5 * * * *", task_id=f"{0x10000000 + i:08x}", created_at=anchor).model_copy(
                update={"last_scheduled_for": anchor}
            )
            for i in range(3)
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        await h.start()
        started = sorted(data["task_id"] for kind, data in h.seen if kind == "run_started")
        assert started == sorted(t.id for t in tasks)

        quiet = Harness(tmp_path / "quiet", tasks, FakeClock(T0))
        await quiet.listener.aclose()
        await quiet.start()
        assert [kind for kind, _ in quiet.seen if kind == "run_started"] == []
        fired = [r for r in quiet.ledger.list(limit=100) if r.catch_up]
        assert sorted(r.task_id for r in fired) == sorted(t.id for t in tasks)
        assert {r.outcome for r in fired} == {Outcome.DELIVERED}

    run(main())


def test_status_says_when_the_loop_caught_up_with_the_fires_missed_before_it_started(tmp_path):
    """``caught_up_at`` is None while the fires missed before the start wait for the loop's first tick,
    and the clock's time once that tick has decided and recorded them (a client such as the absence
    benchmark learns it without polling next_fire); a start with nothing missed is caught up at once."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.ONCE)
        fresh = task("0 * * * *", task_id="f0000001", created_at=clock.now())
        h = Harness(tmp_path, [t, fresh], clock)
        await h.sched.start(defer_catch_up=True)
        assert h.sched.status()["caught_up_at"] is None
        clock.advance(2)
        await h.sched.tick()
        assert h.sched.status()["caught_up_at"] == clock.now().isoformat()
        assert h.sched.status()["next_fire"]["planned_for"] > clock.now().isoformat()
        clock.advance(3600)
        await h.sched.tick()
        assert h.sched.status()["caught_up_at"] == (clock.now() - timedelta(seconds=3600)).isoformat()

        later = task("0 * * * *", task_id="f0000002", created_at=clock.now())
        nothing_missed = Harness(tmp_path / "second", [later], FakeClock(clock.now()))
        await nothing_missed.sched.start(defer_catch_up=True)
        assert nothing_missed.sched.status()["caught_up_at"] == clock.now().isoformat()

    (tmp_path / "second").mkdir()
    run(main())


def test_the_loop_is_not_caught_up_while_the_run_ledger_refuses_the_missed_fires(tmp_path, monkeypatch):
    """A pass the run ledger refuses leaves its fires due: ``caught_up_at`` stays None until they are
    recorded."""

    async def main():
        t, clock = _down_for_three_days(CatchUp.SKIP)
        h = Harness(tmp_path, [t], clock, store_retry_s=5.0)
        heal = _refuse_run_ledger(h, monkeypatch)
        await h.sched.start(defer_catch_up=True)
        for _ in range(2):
            await h.at(h.clock.now() + timedelta(seconds=5))
        assert h.sched.status()["caught_up_at"] is None
        heal()
        await h.at(h.clock.now() + timedelta(seconds=5))
        assert h.sched.status()["caught_up_at"] == h.clock.now().isoformat()

    run(main())


@pytest.mark.parametrize("all_due", [True, False])
def test_a_tick_takes_the_due_fires_off_the_heap_earliest_first_whether_it_sorts_or_pops(tmp_path, all_due):
    """With every one of many heap entries due (after a long stop) the tick sorts them rather than pop each:
    the tasks it takes, and their order, are those the pops give, stale and repeated entries left out."""
    import heapq as heapq_

    async def main():
        tasks = [
            task(f"{i % 60} * * * *", task_id=f"{0x50000000 + i:08x}", created_at=T0 - timedelta(minutes=1 + i % 7))
            for i in range(200)
        ]
        h = Harness(tmp_path, tasks, FakeClock(T0))
        await h.start()
        sched = h.sched
        for t in tasks[::9]:  # replanned: their old entries are stale, some twice over
            sched.schedule(t)
            sched._heap.append((T0 - timedelta(minutes=3), 10**6 + len(sched._heap), t.id))
        heapq_.heapify(sched._heap)
        now = max(planned for planned, _, _ in sched._heap) if all_due else sorted(sched._heap)[150][0]
        reference, heap, seen = [], list(sched._heap), set()
        while heap and heap[0][0] <= now:
            planned, _, task_id = heapq_.heappop(heap)
            current = sched._next.get(task_id)
            if current is not None and current.planned_for == planned and task_id not in seen:
                seen.add(task_id)
                reference.append(task_id)
        due = sched._pop_due(now)
        assert [t.id for t in due] == reference
        assert len(reference) > 64
        assert sorted(sched._heap) == sorted(heap)  # what is not due stays planned
        assert [task_id for task_id, _ in sched._popped] == reference

    run(main())
