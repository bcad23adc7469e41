"""Claude Code (``claude -p``): the headless command line and its stream-json output.

One turn is ``claude -p --output-format stream-json --verbose`` with the prompt
on stdin (so no prompt, however long or dash-led, is ever read as a flag).
stream-json is one JSON object per line: ``system/init`` (with ``session_id``),
``assistant`` messages whose content blocks are ``text`` and ``tool_use``,
``user`` messages carrying ``tool_result`` blocks, and a final ``result``
(``subtype`` ``success`` or ``error_...``, ``is_error``, ``result``,
``session_id``). A failure inside the run (an expired login, the turn limit) is
that result with ``is_error: true``; a bad flag is a message on stderr and a
non-zero exit before any JSON.

Sessions: ``--resume ID``, ``--fork-session`` (the resumed conversation goes on
under a new id), ``--session-id UUID`` (a chosen id for a new or forked session).

Permissions map one to one: ``--permission-mode`` takes every mode kairos has;
``allowed_tools`` becomes ``--tools`` (the built-in tools the agent may use at
all, by bare name) plus ``--allowedTools`` (those rules run without a prompt;
left out in plan mode, which must not pre-approve anything); ``denied_tools``
becomes ``--disallowedTools``, which Claude applies before any mode.

MCP: ``MCP_CONNECTION_NONBLOCKING=false`` in the environment (the user's config may override it),
so the first request already offers kairos' MCP tools.

Must not import the registry, the config module or the server.
"""

from __future__ import annotations

import uuid
from typing import Any

from kairosd.agents.base import Command, Progress, TurnOutcome, TurnRequest
from kairosd.agents.common import (
    CliAdapter,
    bare_tool,
    check_mode,
    failure,
    json_objects,
    last_line,
    text_of,
)
from kairosd.core.errors import UsageError

NAME = "claude"


class ClaudeAdapter(CliAdapter):
    name = NAME
    features = frozenset({"resume", "fork", "session_id", "tool_lists", "system_prompt"})

    def command(self, request: TurnRequest) -> Command:
        argv = [self.binary, "-p", "--output-format", "stream-json", "--verbose"]
        argv += self.model_args(request)
        if request.resume_session:
            argv.append(f"--resume={request.resume_session}")
            if request.fork:
                argv.append("--fork-session")
        elif request.fork:
            raise UsageError("claude: a fork needs a session to resume")
        if request.new_session_id:
            if request.resume_session and not request.fork:
                raise UsageError("claude: a resumed session keeps its id; fork it to give it a new one")
            try:
                uuid.UUID(request.new_session_id)
            except ValueError:
                raise UsageError(f"claude: a session id must be a UUID, not {request.new_session_id!r}") from None
            argv.append(f"--session-id={request.new_session_id}")
        perms = request.permissions
        argv.append(f"--permission-mode={check_mode(NAME, perms)}")
        if request.agent_definition:
            # Appended to Claude's own system prompt, and passed on every turn: a
            # resumed process starts from the default system prompt again.
            argv.append(f"--append-system-prompt={request.agent_definition}")
        argv += self.extra_args(request)
        # The variadic tool options go last: each takes every following word
        # up to the next option, and nothing follows them (the prompt is on stdin).
        if perms.allowed_tools is not None:
            bare = sorted({bare_tool(rule) for rule in perms.allowed_tools} - set(perms.denied_tools))
            argv.append(f"--tools={','.join(bare)}")  # "" means no built-in tool at all
            approved = sorted(perms.allowed_tools - perms.denied_tools)
            if perms.mode != "plan" and approved:
                argv += ["--allowedTools", *approved]
        if perms.denied_tools:
            argv += ["--disallowedTools", *sorted(perms.denied_tools)]
        # claude -p connects MCP servers in the background and may send the first request before
        # `kairos mcp` is up (about a second): a task could not schedule its follow-up. Wait for them.
        env = {"MCP_CONNECTION_NONBLOCKING": "false", **self.settings.env}
        return self.finish(argv, env=env, stdin=request.prompt)

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        kind = event.get("type")
        session = text_of(event.get("session_id"))
        if kind == "system" and event.get("subtype") == "init":
            return Progress(session_id=session)
        if kind == "assistant":
            tool, intent, text = None, None, None
            for block in _blocks(event):
                if block.get("type") == "tool_use":
                    tool = text_of(block.get("name")) or "tool"
                    intent = _intent(block.get("input")) or intent
                elif block.get("type") == "text":
                    text = last_line(text_of(block.get("text"))) or text
            if tool or text:
                return Progress(tool_call=tool, intent=intent, text=text, session_id=session)
            return None
        if kind == "result":
            return Progress(text=last_line(text_of(event.get("result"))), session_id=session)
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        session: str | None = None
        final: dict[str, Any] | None = None
        tool_calls = 0
        last_text: str | None = None
        for event in json_objects(stdout):
            session = text_of(event.get("session_id")) or session
            kind = event.get("type")
            if kind == "assistant":
                for block in _blocks(event):
                    if block.get("type") == "tool_use":
                        tool_calls += 1
                    elif block.get("type") == "text":
                        last_text = text_of(block.get("text")) or last_text
            elif kind == "result":
                final = event
        if final is None:
            what = "no result in its output" if exit_code == 0 else "failed before it produced a result"
            return failure(
                NAME, what, exit_code=exit_code, stderr=stderr, output=stdout, session_id=session, tool_calls=tool_calls
            )
        text = text_of(final.get("result")) or last_text
        subtype = text_of(final.get("subtype")) or "unknown"
        if final.get("is_error") is True or subtype != "success":
            errors = final.get("errors")
            detail = "; ".join(e for e in errors if isinstance(e, str)) if isinstance(errors, list) else ""
            message = f"{subtype}: {detail or text or 'the run failed'}"
            return failure(NAME, message, exit_code=exit_code, stderr=stderr, session_id=session, tool_calls=tool_calls)
        if exit_code != 0:
            return failure(
                NAME,
                "reported success but did not exit cleanly",
                exit_code=exit_code,
                stderr=stderr,
                session_id=session,
                tool_calls=tool_calls,
                final_text=text,
            )
        return TurnOutcome(ok=True, final_text=text, session_id=session, tool_calls=tool_calls)


def _blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _intent(tool_input: Any) -> str | None:
    """What a tool call is for, where Claude says so (Bash and Task carry a description)."""
    if isinstance(tool_input, dict):
        return last_line(text_of(tool_input.get("description")))
    return None
