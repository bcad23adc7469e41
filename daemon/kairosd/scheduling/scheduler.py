"""The scheduler: the loop that fires tasks on time, records every run, hands fires to targets.

What to do with due and missed fires (catch-up, grace window, overlap) is
decided in :mod:`kairosd.scheduling.firing`, which is pure; deliveries run in
:mod:`kairosd.scheduling.dispatch`. This module keeps the plan, sleeps and wakes, records
each decision and keeps the store's anchors in step with the run ledger.

How it keeps time:

* Each task has one planned fire in a heap. The loop sleeps until the earliest
  one, or at most ``max_sleep_s`` (30 s), or until woken by a change. So with
  nothing due it wakes twice a minute whatever the number of tasks.
* Every wake compares wall-clock progress with monotonic progress. A forward
  difference beyond ``jump_threshold_s`` means the machine slept or the clock
  was stepped: fires that fell in between are *missed* and follow their task's
  catch-up policy, exactly as at start-up. A backward jump needs nothing: fires
  are anchored on the last handled slot, so none repeats.
* Missed fires cost work per task, not per missed slot: they are counted, not
  listed (:func:`kairosd.scheduling.firing.due_slots`). After a long stop (or
  suspend) every task is due at once; the pass decides and records them
  ``PASS_CHUNK`` at a time, and starts their deliveries and writes the store
  only once all are recorded. At start-up this happens in the loop's first
  tick, after the daemon said READY=1 (:meth:`Scheduler.start`).
* A fire is recorded in the run ledger (one small fsynced append) before it is
  handed to its target, so a crash can lose a delivery but never repeat one;
  the run then shows as failed ("interrupted"), never as delivered, unless its
  inbox item was written (:mod:`kairosd.scheduling.settle`). The runs started in
  one pass go to a batching target (the inbox) together: one write and one
  fsync for all their items, one for all their outcomes (see
  :mod:`kairosd.scheduling.dispatch`). The task's
  new anchor goes to the store right after, in the background: until then the
  ledger is the record (:mod:`kairosd.scheduling.anchors`).
* When the run ledger cannot be written nothing fires (a fire that cannot be
  recorded could repeat); each tick, at least every ``store_retry_s``, tries
  again. When only the store cannot be written, fires still go out (the ledger
  records them) while changes through the API are refused; the store is
  retried at the same pace. ``status()`` names the problem meanwhile.

Everything that reads time goes through the injected clock, so tests drive
:meth:`Scheduler.tick` on a fake clock without sleeping.

Must not import the server, the CLI, or concrete delivery targets.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.errors import StoreError, UsageError
from kairosd.core.events import EventBus
from kairosd.core.models import Target, Task
from kairosd.core.plan import Fire, fire_for, scheduled_after
from kairosd.core.records import MissedRecord, Run
from kairosd.delivery.base import Delivery
from kairosd.scheduling import broken
from kairosd.scheduling.anchors import RELEASE_WAIT_S, Anchors
from kairosd.scheduling.dispatch import Dispatcher
from kairosd.scheduling.firing import (
    NOT_RUNNING,
    Decision,
    Due,
    FireBounds,
    clock_jump_reason,
    decide,
    decide_disabled,
    due_slots,
    due_slots_at,
    fire_now,
    records_lines,
    stopped_unstarted,
)
from kairosd.scheduling.ledger import Compacting, MissedLedger, RunLedger
from kairosd.scheduling.taskbook import TaskBook
from kairosd.system import gcpause

log = logging.getLogger(__name__)

# Remembered first-fire-after answers (see Scheduler.next_fire); cleared when full.
_FIRST_AFTER_CACHE = 4096
# A pass decides and records at most this many tasks at a time (two fsynced appends each time). After a
# long stop every task is due at once: one decision for 10,000 tasks held 20,000 records, and their JSON,
# in memory together.
PASS_CHUNK = 1000


# The lines of a list of records, one each in order (see Decision.lines_of).
_LinesOf = Callable[[list[Any]], list[bytes]]


# A tick whose heap holds more entries than this and all of them due sorts them rather than pop each.
_SORT_DUE_FROM = 64


def _popped_while(heap: list[tuple[datetime, int, str]], now: datetime) -> Iterable[tuple[datetime, int, str]]:
    """The entries of ``heap`` planned at or before ``now``, popped one by one, earliest first."""
    while heap and heap[0][0] <= now:
        yield heapq.heappop(heap)


@dataclass(frozen=True)
class SchedulerConfig:
    max_sleep_s: float = 30.0
    jump_threshold_s: float = 5.0
    catch_up_grace: timedelta = timedelta(days=7)
    catch_up_max: int = 10
    queue_limit: int = 10
    max_concurrent: int = defaults.MAX_CONCURRENT
    disabled_reason: str | None = None
    store_retry_s: float = 5.0
    # Anchors reach the store this long after a fire at most, so a burst of fires shares one write.
    persist_delay_s: float = 0.5


class Scheduler:
    def __init__(
        self,
        book: TaskBook,
        ledger: RunLedger,
        missed: MissedLedger,
        deliveries: Mapping[str, Delivery],
        clock: Clock,
        events: EventBus,
        config: SchedulerConfig | None = None,
        compacting: Sequence[Compacting] = (),
    ) -> None:
        self.book = book
        self.ledger = ledger
        self.missed = missed
        # Logs whose compaction waits for the end of a pass (see _pass): the ledgers, and ``compacting``
        # (the inbox, which a herd's deliveries write to).
        self._compacting: tuple[Compacting, ...] = (ledger, missed, *compacting)
        self.deliveries = dict(deliveries)
        self.clock = clock
        self.events = events
        self.config = config or SchedulerConfig()
        self._limits = FireBounds(self.config.catch_up_grace, self.config.catch_up_max, self.config.queue_limit)
        self._heap: list[tuple[datetime, int, str]] = []
        self._next: dict[str, Fire] = {}
        self._seq = itertools.count()
        self._dispatch = Dispatcher(
            book, ledger, self.deliveries, clock, events, self.config.max_concurrent, self._write_failed
        )
        self._running = self._dispatch.running  # task id -> run id in flight
        self._wake = asyncio.Event()
        self._last: tuple[datetime, float] | None = None
        self._started = False
        self.last_jump: dict[str, Any] | None = None
        self.wakeups = 0
        # Why the last append to the run ledger failed; None when it works.
        self.write_error: str | None = None
        # Unjittered first fire after an anchor, by schedule: (cron, at, tz, anchor) -> Fire (see next_fire).
        self._first_after: dict[tuple[str | None, datetime | None, str, datetime], Fire | None] = {}
        self._anchors = Anchors(book, ledger, events, self.config.persist_delay_s, self._replan, self._set_aside)
        # Why fires were missed, for tasks whose pass the run ledger refused, or whose catch-up waits
        # for the loop's first tick (see start): task id -> reason.
        self._unrecorded: dict[str, str] = {}
        # The fires the last pass took off the heap, earliest first, and how many of them are decided
        # (see _earliest): a pass over 10,000 tasks takes seconds, and status() is asked meanwhile.
        self._popped: list[tuple[str, Fire]] = []
        self._undecided = 0
        # Set once a tick has run: the start's deferred catch-up (see start) is decided by then. Work that
        # can wait (the daemon's encode-ahead) waits for it rather than take CPU from the catch-up.
        self.ticked = asyncio.Event()
        # When the loop had first decided every fire due before it started (a long absence's catch-up), by
        # the clock; None until then (status says so: a client learns it without polling next_fire).
        self.caught_up_at: datetime | None = None
        # Work that follows a pass once its deliveries' writes are done (see _compact_after); drain waits for it.
        self._background: set[asyncio.Task[None]] = set()

    # ---- planning -------------------------------------------------------

    def next_fire(self, task: Task) -> Fire | None:
        """The next planned fire of ``task`` after its anchor (None when paused or done)."""
        # The task's fields from its dict: each read as an attribute goes through pydantic's __getattr__ hook
        # (a few times a plain attribute's cost; every task is planned again after a catch-up pass).
        fields = task.__dict__
        if fields["paused"]:
            return None
        anchor = self._anchors.anchor(task)
        key = (fields["cron"], fields["at"], fields["tz"], anchor)
        try:
            plain = self._first_after[key]
        except KeyError:
            # Tasks with the same schedule and the same last slot (or creation time) share the answer:
            # 10,000 tasks are planned at start-up with one calendar walk per distinct schedule.
            scheduled = next(iter(scheduled_after(task, anchor)), None)
            plain = None if scheduled is None else Fire(scheduled, scheduled)
            if len(self._first_after) >= _FIRST_AFTER_CACHE:
                self._first_after.clear()
            self._first_after[key] = plain
        if plain is None:
            return None
        if fields["jitter"] == "none":
            # What fire_for gives without jitter, minus its work. Fire is frozen, so tasks with the same
            # schedule and anchor share one: tracemalloc at start with 10,000 tasks showed 0.86 MB of
            # Fire objects, one per task, before they were shared.
            return plain
        return fire_for(task, plain.scheduled_for)

    def schedule(self, task: Task, wake: bool = True) -> None:
        """(Re)plan ``task`` and wake the loop (unless ``wake`` is false); call after any change to it."""
        if self._schedule_each((task,)) and wake:
            self._wake.set()

    def _schedule_each(self, tasks: Iterable[Task]) -> int:
        """Plan each of ``tasks`` (a pass's chunk: 1,000, in one loop) without waking the loop; how many were
        planned (or found to have no next fire) rather than set aside."""
        next_fire, planned, heap, seq, done = self.next_fire, self._next, self._heap, self._seq, 0
        for task in tasks:
            task_id = task.id  # read once (pydantic's __getattr__ hook: see next_fire)
            try:
                fire = next_fire(task)
            except Exception as exc:
                self._set_aside(task_id, "plan", exc)
                continue
            if fire is None:
                planned.pop(task_id, None)
            else:
                planned[task_id] = fire
                heapq.heappush(heap, (fire.planned_for, next(seq), task_id))
            done += 1
        return done

    def _set_aside(self, task_id: str, stage: str, exc: BaseException, slot: datetime | None = None) -> None:
        """Pause one task whose planning, firing or expiry raised (see :mod:`.broken`); the rest go on."""
        broken.set_aside(self.book, self.ledger, self.events, self.clock.now, task_id, stage, exc, slot)
        self._next.pop(task_id, None)
        self._unrecorded.pop(task_id, None)
        self._anchors.persist()

    def _replan(self, task_id: str, wake: bool = True) -> None:
        """Plan ``task_id`` as the book holds it now (after a pass, or a rolled-back store write)."""
        task = self.book.find(task_id)
        if task is None:
            self.unschedule(task_id)
        else:
            self.schedule(task, wake)

    def _replan_many(self, task_ids: list[str]) -> None:
        """:meth:`_replan` of each of ``task_ids`` (a pass's chunk, 1,000 tasks), waking the loop once."""
        find, tasks = self.book.find, []
        for task_id in task_ids:
            task = find(task_id)
            if task is None:
                self.unschedule(task_id)
            else:
                tasks.append(task)
        self._schedule_each(tasks)
        if task_ids:  # a pass with nothing due plans nothing: the loop, woken, would tick again at once
            self._wake.set()

    def unschedule(self, task_id: str) -> None:
        self._next.pop(task_id, None)
        self._unrecorded.pop(task_id, None)
        self._wake.set()

    def is_running(self, task_id: str) -> bool:
        """Whether a run of ``task_id`` is in flight now (listings show it)."""
        return task_id in self._running

    def planned(self, task_id: str) -> Fire | None:
        return self._next.get(task_id)

    # ---- the loop -------------------------------------------------------

    @property
    def disabled_reason(self) -> str | None:
        return self.config.disabled_reason

    async def start(self, defer_catch_up: bool = False) -> None:
        """Catch the store up with the run ledger, plan every task, and handle what was
        missed while kairosd was not running. Call after the ledger is loaded.

        With ``defer_catch_up`` the missed fires are left for the loop's first
        tick (:meth:`run`): the daemon tells systemd it is ready first, so no
        absence, however long, delays READY=1.
        """
        begun = self.clock.now()
        self._last = (begun, self.clock.monotonic())
        self._anchors.recover()
        await self.admit(self.book, NOT_RUNNING, defer=defer_catch_up)
        await self._anchors.persist_now()
        self._started = True
        self._note_caught_up(begun)  # nothing was due (or it was decided above); else the first tick

    async def admit(self, tasks: Iterable[Task], missed_reason: str, defer: bool = False) -> None:
        """Plan tasks new to the loop: every task at start, or tasks just imported.

        Fires already due were missed (``missed_reason`` says why) and follow each
        task's catch-up policy: the one rule for a restart and for an import. With
        ``defer`` they are planned as due now, with their reason kept, and the
        next tick decides them.
        """
        now = self.clock.now()
        due: list[Task] = []
        planned = self._heap
        seq, firing = self._seq, self.disabled_reason is None
        for task in tasks:
            # One next-fire computation per task: 10,000 tasks are planned in a fraction of a second.
            try:
                fire = self.next_fire(task)
            except Exception as exc:
                self._set_aside(task.id, "plan", exc)
                continue
            if fire is None:
                continue
            if fire.planned_for <= now and firing:
                # Missed while kairosd was not running: the pass below (or the next tick) handles it.
                if not defer:
                    due.append(task)
                    continue
                self._unrecorded[task.id] = missed_reason
            self._next[task.id] = fire
            planned.append((fire.planned_for, next(seq), task.id))
        heapq.heapify(planned)  # one O(n) heapify rather than a push per task
        self._wake.set()
        if due:
            await self._pass(now, missed_reason=missed_reason, tasks=due)
            for task in due:
                current = self.book.find(task.id)
                if current is not None:
                    self.schedule(current)

    def _detect_jump(self, now: datetime) -> float:
        mono = self.clock.monotonic()
        drift = 0.0
        if self._last is not None:
            last_wall, last_mono = self._last
            drift = ((now - last_wall).total_seconds()) - (mono - last_mono)
        self._last = (now, mono)
        return drift

    async def tick(self) -> float:
        """Handle everything due now; return the seconds to sleep before the next tick."""
        self.wakeups += 1
        self._wake.clear()
        now = self.clock.now()
        drift = self._detect_jump(now)
        missed_reason = None
        if abs(drift) > self.config.jump_threshold_s:
            direction = "forward" if drift > 0 else "back"
            self.last_jump = {"at": now.isoformat(), "drift_s": round(drift, 3)}
            log.warning("wall clock jumped %s by %.1fs (suspend or clock change)", direction, abs(drift))
            self.events.publish("clock_jump", drift_s=round(drift, 3))
            if drift > 0:
                missed_reason = clock_jump_reason(drift)
        try:
            if self.disabled_reason is None:
                await self._pass(now, missed_reason=missed_reason)
            else:
                await self._pass_disabled(now)
            if self.caught_up_at is None:
                self._note_caught_up(now)
        finally:
            self.ticked.set()
        if self.book.error is not None:
            self._anchors.persist()  # try the store again (at most every store_retry_s, see _sleep_for)
        return self._sleep_for(self.clock.now())

    def _note_caught_up(self, now: datetime) -> None:
        """Set :attr:`caught_up_at` if no fire planned at or before ``now`` (the tick's) waits any more: the
        ones due then were decided and recorded (a refused run ledger leaves them due: not caught up)."""
        earliest = self._earliest()
        if earliest is None or earliest[1].planned_for > now:
            self.caught_up_at = self.clock.now()

    def _sleep_for(self, now: datetime) -> float:
        cap = self.config.max_sleep_s
        if self.write_error is not None:
            # Due fires wait for the ledger; retry it at this pace rather than spin on them.
            return min(cap, self.config.store_retry_s)
        if self.book.error is not None:
            cap = min(cap, self.config.store_retry_s)
        earliest = self._earliest()
        return cap if earliest is None else max(0.0, min(cap, (earliest[1].planned_for - now).total_seconds()))

    def _earliest(self) -> tuple[str, Fire] | None:
        """The task planned soonest and its fire: one the pass under way has yet to decide, else the
        heap's top (every other planned fire is in it)."""
        heap, planned_now, popped = self._heap, self._next, self._popped
        while self._undecided < len(popped):
            task_id, fire = popped[self._undecided]
            if planned_now.get(task_id) is fire:
                return task_id, fire  # still due: popped in order, so the earliest
            self._undecided += 1  # decided and planned again (or gone)
        while heap:
            planned, _, task_id = heap[0]
            current = planned_now.get(task_id)
            if current is None or current.planned_for != planned:
                heapq.heappop(heap)  # stale entry: the task changed or went
                continue
            return task_id, current
        return None

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set."""
        while not stop.is_set():
            try:
                delay = await self.tick()
            except Exception:
                # Each task's failures are handled where they happen (set aside); this is the last guard.
                log.exception("a scheduler pass failed; trying again in %gs", self.config.store_retry_s)
                delay = min(self.config.max_sleep_s, self.config.store_retry_s)
            if self.write_error is not None:
                self._wake.clear()  # replanning after a failed write must not turn into a busy loop
            if delay > 0 and not self._wake.is_set():
                waiter = asyncio.ensure_future(self._wake.wait())
                stopper = asyncio.ensure_future(stop.wait())
                await asyncio.wait({waiter, stopper}, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stopper.cancel()

    # ---- deciding -------------------------------------------------------

    def _pop_due(self, now: datetime) -> list[Task]:
        due: list[Task] = []
        seen: set[str] = set()
        popped: list[tuple[str, Fire]] = []
        heap, planned_now, find = self._heap, self._next, self.book.find
        entries: Iterable[tuple[datetime, int, str]]
        if len(heap) > _SORT_DUE_FROM and heap[-1][0] <= now and max(heap[len(heap) // 2 :])[0] <= now:
            # Every entry is due (its latest is among the heap's leaves): after a long stop, every task. One
            # sort gives them in the order the pops would (the entries are unique: each has its own number).
            entries = sorted(heap)
            heap.clear()
        else:
            entries = _popped_while(heap, now)
        for planned, _, task_id in entries:
            current = planned_now.get(task_id)
            if current is None or current.planned_for != planned or task_id in seen:
                continue
            task = find(task_id)
            if task is not None:
                seen.add(task_id)
                due.append(task)
                popped.append((task_id, current))
        # Out of the heap but still planned until decided: status() finds them here meanwhile.
        self._popped, self._undecided = popped, 0
        return due

    async def _pass_disabled(self, now: datetime) -> None:
        """The kill switch is on: record what comes due as missed, saying why (see ``decide_disabled``)."""
        tasks = self._pop_due(now)
        grace, most = self.config.catch_up_grace, self.config.catch_up_max
        due = [due_slots(task, self._anchors.anchor(task), now, grace, most) for task in tasks if not task.paused]
        due = [item for item in due if item.count]
        await self._commit(decide_disabled(due, now, f"firing was disabled ({self.disabled_reason})"))
        for task in tasks:
            self._replan(task.id)

    async def _pass(self, now: datetime, missed_reason: str | None, tasks: list[Task] | None = None) -> None:
        if tasks is None:
            tasks = self._pop_due(now)
        if not tasks:
            await self._pass_some(now, missed_reason, tasks)
            return
        # The run ledger compacts once the pass's outcomes are durable, not inside one of its appends
        # (a rewrite of every run kept: seconds at 10,000 tasks, in one herd of every 25 or so); the
        # missed ledger and the inbox too (a 10k pass made the missed ledger due three times over).
        for log_ in self._compacting:
            log_.hold_compaction()
        try:
            await self._pass_held(now, missed_reason, tasks)
        finally:
            self._compact_after(asyncio.ensure_future(self._dispatch.batches_settled()))

    def _compact_after(self, settled: asyncio.Future[None]) -> None:
        """End the pass's hold on compaction once ``settled`` is done (at most RELEASE_WAIT_S later)."""

        async def release() -> None:
            held = list(self._compacting)  # each released exactly once, whatever happens
            try:
                with contextlib.suppress(Exception):  # what it waits for reports its own failures; a timeout
                    await asyncio.wait_for(asyncio.shield(settled), RELEASE_WAIT_S)
                while held:
                    log_ = held.pop(0)
                    if log_.compaction_due:
                        await asyncio.to_thread(log_.release_compaction)  # a rewrite of the whole file
                    else:
                        log_.release_compaction()
            except asyncio.CancelledError:
                for log_ in held:
                    log_.release_compaction(compact=False)  # stopping: the next append compacts
                raise

        handle = asyncio.ensure_future(release())
        self._background.add(handle)
        handle.add_done_callback(self._background.discard)

    async def _pass_held(self, now: datetime, missed_reason: str | None, tasks: list[Task]) -> None:
        if len(tasks) <= PASS_CHUNK:
            await self._pass_some(now, missed_reason, tasks)
            return
        # A big pass (every task after a long stop) is decided and recorded before its deliveries start
        # and before the store is written: both would compete with it, and the loop be behind for longer.
        # Each chunk is decided while the one before is written to the run ledger (its tasks are others,
        # so its decisions do not depend on that write): ten fsyncs and thread round trips a 10k herd
        # no longer wait one after another. A chunk takes effect only once its own write is done.
        self._dispatch.hold()
        self._anchors.hold()
        # No cycle collections meanwhile: the pass makes some 100,000 objects and no cycles, and each full
        # collection walks them all (15% of the CPU of a pass over 10,000 tasks back after 7 days).
        gcpause.pause()  # until the pass's group commits are done (see kairosd.system.gcpause)
        ahead: tuple[list[Due], Decision, asyncio.Future[None] | None] | None = None
        decision: Decision | None = None
        try:
            for first in range(0, len(tasks), PASS_CHUNK):
                due = self._due(tasks[first : first + PASS_CHUNK], now)
                # Each chunk's groups of tasks (most of them, after a long stop, one group) share the plans and
                # prototypes of the chunk before: laid out once per pass.
                decision = self._decide(due, now, missed_reason, decision)
                if ahead is not None:
                    settling, ahead = ahead, None
                    if not await self._settle(*settling, missed_reason):
                        # The run ledger refused: the rest (this chunk too) would be refused. Keep why they were missed.
                        for task in tasks[first:]:
                            self._keep_reason(task.id, missed_reason, recorded=False)
                            self._replan(task.id)
                        return
                ahead = (due, decision, self._record(decision))
            if ahead is not None:
                settling, ahead = ahead, None
                await self._settle(*settling, missed_reason)
        finally:
            if ahead is not None:
                # Something raised while a chunk was being written: what the ledger holds must still take
                # effect (its anchors above all), or its fires would be decided again.
                with contextlib.suppress(Exception):
                    await self._settle(*ahead, missed_reason)
            self._dispatch.release()
            # The store follows once the pass's group commits are done, not in the middle of them: its
            # write (the whole store) only delayed the herd's last outcome. The run ledger holds the anchors.
            # The collector comes back then too (or when the anchors stop waiting: see Anchors.release).
            settled = asyncio.ensure_future(self._dispatch.batches_settled())
            settled.add_done_callback(lambda _: gcpause.resume())
            self._anchors.release(after=settled)

    async def _pass_some(self, now: datetime, missed_reason: str | None, tasks: list[Task]) -> bool:
        """Decide, record and start the due fires of ``tasks``; False when the run ledger refused them."""
        due = self._due(tasks, now)
        return await self._settle(due, self._decide(due, now, missed_reason), None, missed_reason)

    async def _settle(
        self, due: list[Due], decision: Decision, writing: asyncio.Future[None] | None, missed_reason: str | None
    ) -> bool:
        """Commit ``decision`` (its runs being written by ``writing``, if given) and plan its tasks again."""
        recorded = await self._commit(decision, writing)
        pending = self._unrecorded
        task_ids = [item.task.id for item in due]  # each read once (pydantic's __getattr__ hook: see next_fire)
        if not recorded:
            for task_id in task_ids:
                self._keep_reason(task_id, missed_reason, recorded)
        elif pending:  # recorded: no reason is kept for these tasks any more (see _keep_reason)
            for task_id in task_ids:
                pending.pop(task_id, None)
        self._replan_many(task_ids)
        return recorded

    def _keep_reason(self, task_id: str, missed_reason: str | None, recorded: bool) -> None:
        pending = self._unrecorded
        reason = missed_reason or pending.get(task_id)
        if recorded or reason is None:
            pending.pop(task_id, None)
        else:
            # Decided again next tick: keep why these fires were missed, or they would pass as late.
            pending[task_id] = reason

    def _due(self, tasks: list[Task], now: datetime) -> list[Due]:
        """The due fires of each task; a task whose fires cannot be computed is set aside."""
        due_of, anchor = due_slots_at(now, self.config.catch_up_grace, self.config.catch_up_max), self._anchors.anchor
        return broken.each_due(tasks, lambda task: due_of(task, anchor(task)), self._set_aside)

    def _decide(
        self, due: list[Due], now: datetime, missed_reason: str | None, shared: Decision | None = None
    ) -> Decision:
        """One decision for the pass (``shared``: the pass's previous chunk's, see :func:`decide`); the tasks
        whose decision raises are set aside."""
        in_flight, pending, limits = self._dispatch.in_flight(), self._unrecorded, self._limits
        return broken.decide_each(
            due, lambda items: decide(items, now, missed_reason, limits, in_flight, pending, shared), self._set_aside
        )

    # ---- recording and delivering --------------------------------------

    def _record(self, decision: Decision) -> asyncio.Future[None] | None:
        """Start writing the decision's missed records, then its runs to the run ledger, in one trip to a
        thread (None: no runs to write). On a loaded machine each trip waits its turn for a CPU."""
        if not decision.runs:
            return None
        return asyncio.ensure_future(asyncio.to_thread(self._write, decision.runs, decision.missed, decision.lines_of))

    async def _commit(self, decision: Decision, writing: asyncio.Future[None] | None = None) -> bool:
        """Record the decision's runs (the commit point), apply its anchors, start its deliveries.

        ``writing``: the write of its runs, already started (:meth:`_record`); else it starts here.
        False when the run ledger could not be written: then nothing was
        delivered and no anchor moved, so the same fires are due again at the
        next tick. The store is written in the background (:meth:`Anchors.persist`).
        """
        if writing is None:
            writing = self._record(decision)
        if writing is not None:
            try:
                await writing
            except OSError as exc:
                self.write_error = f"cannot write the run ledger {self.ledger.path}: {exc.strerror or exc}"
                log.error("%s; %d fire(s) not delivered, retried later", self.write_error, len(decision.start))
                return False
            if self.write_error is not None:
                log.warning("the run ledger is writable again; firing resumes")
                self.write_error = None
        elif decision.missed:
            await asyncio.to_thread(self._add_missed, decision.missed, decision.lines_of)
        # Told only once recorded: a pass the run ledger refuses is decided again next tick, and
        # telling it then as well would run the scheduled_task_missed hooks once per refused tick.
        self._tell_missed(decision.missed)
        self._anchors.advance(decision.advances)
        for task, run in decision.queue:
            self._dispatch.enqueue(task, run)
        self._dispatch.start_many(decision.start, decision.lines)  # each outcome's line is its run's, spliced
        return True

    def _write(
        self, runs: list[Run], missed: list[MissedRecord] | None = None, lines_of: _LinesOf = records_lines
    ) -> None:
        """Append ``missed`` (see :meth:`_add_missed`), then the runs the scheduler made and hands over;
        ``lines_of`` gives the lines of a list of records (a decision knows most of them already:
        :meth:`Decision.lines_of`).

        Missed records first: the runs are the commit point (they move the anchors at the next start), so
        a kill between the two appends must leave the runs unwritten, never the summaries. The pass is
        then decided again, and its missed records, whose ids come from the task and its first missed
        slot (:func:`~kairosd.core.records.missed_id`), replace the ones written. An OSError from the
        run ledger is raised (the pass is retried; its missed records are already listed, and will be
        replaced the same way).

        After this the scheduler reads the runs (to deliver, to queue), never changes them (a later
        state is a copy), so the ledger keeps them rather than copies.
        """
        if missed:
            self._add_missed(missed, lines_of)
        self.ledger.record_many(runs, handed_over=True, lines=lines_of(runs))

    def _add_missed(self, records: list[MissedRecord], lines_of: _LinesOf = records_lines) -> None:
        """Add ``records`` to the missed ledger (before their runs are recorded); a failure is logged."""
        try:
            self.missed.add(records, handed_over=True, lines=lines_of(records))
        except OSError as exc:
            # The run ledger has the misses too (as missed runs); this ledger is the summary.
            log.warning("cannot write the missed ledger %s: %s", self.missed.path, exc.strerror or exc)

    def _tell_missed(self, records: list[MissedRecord]) -> None:
        """Publish a ``missed`` event per record (their runs are recorded)."""
        if not self.events.subscribers:
            return  # nobody listens: a pass after a long stop would dump 10,000 records for nothing
        for record in records:
            self.events.publish("missed", **record.model_dump(mode="json"))

    def _write_failed(self, error: str) -> None:
        self.write_error = error

    # ---- commands -------------------------------------------------------

    async def run_now(self, task_id: str) -> Run:
        """Fire ``task_id`` now, outside its schedule (the schedule is unchanged)."""
        task = self.book.get(task_id)
        now = self.clock.now()
        decision, run = fire_now(task, now, self._limits, self._dispatch.in_flight())
        if not await self._commit(decision):
            raise StoreError(self.write_error or "the run could not be recorded")
        return run

    async def drain(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bound, not a cancel scope
        """Wait for in-flight deliveries (and what is queued behind them) and background writes."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        self._anchors.flush()
        inflight, writing, background = self._dispatch.inflight, self._anchors.writing, self._background
        while inflight or writing or background:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(inflight | writing | background, timeout=remaining)
        return True

    async def shutdown(self, grace_s: float) -> None:
        """Stop firing: what has not started is recorded at once, what is in flight gets ``grace_s``.

        Runs waiting for a delivery slot or queued behind a running one are not
        waited for (after a herd they can be thousands): each is recorded missed
        ("interrupted") and their fires are surfaced as missed, in one append.
        The deliveries in flight then have ``grace_s`` to finish; after that the
        targets are closed and what is still in flight is cancelled, each
        recording what it knows (an inbox item already written is delivered).
        """
        now = self.clock.now()
        stopped = stopped_unstarted(self._dispatch.take_waiting(), now)
        if stopped.runs:
            log.info("kairosd stopping: %d run(s) not started are recorded as missed", len(stopped.runs))
            try:
                await asyncio.to_thread(self._write, stopped.runs, stopped.missed)
            except OSError as exc:
                # They stay dispatched or queued in the ledger: the next start marks them interrupted or skipped.
                log.error("cannot write the run ledger %s: %s", self.ledger.path, exc.strerror or exc)
            else:
                self._tell_missed(stopped.missed)
                for run in stopped.runs:
                    self.events.publish(
                        "run_finished", run_id=run.run_id, task_id=run.task_id, outcome=run.outcome, reason=run.reason
                    )
        if not await self.drain(grace_s):
            for delivery in self.deliveries.values():
                await delivery.close()
            if not await self.drain(2.0):
                await self._dispatch.cancel()
        for delivery in self.deliveries.values():
            await delivery.close()

    def status(self) -> dict[str, Any]:
        # From the heap, not a scan of every task: clients poll status (10,000 tasks cost 10 ms a scan).
        upcoming = self._earliest()
        return {
            "enabled": self.disabled_reason is None,
            "disabled_reason": self.disabled_reason,
            "tasks": len(self.book),
            "paused": self.book.paused,
            # Not "running": `kairos daemon status --json` says {"running": true} (a boolean) for kairosd itself.
            "deliveries_running": len(self._running),
            "queued": self._dispatch.queued(),
            "next_fire": None
            if upcoming is None
            else {"task_id": upcoming[0], "planned_for": upcoming[1].planned_for.isoformat()},
            "last_clock_jump": self.last_jump,
            "wakeups": self.wakeups,
            "caught_up_at": None if self.caught_up_at is None else self.caught_up_at.isoformat(),
            "store_error": self.store_problem(),
        }

    def store_problem(self) -> str | None:
        """Why writes fail, and what that stops; None when they work."""
        problems = []
        if self.write_error is not None:
            problems.append(f"{self.write_error} (nothing fires until it can be written; retrying)")
        if self.book.error is not None:
            problems.append(f"{self.book.error.message} (changes are refused until it can be written; retrying)")
        return "; ".join(problems) or None

    async def check_target(self, target: Target) -> None:
        """Refuse, at add time, a target its delivery already knows would fail (see ``Delivery.check``).

        Only new tasks are checked: a stored task whose agent went away keeps its
        other fires, each failing or succeeding on its own.
        """
        kind = target.kind
        if kind not in self.deliveries:
            raise UsageError(f"unknown target kind {kind!r} (available: {', '.join(sorted(self.deliveries))})")
        check = getattr(self.deliveries[kind], "check", None)
        if check is not None:
            await check(target)
