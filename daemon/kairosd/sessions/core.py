"""What the session hub's parts share: the store's writes, the change broadcast, background work,
session touches, and settling runs in the run ledger.

:class:`SessionCore` is owned by :class:`kairosd.sessions.hub.SessionHub` and handed
to its routing (:mod:`kairosd.sessions.routing`) and its waiters
(:mod:`kairosd.sessions.waiters`), so all of them see one change event, one
"stopping" flag, one save lock and one set of background tasks.

A run's outcome is written once: a held run (queued, awaiting a session) may
be re-queued on another session, and its final outcome is recorded with a
``run_finished`` event; a second final outcome is ignored.

Must not import the scheduler, the server, the delivery targets or the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kairosd.core.clock import Clock
from kairosd.core.errors import NotFoundError
from kairosd.core.events import EventBus
from kairosd.core.records import Outcome, Run
from kairosd.delivery.base import Result
from kairosd.scheduling.ledger import RunLedger
from kairosd.sessions.rules import fire_fields
from kairosd.sessions.store import LiveSession, PendingItem, SessionStore

__all__ = ["STOP_GRACE_S", "TOUCH_SAVE_DELAY_S", "SessionCore"]

# The hub's parts log under the hub's name: operators filter and read the journal by it.
log = logging.getLogger("kairosd.sessions.hub")

# Last-active touches reach the file this long after they happen at most (one write per burst).
TOUCH_SAVE_DELAY_S = 2.0
STOP_GRACE_S = 5.0
EVICTION_LOG_EVERY_S = 60.0


class SessionCore:
    """The store, ledger, events and clock, with the writes, broadcasts and settling built on them."""

    def __init__(self, store: SessionStore, ledger: RunLedger, events: EventBus, clock: Clock) -> None:
        self.store = store
        self.ledger = ledger
        self.events = events
        self.clock = clock
        # Broadcast to whoever waits for a change (waiters, items waiting for a successor session).
        self.changed = asyncio.Event()
        self.stopping = False
        self._save_lock = asyncio.Lock()
        self._save_timer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # What becomes of a session evicted at the cap (the hub hands its items on, as for an end).
        self.on_evicted: Callable[[LiveSession], None] | None = None
        self._evictions = 0
        self._eviction_logged_at: float | None = None

    # ---- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Release every long-polling waiter now (kairosd is stopping: the server must not wait on them)."""
        self.stopping = True
        self.notify()

    async def stop(self) -> None:
        """Release waiters, let background work finish (bounded), write the sessions."""
        self.close()
        if self._save_timer is not None:
            self._save_timer.cancel()
        if self._background:
            _, late = await asyncio.wait(self._background, timeout=STOP_GRACE_S)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=STOP_GRACE_S)
        await self.save_now()

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` in the background; :meth:`stop` waits for it (bounded)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def notify(self) -> None:
        # Broadcast: every waiter holds the event it saw before checking; a fresh one for the next change.
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    # ---- writing the store ------------------------------------------------------------------

    async def save_now(self) -> None:
        if self._save_timer is not None and self._save_timer is not asyncio.current_task():
            self._save_timer.cancel()
            self._save_timer = None
        async with self._save_lock:
            await asyncio.to_thread(self.store.save)

    async def save_quietly(self) -> None:
        try:
            await self.save_now()
        except OSError as exc:
            log.warning("cannot write %s: %s (retried with the next change)", self.store.path, exc)

    def save_soon(self) -> None:
        """Write within TOUCH_SAVE_DELAY_S: a touch on every turn must not cost an fsync each."""
        if self._save_timer is not None and not self._save_timer.done():
            return

        async def later() -> None:
            await asyncio.sleep(TOUCH_SAVE_DELAY_S)
            await self.save_quietly()

        self._save_timer = asyncio.ensure_future(later())

    # ---- sessions ---------------------------------------------------------------------------

    def touch(self, agent: str, session_id: str, cwd: str | None, transcript: str | None) -> LiveSession:
        """The session, registered now if unknown (announced with ``session_started``), seen now.

        ``cwd`` is absolute or None (a project scope is matched against absolute paths only)."""
        session, created = self.store.touch(agent, session_id, self.clock.now(), cwd=cwd, transcript_path=transcript)
        if created:
            self.events.publish("session_started", agent=agent, session_id=session_id, cwd=session.cwd)
            for gone in self.store.evict_idle(keep=session.key):
                self._log_eviction(gone)
                self.events.publish("session_ended", agent=gone.agent, session_id=gone.session_id, reason="evicted")
                if self.on_evicted is not None:
                    self.on_evicted(gone)
            self.notify()
        return session

    def _log_eviction(self, gone: LiveSession) -> None:
        # A client registering ids in a loop evicts one per call: say so once per EVICTION_LOG_EVERY_S.
        self._evictions += 1
        now = self.clock.monotonic()
        if self._eviction_logged_at is not None and now - self._eviction_logged_at < EVICTION_LOG_EVERY_S:
            return
        log.warning(
            "%d session(s) evicted, the last %s %s: %d are registered, the limit (limits.max_sessions); "
            "the longest idle go first",
            self._evictions,
            gone.agent,
            gone.session_id,
            self.store.max_sessions,
        )
        self._evictions, self._eviction_logged_at = 0, now

    # ---- settling runs ------------------------------------------------------------------------

    async def settle(self, item: PendingItem, result: Result) -> None:
        """Record ``result`` as the outcome of ``item``'s run."""
        try:
            run = self.ledger.get(item.run_id)
        except NotFoundError:
            # Evicted or never recorded (it should not be: held runs are kept); rebuild it from the item.
            run = Run(**fire_fields(item), dispatched_at=item.dispatched_at, manual=item.manual)
        await self.record(run, result)

    async def record(self, run: Run, result: Result) -> None:
        """Write ``run``'s final outcome (once) and announce it; a held run's second outcome is ignored."""
        if run.outcome is not None and not (run.outcome is Outcome.QUEUED and run.awaiting):
            return
        now = self.clock.now()
        queued = result.outcome == "pending"
        done = run.model_copy(
            update={
                "outcome": Outcome.QUEUED if queued else Outcome(result.outcome),
                "finished_at": None if queued else (result.finished_at or now),
                "started_at": run.started_at or result.started_at,
                "reason": result.reason,
                "awaiting": run.awaiting if queued else None,
                "output_path": result.output_path or run.output_path,
                "exit_code": result.exit_code if result.exit_code is not None else run.exit_code,
            }
        )
        try:
            await asyncio.to_thread(self.ledger.record, done)
        except OSError as exc:
            # The run stays queued in the ledger; the next start marks it lost (its item is gone).
            log.error("cannot record the outcome of run %s (%s): %s", run.run_id, done.outcome, exc)
            return
        if not queued:
            self.events.publish(
                "run_finished",
                run_id=run.run_id,
                task_id=run.task_id,
                outcome=done.outcome,
                reason=done.reason,
                exit_code=done.exit_code,
            )
