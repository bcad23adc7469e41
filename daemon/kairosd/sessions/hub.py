"""Delivery into live agent sessions: the hub whose use-cases the API, the ``session`` target and the tests call.

How a fire reaches a session:

* :meth:`SessionHub.deliver` (the ``session`` target) resolves the task's target
  to a live session. Found: the prompt becomes a pending item of that session,
  written durably, and the run is reported ``pending`` (the scheduler records it
  ``queued``, "waiting for claude session X's next turn", and frees its slot).
  Not found: the target's fallback applies at once (``inbox``, ``headless`` or
  ``drop``). An idle session of an agent with a *waker* (Codex: ``codex queue``,
  :mod:`kairosd.agents.codexqueue`) gets the prompt at once instead: kairosd starts a
  turn with it and the run is ``delivered``; if the waker declines (the thread is not
  loaded, the app-server cannot be asked) the item stays pending.
* A hook of that session claims items (:meth:`SessionHub.hook`), writes them
  into the agent, then acknowledges them (:meth:`SessionHub.ack`); only then is
  the run settled ``delivered`` in the run ledger, with a ``run_finished`` event.
* A session that ends (SessionEnd) or expires hands its items on: a project- or
  user-scoped item moves to another live session that matches its target;
  anything else takes its task's fallback. ``drop`` settles the run ``skipped``.
* The Claude ``asyncRewake`` waiter long-polls ``SessionHub.next_item``
  (:meth:`kairosd.sessions.waiters.Waiters.next_item`); the newest waiter of a
  session supersedes older ones, and each item goes to one claimant only.

At a turn boundary (Stop) the hub hands out at most one item, and none when the
agent says the turn already continues because of a Stop hook
(``stop_hook_active``) or when this session's hook has blocked
:func:`chain_limit` Stops in a row (a guard for agents whose flag is unreliable,
under each agent's own cap on consecutive blocks).

This module keeps the hook events, acks, registration, consolidation hand-overs
and the lifecycle; its parts live beside it:

* :mod:`kairosd.sessions.core`: writes, the change broadcast, background work, settling runs;
* :mod:`kairosd.sessions.routing`: queueing fires, fallbacks, expiry, re-homing items;
* :mod:`kairosd.sessions.waiters`: the asyncRewake long-poll;
* :mod:`kairosd.sessions.rules`: the pure rules (Stop-chain guard, body fields, item texts).

Their public names are importable from here too.

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kairosd.core.clock import Clock
from kairosd.core.errors import NotFoundError
from kairosd.core.events import EventBus
from kairosd.core.records import Outcome
from kairosd.delivery.base import Delivery, Handoff, Result
from kairosd.scheduling.ledger import RunLedger
from kairosd.sessions.core import STOP_GRACE_S as STOP_GRACE_S
from kairosd.sessions.core import TOUCH_SAVE_DELAY_S as TOUCH_SAVE_DELAY_S
from kairosd.sessions.core import SessionCore
from kairosd.sessions.requests import ClaimAckRequest, HookRequest, RegisterRequest
from kairosd.sessions.routing import DEFAULT_INBOX_SESSION as DEFAULT_INBOX_SESSION
from kairosd.sessions.routing import SWEEP_MAX_S as SWEEP_MAX_S
from kairosd.sessions.routing import SessionRouter, Waker
from kairosd.sessions.rules import AGENT_BLOCK_CAPS, MAX_CHAIN, chain_limit, item_text, item_view
from kairosd.sessions.rules import check_session_id as check_session_id
from kairosd.sessions.rules import describe as describe
from kairosd.sessions.rules import waiting_reason as waiting_reason
from kairosd.sessions.store import LiveSession, PendingItem, SessionStore
from kairosd.sessions.waiters import TURN_GRACE as TURN_GRACE
from kairosd.sessions.waiters import Waiters

__all__ = ["AGENT_BLOCK_CAPS", "MAX_CHAIN", "MAX_CONTEXT_ITEMS", "SessionHub", "chain_limit"]

log = logging.getLogger(__name__)

ContextBoard = Callable[[LiveSession], Awaitable[str | None]]

# Items a SessionStart or UserPromptSubmit hook adds as context at once; the rest come next time.
MAX_CONTEXT_ITEMS = 5
# After a SessionEnd, how long a project- or user-scoped item waits for a successor session before its
# fallback: /clear and --resume end a session and start the next one a moment later.
SUCCESSOR_GRACE_S = 10.0


class SessionHub:
    """The sessions' use-cases; the API, the ``session`` delivery target and the tests call these."""

    def __init__(
        self,
        store: SessionStore,
        ledger: RunLedger,
        events: EventBus,
        clock: Clock,
        deliveries: Mapping[str, Delivery],
        *,
        zone: str = "UTC",
        queue_limit: int = 10,
        context_board: ContextBoard | None = None,
        wakers: Mapping[str, Waker] | None = None,
    ) -> None:
        self.store = store
        self.ledger = ledger
        self.events = events
        self.clock = clock
        self.zone = zone
        self._core = SessionCore(store, ledger, events, clock)
        self._router = SessionRouter(
            self._core, deliveries, queue_limit=queue_limit, wakers=wakers, text_for=self.text_for
        )
        self._waiting = Waiters(self._core, self.text_for)
        # The asyncRewake waiter's long-poll is the waiters' own (same signature, nothing to add here).
        self.next_item = self._waiting.next_item
        # The waiters' tokens, by session: how many poll now (status) and whether one does (tests).
        self._waiters = self._waiting.tokens
        # Hook point for the consolidation issue: the project's context board for a starting session.
        self.context_board_for = context_board
        self.successor_grace_s = SUCCESSOR_GRACE_S
        self._core.on_evicted = self._evicted

    @property
    def queue_limit(self) -> int:
        """At most this many runs of one task wait for a session (overlap=queue); the router applies it."""
        return self._router.queue_limit

    @queue_limit.setter
    def queue_limit(self, value: int) -> None:
        self._router.queue_limit = value

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the sessions, reconcile them with the run ledger, expire the stale ones.

        Call after the run ledger is loaded and before the scheduler starts (catch-up fires
        may target sessions).
        """
        await asyncio.to_thread(self.store.load)
        held = {item.run_id for session in self.store for item in session.items}
        settled = set()
        for run_id in held:
            try:
                run = self.ledger.get(run_id)
            except NotFoundError:
                continue
            if not (run.outcome is Outcome.QUEUED and run.awaiting):
                settled.add(run_id)  # the ledger has its outcome: kairosd died before the file was rewritten
        if settled:
            self.store.drop(settled)
        for run in self.ledger.awaiting("session"):
            if run.run_id not in held:
                reason = "the pending session item was lost (sessions.json was missing or unreadable at start)"
                await self._core.record(run, Result("failed", reason=reason))
        await self.sweep()
        await self._core.save_now()
        log.info("sessions: %d known, %d pending item(s)", len(self.store), len(held) - len(settled))

    def close_waiters(self) -> None:
        """Release every long-polling waiter now (kairosd is stopping: the server must not wait on them)."""
        self._core.close()

    async def stop(self) -> None:
        """Release waiters, let fallbacks in flight finish (bounded), write the sessions."""
        await self._core.stop()

    # ---- the session target, expiry and the waiter ----------------------------------------------

    async def deliver(self, handoff: Handoff) -> Result:
        """The ``session`` delivery target: queue the prompt for its live session, or take the fallback now."""
        return await self._router.deliver(handoff)

    async def sweep(self) -> list[str]:
        """Expire sessions not seen for the ttl; their items move on or take their fallback."""
        return await self._router.sweep()

    async def sweep_forever(self) -> None:
        """Expire stale sessions every so often (a tenth of the ttl, at most a minute); runs until cancelled."""
        await self._router.sweep_forever()

    # ---- sessions ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """For ``kairos status``: live sessions, items waiting for them, waiters polling."""
        live = self.store.live(self.clock.now())
        return {
            "live": len(live),
            "pending": sum(len(s.items) for s in self.store),
            "waiters": len(self._waiters),
            "ttl_s": self.store.ttl.total_seconds(),
        }

    def sessions(self) -> list[dict[str, Any]]:
        """Live sessions, most recently active first."""
        return [s.view(self.store.ttl) for s in self.store.live(self.clock.now())]

    async def register(self, request: RegisterRequest) -> dict[str, Any]:
        """Register (or refresh) a session."""
        session = self._core.touch(request.agent, request.session_id, request.cwd, request.transcript_path)
        session.in_turn, session.consecutive_blocks = False, 0
        # Coalesced like a hook's touch: a registration lost to a crash costs only a re-registration
        # (every hook call registers an unknown session), and a burst of them must not rewrite the
        # whole file each time. A session's items are written before their answer, as always.
        self._core.save_soon()
        return session.view(self.store.ttl)

    # ---- hook events --------------------------------------------------------------------------

    async def hook(self, session_id: str, request: HookRequest) -> dict[str, Any]:
        """One hook call: touch (or register) the session and claim what this event may deliver.

        The answer carries ``claim`` and ``text`` when there is something to write into the agent;
        the hook acknowledges the claim once it has written it.
        """
        check_session_id(session_id)
        agent, event, deliver = request.agent, request.event, request.deliver
        if event == "end":
            return await self.end(session_id, agent, request.reason)
        session = self._core.touch(agent, session_id, request.cwd, request.transcript_path)
        now = self.clock.now()
        limit, guard = 0, None
        if event in ("start", "prompt"):
            session.in_turn, session.consecutive_blocks = event == "prompt", 0
            limit = MAX_CONTEXT_ITEMS if deliver else 0
        else:
            allowed = chain_limit(agent, request.block_cap)
            if request.stop_hook_active:
                guard = "stop_hook_active: this turn already continues because a Stop hook blocked"
            elif session.consecutive_blocks >= allowed:
                guard = f"{session.consecutive_blocks} Stops in a row were blocked (the limit for {agent} is {allowed})"
            else:
                limit = 1 if deliver else 0
        claim, items = self.store.claim(session, now, limit) if limit else (None, [])
        if event == "stop":
            # Blocking continues the turn; not blocking ends it, so the chain starts over.
            session.consecutive_blocks = session.consecutive_blocks + 1 if items else 0
            session.in_turn = bool(items)
        self._core.save_soon()
        context = None
        if event == "start" and self.context_board_for is not None:
            try:
                context = await self.context_board_for(session)
            except Exception:  # the board is an extra; a broken one must not cost the session its items
                log.exception("the context board for %s failed", describe(session))
        return {
            "session": session.view(self.store.ttl),
            "claim": claim,
            "items": [item_view(i) for i in items],
            "text": "\n\n".join(self.text_for(i) for i in items) or None,
            "context": context,
            "guard": guard,
        }

    def text_for(self, item: PendingItem) -> str:
        return item_text(item, self.zone)

    async def ack(self, session_id: str, request: ClaimAckRequest) -> dict[str, Any]:
        """The hook wrote these claimed items into the agent: settle their runs ``delivered``."""
        check_session_id(session_id)
        via = request.via or "hook"
        session = self.store.get((request.agent, session_id))
        if session is None:
            return {"acked": []}  # it ended meanwhile; its items went to their fallbacks
        taken = self.store.take(session, request.claim, set(request.run_ids))
        for item in taken:
            why = f"delivered into {describe(session)} by its {via}"
            await self._core.settle(item, Result("delivered", item.dispatched_at, self.clock.now(), reason=why))
        if taken:
            await self._core.save_quietly()
            self._core.notify()
        return {"acked": [item.run_id for item in taken]}

    def _evicted(self, session: LiveSession) -> None:
        if not session.items:
            self._core.save_soon()  # nothing to hand on; the next coalesced write drops it
            return
        limit = self.store.max_sessions
        why = f"{describe(session)} was evicted (the longest idle of {limit}, limits.max_sessions) before its next turn"
        self._core.spawn(self._router.retire(session, why))

    async def end(self, session_id: str, agent: str, reason: str | None = None) -> dict[str, Any]:
        """Deregister a session (SessionEnd); its pending items move on or take their fallback."""
        check_session_id(session_id)
        reason = reason or "session ended"
        session = self.store.remove((agent, session_id))
        if session is None:
            return {"ended": False, "pending": 0, "cwd": None, "transcript_path": None}
        self._core.notify()
        self.events.publish("session_ended", agent=agent, session_id=session_id, reason=reason)
        count = len(session.items)
        # In the background: the SessionEnd hook has 1.5 s in all, and a fallback may take longer.
        why = f"{describe(session)} ended ({reason}) before its next turn"
        self._core.spawn(self._router.retire(session, why, successor_grace_s=self.successor_grace_s))
        # What the session last told us: a SessionEnd payload may lack the transcript (Copilot's does).
        return {"ended": True, "pending": count, "cwd": session.cwd, "transcript_path": session.transcript_path}
