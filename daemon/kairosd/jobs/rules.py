"""The registry's decisions that need no state: what a start may ask for, how deep it nests, which
permissions it gets, when a wait is over, and what a turn's process result means.

Pure functions and plain data (no I/O, no clock, no asyncio), so each rule is
tested and read on its own; :mod:`kairosd.jobs.registry` applies them.

Must not import the registry's state, the scheduler, the store or the server.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kairosd.agents.base import AgentAdapter, Permissions, narrow
from kairosd.core import bounds
from kairosd.core.bounds import MAX_PROMPT_CHARS
from kairosd.core.errors import LimitError, UsageError
from kairosd.jobs.model import (
    MAX_RESPONSE_CHARS,
    ExecutionMode,
    JobKind,
    JobRecord,
    JobStatus,
    clip,
)
from kairosd.system.procgroup import describe_exit
from kairosd.system.runner import ProcessResult

log = logging.getLogger(__name__)

MAX_TIMEOUT_S = bounds.MAX_TIMEOUT_S
SHELL_RESPONSE_CHARS = 4000  # a shell task's "response" is the tail of its stdout
AGENT_KINDS = frozenset({JobKind.AGENT, JobKind.FIRE, JobKind.CONSOLIDATION})

AdapterFor = Callable[[str], AgentAdapter]


@dataclass(frozen=True)
class AgentPolicy:
    """What the user's config and agent catalog say about one agent name (as a task names it).

    ``cli`` is the adapter that runs it (a named definition runs on some CLI; None: the name itself),
    ``agent_definition`` the definition's instructions, ``model`` its default model. ``ceiling`` (the
    CLI's configured permissions) and ``restrictions`` (the definition's own) only ever narrow a task's
    permissions; ``timeout_s`` is the default per turn.
    """

    ceiling: Permissions | None = None
    timeout_s: float | None = None
    cli: str | None = None
    agent_definition: str | None = None
    model: str | None = None
    restrictions: Permissions | None = None


PolicyFor = Callable[[str, str | None], AgentPolicy]  # (agent name, cwd): definitions can be per project


@dataclass(frozen=True)
class StartSpec:
    """What a start asks for. ``parent_depth`` is the starter's own ``KAIROS_TASK_DEPTH``, if any."""

    kind: JobKind = JobKind.AGENT
    prompt: str = ""
    agent: str | None = None
    argv: list[str] | None = None
    cwd: str | None = None
    session: str | None = None
    model: str | None = None
    mode: ExecutionMode = ExecutionMode.BACKGROUND
    parent_id: str | None = None
    parent_depth: int | None = None
    permissions: Permissions | None = None  # None: the parent's (or the default for a top-level task)
    timeout_s: float | None = None
    multi_turn: bool = True
    scheduled_task_id: str | None = None
    run_id: str | None = None


# ---- starting ------------------------------------------------------------------------------


def depth_for(spec: StartSpec, parent: JobRecord | None, max_depth: int) -> int:
    """The new task's depth; LimitError past ``max_depth``.

    The registry's own depth of a known parent wins over what a process claims; a claim only ever
    makes it deeper. A start with no parent at all (a person at a shell) is top-level: depth 0.
    """
    claimed = spec.parent_depth if spec.parent_depth is not None and spec.parent_depth >= 0 else None
    if parent is None and claimed is None and not spec.parent_id:
        return 0
    depth = max(parent.depth if parent is not None else 0, claimed or 0) + 1
    if depth > max_depth:
        where = f"task {parent.id}" if parent is not None else "the calling task"
        raise LimitError(
            f"refused: a task started from {where} would be at depth {depth}, past the limit "
            f"KAIROS_MAX_DEPTH={max_depth}; do this work in the current task instead"
        )
    return depth


def effective_permissions(
    requested: Permissions | None, limits: list[Permissions | None], parent: JobRecord | None
) -> Permissions:
    """The request narrowed by every limit (the agent's configured ceiling, its definition's own
    permissions) and by the parent's effective permissions.

    Without a request a task gets its bounds as they are (a child: its parent's, narrowed by the rest).
    """
    bounds = [b for b in limits if b is not None]
    if parent is not None:
        bounds.append(parent.permissions.to_permissions())
    effective = requested or (bounds[-1] if bounds else Permissions())
    for bound in bounds:
        effective = narrow(bound, effective)
    return effective


def check_prompt(prompt: Any, *, required: bool) -> str:
    if not isinstance(prompt, str):
        raise UsageError("the prompt must be a string")
    if required and not prompt.strip():
        raise UsageError("an agent job needs a non-empty prompt")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise UsageError(f"the prompt is longer than {MAX_PROMPT_CHARS} characters")
    return prompt


def check_cwd(cwd: str | None) -> str | None:
    if cwd is None:
        return None
    path = os.path.expanduser(cwd)
    if not os.path.isabs(path):
        raise UsageError(f"the working directory must be an absolute path, not {cwd!r}")
    if not os.path.isdir(path):
        what = "is not a directory" if os.path.exists(path) else "does not exist"
        raise UsageError(f"working directory {what}: {path}")
    return path


def check_binary(name: str, adapter: Any, environ: Mapping[str, str] | None) -> None:
    """Refuse an agent whose CLI ``kairos doctor`` would report missing: not on the PATH agents run with."""
    binary = getattr(adapter, "binary", None)
    if not isinstance(binary, str) or not binary:
        return
    if os.sep in binary:
        found = os.path.isfile(binary) and os.access(binary, os.X_OK)
    else:
        path = (os.environ if environ is None else environ).get("PATH", os.defpath)
        found = shutil.which(binary, path=path) is not None
    if not found:
        where = "at that path" if os.sep in binary else "on kairosd's PATH"
        raise UsageError(
            f"{name} is not installed ({binary} not found {where}); install it or set [agents.{name}] binary "
            "in config.toml (see: kairos doctor)"
        )


def check_timeout(timeout_s: float | None, default: float) -> float:
    if timeout_s is None:
        return default
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise UsageError(f"timeout_s must be a number of seconds from 1 to {MAX_TIMEOUT_S}")
    return float(timeout_s)


# ---- waiting -----------------------------------------------------------------------------------


def settled(record: JobRecord, since_turn: int | None) -> bool:
    """Whether a wait is over: terminal or interrupted; without ``since_turn``, no longer running;
    with it, a turn numbered above ``since_turn`` has finished."""
    if record.terminal or record.status is JobStatus.INTERRUPTED:
        return True
    if since_turn is None:
        return record.status is not JobStatus.RUNNING
    return record.turns_done > since_turn


# ---- a turn's end ---------------------------------------------------------------------------------


def cut_short(*, cancelled: bool, when: str) -> dict[str, Any]:
    """The outcome of a turn ended by a cancel or by kairosd stopping."""
    if cancelled:
        return {"ok": False, "status": JobStatus.CANCELLED, "error": f"cancelled {when}"}
    return {"ok": False, "status": JobStatus.INTERRUPTED, "error": f"kairosd stopped {when}; it was not re-run"}


def turn_outcome(
    record: JobRecord,
    result: ProcessResult,
    adapter: AgentAdapter | None,
    *,
    tool_calls: int,
    session_seen: str | None,
) -> dict[str, Any]:
    """What a finished process means for the turn (ok, error, response, session id) and the task's status.

    An agent that can resume goes ``idle`` after a good turn (a multi-turn task with a session id);
    otherwise ``completed`` or ``failed``. A shell command is ok on exit 0; its response is its stdout.
    """
    if result.error is not None:
        return {"ok": False, "status": JobStatus.FAILED, "error": result.error}
    if result.timed_out:
        error = f"timed out after {record.timeout_s:g}s (process group killed)"
        return {"ok": False, "status": JobStatus.FAILED, "error": error, "exit_code": result.exit_code}
    code = result.exit_code
    assert code is not None  # it started and was not timed out
    if adapter is None:
        ok = code == 0
        return {
            "ok": ok,
            "status": JobStatus.COMPLETED if ok else JobStatus.FAILED,
            "error": None if ok else describe_exit(code),
            "exit_code": code,
            "response": clip(result.stdout.rstrip("\n"), SHELL_RESPONSE_CHARS),
        }
    try:
        outcome = adapter.result(result.stdout, result.stderr, code)
    except Exception as exc:
        log.exception("task %s: the %s adapter could not read the output", record.id, record.agent)
        return {"ok": False, "status": JobStatus.FAILED, "error": f"adapter error: {exc}", "exit_code": code}
    session_id = outcome.session_id or session_seen or record.agent_session_id
    if not outcome.ok:
        status = JobStatus.FAILED
    elif record.multi_turn and adapter.supports_resume and session_id:
        status = JobStatus.IDLE
    else:
        status = JobStatus.COMPLETED
    return {
        "ok": outcome.ok,
        "status": status,
        "error": None if outcome.ok else (outcome.error or describe_exit(code)),
        "exit_code": code,
        "response": clip(outcome.final_text, MAX_RESPONSE_CHARS),
        "session_id": session_id,
        "tool_calls": max(outcome.tool_calls, tool_calls),
    }


def end_changes(record: JobRecord, outcome: dict[str, Any], now: datetime, tool_calls: int) -> dict[str, Any]:
    """The record's changes for a turn that ended with ``outcome``: the turn finished, the new status."""
    keys = ("ok", "error", "exit_code", "response", "session_id")
    turn_fields: dict[str, Any] = {k: outcome[k] for k in keys if k in outcome}
    turn_fields["tool_calls"] = outcome.get("tool_calls", tool_calls)
    turns = [*record.turns[:-1], record.turns[-1].model_copy(update={"finished_at": now, **turn_fields})]
    status: JobStatus = outcome["status"]
    changes: dict[str, Any] = {
        "status": status,
        "queued": False,
        "turns": turns,
        "exit_code": outcome.get("exit_code"),
        "error": outcome.get("error"),
        "pid": None,
        "pid_started": None,
    }
    if outcome.get("session_id"):
        changes["agent_session_id"] = outcome["session_id"]
    if status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED):
        changes["finished_at"] = now
    return changes


def summary(outcome: dict[str, Any]) -> str:
    """``idle (exit code 0)`` or ``failed (timed out after 5s ...)``: the log's turn-end marker."""
    text = str(outcome["status"].value)
    if outcome.get("error"):
        text += f" ({outcome['error']})"
    elif outcome.get("exit_code") is not None:
        text += f" (exit code {outcome['exit_code']})"
    return text
