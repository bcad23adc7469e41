"""The ``session`` target: a fired prompt goes into a live agent session at its next turn.

A thin adapter over :class:`kairosd.sessions.hub.SessionHub`, which does the
work: with the target's session live, the prompt becomes a durable pending item
and the result is ``pending`` (the session's hook settles the run ``delivered``
once it wrote the prompt into the agent); with no live session the target's
fallback runs now (``inbox``, ``headless``, or ``drop`` reported as ``skipped``).

Idempotent per ``run_id``: a repeated delivery of a run that is already waiting
answers ``pending`` again without a second item.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

from collections.abc import Mapping

from kairosd.core.errors import UsageError
from kairosd.core.models import AgentTarget, SessionTarget, Target
from kairosd.delivery.base import Delivery, Handoff, Result
from kairosd.sessions.hub import SessionHub

__all__ = ["SessionDelivery"]


class SessionDelivery:
    kind = "session"

    def __init__(self, hub: SessionHub, deliveries: Mapping[str, Delivery] | None = None) -> None:
        self._hub = hub
        self._deliveries = deliveries or {}  # the daemon's: a headless fallback runs through its "agent"

    async def deliver(self, handoff: Handoff) -> Result:
        return await self._hub.deliver(handoff)

    async def check(self, target: Target) -> None:
        """At add time: ``fallback=headless`` needs an agent to run, and the registry to run it.

        A ``session_id`` scope may leave the agent out: a session that ends with the
        item pending hands it to its own agent."""
        if not isinstance(target, SessionTarget) or target.fallback != "headless":
            return
        headless = self._deliveries.get("agent")
        if headless is None:
            raise UsageError("--fallback headless needs the background job registry, which this kairosd lacks")
        agent = target.agent
        if target.session_id and not agent:
            return  # the session's own agent runs it when the session ends with the item pending
        if not agent:
            raise UsageError(
                "--fallback headless needs an agent to run when no session is live: add --session-agent NAME "
                "(claude, codex, ...), or use --fallback inbox or drop"
            )
        check = getattr(headless, "check", None)
        if check is not None:
            await check(AgentTarget(agent=agent))

    async def close(self) -> None:
        """Nothing to stop: pending items are durable and wait for their sessions across restarts."""
