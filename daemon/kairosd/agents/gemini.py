"""Gemini CLI (``gemini -p``): the headless command line and its stream-json output.

One turn is ``gemini --output-format stream-json --approval-mode MODE ...
--prompt=TEXT``. Events are JSON lines with a ``type``: ``init``
(``session_id``, ``model``), ``message`` (``role``, ``content``, ``delta``: the
assistant's text arrives in chunks), ``tool_use`` (``tool_name``,
``parameters``), ``tool_result`` (``status``), ``error`` (non-fatal warnings)
and ``result`` (``status`` ``success`` or ``error`` with ``error.message``).
The final text is the assistant text after the last tool call. The single
``--output-format json`` object (``response``, ``error``) is understood too.
Exit codes: 0 success, 1 error, 42 bad input, 53 turn limit, 55 the folder is not trusted
(Gemini 0.61+ refuses untrusted folders headless too; kairos does not pass ``--skip-trust``).

Sessions: ``--resume ID``. Gemini has no fork and no chosen session id headless;
both are refused.

Permissions: ``--approval-mode`` takes ``plan``, ``default``, ``auto_edit`` and
``yolo``, the four kairos modes in order. Gemini has no flag that denies a
tool or limits the agent to a list (its excludeTools live in settings files),
so a request with tool lists is refused.

Must not import the registry, the config module or the server.
"""

from __future__ import annotations

from typing import Any

from kairosd.agents.base import Command, Progress, TurnOutcome, TurnRequest
from kairosd.agents.common import (
    CliAdapter,
    failure,
    json_objects,
    last_line,
    mode_only,
    option,
    prompt_with_definition,
    text_of,
)

NAME = "gemini"
APPROVAL = {"plan": "plan", "default": "default", "acceptEdits": "auto_edit", "bypassPermissions": "yolo"}
# 55: Gemini CLI refuses a folder the user has not trusted in Gemini. kairos keeps that check (trusting a
# folder lets its .gemini/settings.json run hooks and MCP servers): the user trusts the folder, or opts in
# for kairos' runs with [agents.gemini] env = { GEMINI_CLI_TRUST_WORKSPACE = "true" }.
_BLOCKED = "Agent execution blocked"  # Gemini's warning when an AfterAgent hook denies the end of a turn
UNTRUSTED_EXIT = 55
UNTRUSTED_HINT = (
    "the folder is not trusted by Gemini CLI: trust it in an interactive gemini session (/permissions), or "
    'let kairos\' gemini runs trust their folder with [agents.gemini] env = { GEMINI_CLI_TRUST_WORKSPACE = "true" }'
)
_EXIT_MEANING = {42: "bad input (prompt or arguments)", 53: "turn limit exceeded", UNTRUSTED_EXIT: UNTRUSTED_HINT}


class GeminiAdapter(CliAdapter):
    name = NAME

    def command(self, request: TurnRequest) -> Command:
        argv = [self.binary, "--output-format", "stream-json", f"--approval-mode={APPROVAL[mode_only(NAME, request)]}"]
        argv += self.model_args(request, joined=True)
        argv += option("--resume", request.resume_session, joined=True)
        argv += self.extra_args(request)
        argv.append(f"--prompt={prompt_with_definition(request)}")
        return self.finish(argv)

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        kind = event.get("type")
        if kind == "init":
            return Progress(session_id=_session(event))
        if kind == "tool_use":
            params = event.get("parameters")
            intent = last_line(text_of(params.get("description"))) if isinstance(params, dict) else None
            return Progress(tool_call=text_of(event.get("tool_name")) or "tool", intent=intent)
        if kind == "message" and event.get("role") == "assistant":
            text = last_line(text_of(event.get("content")))
            return Progress(text=text) if text else None
        if kind in ("error", "result"):
            text = last_line(_error_text(event))
            return Progress(text=text) if text else None
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        session: str | None = None
        chunks: list[str] = []  # assistant text since the last tool call
        tool_calls = 0
        final: dict[str, Any] | None = None
        for event in json_objects(stdout):
            kind = event.get("type")
            if kind is None and ("response" in event or "error" in event):
                final = event  # the single object of --output-format json
            elif kind == "init":
                session = _session(event) or session
            elif kind == "message" and event.get("role") == "assistant":
                chunks.append(text_of(event.get("content")) or "")
            elif kind == "tool_use":
                tool_calls += 1
                chunks = []
            elif kind == "error" and (text_of(event.get("message")) or "").startswith(_BLOCKED):
                chunks = []  # an AfterAgent hook sent the turn on with a new prompt: the answer comes after it
            elif kind == "result":
                final = event
        text = "".join(chunks).strip() or None
        failed = False
        if final is not None and final.get("type") is None:
            text = text_of(final.get("response")) or text
            failed = final.get("error") is not None
        elif final is not None:
            failed = final.get("status") == "error"
        if exit_code != 0 or failed:
            message = (_error_text(final) if final else None) or _EXIT_MEANING.get(exit_code) or "the run failed"
            if exit_code == UNTRUSTED_EXIT:
                message, stderr = UNTRUSTED_HINT, ""  # Gemini's own text names flags kairos does not pass
            return failure(
                NAME,
                message,
                exit_code=exit_code,
                stderr=stderr,
                output="" if final is not None else stdout,
                session_id=session,
                tool_calls=tool_calls,
                final_text=text,
            )
        if final is None:
            return failure(NAME, "no result in its output", stderr=stderr, output=stdout, session_id=session)
        return TurnOutcome(ok=True, final_text=text, session_id=session, tool_calls=tool_calls)


def _session(event: dict[str, Any]) -> str | None:
    return text_of(event.get("session_id")) or text_of(event.get("sessionId"))


def _error_text(event: dict[str, Any]) -> str | None:
    error = event.get("error")
    if isinstance(error, dict):
        return text_of(error.get("message")) or text_of(error.get("type"))
    return text_of(error) or text_of(event.get("message"))
