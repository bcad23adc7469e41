"""The Claude ``asyncRewake`` waiter: a long-poll that hands a session's next item out between turns.

One waiter per session counts: the newest supersedes older ones, and each item
goes to one claimant only (a claim is the store's lease, as for hooks). Mid-turn
the waiter holds back, since the Stop hook delivers at the turn's end; a turn flag
older than :data:`TURN_GRACE` is taken as stale (an interrupted turn fires no Stop).

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kairosd.core.errors import NotFoundError
from kairosd.sessions.core import SessionCore
from kairosd.sessions.rules import check_session_id, item_view
from kairosd.sessions.store import PendingItem, SessionKey

__all__ = ["TURN_GRACE", "Waiters"]

# An in_turn flag older than this is stale: an interrupted turn fires no Stop hook.
TURN_GRACE = timedelta(minutes=2)


class Waiters:
    """The sessions' long-polling waiters; ``tokens`` maps a session to its current waiter."""

    def __init__(self, core: SessionCore, text_for: Callable[[PendingItem], str]) -> None:
        self.core = core
        self._text_for = text_for  # the hub's: hooks and waiters write an item the same way
        self.tokens: dict[SessionKey, object] = {}

    async def next_item(
        self,
        session_id: str,
        agent: str | None,
        wait_s: float,
        *,
        cwd: str | None = None,
        transcript_path: str | None = None,
    ) -> dict[str, Any]:
        """Long-poll until an item for this session can be handed out, the session ends, a newer waiter
        of the same session arrives, kairosd stops, or ``wait_s`` seconds pass (then ``item`` is None).

        An unknown session of a named agent is registered first: the waiter that SessionStart arms
        runs alongside the SessionStart hook and may ask before that hook registered the session.
        """
        core, store = self.core, self.core.store
        check_session_id(session_id)
        found = store.find(session_id, agent)
        if not found and agent:
            absolute = cwd if cwd is not None and cwd.startswith("/") else None  # as a hook body's cwd
            found = [core.touch(agent, session_id, absolute, transcript_path)]
            core.save_soon()
        if not found:
            raise NotFoundError(f"no live session {session_id!r}" + (f" of {agent}" if agent else ""))
        key = found[0].key
        token = object()
        self.tokens[key] = token
        core.notify()  # the previous waiter of this session steps aside
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, wait_s)
        try:
            while True:
                changed = core.changed
                if core.stopping:
                    return {"item": None, "why": "kairosd is stopping"}
                if self.tokens.get(key) is not token:
                    return {"item": None, "why": "a newer waiter took over"}
                session = store.get(key)
                if session is None:
                    return {"item": None, "why": "the session ended"}
                now = core.clock.now()
                wait = deadline - loop.time()
                if wait <= 0:
                    return {"item": None, "why": "timeout"}
                since = now - session.last_active
                if session.in_turn and since < TURN_GRACE:
                    # Mid-turn the Stop hook delivers at the turn's end; look again once the flag goes stale.
                    wait = min(wait, max(0.05, (TURN_GRACE - since).total_seconds()))
                else:
                    claim, items = store.claim(session, now, 1)
                    if items:
                        item = items[0]
                        return {"item": item_view(item), "claim": claim, "text": self._text_for(item)}
                    leases = [i.claimed_until for i in session.items if i.claimed_until is not None]
                    if leases:  # a claim that lapses makes its item available again
                        wait = min(wait, max(0.05, (min(leases) - now).total_seconds()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), wait)
        finally:
            if self.tokens.get(key) is token:
                del self.tokens[key]
