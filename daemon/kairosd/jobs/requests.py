"""Typed request bodies of the background job registry: start a task, send a follow-up turn.

Parsed by :func:`kairosd.api.requests.parse_body`, with the bounds of :mod:`kairosd.core.bounds`.

Must not import the registry's runtime (registry, turns, slots) or the server.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints

from kairosd.api.requests import Body, Name, Short
from kairosd.core import bounds
from kairosd.jobs.model import ExecutionMode, PermissionSet

ProcessText = Annotated[str, StringConstraints(max_length=bounds.MAX_ARG_CHARS)]
PathText = Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PATH_CHARS)]


class StartRequest(Body):
    """``POST /v1/registry``: a background job, an agent turn (``agent``) or a command (``argv``)."""

    kind: Literal["agent", "shell"] = "agent"  # fire and consolidation tasks are started by kairosd itself
    agent: Short | None = None
    argv: list[ProcessText] | None = Field(default=None, min_length=1, max_length=bounds.MAX_ARGV_ITEMS)
    prompt: Annotated[str, StringConstraints(max_length=bounds.MAX_PROMPT_CHARS)] = ""
    cwd: PathText | None = None
    session: Name | None = None
    model: Short | None = None
    mode: ExecutionMode = ExecutionMode.BACKGROUND
    parent_id: Short | None = None
    parent_depth: StrictInt | None = Field(default=None, ge=0, le=1000)
    permissions: PermissionSet | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=bounds.MAX_TIMEOUT_S, strict=True)


class SendRequest(Body):
    """``POST /v1/registry/{id}/send``: the follow-up prompt of an idle multi-turn agent job."""

    message: Annotated[str, StringConstraints(max_length=bounds.MAX_PROMPT_CHARS)]
