"""Helpers every agent adapter shares: settings, command lines, JSON lines, prompts, failure messages.

The adapters are pure translators (a request into an argv, output into an
outcome), so everything here is pure too: no processes, no files, no clock.

Must not import pydantic, the config module, the registry or the server (the
config maps itself onto :class:`AdapterSettings`, not the other way round).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kairosd.agents.base import PERMISSION_MODES, Command, Permissions, Progress, TurnOutcome, TurnRequest
from kairosd.core.errors import UsageError

# Linux refuses a single argv string longer than MAX_ARG_STRLEN (32 pages, 128 KiB)
# with E2BIG; refuse a little earlier with a message that says what to do.
MAX_ARG_BYTES = 100_000
# How much of an error message (stderr tail, an agent's error text) goes into a TurnOutcome.
MAX_ERROR_CHARS = 500
MAX_PROGRESS_CHARS = 300


@dataclass(frozen=True)
class AdapterSettings:
    """What the user's config says about one CLI (all optional: the adapter has defaults)."""

    binary: str | None = None  # absolute path or a name looked up on PATH
    model: str | None = None  # used when the request names none
    extra_args: tuple[str, ...] = ()  # added to every command line, before the request's own
    env: dict[str, str] = field(default_factory=dict)  # added to every command's environment


class CliAdapter:
    """What the built-in adapters share: settings, the binary, and the parts of a command line
    that do not depend on the CLI's flag syntax. Each adapter still spells its own flags."""

    name: str
    supports_resume = True
    features: frozenset[str] = frozenset({"resume"})

    def __init__(self, settings: AdapterSettings | None = None) -> None:
        self.settings = settings or AdapterSettings()
        self.binary = self.settings.binary or self.name

    def model(self, request: TurnRequest) -> str | None:
        """The request's model, else the configured one."""
        return request.model or self.settings.model

    def extra_args(self, request: TurnRequest) -> list[str]:
        """The configured extra arguments, then the request's own."""
        return [*self.settings.extra_args, *request.extra_args]

    def model_args(self, request: TurnRequest, *, joined: bool = False) -> list[str]:
        """``--model`` with :meth:`model`, or nothing when neither the request nor the config names one."""
        return option("--model", self.model(request), joined=joined)

    def progress(self, line: str) -> Progress | None:
        """A JSON event line goes to :meth:`event_progress`; any other line is shown as it is (codex,
        for one, prints its progress on stderr, and a stray stdout line is still worth showing)."""
        event = json_object(line)
        return plain_line(line) if event is None else self.event_progress(event)

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        """What one of the CLI's JSON events says, if anything worth showing."""
        raise NotImplementedError

    def finish(self, argv: list[str], *, env: dict[str, str] | None = None, stdin: str | None = None) -> Command:
        """The command, once its argv passes :func:`check_argv`; ``env`` defaults to the configured one."""
        return Command(check_argv(self.name, argv), env=dict(self.settings.env) if env is None else env, stdin=stdin)


def option(flag: str, value: str | None, *, joined: bool = False) -> list[str]:
    """``[flag, value]``, or ``["flag=value"]`` when ``joined``; nothing when ``value`` is empty.

    Each CLI spells its options its own way: the joined form keeps a value that starts
    with a dash from being read as an option.
    """
    if not value:
        return []
    return [f"{flag}={value}"] if joined else [flag, value]


def plain_line(line: str) -> Progress | None:
    """Progress from an output line that is not a JSON event: its text, if it has any."""
    text = last_line(line)
    return Progress(text=text) if text else None


def json_object(line: str) -> dict[str, Any] | None:
    """One JSON object from a line of output, or None (blank, not JSON, not an object)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: an agent's line nested thousands deep
        return None
    return value if isinstance(value, dict) else None


def json_objects(stdout: str) -> Iterator[dict[str, Any]]:
    """Every JSON object line of a JSONL stream, skipping anything else (warnings, banners)."""
    for line in stdout.splitlines():
        obj = json_object(line)
        if obj is not None:
            yield obj


def text_of(value: Any) -> str | None:
    """A string field, or None: agent output is untrusted, so every field is checked."""
    return value if isinstance(value, str) else None


def last_line(text: str | None, limit: int = MAX_PROGRESS_CHARS) -> str | None:
    """The last non-blank line of ``text``, shortened for a progress display."""
    if not text:
        return None
    for line in reversed(text.splitlines()):
        if line.strip():
            return shorten(line.strip(), limit)
    return None


def shorten(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tail(text: str, lines: int = 3) -> str:
    """The last few non-blank lines on one line: enough of stderr to say what went wrong."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return shorten(" | ".join(kept))


def exit_reason(exit_code: int) -> str:
    """``exited with 1`` or ``killed by SIGTERM`` (asyncio reports a signal as a negative code)."""
    if exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    if exit_code > 128 and exit_code - 128 in {s.value for s in signal.Signals}:
        # A shell-style code: the CLI died of a signal (Claude documents 143 for SIGTERM).
        return f"exited with {exit_code} ({signal.Signals(exit_code - 128).name})"
    return f"exited with {exit_code}"


def failure(
    agent: str,
    message: str,
    *,
    exit_code: int | None = None,
    stderr: str = "",
    output: str = "",
    session_id: str | None = None,
    tool_calls: int = 0,
    final_text: str | None = None,
) -> TurnOutcome:
    """A failed outcome whose error names the agent, what it said, and how it ended.

    ``output`` (stdout that could not be parsed) is quoted only when stderr says nothing.
    """
    parts = [f"{agent}: {shorten(message.strip())}" if message.strip() else agent]
    if exit_code is not None and exit_code != 0:
        parts.append(f"({exit_reason(exit_code)})")
    detail, label = tail(stderr), "stderr"
    if not detail:
        detail, label = tail(output), "output"
    if detail and detail not in message:
        parts.append(f"{label}: {detail}")
    return TurnOutcome(
        ok=False,
        final_text=final_text,
        session_id=session_id,
        error=" ".join(parts),
        tool_calls=tool_calls,
    )


def check_argv(agent: str, argv: list[str]) -> list[str]:
    """Refuse an argv the kernel would refuse (one string over ~128 KiB), naming the cause."""
    for arg in argv:
        if len(arg.encode("utf-8", "surrogateescape")) > MAX_ARG_BYTES:
            raise UsageError(
                f"{agent}: the prompt or agent definition is too long for a command line "
                f"({len(arg)} characters; at most about {MAX_ARG_BYTES} bytes)"
            )
        if "\x00" in arg:
            raise UsageError(f"{agent}: a command-line argument contains a NUL character")
    return argv


def prompt_with_definition(request: TurnRequest) -> str:
    """The prompt, with the agent definition in front on a first turn.

    For CLIs that have no flag for extra system instructions. A resumed session
    already holds the definition from its first turn, so it is not repeated.
    """
    if not request.agent_definition or request.resume_session:
        return request.prompt
    return (
        "<agent-definition>\n"
        f"{request.agent_definition.strip()}\n"
        "</agent-definition>\n\n"
        "Follow the agent definition above for this task.\n\n"
        f"{request.prompt}"
    )


def refuse_session_control(agent: str, request: TurnRequest, *, fork: bool, fixed_id: bool) -> None:
    """Refuse a fork or a fixed session id the CLI cannot honour (never silently ignore them)."""
    if request.fork and not request.resume_session:
        raise UsageError(f"{agent}: a fork needs a session to resume")
    if request.fork and not fork:
        raise UsageError(f"{agent} cannot fork a session; resume it instead, or use claude")
    if request.new_session_id and not fixed_id:
        raise UsageError(f"{agent} cannot start a session under a chosen id")


def refuse_tool_lists(agent: str, permissions: Permissions) -> None:
    """For CLIs with no per-tool switches: a tool list they would ignore is refused.

    Ignoring it would let the agent use a tool the task's permissions deny (a
    deny in a parent must never become an allow), so the run does not start.
    """
    if permissions.denied_tools:
        names = ", ".join(sorted(permissions.denied_tools))
        raise UsageError(f"{agent} cannot deny single tools (denied here: {names}); use claude, copilot or opencode")
    if permissions.allowed_tools is not None:
        raise UsageError(f"{agent} cannot limit the agent to a list of tools; use claude, copilot or opencode")


def mode_only(agent: str, request: TurnRequest) -> str:
    """For CLIs with a permission mode but no tool lists, forks or chosen session ids: the
    request's mode, after refusing everything else it asks for."""
    refuse_session_control(agent, request, fork=False, fixed_id=False)
    refuse_tool_lists(agent, request.permissions)
    return check_mode(agent, request.permissions)


def check_mode(agent: str, permissions: Permissions) -> str:
    if permissions.mode not in PERMISSION_MODES:
        raise UsageError(f"{agent}: unknown permission mode {permissions.mode!r} (use {', '.join(PERMISSION_MODES)})")
    return permissions.mode


def bare_tool(rule: str) -> str:
    """``Bash(git log:*)`` -> ``Bash``: the tool a permission rule is about."""
    return rule.split("(", 1)[0].strip()
