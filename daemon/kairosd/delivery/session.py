"""The ``session`` target: a fired prompt goes into a live agent session at its next turn.

A thin adapter over :class:`kairosd.session_hub.SessionHub`, which does the
work: with the target's session live, the prompt becomes a durable pending item
and the result is ``pending`` (the session's hook settles the run ``delivered``
once it wrote the prompt into the agent); with no live session the target's
fallback runs now (``inbox``, ``headless``, or ``drop`` reported as ``skipped``).

Idempotent per ``run_id``: a repeated delivery of a run that is already waiting
answers ``pending`` again without a second item.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

from kairosd.delivery.base import Job, Result
from kairosd.session_hub import SessionHub

__all__ = ["SessionDelivery"]


class SessionDelivery:
    kind = "session"

    def __init__(self, hub: SessionHub) -> None:
        self._hub = hub

    async def deliver(self, job: Job) -> Result:
        return await self._hub.deliver(job)

    async def close(self) -> None:
        """Nothing to stop: pending items are durable and wait for their sessions across restarts."""
