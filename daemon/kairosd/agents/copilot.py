"""GitHub Copilot CLI (``copilot -p``): the headless command line and its JSONL output.

One turn is ``copilot --output-format=json --no-ask-user ... --prompt=TEXT``
(the ``=`` form, so a prompt that starts with a dash is still the prompt).
The JSONL schema is not documented; these are the events seen in practice, all
``{"type": ..., "data": {...}}``: ``session.start`` (``sessionId``; older versions only: 1.0.102
does not print it, and the id comes from the last line),
``assistant.intent`` (``intent``), ``assistant.message`` (``content``,
``toolRequests``), ``tool.execution_start`` (``toolName``),
``tool.execution_complete``, ``session.error`` (``message``), and a last
``{"type": "result", "sessionId", "exitCode"}``. Parsing is lenient: unknown
events are skipped, and any non-zero exit code is a failure.

Sessions: ``--resume=ID``; ``--session-id=UUID`` starts a session under a chosen
id. Copilot cannot fork a session headlessly, so a fork is refused.

Permissions (Copilot has tool switches but no modes): deny rules win over every
allow in Copilot, so ``denied_tools`` become ``--deny-tool``. Modes map onto
what may run without a prompt, which headless means "may run at all":
``plan`` denies the ``write`` and ``shell`` tool kinds; ``default`` allows
nothing extra; ``acceptEdits`` allows ``write``; ``bypassPermissions`` allows
every tool (``--allow-all-tools``, not paths or URLs). ``default`` and ``acceptEdits`` also allow
kairos' own MCP server (``--allow-tool=kairos``): headless Copilot otherwise refuses every MCP call.
With ``allowed_tools``,
only those are allowed (the mode adds nothing: a list never widens), and in
plan mode ``write``/``shell`` rules are dropped from it. Tool names are
Copilot's own (``shell(git:*)``, ``write``, ``read``, an MCP server name).
Copilot's reference calls ``--allow-all-tools`` required in prompt mode: if the
installed version refuses to run without it, a task below ``bypassPermissions``
fails with Copilot's message, and only the user can widen it, by setting
``permission_mode = "bypassPermissions"`` for copilot in the config.

Must not import the registry, the config module or the server.
"""

from __future__ import annotations

from typing import Any

from kairosd.agents.base import Command, Progress, TurnOutcome, TurnRequest
from kairosd.agents.common import (
    CliAdapter,
    bare_tool,
    check_mode,
    failure,
    json_objects,
    last_line,
    option,
    prompt_with_definition,
    refuse_session_control,
    text_of,
)

NAME = "copilot"
_PLAN_DENIED = ("shell", "write")
KAIROS_MCP = "kairos"  # the MCP server `kairos integrate copilot` registers


class CopilotAdapter(CliAdapter):
    name = NAME
    features = frozenset({"resume", "session_id", "tool_lists"})

    def command(self, request: TurnRequest) -> Command:
        refuse_session_control(NAME, request, fork=False, fixed_id=True)
        argv = [self.binary, "--output-format=json", "--no-ask-user"]
        argv += self.model_args(request, joined=True)
        argv += option("--resume", request.resume_session, joined=True)
        argv += option("--session-id", request.new_session_id, joined=True)
        argv += _permission_args(request)
        argv += self.extra_args(request)
        argv.append(f"--prompt={prompt_with_definition(request)}")
        return self.finish(argv)

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        kind, data = event.get("type"), _data(event)
        if kind == "session.start":
            return Progress(session_id=text_of(data.get("sessionId")))
        if kind == "assistant.intent":
            intent = last_line(text_of(data.get("intent")))
            return Progress(intent=intent) if intent else None
        if kind == "tool.execution_start":
            return Progress(tool_call=text_of(data.get("toolName")) or "tool")
        if kind == "assistant.message":
            text = last_line(_content(data.get("content")))
            return Progress(text=text) if text else None
        if kind == "session.error":
            return Progress(text=last_line(text_of(data.get("message"))))
        if kind == "result":
            return Progress(session_id=text_of(event.get("sessionId")))
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        session: str | None = None
        final_text: str | None = None
        started, requested = 0, 0
        errors: list[str] = []
        result_code: int | None = None
        seen_result = False
        for event in json_objects(stdout):
            kind, data = event.get("type"), _data(event)
            if kind == "session.start":
                session = text_of(data.get("sessionId")) or session
            elif kind == "assistant.message":
                final_text = _content(data.get("content")) or final_text
                requests = data.get("toolRequests")
                requested += len(requests) if isinstance(requests, list) else 0
            elif kind == "tool.execution_start":
                started += 1
            elif kind == "session.error":
                errors.append(text_of(data.get("message")) or "session error")
            elif kind == "result":
                seen_result = True
                session = text_of(event.get("sessionId")) or session
                code = event.get("exitCode")
                result_code = code if isinstance(code, int) else None
        # Tool starts are what ran; requests are the fallback if a version does not report them.
        tool_calls = started or requested
        if exit_code != 0 or (result_code not in (None, 0)) or (errors and final_text is None):
            message = "; ".join(errors) or (
                f"reported exit code {result_code}" if result_code not in (None, 0) else "the run failed"
            )
            return failure(
                NAME,
                message,
                exit_code=exit_code,
                stderr=stderr,
                output="" if (seen_result or errors) else stdout,
                session_id=session,
                tool_calls=tool_calls,
                final_text=final_text,
            )
        if final_text is None:
            return failure(NAME, "no answer in its output", stderr=stderr, output=stdout, session_id=session)
        return TurnOutcome(ok=True, final_text=final_text, session_id=session, tool_calls=tool_calls)


def _permission_args(request: TurnRequest) -> list[str]:
    perms = request.permissions
    mode = check_mode(NAME, perms)
    args: list[str] = []
    denied = set(perms.denied_tools)
    if mode == "plan":
        denied.update(_PLAN_DENIED)
    if perms.allowed_tools is not None:
        allowed = sorted(
            rule
            for rule in perms.allowed_tools - perms.denied_tools
            if not (mode == "plan" and bare_tool(rule) in _PLAN_DENIED)
        )
        args += [f"--allow-tool={rule}" for rule in allowed]
    elif mode == "acceptEdits":
        args.append("--allow-tool=write")
    elif mode == "bypassPermissions":
        args.append("--allow-all-tools")
    if mode in ("default", "acceptEdits") and perms.allowed_tools is None and KAIROS_MCP not in denied:
        # kairos' own MCP tools (they only read and change the user's kairos schedule), so a task can
        # schedule its follow-up; a tool list or a deny rule decides for itself.
        args.append(f"--allow-tool={KAIROS_MCP}")
    args += [f"--deny-tool={rule}" for rule in sorted(denied)]
    return args


def _data(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _content(value: Any) -> str | None:
    """A message's text: a string, or a list of strings / ``{"text": ...}`` parts."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        parts = [p if isinstance(p, str) else text_of(p.get("text")) if isinstance(p, dict) else None for p in value]
        joined = "".join(p for p in parts if p)
        return joined or None
    return None
