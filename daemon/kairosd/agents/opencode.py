"""opencode (``opencode run``): the headless command line and its ``--format json`` events.

One turn is ``opencode run --format json [-m PROVIDER/MODEL] [--session ID]``
with the message on stdin. Not as an argument: ``opencode run`` wraps a message
argument that contains a space in double quotes (1.18.33), so the model would see
every kairos prompt quoted; it reads stdin when stdin is not a TTY, and kairos'
runs never have one. Every event line carries ``type``, ``timestamp`` and ``sessionID``:
``step_start``, ``text`` (``part.text``, ``part.messageID``), ``tool_use``
(``part.tool``, ``part.state`` with ``status``, ``input``, ``title``),
``step_finish`` (``part.reason``) and ``error`` (``error.name``,
``error.data.message``). The final text is the text of the last message.

Sessions: ``--session ID`` continues one (ids look like ``ses_...``). Forks and
chosen ids are not offered by ``opencode run``; both are refused.

Permissions go in ``OPENCODE_PERMISSION``, an inline JSON permission config that
opencode merges over the user's own (values ``allow``/``ask``/``deny``). A
headless run has nobody to ask, so kairos never writes ``ask``:

    plan, default       edit, bash, webfetch: deny   (read-only, like Claude headless)
    acceptEdits         edit: allow; bash, webfetch: deny
    bypassPermissions   edit, bash, webfetch: allow

``allowed_tools`` adds ``"*": "deny"`` and allows only the listed tools, each
no wider than the mode allows; ``denied_tools`` are set to ``deny``. Tool names
are opencode's (``bash``, ``edit``, ``webfetch``, ``read``, MCP tool names).

Must not import the registry, the config module or the server.
"""

from __future__ import annotations

import json
from typing import Any

from kairosd.agents.base import Command, Permissions, Progress, TurnOutcome, TurnRequest
from kairosd.agents.common import (
    CliAdapter,
    check_mode,
    failure,
    json_objects,
    last_line,
    option,
    prompt_with_definition,
    refuse_session_control,
    text_of,
)

NAME = "opencode"
_GATED = ("edit", "bash", "webfetch")  # the tools opencode's permission config has always known
_MODE_ALLOWS = {
    "plan": frozenset[str](),
    "default": frozenset[str](),
    "acceptEdits": frozenset({"edit"}),
    "bypassPermissions": frozenset(_GATED),
}


def permission_config(permissions: Permissions) -> dict[str, str]:
    """The ``OPENCODE_PERMISSION`` document for a task's effective permissions."""
    allows = _MODE_ALLOWS[check_mode(NAME, permissions)]
    config = {tool: "allow" if tool in allows else "deny" for tool in _GATED}
    if permissions.allowed_tools is not None:
        config["*"] = "deny"
        for tool in sorted(permissions.allowed_tools):
            # A listed tool is allowed only as far as the mode allows it.
            config[tool] = "deny" if tool in _GATED and tool not in allows else "allow"
    for tool in sorted(permissions.denied_tools):
        config[tool] = "deny"
    return config


class OpencodeAdapter(CliAdapter):
    name = NAME
    features = frozenset({"resume", "tool_lists"})

    def command(self, request: TurnRequest) -> Command:
        refuse_session_control(NAME, request, fork=False, fixed_id=False)
        env = dict(self.settings.env)
        env["OPENCODE_PERMISSION"] = json.dumps(permission_config(request.permissions), sort_keys=True)
        argv = [self.binary, "run", "--format", "json"]
        argv += self.model_args(request)
        argv += option("--session", request.resume_session)
        argv += self.extra_args(request)
        return self.finish(argv, env=env, stdin=prompt_with_definition(request))

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        kind, part = event.get("type"), _part(event)
        session = text_of(event.get("sessionID"))
        if kind == "step_start":
            return Progress(session_id=session)
        if kind == "tool_use":
            state = part.get("state")
            state = state if isinstance(state, dict) else {}
            tool_input = state.get("input")
            intent = text_of(state.get("title")) or (
                text_of(tool_input.get("description")) if isinstance(tool_input, dict) else None
            )
            return Progress(tool_call=text_of(part.get("tool")) or "tool", intent=last_line(intent), session_id=session)
        if kind == "text":
            text = last_line(text_of(part.get("text")))
            return Progress(text=text, session_id=session) if text else None
        if kind == "error":
            return Progress(text=last_line(_error_message(event)), session_id=session)
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        session: str | None = None
        texts: list[tuple[str | None, str]] = []  # (messageID, text)
        tools: set[str] = set()
        errors: list[str] = []
        for event in json_objects(stdout):
            session = text_of(event.get("sessionID")) or session
            kind, part = event.get("type"), _part(event)
            if kind == "text":
                text = text_of(part.get("text"))
                if text:
                    texts.append((text_of(part.get("messageID")), text))
            elif kind == "tool_use":
                tools.add(text_of(part.get("callID")) or text_of(part.get("id")) or str(len(tools)))
            elif kind == "error":
                errors.append(_error_message(event) or "error")
        final_text = None
        if texts:
            last_message = texts[-1][0]
            final_text = "\n".join(t for m, t in texts if m == last_message).strip() or None
        if exit_code != 0 or errors:
            return failure(
                NAME,
                errors[-1] if errors else "the run failed",
                exit_code=exit_code,
                stderr=stderr,
                output="" if errors else stdout,
                session_id=session,
                tool_calls=len(tools),
                final_text=final_text,
            )
        if final_text is None:
            return failure(NAME, "no answer in its output", stderr=stderr, output=stdout, session_id=session)
        return TurnOutcome(ok=True, final_text=final_text, session_id=session, tool_calls=len(tools))


def _part(event: dict[str, Any]) -> dict[str, Any]:
    part = event.get("part")
    return part if isinstance(part, dict) else {}


def _error_message(event: dict[str, Any]) -> str | None:
    error = event.get("error")
    if not isinstance(error, dict):
        return text_of(error)
    data = error.get("data")
    message = text_of(data.get("message")) if isinstance(data, dict) else None
    name = text_of(error.get("name"))
    if message and name:
        return f"{name}: {message}"
    return message or name or text_of(error.get("message"))
