"""The session hub's pure rules: the Stop-chain guard, session ids, and the words runs carry.

Everything here is a plain function of its arguments, shared by the hub's parts
(:mod:`kairosd.sessions.hub`, :mod:`kairosd.sessions.core`,
:mod:`kairosd.sessions.routing`, :mod:`kairosd.sessions.waiters`).

Must not import asyncio, the run ledger, the event bus, the scheduler, the server or the CLI.
"""

from __future__ import annotations

from typing import Any

from kairosd.core.errors import UsageError
from kairosd.core.reminder import reminder_text
from kairosd.delivery.base import Job
from kairosd.sessions.store import MAX_ID_CHARS, LiveSession, PendingItem

__all__ = [
    "AGENT_BLOCK_CAPS",
    "MAX_CHAIN",
    "chain_limit",
    "check_session_id",
    "describe",
    "fire_fields",
    "item_text",
    "item_view",
    "waiting_reason",
]

# Consecutive Stop blocks an agent allows before it overrides its hooks and ends the turn anyway:
# Claude Code 8 (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, 0 turns the guard off), Copilot CLI 8. Codex and
# Gemini CLI document no cap (a hook that keeps blocking loops forever), so ours is the only guard.
AGENT_BLOCK_CAPS: dict[str, int | None] = {"claude": 8, "copilot": 8, "codex": None, "gemini": None}
# Our own ceiling on Stops in a row that we block, kept under every agent's cap with room for
# other hooks' blocks.
MAX_CHAIN = 3


def chain_limit(agent: str, reported_cap: int | None = None) -> int:
    """How many Stops in a row this session's hook may block: under the agent's cap, at most MAX_CHAIN."""
    cap = reported_cap if reported_cap is not None else AGENT_BLOCK_CAPS.get(agent)
    if cap is None or cap <= 0:  # no cap, or the agent's guard turned off: ours is all there is
        return MAX_CHAIN
    return max(1, min(MAX_CHAIN, cap - 1))


def describe(session: LiveSession) -> str:
    return f"{session.agent} session {session.session_id}"


def waiting_reason(session: LiveSession) -> str:
    return f"waiting for {describe(session)}'s next turn"


def check_session_id(session_id: str) -> str:
    if not session_id or len(session_id) > MAX_ID_CHARS:
        raise UsageError(f"a session id must be 1 to {MAX_ID_CHARS} characters")
    return session_id


def fire_fields(fire: Job | PendingItem) -> dict[str, Any]:
    """What a job, its pending item and its run all say about the fire: carried from one to the next."""
    return {
        "run_id": fire.run_id,
        "task_id": fire.task_id,
        "task_name": fire.task_name,
        "scheduled_for": fire.scheduled_for,
        "planned_for": fire.planned_for,
        "late_by_s": fire.late_by_s,
        "catch_up": fire.catch_up,
        # A job holds the task's parsed target; an item and a run keep it as JSON.
        "target": fire.target.model_dump(mode="json") if isinstance(fire, Job) else dict(fire.target),
    }


def item_text(item: PendingItem, zone: str) -> str:
    """What a hook or a waiter writes into the agent for ``item``."""
    return reminder_text(
        task_id=item.task_id,
        task_name=item.task_name,
        prompt=item.prompt,
        scheduled_for=item.scheduled_for,
        zone=zone,
        late_by_s=item.late_by_s,
        catch_up=item.catch_up,
    )


def item_view(item: PendingItem) -> dict[str, Any]:
    """An item as hook and waiter answers list it (the prompt goes in their ``text``)."""
    return {
        "run_id": item.run_id,
        "task_id": item.task_id,
        "task_name": item.task_name,
        "scheduled_for": item.scheduled_for.isoformat(),
        "queued_at": item.queued_at.isoformat(),
    }
