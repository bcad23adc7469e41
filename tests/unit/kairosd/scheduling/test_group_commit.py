"""Deliveries that batch: a herd's fires share their durable writes, exactly once, and a stop tells the truth.

A scheduler over an in-memory store, real ledgers and a real inbox in tmp_path,
on a fake clock. The writes are counted by wrapping :meth:`JsonLog.append` (one
append is one fsync).
"""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from registry_support import until

from kairosd.core.events import EventBus
from kairosd.core.models import InboxTarget, Overlap, Task, new_task
from kairosd.core.records import InboxItem, Outcome, Run, json_line
from kairosd.delivery.inbox import InboxDelivery
from kairosd.scheduling import dispatch as dispatch_module
from kairosd.scheduling import scheduler as scheduler_module
from kairosd.scheduling.ledger import INTERRUPTED_REASON, MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.settle import settle_written_items
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.inbox import ACKED_RETENTION, InboxStore, session_file_name
from kairosd.store.jsonlog import JsonLog
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)
MINUTE = T0.replace(second=0) + timedelta(minutes=1)


class Daemon:
    """The scheduler's side of kairosd, with the inbox as the only target, state under ``folder``."""

    def __init__(
        self,
        folder: Path,
        tasks: list[Task],
        clock: FakeClock,
        runs_per_task: int = 50,
        missed_kept: int = 1000,
        **config: Any,
    ) -> None:
        self.clock = clock
        self.store = InMemoryStore(StoreState(schema_version=2, tasks=tasks))
        self.book = TaskBook(self.store, self.store.load())
        self.ledger = RunLedger(folder / "runs.jsonl", clock, keep_per_task=runs_per_task)
        self.interrupted = self.ledger.load()
        self.missed = MissedLedger(folder / "missed.jsonl", clock, keep=missed_kept)
        self.missed.load()
        self.inbox = InboxStore(folder / "inbox", clock)
        self.delivery = InboxDelivery(self.inbox, clock)
        self.sched = Scheduler(
            self.book, self.ledger, self.missed, {"inbox": self.delivery}, clock, EventBus(clock.now),
            SchedulerConfig(**config), compacting=[self.inbox],
        )  # fmt: skip

    async def at(self, when: datetime) -> None:
        self.clock.advance((when - self.clock.now()).total_seconds())
        await self.sched.tick()
        assert await self.sched.drain(10)


def herd(n: int, sessions: tuple[str, ...] = ("main",), **kw: Any) -> list[Task]:
    return [
        new_task(
            cron="* * * * *",
            task_id=f"{0x30000000 + i:08x}",
            created_at=T0,
            tz="UTC",
            prompt=f"herd {i}",
            target=InboxTarget(session=sessions[i % len(sessions)]),
            **kw,
        )
        for i in range(n)
    ]


@pytest.fixture
def appends(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Appends (fsyncs) per log: the file name for ledgers, ``inbox/<file>`` for inboxes."""
    counted: Counter[str] = Counter()
    real = JsonLog.append_lines  # every append goes through it

    def append(self: JsonLog, lines: list[bytes]) -> None:
        name = self.path.name if self.path.parent.name != "inbox" else f"inbox/{self.path.name}"
        counted[name] += 1
        real(self, lines)

    monkeypatch.setattr(JsonLog, "append_lines", append)
    return counted


def _one_per_slot(d: Daemon, tasks: list[Task], slots: list[datetime]) -> None:
    runs = d.ledger.list(limit=100_000)
    assert Counter((r.task_id, r.scheduled_for) for r in runs) == {(t.id, s): 1 for t in tasks for s in slots}
    items = d.inbox.list()
    assert len({i.id for i in items}) == len(items) == len(tasks) * len(slots)  # no duplicate item
    assert {i.id for i in items} == {r.run_id for r in runs}


def test_a_herd_shares_its_durable_writes(tmp_path: Path, appends: Counter[str]) -> None:
    """The fires of one pass are one inbox append per session and two run-ledger appends (fired, then
    their outcomes), not an fsync pair per fire; each task gets one run and one item per slot."""
    tasks = herd(300, sessions=("main", "side"))

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0), max_concurrent=4)
        await d.sched.start()
        appends.clear()
        await d.at(MINUTE)
        assert appends == {"inbox/main.jsonl": 1, "inbox/side.jsonl": 1, "runs.jsonl": 2}
        assert {r.outcome for r in d.ledger.list(limit=1000)} == {Outcome.DELIVERED}
        appends.clear()
        await d.at(MINUTE + timedelta(minutes=1))
        assert appends == {"inbox/main.jsonl": 1, "inbox/side.jsonl": 1, "runs.jsonl": 2}
        _one_per_slot(d, tasks, [MINUTE, MINUTE + timedelta(minutes=1)])

    asyncio.run(main())


def test_a_herds_outcomes_are_spliced_into_their_fired_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A herd's outcomes are not encoded again one by one: each outcome's line in the run ledger is its
    fired line with the outcome spliced in (one encoding per batch), and it is the line the outcome's
    record encodes to, so the ledger reads back what it holds."""
    tasks = herd(300, sessions=("main", "side"))
    encoded: Counter[Outcome | None] = Counter()

    class Counting:
        """Run's serializer, counting the records it encodes by their outcome."""

        def __init__(self, real: Any) -> None:
            self.real = real

        def to_json(self, record: Any, **kw: Any) -> bytes:
            encoded[record.outcome] += 1
            return bytes(self.real.to_json(record, **kw))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0), max_concurrent=4)
        await d.sched.start()
        Run.model_rebuild()  # built now (deferred), then counted
        monkeypatch.setattr(Run, "__pydantic_serializer__", Counting(Run.__pydantic_serializer__))
        await d.at(MINUTE)
        await d.at(MINUTE + timedelta(minutes=1))
        assert encoded[Outcome.DELIVERED] <= 4  # one per batch and minute at most, not 600
        held = {run.run_id: json_line(run) for run in d.ledger.list(limit=1000)}
        last: dict[str, bytes] = {}
        for line in (tmp_path / "runs.jsonl").read_bytes().splitlines():
            last[json.loads(line)["run_id"]] = line
        assert last == held
        assert {r.outcome for r in d.ledger.list(limit=1000)} == {Outcome.DELIVERED}
        _one_per_slot(d, tasks, [MINUTE, MINUTE + timedelta(minutes=1)])

    asyncio.run(main())


def test_a_batch_with_failed_items_settles_each_run_by_its_own_result(tmp_path: Path) -> None:
    """One batch of two sessions, one of them an inbox that cannot be written: the other session's runs
    are delivered (they share one result), the others failed with the reason, each outcome line on disk
    the one its record encodes to."""
    bad = "blocked"
    tasks = herd(40, sessions=("main", bad))
    (tmp_path / "inbox" / session_file_name(bad)).mkdir(parents=True)  # a folder where its log would be

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0))
        await d.sched.start()
        await d.at(MINUTE)
        runs = d.ledger.list(limit=1000)
        by_session = {t.id: t.target.session for t in tasks}  # type: ignore[union-attr]
        settled = {(by_session[r.task_id], r.outcome) for r in runs}
        assert settled == {("main", Outcome.DELIVERED), (bad, Outcome.FAILED)}
        assert all(bad in (r.reason or "") for r in runs if r.outcome is Outcome.FAILED)
        assert all(r.reason is None and r.finished_at == MINUTE for r in runs if r.outcome is Outcome.DELIVERED)
        last: dict[str, bytes] = {}
        for line in (tmp_path / "runs.jsonl").read_bytes().splitlines():
            last[json.loads(line)["run_id"]] = line
        assert last == {run.run_id: json_line(run) for run in runs}
        assert len(d.inbox.list()) == 20

    asyncio.run(main())


def test_a_crash_between_a_batch_write_and_its_acknowledgement_repeats_nothing(tmp_path: Path) -> None:
    """What a crash leaves after the batch's items are durable and before its outcomes are recorded:
    every item of the batch is on disk, every run is still in flight. The next start marks them
    interrupted (the crash rules), then delivered since their items are written; it fires none of them
    again, and the next slot fires once."""
    tasks = herd(200)
    crashed = tmp_path / "crashed"

    async def main() -> None:
        d = Daemon(tmp_path / "live", tasks, FakeClock(T0))
        await d.sched.start()
        record_many = d.ledger.record_many

        def snapshot_first(runs: list[Any], **kw: Any) -> None:
            if any(r.outcome is Outcome.DELIVERED for r in runs) and not crashed.exists():
                shutil.copytree(tmp_path / "live", crashed)  # the disk as a crash here leaves it
            record_many(runs, **kw)

        d.ledger.record_many = snapshot_first  # type: ignore[method-assign]
        await d.at(MINUTE)
        assert crashed.exists()

        # The next start: the store lost the anchors too (they follow in the background).
        again = Daemon(crashed, tasks, FakeClock(MINUTE + timedelta(seconds=5)))
        assert len(again.interrupted) == 200
        assert {r.reason for r in again.interrupted} == {INTERRUPTED_REASON}
        assert len(again.inbox.list()) == 200  # the whole batch was durable before any acknowledgement
        # Their items are the target's confirmation: the runs are settled as delivered, as kairosd does at load.
        assert len(settle_written_items(again.ledger, again.inbox, again.interrupted)) == 200
        assert {r.outcome for r in again.ledger.list(limit=1000)} == {Outcome.DELIVERED}
        await again.sched.start()
        assert await again.sched.drain(10)
        await again.at(MINUTE + timedelta(seconds=50))
        assert len(again.inbox.list()) == 200  # nothing repeated
        await again.at(MINUTE + timedelta(minutes=1))
        _one_per_slot(again, tasks, [MINUTE, MINUTE + timedelta(minutes=1)])

    asyncio.run(main())


def test_a_stop_records_a_written_item_as_delivered(tmp_path: Path) -> None:
    """Stopped while the batch's write is under way, past the grace: the write finishes in its thread,
    so the runs are recorded delivered (their items are on disk), not failed."""
    tasks = herd(20)
    entered, release = threading.Event(), threading.Event()

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0))
        await d.sched.start()
        put_many = d.inbox.put_many

        def slow_put_many(items: list[InboxItem], **kw: Any) -> list[bool]:
            answers = put_many(items, **kw)  # durable now
            entered.set()
            release.wait(30)
            return answers

        d.inbox.put_many = slow_put_many  # type: ignore[method-assign]
        cancel = d.sched._dispatch.cancel

        async def cancel_then_release() -> None:
            cancelling = asyncio.ensure_future(cancel())
            await asyncio.sleep(0)  # cancel() has cancelled what is in flight and waits for it
            release.set()
            await cancelling

        d.sched._dispatch.cancel = cancel_then_release  # type: ignore[method-assign]
        d.clock.advance((MINUTE - d.clock.now()).total_seconds())
        await d.sched.tick()
        await until(entered.is_set, "the batch's write to start", timeout=10)
        await d.sched.shutdown(0.01)
        assert release.is_set()  # the cancel path was taken
        runs = d.ledger.list(limit=100)
        assert len(runs) == 20
        assert {r.outcome for r in runs} == {Outcome.DELIVERED}
        assert len(d.inbox.list()) == 20

    asyncio.run(main())


def test_a_stop_does_not_wait_for_queued_deliveries(tmp_path: Path) -> None:
    """Stopped with a batch in flight, runs waiting for a delivery slot and runs queued behind running ones:
    the waiting and queued ones are recorded missed at once and their fires surfaced as missed, one record
    per task; the batch in flight is waited for and recorded delivered."""
    tasks = herd(30, overlap=Overlap.QUEUE)
    entered, release = threading.Event(), threading.Event()

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0))
        await d.sched.start()
        put_many = d.inbox.put_many

        def held_put_many(items: list[InboxItem], **kw: Any) -> list[bool]:
            entered.set()
            release.wait(30)
            return put_many(items, **kw)

        d.inbox.put_many = held_put_many  # type: ignore[method-assign]
        d.clock.advance((MINUTE - d.clock.now()).total_seconds())
        await d.sched.tick()  # 30 fires, one batch, held in its write
        await until(entered.is_set, "the batch's write to start", timeout=10)
        d.clock.advance(60)
        await d.sched.tick()  # 30 more fires, queued behind the running ones
        d.clock.advance(60)
        await d.sched.tick()
        assert d.sched._dispatch.queued() == 60
        stopping = asyncio.ensure_future(d.sched.shutdown(30))
        # The queued runs are recorded before the stop waits for anything in flight.
        missed = lambda: len([r for r in d.ledger.list(limit=1000) if r.outcome is Outcome.MISSED])  # noqa: E731
        try:
            await until(lambda: missed() >= 60, "the queued runs to be recorded missed", timeout=10)
        finally:
            release.set()  # never leave the write held, even when the assertion fails
        await stopping
        runs = d.ledger.list(limit=1000)
        assert Counter(r.outcome for r in runs) == {Outcome.DELIVERED: 30, Outcome.MISSED: 60}
        surfaced = d.missed.list()
        assert sorted(m.task_id for m in surfaced) == sorted(t.id for t in tasks)
        assert {(m.count, m.action) for m in surfaced} == {(2, "surfaced")}
        assert {m.first_scheduled_for for m in surfaced} == {MINUTE + timedelta(minutes=1)}

    asyncio.run(main())


@pytest.mark.parametrize("batch", [500, 5])
def test_a_big_pass_writes_the_store_after_its_group_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """A pass of several chunks (a herd) holds the store's write until its batches are written and their
    outcomes recorded: a write of the whole store in the middle only made the herd's last outcome later.
    The store does follow (drain waits for it), with every task's new anchor. The cycle collector is
    held off as long, and is on again after. With more batches than delivery slots (a 10k herd is 20
    batches, 4 at a time), that is after the last batch, not after the first few."""
    monkeypatch.setattr(scheduler_module, "PASS_CHUNK", 10)
    monkeypatch.setattr(dispatch_module, "BATCH_MAX", batch)
    tasks = herd(30)
    saved = threading.Event()
    order: list[str] = []

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0), persist_delay_s=0.0, max_concurrent=2)
        await d.sched.start()
        assert await d.sched.drain(10)
        save, put_many, record_many = d.store.save, d.inbox.put_many, d.ledger.record_many

        def saving(state: StoreState) -> None:
            order.append("store")
            save(state)
            saved.set()

        def held_put_many(items: list[InboxItem], **kw: Any) -> list[bool]:
            saved.wait(1.0)  # a store write started meanwhile would be done by then; this one must not start
            order.append("inbox" if not gc.isenabled() else "inbox, collector on")
            return put_many(items, **kw)

        def recording(runs: list[Any], **kw: Any) -> None:
            order.append("outcomes" if runs[0].outcome is Outcome.DELIVERED else "fired")
            record_many(runs, **kw)

        d.store.save = saving  # type: ignore[method-assign]
        d.inbox.put_many = held_put_many  # type: ignore[method-assign]
        d.ledger.record_many = recording  # type: ignore[method-assign]
        gc.enable()
        await d.at(MINUTE)
        assert await d.sched.drain(10)
        # The cycle collector was off for the pass and its group commit (kairosd.system.gcpause), and is on again.
        batches = -(-len(tasks) // batch)
        assert order[:3] == ["fired"] * 3
        assert sorted(order[3:-1]) == sorted(["inbox", "outcomes"] * batches)  # two batches at a time
        assert order[-1] == "store"
        assert gc.isenabled()
        assert {t.last_scheduled_for for t in d.store.load().tasks} == {MINUTE}
        _one_per_slot(d, tasks, [MINUTE])

    asyncio.run(main())


def test_a_herds_chunks_are_decided_while_the_chunk_before_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass of several chunks decides a chunk while the one before it is written to the run ledger (the
    writes no longer wait one after another), and each chunk takes effect once its own write is done:
    one run and one item per task, all delivered."""
    monkeypatch.setattr(scheduler_module, "PASS_CHUNK", 10)
    tasks = herd(30)
    second_decided = threading.Event()
    order: list[str] = []

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0))
        await d.sched.start()
        decide, record_many = d.sched._decide, d.ledger.record_many

        def deciding(*args: Any) -> Any:
            order.append("decide")
            if order.count("decide") == 2:
                second_decided.set()
            return decide(*args)

        def recording(runs: list[Any], **kw: Any) -> None:
            if not order.count("written"):
                second_decided.wait(2.0)  # the next chunk is decided meanwhile, or never before this ends
            record_many(runs, **kw)
            order.append("written")

        d.sched._decide = deciding  # type: ignore[method-assign]
        d.ledger.record_many = recording  # type: ignore[method-assign]
        await d.at(MINUTE)
        assert await d.sched.drain(10)
        assert order[:3] == ["decide", "decide", "written"]
        assert order.count("decide") == 3


def test_a_herd_bigger_than_a_batch_goes_in_batches_at_most_max_concurrent_at_once(
    tmp_path: Path, appends: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a long stop 10,000 catch-up fires start together: they go to the inbox in batches of at most
    BATCH_MAX (one append each, then one for their outcomes), at most max_concurrent batches at a time,
    every fire delivered once. As one batch, every item, outcome and their JSON were in memory at once."""
    from kairosd.scheduling import dispatch

    monkeypatch.setattr(dispatch, "BATCH_MAX", 25)
    tasks = herd(110)

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0), max_concurrent=2)
        sizes: list[int] = []
        busy, most = 0, 0
        deliver_many = d.delivery.deliver_many

        async def counting(handoffs: list[Any]) -> list[Any]:
            nonlocal busy, most
            sizes.append(len(handoffs))
            busy += 1
            most = max(most, busy)
            await asyncio.sleep(0.01)  # let the others start, if they may
            try:
                return await deliver_many(handoffs)
            finally:
                busy -= 1

        d.delivery.deliver_many = counting  # type: ignore[method-assign]
        await d.sched.start()
        appends.clear()
        await d.at(MINUTE)
        assert sizes == [25, 25, 25, 25, 10]
        assert most == 2
        assert appends == {"inbox/main.jsonl": 5, "runs.jsonl": 1 + 5}
        assert {r.outcome for r in d.ledger.list(limit=1000)} == {Outcome.DELIVERED}
        _one_per_slot(d, tasks, [MINUTE])

    asyncio.run(main())


def test_a_chunk_the_run_ledger_refuses_leaves_it_and_the_rest_to_the_next_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run ledger refuses the second chunk's write (the third is decided by then): the first chunk
    fires, the other two neither fire nor move their anchors, and the next tick fires them, once each."""
    monkeypatch.setattr(scheduler_module, "PASS_CHUNK", 10)
    tasks = herd(30)

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0))
        await d.sched.start()
        record_many, writes = d.ledger.record_many, []

        def refusing_the_second(runs: list[Any], **kw: Any) -> None:
            writes.append(len(runs))
            if len(writes) == 2:
                raise OSError(30, "Read-only file system")
            record_many(runs, **kw)

        d.ledger.record_many = refusing_the_second  # type: ignore[method-assign]
        await d.at(MINUTE)
        assert await d.sched.drain(10)
        assert writes == [10, 10, 10]  # the first chunk's fires, the refused chunk, the first's outcomes
        fired = {r.task_id for r in d.ledger.list(limit=1000)}
        assert fired == {t.id for t in tasks[:10]}
        assert {t.id for t in d.book if t.last_scheduled_for == MINUTE} == fired
        assert "run ledger" in (d.sched.status()["store_error"] or "")
        d.clock.advance(5)
        await d.sched.tick()
        assert await d.sched.drain(10)
        _one_per_slot(d, tasks, [MINUTE])
        assert {r.outcome for r in d.ledger.list(limit=1000)} == {Outcome.DELIVERED}

    asyncio.run(main())


@pytest.mark.parametrize(("chunk", "batch"), [(1000, 500), (100, 500), (100, 50)])
def test_the_run_ledger_compacts_after_a_herd_not_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, batch: int
) -> None:
    """A compaction rewrites every run kept (seconds at 10,000 tasks); it used to come inside whichever
    herd's append crossed the line, with the herd's runs still in flight. Now it comes once the herd's
    outcomes are durable, and the file is compacted by the time the scheduler has drained."""
    monkeypatch.setattr(scheduler_module, "PASS_CHUNK", chunk)
    monkeypatch.setattr(dispatch_module, "BATCH_MAX", batch)  # 50: seven batches, two at a time
    tasks = herd(350)
    in_flight_at_rewrite: list[int] = []

    async def main() -> None:
        # One run kept a task: 350 runs, so the ledger is due for compaction past 1,700 lines.
        d = Daemon(tmp_path, tasks, FakeClock(T0), runs_per_task=1, max_concurrent=2)
        await d.sched.start()
        rewrite = JsonLog.rewrite

        def rewriting(log: JsonLog, records: Any) -> None:
            if log.path == d.ledger.path:
                in_flight_at_rewrite.append(len(d.ledger.running()))
            rewrite(log, records)

        monkeypatch.setattr(JsonLog, "rewrite", rewriting)
        # 700 lines a herd (fired, then delivered): the third herd's fires cross the line.
        slots = [MINUTE + timedelta(minutes=k) for k in range(4)]
        for slot in slots:
            await d.at(slot)
        assert in_flight_at_rewrite  # it compacted
        assert set(in_flight_at_rewrite) == {0}  # with no run in flight
        assert len(d.ledger.path.read_bytes().splitlines()) < 1700
        assert {r.outcome for r in d.ledger.list(limit=1000)} == {Outcome.DELIVERED}
        assert len(d.inbox.list()) == 350 * len(slots)  # one item per task and slot, none lost

    asyncio.run(main())


def test_the_missed_ledger_and_the_inbox_compact_after_a_pass_not_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass adds a missed record a task in chunks: past the missed ledger's line (10 kept: 1,020 lines)
    it was rewritten inside the pass, several times in a bigger one; the inbox likewise inside a
    delivery. Both now wait, as the run ledger does, until the pass's runs are delivered and recorded,
    and then compact once; nothing is lost."""
    monkeypatch.setattr(scheduler_module, "PASS_CHUNK", 300)
    monkeypatch.setattr(dispatch_module, "BATCH_MAX", 300)
    tasks = herd(1100)
    folder = tmp_path / "inbox"
    # 700 items of "main" acked just under ACKED_RETENTION ago: kept when loaded, expired by the pass.
    acked_at = T0 - ACKED_RETENTION + timedelta(seconds=10)
    old = [_old_item(i, acked_at) for i in range(700)]
    JsonLog(folder / "main.jsonl").append(
        [item.model_dump(mode="json") for item in old] + [{"ack": i.id, "at": acked_at.isoformat()} for i in old]
    )
    rewrites: list[tuple[str, int]] = []  # (file, runs in flight then)

    async def main() -> None:
        d = Daemon(tmp_path, tasks, FakeClock(T0), missed_kept=10, max_concurrent=2)
        await d.sched.start()
        assert len(d.inbox.list("main", include_acked=True)) == 700  # loaded (and cached): not due yet
        rewrite = JsonLog.rewrite

        def rewriting(log: JsonLog, records: Any) -> None:
            rewrites.append((log.path.name, len(d.ledger.running())))
            rewrite(log, records)

        monkeypatch.setattr(JsonLog, "rewrite", rewriting)
        await d.at(MINUTE + timedelta(minutes=2, seconds=30))  # 10:01 and 10:02 missed, 10:03 due
        assert sorted(rewrites) == [("main.jsonl", 0), ("missed.jsonl", 0)]  # once each, after the pass
        assert len(d.missed.path.read_bytes().splitlines()) == 10
        assert len(d.missed.list()) == 10
        delivered = d.inbox.list("main")
        assert len(delivered) == 1100  # one item a task, none lost
        assert len(JsonLog(folder / "main.jsonl").read()) == 1100  # the expired acked items dropped
        assert {r.outcome for r in d.ledger.list(limit=5000) if r.outcome is not Outcome.MISSED} == {Outcome.DELIVERED}

    asyncio.run(main())


def _old_item(i: int, at: datetime) -> InboxItem:
    return InboxItem(id=f"old{i}", session="main", task_id="gone", prompt="old", scheduled_for=at, delivered_at=at)


class _HeldLog:
    """A log whose compaction the scheduler holds; its release may block (``gate``) as a rewrite does."""

    def __init__(self, due: bool, gate: threading.Event | None = None) -> None:
        self.due, self.gate, self.holds = due, gate, 0
        self.releases: list[bool] = []
        self.entered = threading.Event()

    def hold_compaction(self) -> None:
        self.holds += 1

    def release_compaction(self, compact: bool = True) -> None:
        self.entered.set()
        if self.gate is not None and compact:
            self.gate.wait(10)
        self.holds -= 1
        self.releases.append(compact)

    @property
    def compaction_due(self) -> bool:
        return self.due


def test_a_stop_while_one_log_compacts_still_releases_the_others(tmp_path: Path) -> None:
    """After a pass the held logs are released one after another, a due one in a thread. Stopping while
    one compacts (its rewrite finishes in its thread) releases every other, without compacting: each
    hold is released exactly once, and none is left held."""
    gate = threading.Event()
    slow, after = _HeldLog(due=True, gate=gate), _HeldLog(due=True)

    async def main() -> None:
        d = Daemon(tmp_path, herd(3), FakeClock(T0))
        sched = Scheduler(
            d.book, d.ledger, d.missed, {"inbox": d.delivery}, d.clock, EventBus(d.clock.now), SchedulerConfig(),
            compacting=[slow, after],
        )  # fmt: skip
        await sched.start()
        d.clock.advance((MINUTE - d.clock.now()).total_seconds())
        await sched.tick()
        assert (slow.holds, after.holds) == (1, 1)
        await until(slow.entered.is_set, "the first due log to compact", timeout=10)
        releasing = list(sched._background)
        for handle in releasing:
            handle.cancel()
        await asyncio.gather(*releasing, return_exceptions=True)
        assert after.releases == [False]
        assert after.holds == 0
        gate.set()
        await until(lambda: slow.releases == [True], "the compaction under way to finish", timeout=10)
        assert slow.holds == 0
        assert d.ledger._compaction_holds == 0
        assert d.missed._compaction_holds == 0

    asyncio.run(main())
