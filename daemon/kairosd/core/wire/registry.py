"""Responses of the background job registry (``kairos task ...``): a job is the registry's record
(``kairosd.jobs.model``) as ``GET /v1/registry/ID`` answers it; a listing leaves out each task's ``turns``.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.sections import RegistryInfo


class Turn(Record):
    number: int
    prompt: str
    queued_at: str
    started_at: str | None
    finished_at: str | None
    ok: bool | None
    response: str | None
    error: str | None
    exit_code: int | None
    session_id: str | None
    tool_calls: int


class Progress(Record):
    tool_calls: int
    intent: str | None
    last_line: str | None


class PermissionsView(Record):
    """The job's effective permissions (its parent's narrowed): ``allowed_tools`` None allows what the agent does."""

    mode: str
    allowed_tools: list[str] | None
    denied_tools: list[str]


class BackgroundTask(Record):
    """One background job; in ``task list`` without ``turns``."""

    id: str
    kind: str
    parent_id: str | None
    depth: int
    agent: str | None
    cli: str | None
    argv: list[str] | None
    prompt: str
    cwd: str | None
    session: str | None
    model: str | None
    mode: str
    multi_turn: bool
    status: str
    queued: bool
    permissions: PermissionsView
    timeout_s: float
    agent_session_id: str | None
    turns: list[Turn] | None = None
    progress: Progress
    exit_code: int | None
    error: str | None
    log_path: str
    log_lines: int
    pid: int | None
    pid_started: float | None
    detached: bool
    scheduled_task_id: str | None
    run_id: str | None
    created_at: str
    updated_at: str
    finished_at: str | None
    turns_done: int
    response: str | None


class FullBackgroundTask(BackgroundTask):
    turns: list[Turn]


class BackgroundTaskDoc(Document):
    """``task start``, ``send`` (without ``--wait``), ``show`` and ``close``."""

    task: FullBackgroundTask


class SettledDoc(Document):
    """``task wait``, and ``task start|send --wait``: the task, and whether the wait ran out first."""

    task: FullBackgroundTask
    timed_out: bool


class CancelledDoc(Document):
    """``task cancel``: the task, and every task cancelled with it (itself and its descendants)."""

    task: FullBackgroundTask
    cancelled: list[str]
    killed: list[str]  # of those, the ones that ignored SIGTERM and were killed with SIGKILL after the grace
    kill_grace_s: float
    unchanged: bool | None = None  # cancelled already: nothing was done (exit 0)


class BackgroundListDoc(Document):
    tasks: list[BackgroundTask]
    registry: RegistryInfo


class LogsDoc(Document):
    """``task logs --json`` (without ``-f``): the whole log, and the task's status."""

    text: str
    status: str


class LogLine(Record):
    """``task logs -f --json``: one item per line (``seq``, ``line``); ``lost`` and a ``note`` when the
    follower fell behind; last, ``end`` and the task's ``status``."""

    seq: int | None = None
    line: str | None = None
    lost: bool | None = None
    note: str | None = None
    end: bool | None = None
    status: str | None = None


class LogChunkDoc(Document):
    """``GET /v1/registry/ID/logs?offset=N``: a chunk of the log from ``offset``, where the next one starts,
    the log's size and the task's status (``kairos task logs`` reads chunks until ``next_offset`` is ``size``)."""

    text: str
    offset: int
    next_offset: int
    size: int
    status: str
