"""The narrow interface between the background job registry and agent CLIs.

An :class:`AgentAdapter` knows one CLI's flags and output format. It never
starts a process: the registry runs the :class:`Command` it builds (in its own
process group, with kairos' environment markers), feeds each stdout line to
:meth:`AgentAdapter.progress`, and hands the whole output to
:meth:`AgentAdapter.result` when the process exits.

Permissions only narrow: the registry computes a child task's effective
permissions (:func:`narrow`) before it asks the adapter for a command.

:meth:`AgentAdapter.command` raises :class:`~kairosd.core.errors.UsageError` when a
request asks for something its CLI cannot do, or cannot do without widening
permissions (a fork, a fixed session id, a tool list it cannot enforce): a
refusal the registry reports, never a silently weaker run.

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kairosd.core.agentspec import PERMISSION_MODES, Permissions, narrow

# Permissions are shared with the config (kairosd.core.agentspec); re-exported here for the adapters.
__all__ = [
    "PERMISSION_MODES",
    "AgentAdapter",
    "Command",
    "Permissions",
    "Progress",
    "TurnOutcome",
    "TurnRequest",
    "narrow",
]


@dataclass(frozen=True)
class TurnRequest:
    """One turn of an agent: a first prompt, or a follow-up resuming ``resume_session``."""

    prompt: str
    cwd: str | None = None
    model: str | None = None
    resume_session: str | None = None  # the agent's own session id to continue
    permissions: Permissions = field(default_factory=Permissions)
    agent_definition: str | None = None  # the body of a named agent definition (system prompt), if any
    extra_args: tuple[str, ...] = ()
    # Added after the first cut (defaults keep every existing caller valid):
    fork: bool = False  # continue resume_session under a new session id, leaving the original alone
    new_session_id: str | None = None  # a fixed id for the new (or forked) session, where the CLI allows it


@dataclass(frozen=True)
class Command:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to kairos' environment
    stdin: str | None = None  # text for the process' stdin (None: an empty stdin)


@dataclass(frozen=True)
class Progress:
    """What one output line says, all optional: a tool call, an intent, a line of text."""

    tool_call: str | None = None
    intent: str | None = None
    text: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class TurnOutcome:
    ok: bool
    final_text: str | None = None
    session_id: str | None = None  # the agent's session id, for a follow-up turn
    error: str | None = None
    tool_calls: int = 0


class AgentAdapter(Protocol):
    """One agent CLI (claude, copilot, codex, gemini, opencode, or a custom template)."""

    name: str
    binary: str  # the executable looked up on PATH (or an absolute path from config)
    supports_resume: bool

    def command(self, request: TurnRequest) -> Command:
        """The command line for one headless turn."""
        ...

    def progress(self, line: str) -> Progress | None:
        """Parse one stdout line (stream/JSONL output); None if it says nothing useful."""
        ...

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        """The turn's outcome from everything the process printed and its exit code."""
        ...
