"""OpenAI Codex CLI (``codex exec``): the headless command line and its ``--json`` events.

One turn is ``codex exec --json --sandbox MODE [-m MODEL] -`` with the prompt on
stdin (``-`` tells codex to read it there); a follow-up is ``codex exec --json
... resume SESSION_ID -``. Options go before ``resume``: only a few of them are
global in codex's parser. Events are JSON lines: ``thread.started``
(``thread_id``, the session id), ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (an ``item`` with ``id`` and ``type``:
``agent_message``, ``reasoning``, ``command_execution``, ``file_change``,
``mcp_tool_call``, ``web_search``, ``todo_list``, ``error``, ...),
``turn.completed`` (usage), ``turn.failed`` (``error.message``) and ``error``
(``message``). A turn that completes without an agent message is a failure: a
rejected model has been seen to end that way.

Codex refuses to run outside a Git repository unless ``--skip-git-repo-check``
is given; kairos does not add it (that check protects unversioned folders). Put
it in the config's ``extra_args`` to run elsewhere.

Permissions: codex has sandboxes, not per-tool switches. ``plan`` and
``default`` map to ``--sandbox read-only`` (codex exec's own default, and the
only mode that cannot write), ``acceptEdits`` to ``workspace-write``,
``bypassPermissions`` to ``danger-full-access``. Tool lists cannot be
enforced, so a request with ``allowed_tools`` or ``denied_tools`` is refused.
Forks and chosen session ids do not exist in ``codex exec`` and are refused.

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

NAME = "codex"
SANDBOX = {
    "plan": "read-only",
    "default": "read-only",
    "acceptEdits": "workspace-write",
    "bypassPermissions": "danger-full-access",
}
# Items that are the agent acting (what the registry counts as tool calls).
_TOOL_ITEMS = {
    "command_execution": "shell",
    "file_change": "file_change",
    "mcp_tool_call": "mcp",
    "web_search": "web_search",
    "collab_tool_call": "collab",
}


class CodexAdapter(CliAdapter):
    name = NAME

    def command(self, request: TurnRequest) -> Command:
        argv = [self.binary, "exec", "--json", "--sandbox", SANDBOX[mode_only(NAME, request)]]
        argv += self.model_args(request)
        argv += self.extra_args(request)
        argv += option("resume", request.resume_session)  # a subcommand, after every option
        argv.append("-")  # the prompt is on stdin
        return self.finish(argv, stdin=prompt_with_definition(request))

    def event_progress(self, event: dict[str, Any]) -> Progress | None:
        kind = event.get("type")
        if kind == "thread.started":
            return Progress(session_id=text_of(event.get("thread_id")))
        if kind in ("turn.failed", "error"):
            return Progress(text=last_line(_error_message(event)))
        item = event.get("item")
        if not isinstance(item, dict):
            return None
        item_type = item.get("type")
        if kind == "item.started" and item_type in _TOOL_ITEMS:
            return Progress(tool_call=_tool_name(item), text=last_line(text_of(item.get("command"))))
        if kind == "item.completed" and item_type == "file_change":
            # file changes are reported only once, completed
            return Progress(tool_call="file_change")
        if kind == "item.completed" and item_type == "agent_message":
            return Progress(text=last_line(text_of(item.get("text"))))
        if kind == "item.completed" and item_type == "reasoning":
            return Progress(intent=last_line(text_of(item.get("text")), 120))
        if item_type == "todo_list" and isinstance(item.get("items"), list):
            pending = [t for t in item["items"] if isinstance(t, dict) and not t.get("completed")]
            if pending:
                return Progress(intent=last_line(text_of(pending[0].get("text"))))
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        session: str | None = None
        final_text: str | None = None
        tool_items: set[str] = set()
        errors: list[str] = []
        completed = failed = False
        for event in json_objects(stdout):
            kind = event.get("type")
            if kind == "thread.started":
                session = text_of(event.get("thread_id")) or session
            elif kind == "turn.completed":
                completed = True
            elif kind in ("turn.failed", "error"):
                failed = failed or kind == "turn.failed"
                errors.append(_error_message(event) or kind)
            item = event.get("item")
            if isinstance(item, dict):
                item_type = item.get("type")
                if item_type in _TOOL_ITEMS:
                    tool_items.add(str(item.get("id")))
                elif kind == "item.completed" and item_type == "agent_message":
                    final_text = text_of(item.get("text")) or final_text
        tool_calls = len(tool_items)
        # A stream error the turn recovered from (it still completed) is not a failure.
        if exit_code != 0 or failed or (errors and not completed):
            # The last error is the one that ended the turn (earlier ones may be retries).
            message = errors[-1] if errors else "the run failed"
            return failure(
                NAME,
                message,
                exit_code=exit_code,
                stderr=stderr,
                session_id=session,
                tool_calls=tool_calls,
                final_text=final_text,
            )
        if not completed:
            return failure(NAME, "no completed turn in its output", stderr=stderr, output=stdout, session_id=session)
        if not final_text or not final_text.strip():
            return failure(
                NAME,
                "the turn completed without a final message",
                stderr=stderr,
                session_id=session,
                tool_calls=tool_calls,
            )
        return TurnOutcome(ok=True, final_text=final_text, session_id=session, tool_calls=tool_calls)


def _tool_name(item: dict[str, Any]) -> str:
    if item.get("type") == "mcp_tool_call":
        server, tool = text_of(item.get("server")), text_of(item.get("tool"))
        if server and tool:
            return f"{server}.{tool}"
    return _TOOL_ITEMS.get(str(item.get("type")), "tool")


def _error_message(event: dict[str, Any]) -> str | None:
    error = event.get("error")
    if isinstance(error, dict):
        return text_of(error.get("message"))
    return text_of(event.get("message"))
