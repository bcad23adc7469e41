"""The registry's shared state: its records in memory and on disk, and the signal that wakes waiters.

Every change to a record goes through :meth:`Book.apply` (in memory, published
as a ``task_updated`` event carrying only the changed fields) and, to last,
:meth:`Book.save` (one writer at a time, always the latest state). A change
wakes whoever waits for a record to settle (:meth:`Book.wait_settled`). The
family queries (children, ancestors) read the same records.

The registry, its turns (:mod:`~kairosd.jobs.turns`), its cancellation
(:mod:`~kairosd.jobs.cancel`) and its detached work
(:mod:`~kairosd.jobs.detached`) all share one Book.

Must not import the registry's turns, cancellation or use-cases,
the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kairosd.core.clock import Clock
from kairosd.core.errors import KairosError, NotFoundError
from kairosd.core.events import EventBus
from kairosd.jobs import rules
from kairosd.jobs.model import JobRecord, view
from kairosd.jobs.persist import RecordStore

# Named as before the registry was split into modules, so its log lines read as they did.
log = logging.getLogger("kairosd.jobs.registry")


class Book:
    def __init__(self, store: RecordStore, clock: Clock, events: EventBus) -> None:
        self.store = store
        self.clock = clock
        self.events = events
        self.records: dict[str, JobRecord] = {}
        self.closing = False  # set once, at shutdown: no new work, and every wait returns
        self._changed = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()

    # ---- reading -----------------------------------------------------------

    def get(self, task_id: str) -> JobRecord:
        record = self.records.get(task_id)
        if record is None:
            raise NotFoundError(f"no background job {task_id!r} (see: kairos task list)")
        return record

    def children(self, task_id: str) -> list[JobRecord]:
        return [r for r in self.records.values() if r.parent_id == task_id]

    def is_ancestor(self, ancestor: str, task_id: str, max_depth: int) -> bool:
        record = self.records.get(task_id)
        for _ in range(max_depth + 1):  # a parent chain is never longer than that
            if record is None or record.parent_id is None:
                return False
            if record.parent_id == ancestor:
                return True
            record = self.records.get(record.parent_id)
        return False

    # ---- recording -----------------------------------------------------------

    async def create(self, record: JobRecord) -> None:
        """Write a new record durably and announce it; a record that cannot be written never existed."""
        self.records[record.id] = record
        try:
            await self.save(record.id)
        except OSError as exc:
            del self.records[record.id]
            raise KairosError(f"cannot record the task: {exc.strerror or exc}") from exc
        self.events.publish("task_started", task_id=record.id, session=record.session, task=view(record))

    def apply(self, task_id: str, changes: dict[str, Any], *, notify: bool = True) -> JobRecord:
        """Change the record in memory and publish the changed fields (a patch); wake waiters if ``notify``."""
        old = self.records[task_id]
        new = old.model_copy(update={**changes, "updated_at": self.clock.now()})
        self.records[task_id] = new
        changed = {k for k in changes if getattr(old, k) != getattr(new, k)}
        if changed:
            patch: dict[str, Any] = new.model_dump(mode="json", include=(changed - {"turns"}) | {"updated_at"})
            if "turns" in changed:
                # The latest turn, not the whole history: events stay small.
                patch["turn"] = new.turns[-1].model_dump(mode="json")
                patch["turns_done"] = new.turns_done
                patch["response"] = new.response
            self.events.publish("task_updated", **{"task_id": task_id, "session": new.session, **patch})
            if notify:
                self.notify()
        return new

    async def update(self, task_id: str, **changes: Any) -> JobRecord:
        """:meth:`apply`, then write the record durably."""
        record = self.apply(task_id, changes)
        await self.save(task_id)
        return record

    async def save(self, task_id: str) -> None:
        # One writer at a time, always the latest state: two writes of one record never land out of order.
        async with self._write_lock:
            record = self.records.get(task_id)
            if record is None:
                return
            write = asyncio.ensure_future(asyncio.to_thread(self.store.save, record))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                await write  # keep the lock until the file is written, then give up
                raise

    def soon(self, coro: Any) -> None:
        """Run a write in the background (from code that cannot await); a failure is logged."""
        task: asyncio.Task[None] = asyncio.ensure_future(self._quietly(coro))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _quietly(self, coro: Any) -> None:
        try:
            await coro
        except Exception:
            log.exception("writing a task record failed")

    async def drain(self) -> None:
        """Wait for the background writes still going."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    # ---- waiting ---------------------------------------------------------------

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_settled(
        self,
        task_id: str,
        record: JobRecord,
        timeout: float | None,  # noqa: ASYNC109 - a bound on a long-poll, returned as "timed out"
        since_turn: int | None,
    ) -> tuple[JobRecord, bool]:
        """Block until ``rules.settled`` says the record is; (record, timed_out). Shutdown times out."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not rules.settled(record, since_turn):
            if self.closing:
                return record, True
            changed = self._changed
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return record, True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()
            record = self.get(task_id)
        return record, False
