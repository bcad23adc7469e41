"""A custom agent: any command line, described by a template in the config file.

    [custom.my-agent]
    argv = ["my-agent", "--model", "{model}", "--prompt", "{prompt}"]
    resume_argv = ["my-agent", "--resume", "{session}", "--prompt", "{prompt}"]
    output = "json"            # "text" (default), "json" (one document) or "jsonl" (last object line)
    text_field = "result"      # where the final text is (dotted path; list indices are numbers)
    session_field = "session_id"

Placeholders: ``{prompt}``, ``{model}``, ``{session}`` (the session to resume),
``{cwd}`` and ``{permission_mode}``; ``{{`` and ``}}`` are literal braces. Each
placeholder must have a value: a template that uses ``{model}`` needs a model
from the request or the config. ``prompt_stdin = true`` sends the prompt on
stdin instead. Without ``resume_argv`` the agent takes no follow-ups.

Permissions: kairos cannot see inside a custom command, so the config declares
the mode it runs with (``permission_mode``, default ``default``). A task whose
effective mode is narrower is refused, unless the template passes
``{permission_mode}`` on to the command. Tool lists, forks and chosen session
ids are refused.

Must not import pydantic, the config module, the registry or the server.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kairosd.agents.base import PERMISSION_MODES, Command, Progress, TurnOutcome, TurnRequest
from kairosd.agents.common import (
    check_argv,
    check_mode,
    failure,
    json_object,
    last_line,
    prompt_with_definition,
    refuse_session_control,
    refuse_tool_lists,
)
from kairosd.core.agentspec import OUTPUTS, PLACEHOLDER_RE, PLACEHOLDERS, template_errors, uses
from kairosd.core.errors import UsageError

__all__ = ["OUTPUTS", "PLACEHOLDERS", "CustomAdapter", "CustomSpec", "template_errors", "uses"]


@dataclass(frozen=True)
class CustomSpec:
    """A custom agent as the config describes it (already validated there)."""

    argv: tuple[str, ...]
    resume_argv: tuple[str, ...] | None = None
    prompt_stdin: bool = False
    output: str = "text"
    text_field: str | None = None
    session_field: str | None = None
    model: str | None = None
    permission_mode: str = "default"
    env: dict[str, str] = field(default_factory=dict)


class CustomAdapter:
    features = frozenset({"resume"})

    def __init__(self, name: str, spec: CustomSpec) -> None:
        self.name = name
        self.spec = spec
        self.binary = spec.argv[0]
        self.supports_resume = spec.resume_argv is not None
        if spec.output not in OUTPUTS:
            raise UsageError(f"custom agent {name}: output must be one of {', '.join(OUTPUTS)}")

    def command(self, request: TurnRequest) -> Command:
        refuse_session_control(self.name, request, fork=False, fixed_id=False)
        refuse_tool_lists(self.name, request.permissions)
        template = self.spec.argv
        if request.resume_session:
            if self.spec.resume_argv is None:
                raise UsageError(f"custom agent {self.name} takes no follow-ups (its config has no resume_argv)")
            template = self.spec.resume_argv
        mode = check_mode(self.name, request.permissions)
        declared = self.spec.permission_mode
        if not uses(template, "permission_mode") and PERMISSION_MODES.index(mode) < PERMISSION_MODES.index(declared):
            raise UsageError(
                f"custom agent {self.name} runs in permission mode {declared!r}, wider than this task's {mode!r}; "
                "pass {permission_mode} in its argv or lower its permission_mode in the config"
            )
        prompt = prompt_with_definition(request)
        values = {
            "prompt": prompt,
            "model": request.model or self.spec.model,
            "session": request.resume_session,
            "cwd": request.cwd,
            "permission_mode": mode,
        }
        argv = [self._fill(arg, values) for arg in template]
        argv += list(request.extra_args)
        return Command(
            check_argv(self.name, argv),
            env=dict(self.spec.env),
            stdin=prompt if self.spec.prompt_stdin else None,
        )

    def _fill(self, arg: str, values: dict[str, str | None]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name is None:
                return match.group(0)[0]  # {{ or }}
            value = values.get(name)
            if value is None:
                raise UsageError(f"custom agent {self.name}: its argv needs {{{name}}} and this task has none")
            return value

        return PLACEHOLDER_RE.sub(one, arg)

    def progress(self, line: str) -> Progress | None:
        text = last_line(line)
        if not text:
            return None
        if self.spec.output == "jsonl":
            obj = json_object(line)
            if obj is not None:
                session = _field(obj, self.spec.session_field)
                found = _field(obj, self.spec.text_field)
                return Progress(text=last_line(found), session_id=session) if found or session else None
        return Progress(text=text)

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        if exit_code != 0:
            return failure(self.name, "the run failed", exit_code=exit_code, stderr=stderr, output=stdout)
        if self.spec.output == "text":
            if not stdout.strip():
                return failure(self.name, "no output", stderr=stderr)
            return TurnOutcome(ok=True, final_text=stdout.strip())
        document: Any = None
        if self.spec.output == "json":
            try:
                document = json.loads(stdout)
            except (ValueError, RecursionError):  # RecursionError: output nested thousands deep
                document = None
        else:
            for line in reversed(stdout.splitlines()):
                document = json_object(line)
                if document is not None:
                    break
        if not isinstance(document, dict):
            return failure(self.name, f"its output is not the {self.spec.output.upper()} it is configured for")
        text = _field(document, self.spec.text_field)
        session = _field(document, self.spec.session_field)
        if text is None:
            return failure(
                self.name, f"no text at {self.spec.text_field!r} in its output", stderr=stderr, session_id=session
            )
        return TurnOutcome(ok=True, final_text=text, session_id=session)


def _field(document: Any, path: str | None) -> str | None:
    """The string at a dotted path (``result.text``, ``messages.-1.content``), or None."""
    if not path:
        return None
    value = document
    for key in path.split("."):
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", key):
            index = int(key)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else None
