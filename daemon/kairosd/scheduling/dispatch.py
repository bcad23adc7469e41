"""Running the deliveries the scheduler decided on: concurrency, per-task queues, outcomes.

The scheduler records a run in the run ledger, then hands it here
(:meth:`Dispatcher.start` or :meth:`Dispatcher.enqueue`). The dispatcher calls
the task's delivery target with at most ``max_concurrent`` deliveries at once,
records each outcome, and starts the next run queued behind a task once its
previous run is done. What is running or queued feeds the overlap rule
(:meth:`Dispatcher.in_flight`, see :mod:`kairosd.scheduling.firing`).

Group commit: a target that can take many runs at once
(:class:`kairosd.delivery.base.BatchDelivery`, the inbox) gets every run started
in one event-loop turn (a herd's pass) as one batch (of at most ``BATCH_MAX`` runs; a
bigger herd is several), in one concurrency slot: it
writes them all and syncs once, then the batch's outcomes go to the run ledger
in one append (one fsync), and only then is each run acknowledged (its
``run_finished`` event, its overlap mark released). The crash rules are those
of a single run: the fire was recorded before the batch started; a crash
before the outcomes are written leaves every run of the batch in flight, so the
next start marks them interrupted, never delivered twice.

Must not import the server, the CLI, the scheduler, or concrete delivery targets.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from kairosd.core.clock import Clock
from kairosd.core.events import EventBus
from kairosd.core.models import Task
from kairosd.core.records import Outcome, Run, Settled, revised
from kairosd.delivery.base import Delivery, Handoff, Result
from kairosd.scheduling.firing import InFlight
from kairosd.scheduling.ledger import RunLedger
from kairosd.scheduling.taskbook import TaskBook

# The scheduler's name: these lines are part of what it reports about runs.
log = logging.getLogger("kairosd.scheduling.scheduler")

STOPPED_REASON = "kairosd stopped before the target confirmed delivery"

# Runs one batch takes at most. After a long stop 10,000 catch-up fires start at once: as one batch
# their items, outcomes and JSON were all in memory together (tens of MB at the peak of the start).
BATCH_MAX = 500


def _settled(run: Run, result: Result, now: datetime) -> dict[str, Any]:
    """The fields of ``run`` that ``result`` settles, and their values."""
    # "pending": the target holds the prompt durably and settles the run itself later (a live
    # session's hook confirms it). The run is recorded queued and, like a finished one, frees
    # its concurrency slot and the task's overlap mark: a session may take hours to reach its
    # next turn, and holding either that long would stall other tasks and this task's own fires.
    # The target applies the task's overlap policy to the runs it holds (Handoff.overlap).
    pending = result.outcome == "pending"
    return {
        "started_at": result.started_at or run.dispatched_at,
        "finished_at": None if pending else (result.finished_at or now),
        "outcome": Outcome.QUEUED if pending else Outcome(result.outcome),
        "reason": result.reason,
        "output_path": result.output_path,
        "exit_code": result.exit_code,
        "awaiting": str(run.target.get("kind")) if pending else None,
    }


class Dispatcher:
    def __init__(
        self,
        book: TaskBook,
        ledger: RunLedger,
        deliveries: dict[str, Delivery],
        clock: Clock,
        events: EventBus,
        max_concurrent: int,
        write_failed: Callable[[str], None],
    ) -> None:
        """``deliveries`` is shared, not copied: a target added to it later is used.
        ``write_failed`` is told why an append to the run ledger failed."""
        self.book = book
        self.ledger = ledger
        self.deliveries = deliveries
        self.clock = clock
        self.events = events
        self._write_failed = write_failed
        self.running: dict[str, str] = {}  # task id -> run id in flight
        self.queues: dict[str, deque[Run]] = {}
        self.inflight: set[asyncio.Task[None]] = set()
        self._sem = asyncio.Semaphore(max_concurrent)
        self._max = max_concurrent
        # Started runs waiting for a free delivery slot, oldest first (see start).
        self._backlog: deque[tuple[Task, Run]] = deque()
        self._held = False
        # Runs for batching targets, by kind, gathered until the end of this event-loop turn (see _spawn).
        self._batches: dict[str, list[tuple[Task, Run, Handoff]]] = {}
        self._batching: set[asyncio.Task[None]] = set()  # batches in flight (see batches_settled)
        # Per run id, the run started and its line in the run ledger, when the caller knew it: its outcome's
        # line is that line with the outcome spliced in (see records.Settled), not encoded again.
        self._lines: dict[str, tuple[Run, bytes]] = {}

    def in_flight(self) -> InFlight:
        """What runs and waits now, for the overlap rule."""
        return InFlight(self.running, {task_id: len(queue) for task_id, queue in self.queues.items() if queue})

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def enqueue(self, task: Task, run: Run) -> None:
        """Hold ``run`` (recorded as queued) until the task's running one is done."""
        self.queues.setdefault(task.id, deque()).append(run)

    def start(self, task: Task, run: Run, line: bytes | None = None) -> None:
        """Deliver ``run`` (already recorded as dispatched, as ``line`` when given) in the background.

        At most ``max_concurrent`` deliveries exist at once; the rest wait in
        order as plain data, not as coroutines: after a long stop 10,000
        catch-up fires come at once, and as many waiting tasks cost tens of MB.
        """
        self.start_many([(task, run)], {} if line is None else {id(run): line})

    def start_many(self, starts: Iterable[tuple[Task, Run]], lines: Mapping[int, bytes]) -> None:
        """:meth:`start` of each of ``starts`` in order, the line of each run (if known) in ``lines`` by the
        run's id(): a decision's (10,000 after a long stop, in one loop)."""
        running, kept, backlog, inflight, most = self.running, self._lines, self._backlog, self.inflight, self._max
        events = self.events
        for task, run in starts:
            run_id = run.run_id
            running[task.id] = run_id
            line = lines.get(id(run))
            if line is not None:
                kept[run_id] = (run, line)
            if events.subscribers:  # else nobody to tell: 10,000 events for nothing after a long stop
                events.publish(
                    "run_started", run_id=run_id, task_id=task.id, catch_up=run.catch_up, late_by_s=run.late_by_s
                )
            if len(inflight) < most and not self._held:
                self._spawn(task, run)
            else:
                backlog.append((task, run))

    def hold(self) -> None:
        """Start nothing until :meth:`release`: runs started meanwhile wait in order (see :meth:`start`)."""
        self._held = True

    def release(self) -> None:
        self._held = False
        while self._backlog and len(self.inflight) < self._max:
            self._spawn(*self._backlog.popleft())

    def _spawn(self, task: Task, run: Run) -> None:
        handoff = Handoff.of(
            run_id=run.run_id,
            task_id=task.id,
            task_name=task.name,
            prompt=task.prompt,
            target=task.target,
            scheduled_for=run.scheduled_for,
            planned_for=run.planned_for,
            late_by_s=run.late_by_s,
            catch_up=run.catch_up,
            meta=dict(task.meta),
            overlap=task.overlap.value,
        )
        kind = handoff.target.kind
        if hasattr(self.deliveries.get(kind), "deliver_many"):
            batch = self._batches.setdefault(kind, [])
            if not batch:
                asyncio.get_running_loop().call_soon(self._flush, kind)
            batch.append((task, run, handoff))
            if len(batch) >= BATCH_MAX:
                # A full batch goes now and takes a delivery slot, so a herd is delivered at most
                # max_concurrent batches at a time (the rest wait in the backlog as plain data).
                self._flush(kind)
            return
        self._track(asyncio.ensure_future(self._deliver(task, run, handoff)))

    def _flush(self, kind: str) -> None:
        """Deliver the runs gathered for ``kind`` in this event-loop turn, as one batch."""
        batch = self._batches.pop(kind, None)
        if batch:
            handle = asyncio.ensure_future(self._deliver_batch(kind, batch))
            self._batching.add(handle)
            handle.add_done_callback(self._batching.discard)
            self._track(handle)

    async def batches_settled(self) -> None:
        """Wait for the runs of batching targets started so far to be delivered and recorded (or failed):
        the batches in flight, this event-loop turn's, and those waiting in the backlog for a slot.

        A 10k herd is 20 batches, ``max_concurrent`` at a time: waiting for the first few only let the
        store's write, the collector and the run ledger's compaction (see the scheduler) start with
        three quarters of the herd still to write.
        """
        await asyncio.sleep(0)  # this turn's batches go in flight first (_flush was called soon before this)
        while True:
            if self._batching:
                await asyncio.wait(set(self._batching))
            elif self._batches:
                await asyncio.sleep(0)  # gathered this turn: in flight on the next
            elif self.inflight and self._backlog and self._batchable_waiting():
                # Each waits for a slot that an unbatched delivery holds.
                await asyncio.wait(set(self.inflight), return_when=asyncio.FIRST_COMPLETED)
            else:
                return  # nothing of a batching target left to deliver (or held: see hold)

    def _batchable_waiting(self) -> bool:
        """Whether a run in the backlog goes to a batching target (a herd's are all, or none, mostly)."""
        return any(hasattr(self.deliveries.get(task.target.kind), "deliver_many") for task, _ in self._backlog)

    def _track(self, handle: asyncio.Task[None]) -> None:
        self.inflight.add(handle)
        # Before anyone waiting on it (drain) wakes up: the next one is in flight by then.
        handle.add_done_callback(self._done)

    def _done(self, handle: asyncio.Task[None]) -> None:
        self.inflight.discard(handle)
        while self._backlog and len(self.inflight) < self._max and not self._held:
            self._spawn(*self._backlog.popleft())

    async def cancel(self) -> None:
        """Stop every delivery in flight; each records why (see :meth:`_deliver`).

        Call :meth:`take_waiting` first: what has not started is not this method's.
        """
        for handle in list(self.inflight):
            handle.cancel()
        await asyncio.gather(*self.inflight, return_exceptions=True)

    def take_waiting(self) -> list[tuple[Task | None, Run]]:
        """Forget every run that has not started: those waiting for a delivery slot (or for the end of
        this turn's batch) and those queued behind a task's running one. Returns them, oldest first per
        kind of wait, with their task (None when it is gone), for the caller to record."""
        waiting: list[tuple[Task | None, Run]] = list(self._backlog)
        self._backlog = deque()
        for batch in self._batches.values():
            waiting.extend((task, run) for task, run, _ in batch)
        self._batches.clear()
        for task_id, queue in self.queues.items():
            task = self.book.find(task_id)
            waiting.extend((task, run) for run in queue)
        self.queues.clear()
        for _, run in waiting:
            self._lines.pop(run.run_id, None)
            if self.running.get(run.task_id) == run.run_id:
                del self.running[run.task_id]
        return waiting

    async def _deliver(self, task: Task, run: Run, handoff: Handoff) -> None:
        delivery = self.deliveries.get(handoff.target.kind)
        try:
            if delivery is None:
                result = Result("failed", reason=f"no delivery target of kind {handoff.target.kind!r}")
            else:
                async with self._sem:
                    result = await delivery.deliver(handoff)
        except asyncio.CancelledError:
            result = Result("failed", reason=STOPPED_REASON)
            await self._finish(task, run, result)
            raise
        except Exception as exc:  # a target bug must not stop the scheduler
            log.exception("delivery of run %s failed", run.run_id)
            result = Result("failed", reason=f"target error: {exc}")
        await self._finish(task, run, result)

    async def _deliver_batch(self, kind: str, batch: list[tuple[Task, Run, Handoff]]) -> None:
        delivery = self.deliveries.get(kind)
        try:
            if delivery is None:
                results = [Result("failed", reason=f"no delivery target of kind {kind!r}")] * len(batch)
            else:
                async with self._sem:
                    results = await delivery.deliver_many([handoff for _, _, handoff in batch])  # type: ignore[attr-defined]
                if len(results) != len(batch):
                    raise RuntimeError(f"{len(results)} results for {len(batch)} runs")
        except asyncio.CancelledError:
            stopped = Result("failed", reason=STOPPED_REASON)
            await self._finish_many([(task, run, stopped) for task, run, _ in batch])
            raise
        except Exception as exc:  # a target bug must not stop the scheduler
            log.exception("delivery of a batch of %d runs failed", len(batch))
            results = [Result("failed", reason=f"target error: {exc}")] * len(batch)
        await self._finish_many([(task, run, result) for (task, run, _), result in zip(batch, results, strict=True)])

    async def _finish(self, task: Task, run: Run, result: Result) -> None:
        await self._finish_many([(task, run, result)])

    async def _finish_many(self, finished: list[tuple[Task, Run, Result]]) -> None:
        """Record the outcomes of ``finished`` in one append, then acknowledge each (events, overlap marks),
        then start what was queued behind them."""
        now = self.clock.now()
        done: list[Run] = []
        encoded: list[bytes] = []  # their lines in the run ledger
        settled, lines = Settled(), self._lines
        # The changes of a result that settles every run alike (a batch shares one: see InboxDelivery), made once.
        shared: tuple[Result, dict[str, Any]] | None = None
        for _, run, result in finished:
            if shared is not None and shared[0] is result:
                changes = shared[1]
            else:
                changes = _settled(run, result, now)
                if result.started_at is not None and result.outcome != "pending":
                    shared = (result, changes)  # nothing of the run in them
            # As model_copy(update=...) would make it, in a third of the time (a herd's 10,000 outcomes
            # are copied on the event loop while the start's first clients wait: see records.revised).
            outcome = revised(run, **changes)
            started = lines.pop(run.run_id, None)
            line = started[1] if started is not None and started[0] is run else None  # that run's own line
            encoded.append(settled.line(run, line, outcome))
            done.append(outcome)
        try:
            await asyncio.to_thread(partial(self.ledger.record_many, done, handed_over=True, lines=encoded))
        except OSError as exc:
            # The runs stay in flight in the ledger; after a restart they read as interrupted, never delivered.
            error = f"cannot write the run ledger {self.ledger.path}: {exc.strerror or exc}"
            self._write_failed(error)
            log.error("%s; the outcomes of %d run(s) are not recorded", error, len(done))
        finally:
            running, publish = self.running, self.events.publish if self.events.subscribers else None
            for (task, run, _), outcome in zip(finished, done, strict=True):
                if running.get(task.id) == run.run_id:
                    del running[task.id]
                if publish is not None:  # else nobody to tell (mostly): 10,000 calls for nothing in a herd
                    publish(
                        "run_pending" if outcome.awaiting else "run_finished",
                        run_id=run.run_id,
                        task_id=task.id,
                        outcome=outcome.outcome,
                        reason=outcome.reason,
                        exit_code=outcome.exit_code,
                    )
        await self._start_queued([task for task, _, _ in finished])

    async def _start_queued(self, tasks: list[Task]) -> None:
        """Start the next queued run of each of ``tasks`` that is no longer running, recorded in one append."""
        now = self.clock.now()
        starting: list[tuple[Task, Run]] = []
        for task in tasks:
            queue = self.queues.get(task.id)
            if queue and task.id not in self.running:
                queued = queue.popleft()
                latest = self.book.find(task.id) or task
                starting.append(
                    (latest, queued.model_copy(update={"dispatched_at": now, "outcome": None, "reason": None}))
                )
                self.running[task.id] = queued.run_id  # held until started: a second finish must not take it
        if not starting:
            return
        try:
            await asyncio.to_thread(partial(self.ledger.record_many, [run for _, run in starting], handed_over=True))
        except OSError as exc:
            error = f"cannot write the run ledger {self.ledger.path}: {exc.strerror or exc}"
            self._write_failed(error)
            log.error("%s; %d queued run(s) not started", error, len(starting))
            for task, run in starting:
                if self.running.get(task.id) == run.run_id:
                    del self.running[task.id]
            return
        for task, run in starting:
            self.start(task, run)
