"""A consolidation request as it comes in (``POST /v1/consolidate``), checked field by field.

Only the shape is checked here; whether it runs is for the gates (:mod:`.gates`, applied in
:mod:`.service`).

Pure (no I/O). Must not import the registry, the daemon or the server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kairosd.core.errors import UsageError

MAX_TEXT_FIELD = 4096


@dataclass(frozen=True)
class ConsolidationRequest:
    agent: str
    session_id: str
    transcript_path: str | None
    cwd: str | None
    reason: str | None = None
    spawned: bool = False
    consolidate_env: str | None = None  # the caller's KAIROS_CONSOLIDATE


def parse_request(body: Any) -> ConsolidationRequest:
    """The request body: ``{agent, session_id, transcript_path, cwd, reason, spawned?, consolidate?}``."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    known = {"agent", "session_id", "transcript_path", "cwd", "reason", "spawned", "consolidate", "hook_event_name"}
    unknown = set(body) - known
    if unknown:
        raise UsageError(f"unknown field(s): {', '.join(sorted(unknown))}")

    def text(key: str, required: bool = False) -> str | None:
        value = body.get(key)
        if value is None or value == "":
            if required:
                raise UsageError(f"{key} is required")
            return None
        if not isinstance(value, str) or len(value) > MAX_TEXT_FIELD or "\x00" in value:
            raise UsageError(f"{key} must be a string of at most {MAX_TEXT_FIELD} characters")
        return value

    spawned = body.get("spawned", False)
    if not isinstance(spawned, bool):
        raise UsageError("spawned must be true or false")
    cwd, transcript = text("cwd"), text("transcript_path")
    for key, path in (("cwd", cwd), ("transcript_path", transcript)):
        if path is not None and not os.path.isabs(path):
            raise UsageError(f"{key} must be an absolute path, not {path!r}")
    return ConsolidationRequest(
        agent=text("agent", required=True) or "",
        session_id=text("session_id", required=True) or "",
        transcript_path=transcript,
        cwd=cwd,
        reason=text("reason"),
        spawned=spawned,
        consolidate_env=text("consolidate"),
    )
