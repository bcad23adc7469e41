"""Time: wall-clock jumps forward and back and suspends across planned fires, on the injected clock.

Missed fires follow each task's catch-up policy, nothing fires in a burst, and
no slot is ever delivered twice. ``FakeClock.jump`` moves wall time alone (a
suspend or an NTP step); ``advance`` moves both clocks (time passing).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import FlakyStore, SchedHarness
from sizes_support import sized

from kairosd.core.models import CatchUp, Task, new_task
from kairosd.core.plan import scheduled_after
from kairosd.core.records import Outcome
from kairosd.delivery.base import Handoff, Result
from kairosd.store.store import SCHEMA_VERSION, StoreState
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)  # a Monday


def task(cron: str | None = None, **kw: Any) -> Task:
    kw.setdefault("created_at", T0)
    kw.setdefault("tz", "UTC")
    kw.setdefault("prompt", "check the PRs")
    return new_task(cron=cron, **kw)


def harness(folder: Path, tasks: list[Task], **config: Any) -> SchedHarness:
    store = FlakyStore(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks))
    return SchedHarness(folder, store, FakeClock(T0), **config)


class CountingDelivery:
    """Records handoffs and the most deliveries ever in flight at once (overall and per task)."""

    kind = "inbox"

    def __init__(self) -> None:
        self.handoffs: list[Handoff] = []
        self.in_flight: Counter[str] = Counter()
        self.peak = 0
        self.peak_per_task = 0

    async def deliver(self, handoff: Handoff) -> Result:
        self.handoffs.append(handoff)
        self.in_flight[handoff.task_id] += 1
        self.peak = max(self.peak, sum(self.in_flight.values()))
        self.peak_per_task = max(self.peak_per_task, self.in_flight[handoff.task_id])
        for _ in range(3):  # stay in flight across a few loop turns, so overlaps would show
            await asyncio.sleep(0)
        self.in_flight[handoff.task_id] -= 1
        return Result("delivered")

    async def close(self) -> None:
        pass


def counting(h: SchedHarness) -> CountingDelivery:
    delivery = CountingDelivery()
    h.sched.deliveries["inbox"] = delivery
    return delivery


def test_suspend_across_fires_follows_each_catch_up_policy(tmp_path):
    """A 3-hour suspend: skip, once, all (serial, last 10), surface and a late one-shot each do as documented."""

    async def main():
        skip = task("*/10 * * * *", catch_up=CatchUp.SKIP)
        once = task("*/10 * * * *", catch_up=CatchUp.ONCE)
        every = task("*/10 * * * *", catch_up=CatchUp.ALL)
        surface = task(at=T0 + timedelta(minutes=30))
        late_shot = task(at=T0 + timedelta(minutes=40), catch_up=CatchUp.ONCE)
        h = harness(tmp_path, [skip, once, every, surface, late_shot], max_concurrent=4)
        delivery = counting(h)
        await h.start()
        h.clock.jump(3 * 3600)  # suspend: wall time moves, monotonic does not
        await h.tick()
        by_task = Counter(j.task_id for j in delivery.handoffs)
        assert by_task[skip.id] == 0
        assert by_task[once.id] == 1
        assert by_task[every.id] == 10
        assert by_task[surface.id] == 0
        assert by_task[late_shot.id] == 1
        assert all(j.catch_up for j in delivery.handoffs)
        once_job = next(j for j in delivery.handoffs if j.task_id == once.id)
        assert once_job.scheduled_for == datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
        every_slots = [j.scheduled_for for j in delivery.handoffs if j.task_id == every.id]
        assert every_slots == sorted(every_slots)
        assert every_slots[-1] == datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
        assert delivery.peak_per_task == 1  # never a burst of one task
        assert delivery.peak <= 4
        missed = {m.task_id: m for m in h.missed.list()}
        assert missed[skip.id].count == 18
        assert missed[once.id].count == 17
        assert missed[every.id].count == 8
        assert missed[surface.id].action == "surfaced"
        assert surface.id not in h.book
        assert late_shot.id not in h.book
        assert all(m.reason.startswith("the clock jumped forward") for m in missed.values())

    asyncio.run(main())


def test_backward_jump_fires_nothing_again_while_the_hour_repeats(tmp_path):
    """Stepped back an hour after the 10:10 fire: nothing fires again in the repeated hour; 10:20 fires once."""

    async def main():
        t = task("*/10 * * * *")
        h = harness(tmp_path, [t])
        await h.start()
        await h.at(datetime(2026, 3, 2, 10, 10, tzinfo=UTC))
        h.clock.jump(-3600)
        await h.tick()
        end = datetime(2026, 3, 2, 10, 20, tzinfo=UTC)
        while h.clock.now() < end:
            delay = await h.tick()
            h.clock.advance(max(0.001, min(delay, (end - h.clock.now()).total_seconds())))
        await h.tick()
        slots = [s for _, s in h.delivered(t.id)]
        assert slots == [datetime(2026, 3, 2, 10, 10, tzinfo=UTC), datetime(2026, 3, 2, 10, 20, tzinfo=UTC)]

    asyncio.run(main())


def test_small_forward_step_is_a_miss_under_the_policy(tmp_path):
    """An NTP step of 2 minutes over a minutely task: catch_up=once fires the latest slot once, late."""

    async def main():
        t = task("* * * * *", catch_up=CatchUp.ONCE)
        h = harness(tmp_path, [t])
        await h.start()
        await h.at(datetime(2026, 3, 2, 10, 1, tzinfo=UTC))
        h.clock.jump(150)
        await h.tick()
        slots = [s for _, s in h.delivered(t.id)]
        assert slots == [datetime(2026, 3, 2, 10, 1, tzinfo=UTC), datetime(2026, 3, 2, 10, 3, tzinfo=UTC)]
        assert h.delivery.handoffs[-1].catch_up is True
        assert h.missed.list()[0].count == 1

    asyncio.run(main())


def test_thousand_tasks_due_after_a_suspend_never_exceed_max_concurrent(tmp_path):
    """1,000 hourly tasks due at once after a suspend: each fires once, at most max_concurrent at a time."""

    async def main():
        tasks = [task("0 * * * *", task_id=f"{i:08x}") for i in range(1000)]
        h = harness(tmp_path, tasks, max_concurrent=4)
        delivery = counting(h)
        await h.start()
        h.clock.jump(3600)
        await h.tick()
        assert len(delivery.handoffs) == 1000
        assert len({j.task_id for j in delivery.handoffs}) == 1000
        assert delivery.peak <= 4

    asyncio.run(main())


# ---- property: any mix of passing time, suspends and steps back -----------------------------------

CRONS = ["* * * * *", "*/5 * * * *", "*/7 * * * *", "0 * * * *", "30 */2 * * *", "15 10 * * *"]
POLICIES = [CatchUp.SKIP, CatchUp.ONCE, CatchUp.ALL]

step = st.one_of(
    st.tuples(st.just("pass"), st.integers(1, 3 * 3600)),  # time passes, the loop ticks as it would
    st.tuples(st.just("suspend"), st.integers(6, 2 * 86400)),  # wall clock jumps forward beyond the threshold
    st.tuples(st.just("back"), st.integers(1, 3 * 3600)),  # wall clock is stepped back
)


async def _scenario(folder: Path, specs: list[tuple[str, CatchUp]], steps: list[tuple[str, int]]) -> None:
    tasks = [task(cron, catch_up=policy, task_id=f"{i:08x}") for i, (cron, policy) in enumerate(specs)]
    h = harness(folder, tasks, max_concurrent=4, keep_runs=100_000)
    delivery = counting(h)
    await h.start()
    policy_of = {t.id: t.catch_up for t in tasks}

    async def tick(after_suspend: bool) -> float:
        before = len(delivery.handoffs)
        delay = await h.tick()
        for task_id, count in Counter(j.task_id for j in delivery.handoffs[before:]).items():
            # No burst: one fire per tick, or the catch-up allowance after a suspend.
            allowed = 10 if after_suspend and policy_of[task_id] is CatchUp.ALL else 1
            assert count <= allowed, (after_suspend, task_id, count)
        return delay

    for kind, seconds in steps:
        if kind == "pass":
            remaining = float(seconds)
            while remaining > 0:
                delay = await tick(False)
                move = max(0.5, min(delay, remaining))
                h.clock.advance(move)
                remaining -= move
            await tick(False)
        else:
            h.clock.jump(seconds if kind == "suspend" else -seconds)
            await tick(kind == "suspend")
    await h.sched.drain(5)

    # No slot is ever delivered twice, and each task's fires go forward in time.
    slots = [(j.task_id, j.scheduled_for) for j in delivery.handoffs]
    assert len(slots) == len(set(slots))
    for t in tasks:
        mine = [s for tid, s in slots if tid == t.id]
        assert mine == sorted(mine)
        if t.catch_up is CatchUp.SKIP:
            assert not any(j.catch_up for j in delivery.handoffs if j.task_id == t.id)
    assert delivery.peak_per_task <= 1
    assert delivery.peak <= 4

    # Every slot up to where each task stands was fired, skipped or recorded missed: nothing vanished.
    runs = h.ledger.list(None, 100_000)
    for t in tasks:
        current = h.book.get(t.id)
        handled = current.last_scheduled_for
        if handled is None:
            continue
        expected = 0
        for s in scheduled_after(t, t.created_at):
            if s > handled:
                break
            expected += 1
        accounted = 0
        for r in runs:
            if r.task_id != t.id:
                continue
            if r.outcome is Outcome.MISSED:
                (record,) = [m for m in h.missed.list() if m.task_id == t.id and m.scheduled_for == r.scheduled_for]
                accounted += record.count
            else:
                accounted += 1
        assert accounted == expected, (t.cron, t.catch_up, accounted, expected)


@settings(max_examples=sized(120, 30), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(st.tuples(st.sampled_from(CRONS), st.sampled_from(POLICIES)), min_size=1, max_size=4),
    steps=st.lists(step, min_size=1, max_size=6),
)
def test_property_no_double_fire_no_burst_every_slot_accounted(specs, steps):
    """Random time, suspends and steps back: no slot twice, no burst, every slot fired or recorded missed."""
    with tempfile.TemporaryDirectory(prefix="kt") as folder:
        asyncio.run(_scenario(Path(folder), specs, steps))


@pytest.mark.parametrize("seconds", [6, 3600, 6 * 86400])
def test_suspend_of_any_length_catches_up_at_most_once_per_task(tmp_path, seconds):
    """Suspends of 6 s, an hour and six days: a catch_up=once task fires at most once afterwards."""

    async def main():
        t = task("* * * * *", catch_up=CatchUp.ONCE)
        h = harness(tmp_path, [t])
        await h.start()
        h.clock.jump(seconds)
        await h.tick()
        assert len(h.delivered(t.id)) <= 1

    asyncio.run(main())
