"""The background job record: one piece of work kairosd runs (an agent, a shell command, a fire).

Pure pydantic (no I/O, no clock): every time comes from the caller. Unknown
fields are kept, so an older daemon never drops what a newer one wrote.

Status rules: ``running`` (a turn runs or waits for a slot: ``queued``),
``idle`` (a multi-turn agent job between turns, holding no slot),
``interrupted`` (it was running when kairosd died or stopped; never re-run on
its own), and the terminal ``completed``, ``failed`` and ``cancelled``.

Must not import the registry, the store, the server or anything with I/O.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kairosd.agents.base import PERMISSION_MODES, Permissions
from kairosd.core.models import utc_fields

RECORD_ID_RE = re.compile(r"^t[0-9a-f]{10}$")
# Bounds on what one record keeps, so a chatty agent cannot grow the state without limit.
MAX_TURNS_KEPT = 100
MAX_RESPONSE_CHARS = 256 * 1024
MAX_LINE_CHARS = 500


class JobKind(StrEnum):
    AGENT = "agent"
    SHELL = "shell"
    CONSOLIDATION = "consolidation"
    FIRE = "fire"  # started by a scheduled task's agent:NAME target


class JobStatus(StrEnum):
    RUNNING = "running"
    IDLE = "idle"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


TERMINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


class ExecutionMode(StrEnum):
    SYNC = "sync"  # the starter waits for the turn
    BACKGROUND = "background"


def new_record_id() -> str:
    """``t`` and 10 hex digits: never confused with a scheduled task's 8-hex id."""
    return "t" + secrets.token_hex(5)


class PermissionSet(BaseModel):
    """:class:`~kairosd.agents.base.Permissions` as JSON (sorted tool lists)."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    mode: str = "default"
    allowed_tools: list[str] | None = None  # None: whatever the agent allows
    denied_tools: list[str] = Field(default_factory=list)

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, value: str) -> str:
        if value not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode {value!r} (use one of {', '.join(PERMISSION_MODES)})")
        return value

    @classmethod
    def of(cls, perms: Permissions) -> PermissionSet:
        allowed = None if perms.allowed_tools is None else sorted(perms.allowed_tools)
        return cls(mode=perms.mode, allowed_tools=allowed, denied_tools=sorted(perms.denied_tools))

    def to_permissions(self) -> Permissions:
        allowed = None if self.allowed_tools is None else frozenset(self.allowed_tools)
        return Permissions(self.mode, allowed, frozenset(self.denied_tools))


class Turn(BaseModel):
    """One prompt and its outcome. ``ok`` is None while the turn has not finished."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    number: int = Field(ge=1)
    prompt: str
    queued_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    ok: bool | None = None
    response: str | None = None
    error: str | None = None
    exit_code: int | None = None
    session_id: str | None = None
    tool_calls: int = 0

    _check = utc_fields("queued_at", "started_at", "finished_at")


class ProgressInfo(BaseModel):
    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    tool_calls: int = 0
    intent: str | None = None
    last_line: str | None = None


class JobRecord(BaseModel):
    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str
    kind: JobKind
    parent_id: str | None = None
    depth: int = Field(default=0, ge=0)  # 0: started from outside any task
    agent: str | None = None  # the agent as the task names it: a CLI or a named definition (agent-like kinds)
    cli: str | None = None  # the adapter that runs it
    argv: list[str] | None = None  # shell kind
    prompt: str
    cwd: str | None = None
    session: str | None = None  # the target session the work is for
    model: str | None = None
    mode: ExecutionMode = ExecutionMode.BACKGROUND
    multi_turn: bool = True  # an agent that can resume goes idle after a turn instead of completing
    status: JobStatus = JobStatus.RUNNING
    queued: bool = False  # running, but waiting for a concurrency slot
    permissions: PermissionSet = Field(default_factory=PermissionSet)  # effective (already narrowed)
    timeout_s: float = Field(default=3600.0, gt=0)
    agent_session_id: str | None = None  # the agent CLI's own session, for follow-ups
    turns: list[Turn] = Field(default_factory=list)
    progress: ProgressInfo = Field(default_factory=ProgressInfo)
    exit_code: int | None = None
    error: str | None = None
    log_path: str
    log_lines: int = 0
    pid: int | None = None  # the current turn's process (group leader)
    pid_started: float | None = None  # its start time, so a reused pid is never signalled
    # A process kairosd started detached (its own session, not its child's pipes): it outlives kairosd,
    # so a restart neither interrupts nor stops it; its owner (consolidation) finishes the record.
    detached: bool = False
    scheduled_task_id: str | None = None  # kind fire: the scheduled task and run that started it
    run_id: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None

    _check = utc_fields("created_at", "updated_at", "finished_at")

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not RECORD_ID_RE.match(value):
            raise ValueError("id must be 't' and 10 lowercase hex digits")
        return value

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def turns_done(self) -> int:
        """The number of the last finished turn (0 before the first finished)."""
        return max((t.number for t in self.turns if t.finished_at is not None), default=0)

    @property
    def response(self) -> str | None:
        """The latest finished turn's response."""
        for turn in reversed(self.turns):
            if turn.finished_at is not None:
                return turn.response
        return None


def view(record: JobRecord, *, turns: bool = True) -> dict[str, Any]:
    """The record as the API shows it: JSON, plus ``turns_done`` and ``response``; ``turns`` optional."""
    doc = record.model_dump(mode="json", exclude=None if turns else {"turns"})
    doc["turns_done"] = record.turns_done
    doc["response"] = record.response
    return doc


def clip(text: str | None, limit: int) -> str | None:
    """``text`` cut to its last ``limit`` characters (the end of an answer matters most)."""
    if text is None or len(text) <= limit:
        return text
    return "…" + text[-(limit - 1) :]
