"""Typed request bodies of consolidation and the context board, with the bounds of :mod:`kairosd.core.bounds`.

Parsed by :func:`kairosd.api.requests.parse_body`. Only the shape is checked here:
whether a consolidation runs is for the gates (:mod:`.gates`, applied in :mod:`.service`),
and an entry's kind and text are the board's to judge (:mod:`.board.store`). The body of
``POST /v1/consolidate`` is :class:`ConsolidationRequest`.

Pure (no I/O). Must not import the registry, the daemon or the server.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StringConstraints

from kairosd.api.requests import Body, MaybeAbsolutePath, MaybeShort, ProcessName, ProcessShort, Short
from kairosd.core import bounds

__all__ = ["BoardAddRequest", "BoardChangeRequest", "BoardPruneRequest", "ConsolidationRequest"]

# The project folder: the board checks that it is given and absolute ("give the project folder (cwd)"),
# as it does for the routes that take it in the query string.
Cwd = Annotated[str, StringConstraints(max_length=bounds.MAX_PATH_CHARS)] | None
EntryText = Annotated[str, StringConstraints(max_length=bounds.MAX_PROMPT_CHARS)]


class BoardAddRequest(Body):
    """``POST /v1/board``: a user's entry on the project's board."""

    cwd: Cwd = Field(default=None, description="a folder in the project (absolute)")
    text: EntryText
    kind: Short | None = Field(default=None, description="rule (default), or another of the board's kinds")


class BoardChangeRequest(Body):
    """``POST /v1/board/entries/{id}``: edit (``text``, ``kind``), pin or unpin, or ``restore`` a superseded entry."""

    cwd: Cwd = Field(default=None, description="a folder in the project (absolute)")
    text: EntryText | None = None
    kind: Short | None = None
    pinned: StrictBool | None = None
    restore: Literal[True] | None = Field(
        default=None, description="put a superseded entry back; takes no other change"
    )


class BoardPruneRequest(Body):
    """``POST /v1/board/prune``: prune kairos' entries of the project's board."""

    cwd: Cwd = Field(default=None, description="a folder in the project (absolute)")


class ConsolidationRequest(Body):
    """``POST /v1/consolidate``: a session's hand-over for memory consolidation, from ``kairos hook`` at
    SessionEnd or from ``kairos consolidate``. Only its shape is checked here; whether it runs is for
    the consolidation gates."""

    agent: ProcessShort
    session_id: ProcessName
    transcript_path: MaybeAbsolutePath = None
    cwd: MaybeAbsolutePath = None
    reason: MaybeShort = Field(default=None, description="the agent's SessionEnd reason")
    spawned: StrictBool = Field(default=False, description="the session was started by kairos (KAIROS_SPAWNED=1)")
    consolidate: MaybeShort = Field(default=None, description="the caller's KAIROS_CONSOLIDATE switch")
    force: StrictBool = Field(
        default=False,
        description="a person asked by hand (kairos consolidate --force): the per-project interval gate is "
        "passed over; the other gates still apply",
    )
    hook_event_name: MaybeShort = Field(default=None, description="accepted with a raw hook payload, not used")
