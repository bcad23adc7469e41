"""Typed request bodies of the live-session routes: register, a hook call, its ack, the end.

Parsed by :func:`kairosd.api.requests.parse_body`, with the bounds of the session store
(:mod:`kairosd.sessions.store`). The hand-over for consolidation
(``POST /v1/consolidate``) is consolidation's (:class:`kairosd.consolidation.request.ConsolidationRequest`).

An agent's hook payload may hold an empty or a relative ``cwd``: both count as
absent (a project scope is matched against absolute paths only), not as errors,
so a hook never fails the agent's turn over them.

Must not import the hub, the store's runtime or the server.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool, StrictInt, StringConstraints

from kairosd.api.requests import Body, MaybeShort, blank_is_none, process_text
from kairosd.core import bounds
from kairosd.sessions.store import MAX_AGENT_CHARS, MAX_ID_CHARS, MAX_PATH_CHARS

Agent = Annotated[str, StringConstraints(min_length=1, max_length=MAX_AGENT_CHARS)]
SessionId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
MAX_CLAIM_CHARS = 100
MAX_REASON_CHARS = 200


def _relative_is_none(value: str | None) -> str | None:
    return value if value is None or value.startswith("/") else None


# What the agent said its working folder is; a relative one is dropped, not refused.
Path = Annotated[str, StringConstraints(max_length=MAX_PATH_CHARS), AfterValidator(process_text)]
Cwd = Annotated[
    Path | None,
    BeforeValidator(blank_is_none),
    AfterValidator(_relative_is_none),
    Field(description="an absolute path; a relative one is ignored"),
]
Transcript = Annotated[Path | None, BeforeValidator(blank_is_none)]
Reason = Annotated[
    Annotated[str, StringConstraints(max_length=MAX_REASON_CHARS)] | None, BeforeValidator(blank_is_none)
]
Via = Annotated[Annotated[str, StringConstraints(max_length=MAX_CLAIM_CHARS)] | None, BeforeValidator(blank_is_none)]


class SessionFields(Body):
    """What every call about a session says: the agent, and what its payload told about the session."""

    agent: Agent
    cwd: Cwd = None
    transcript_path: Transcript = None


class RegisterRequest(SessionFields):
    """``POST /v1/sessions``: register (or refresh) a live session."""

    session_id: SessionId


class HookRequest(SessionFields):
    """``POST /v1/sessions/{id}/hook``, sent by ``kairos hook AGENT EVENT``.

    ``deliver`` false: only touch the session (the agent drops this hook's output, so
    nothing may be claimed for it).
    """

    event: Literal["start", "prompt", "stop", "end"]
    deliver: StrictBool = True
    stop_hook_active: StrictBool = Field(default=False, description="this turn continues because a Stop hook blocked")
    block_cap: StrictInt | None = Field(
        default=None, ge=0, le=1000, description="the agent's cap on Stops in a row that hooks may block (0: off)"
    )
    source: MaybeShort = Field(default=None, description="SessionStart's startup, resume, clear or compact")
    reason: Reason = Field(default=None, description="SessionEnd's reason, with event end")


class ClaimAckRequest(Body):
    """``POST /v1/sessions/{id}/ack``: the hook wrote these claimed items into the agent."""

    agent: Agent
    claim: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CLAIM_CHARS)]
    run_ids: list[Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)]] = Field(max_length=bounds.MAX_LIST_ITEMS)
    via: Via = Field(default=None, description="what wrote them in, for the run's reason (default: hook)")


class EndRequest(SessionFields):
    """``POST /v1/sessions/{id}/end``: deregister the session (SessionEnd)."""

    reason: Reason = None
