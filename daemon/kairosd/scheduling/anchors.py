"""Keeping each task's anchor in the store in step with the run ledger (write-ahead log style).

A task's anchor is its last handled slot (``last_scheduled_for``): fires are
planned after it, so no slot is handled twice. The scheduler records a fire in
the run ledger (one small fsynced append) and only then moves the anchor; the
store gets the new anchor in the background (group commit, within
``persist_delay_s``), so a fire never waits for a rewrite of a store of 10,000
tasks. Until that write is durable the ledger is the record, and this module
keeps it that way:

* :meth:`Anchors.anchor` is the later of the store's anchor and the ledger's;
* :meth:`Anchors.recover` (at start) moves any anchor the store lost in a crash
  up to the ledger's;
* after a store write that failed and was rolled back, the ledger's anchors are
  applied again (they are durable there and must never be fired twice) and the
  next write takes them along;
* a store that cannot be written is retried by :meth:`Anchors.persist`, which
  the scheduler calls at its retry pace.

Must not import the scheduler, the server, the CLI or delivery targets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime

from kairosd.core.errors import StoreError
from kairosd.core.events import EventBus
from kairosd.core.models import Task
from kairosd.core.plan import Fire
from kairosd.core.records import Outcome
from kairosd.scheduling.firing import Advance, advanced
from kairosd.scheduling.ledger import RunLedger
from kairosd.scheduling.taskbook import TaskBook

# The scheduler's name: these lines are part of what it reports about fires.
log = logging.getLogger("kairosd.scheduling.scheduler")

# How long a release waits for what it was given (see Anchors.release) at most: the store must not
# lag the run ledger for long because a delivery's write hangs.
RELEASE_WAIT_S = 10.0


class Anchors:
    def __init__(
        self,
        book: TaskBook,
        ledger: RunLedger,
        events: EventBus,
        persist_delay_s: float,
        replan: Callable[[str], None],
        on_broken: Callable[[str, str, BaseException, datetime | None], None] | None = None,
    ) -> None:
        """``replan`` is called with the id of each task a rolled-back store write changed back;
        ``on_broken(task_id, stage, exc, slot)`` when moving one task's anchor raises (it is set aside)."""
        self.book = book
        self.ledger = ledger
        self.events = events
        self.persist_delay_s = persist_delay_s
        self._replan = replan
        self._on_broken = on_broken
        # Anchors recorded in the run ledger that the store may not hold yet:
        # task id -> (the fire handled, when, whether it fired).
        self._handled: dict[str, tuple[Fire, datetime, bool]] = {}
        self.writing: set[asyncio.Task[None]] = set()  # the background store write, while it runs
        self._flush = asyncio.Event()  # set: write the book now rather than after persist_delay_s
        self._wanted = False
        self._holds = 0  # hold() calls not yet released: nothing is written meanwhile
        book.on_rollback.append(self._rolled_back)

    def anchor(self, task: Task) -> datetime:
        """The slot ``task`` was last handled for, by the store or (if later) by the run ledger."""
        fields = task.__dict__  # one read through pydantic's __getattr__ hook, not three (see Scheduler.next_fire)
        anchor = fields["last_scheduled_for"] or fields["created_at"]
        handled = self._handled.get(fields["id"])
        return anchor if handled is None or handled[0].scheduled_for <= anchor else handled[0].scheduled_for

    def recover(self) -> None:
        """Apply anchors the run ledger has and the store lost (kairosd died before writing it)."""
        latest = self.ledger.latest_scheduled()
        recovered = 0
        for task in self.book:
            run = latest.get(task.id)
            if run is None or run.scheduled_for <= (task.last_scheduled_for or task.created_at):
                continue
            fire = Fire(run.scheduled_for, run.planned_for)
            when = run.dispatched_at or run.finished_at or run.planned_for
            fired = run.outcome is not Outcome.MISSED
            self._handled[task.id] = (fire, when, fired)
            self._apply(task, fire, when, fired)
            recovered += 1
        if recovered:
            log.warning("%d task(s) had fires recorded in the run ledger but not in the store; caught up", recovered)

    def advance(self, advances: Iterable[Advance]) -> None:
        """Move the anchors of fires the run ledger now holds; the store follows in the background."""
        # One move per task: a pass moves a task past its misses, then past the fire that catches up;
        # the newest slot is where it ends, fired if any of them was. Each move copies the task.
        newest: dict[str, Advance] = {}
        first = newest.setdefault
        for item in advances:
            seen = first(item.task.id, item)
            if seen is item:
                continue  # most tasks move once: no copy of the tuple for them
            if seen.fire.scheduled_for > item.fire.scheduled_for:
                item, seen = seen, item
            # The catch-up fire after a task's misses is the newer, and fired: it stays as it is.
            newest[item.task.id] = item if item.fired or not seen.fired else item._replace(fired=True)
        handled, apply = self._handled, self._apply
        # The task ids are the keys: a task's fields are read through pydantic's __getattr__ hook, several
        # times slower than a plain attribute (10,000-20,000 moves a catch-up pass).
        for task_id, (task, fire, when, fired) in newest.items():
            known = handled.get(task_id)
            if known is None or known[0].scheduled_for < fire.scheduled_for:
                handled[task_id] = (fire, when, fired)
            apply(task, fire, when, fired, task_id)
        if newest:
            self.persist()

    def _apply(self, task: Task, fire: Fire, now: datetime, fired: bool, task_id: str | None = None) -> None:
        """Move the task's anchor past ``fire``; remove one-shots and expired tasks. ``task_id``: the task's
        id, when the caller has it."""
        if task_id is None:
            task_id = task.id
        current = self.book.find(task_id)
        if current is None:
            return
        try:
            updated, removal = advanced(current, fire, now, fired)
        except Exception as exc:  # one task's values (an expiry past year 9999, say) must not stop the loop
            if self._on_broken is None:
                raise
            self._on_broken(task_id, "expire" if fired else "advance", exc, fire.scheduled_for)
            return
        if removal is None:
            self.book.put_moved(task_id, updated, current)
            return
        self.book.remove(task.id)
        self.events.publish("task_removed", task_id=task.id, reason=removal)
        if removal == "expired":
            self.events.publish("expired", task_id=task.id, task_name=task.name)

    def _rolled_back(self, task_ids: set[str]) -> None:
        """The book undid unsaved changes to these tasks (a failed write): plan them as they are now.

        Anchors the run ledger already holds are applied again (they are durable
        there and must never be fired twice); the next write takes them along.
        """
        for task_id in task_ids:
            handled = self._handled.get(task_id)
            task = self.book.find(task_id)
            if handled is not None and task is not None:
                fire, when, fired = handled
                if fire.scheduled_for > (task.last_scheduled_for or task.created_at):
                    self._apply(task, fire, when, fired)
            self._replan(task_id)

    def persist(self) -> None:
        """Write the book in the background, within ``persist_delay_s``; failures are the book's to report.

        The run ledger already holds the fires, so the store may lag a little:
        fires close together then share one write of the store.
        """
        self._wanted = True
        if not self._held:
            self._start_writer()

    @property
    def _held(self) -> bool:
        return self._holds > 0

    def _start_writer(self) -> None:
        if any(not handle.done() for handle in self.writing):
            return  # the writer below loops until nothing more is wanted
        handle = asyncio.ensure_future(self._persist_later())
        self.writing.add(handle)
        handle.add_done_callback(self.writing.discard)

    def hold(self) -> None:
        """Write nothing until :meth:`release`: a pass of many chunks moves anchors for seconds, and a
        write of the whole store every ``persist_delay_s`` meanwhile (10,000 tasks each time) only
        slows it down. The run ledger holds every anchor moved meanwhile."""
        self._holds += 1

    def release(self, after: Awaitable[object] | None = None) -> None:
        """End one :meth:`hold`; with ``after``, once it is done (or after :data:`RELEASE_WAIT_S`).

        A herd's pass gives ``after`` its deliveries' group commits: a write of the
        whole store meanwhile (10,000 tasks, a fifth of a second or more) only made
        the herd's last outcome later. It waits in :attr:`writing`, so
        :meth:`Scheduler.drain` waits for it and the write that follows.
        """
        if after is None:
            self._unhold()
            return
        handle = asyncio.ensure_future(self._release_after(after))
        self.writing.add(handle)
        handle.add_done_callback(self.writing.discard)

    async def _release_after(self, after: Awaitable[object]) -> None:
        try:
            with contextlib.suppress(Exception):  # what it waits for reports its own failures; a timeout
                await asyncio.wait_for(after, RELEASE_WAIT_S)
        except asyncio.CancelledError:
            self._holds = max(0, self._holds - 1)  # stopping: the next start recovers anchors from the ledger
            raise
        current = asyncio.current_task()
        if current is not None:
            self.writing.discard(current)  # or the writer started below would think one is running
        self._unhold()

    def _unhold(self) -> None:
        self._holds = max(0, self._holds - 1)
        if self._wanted and not self._held:
            self._start_writer()

    def flush(self) -> None:
        """Have the background write (if any) go now rather than after ``persist_delay_s``."""
        if self.writing:
            self._flush.set()

    async def _persist_later(self) -> None:
        while self._wanted and not self._held:
            if not self._flush.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._flush.wait(), self.persist_delay_s)
                if self._held:
                    return  # release() starts a writer again
            self._flush.clear()
            self._wanted = False
            await self.persist_now()

    async def persist_now(self) -> None:
        """Write the book now (or retry it after a failure); a failure is left for the next retry."""
        try:
            if self.book.error is not None:
                if not await self.book.retry():
                    return  # still failing: the ledger holds the fires, and the next tick retries
            else:
                await self.book.commit()
        except StoreError:
            return  # logged by the book; the ledger holds the fires, and the next tick retries
        if not self.book.dirty:
            # Everything is in the store now: the ledger's copy of these anchors is no longer needed.
            self._handled.clear()
