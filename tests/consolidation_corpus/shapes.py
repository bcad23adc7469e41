"""The v2 corpus's sessions written in the six transcript shapes kairos reads, with the noise a
real file carries around what the person typed.

Shapes (checked against the real files in tests/fixtures/transcripts_real and the shapes in
tests/consolidation_support.py):

    claude        Claude Code 2.1 ``<session>.jsonl``
    codex         Codex up to 0.16x ``rollout-*.jsonl``: each prompt twice, as a ``response_item``
                  user message and as an ``event_msg user_message``
    codex-0.169   Codex 0.169: a ~20 KB ``session_meta`` line, prompts only as ``response_item``
                  messages tagged with a provenance, a Stop hook's reason as a ``<hook_prompt>``
    gemini        Gemini CLI ``chats/session-*.json``: one JSON document
    gemini-jsonl  Gemini CLI 0.61 ``chats/session-*.jsonl``: metadata line, messages, ``$set`` updates
    copilot       Copilot CLI 1.0 ``events.jsonl``

The noise the readers must drop, spread over the turns so every session has some: tool calls and
their results (which use the words of rules: "always", "never", "use X instead of Y", "TODO
later"), the CLI's own injected context (Claude's system reminders and slash-command echoes,
Codex's environment and AGENTS.md preambles, Gemini's ``<session_context>``, Copilot's skill
text and sub-agent prompts), kairos' own board (SessionStart / BeforeAgent context) and its
scheduled reminders, and assistant replies that promise to "always" do things. The commands the
agent runs are read-only and each is run at most twice a session, so no tool call is a command
worth remembering: every board entry must come from what the person typed.

Every turn has its own timestamp (the caller's), which the board entry made of it carries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from consolidation_corpus.corpus import SHAPES
from consolidation_corpus.formats import _INSTRUCTIONS, BOARD, REMINDER

Turns = list[tuple[str, datetime]]  # (what the person typed, when)

# The reader each shape is read with (the hint the worker passes: the agent's name).
READER = {
    "claude": "claude",
    "codex": "codex",
    "codex-0.169": "codex",
    "gemini": "gemini",
    "gemini-jsonl": "gemini",
    "copilot": "copilot",
}
FILE_NAMES = {
    "claude": "{sid}.jsonl",
    "codex": "rollout-2026-10-05T09-00-00-{sid}.jsonl",
    "codex-0.169": "rollout-2026-10-05T09-00-00-{sid}.jsonl",
    "gemini": "chats/session-2026-10-05T09-00-{sid}.json",
    "gemini-jsonl": "chats/session-2026-10-05T09-00-{sid}.jsonl",
    "copilot": "{sid}/events.jsonl",
}
# What the agent answers: polite, and full of the words a rule is made of.
REPLIES = (
    "On it. I'll always keep that in mind.",
    "Done. Note: you should never commit the generated files.",
    "Fixed. Next time we could use a dict instead of a list here.",
    "Understood, from now on I will do it that way.",
    "I had a look; make sure to rerun the tests after pulling.",
    "Here's what I found. Let's go with the smaller change for now.",
    "Sure. TODO for later: the helper could be split.",
    "Good question: it was added last week to avoid a race.",
)
# Read-only commands, each used at most twice in a session of up to 16 turns.
COMMANDS = (
    "git status --short",
    "ls -la",
    "rg -n 'TODO' src",
    "git log --oneline -5",
    "git diff --stat",
    "cat README.md",
    "sed -n 1,60p setup.cfg",
    "find . -maxdepth 2 -type d",
)
TOOL_OUTPUTS = (
    "TODO: always validate the input later\n3 files changed",
    "warning: Use `list` instead of `List` (UP006)\nnever mind: 1 fixable",
    "Don't forget to run migrations!\nok",
    "From now on, the default branch is main.\nok",
)
CLAUDE_META = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context. "
    "Always be brief.\n</system-reminder>"
)


def _ts(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def _command(i: int) -> str:
    return COMMANDS[i % len(COMMANDS)]


def claude(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    common = {"sessionId": sid, "cwd": cwd, "version": "2.1.40", "gitBranch": "main", "isSidechain": False}

    def user(when: datetime, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
        message = {"role": "user", "content": content}
        return {
            "type": "user",
            "userType": "external",
            "timestamp": _ts(when),
            "uuid": uuid,
            "message": message,
            **common,
            **extra,
        }

    start = turns[0][1] - timedelta(seconds=5)
    out: list[dict[str, Any]] = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}, "isSnapshotUpdate": False},
        # kairos' board, handed over by its SessionStart hook, recorded as a meta message
        user(
            start,
            "board",
            f"<system-reminder>\nSessionStart hook additional context: {BOARD}\n</system-reminder>",
            isMeta=True,
        ),
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        if i == 2:  # a slash command and its output, echoed as user lines
            out.append(
                user(
                    when - timedelta(seconds=9),
                    f"c{i}",
                    "<command-name>/model</command-name>\n"
                    "<command-message>model</command-message>\n<command-args></command-args>",
                )
            )
            out.append(
                user(
                    when - timedelta(seconds=8),
                    f"o{i}",
                    "<local-command-stdout>Set model to opus</local-command-stdout>",
                )
            )
        out.append(user(when, f"u{i}", text))
        if i % 3 == 1:
            out.append(user(when, f"m{i}", CLAUDE_META, isMeta=True))
        blocks: list[dict[str, Any]] = [{"type": "text", "text": REPLIES[i % len(REPLIES)]}]
        if i % 2 == 0:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"t{i}",
                    "name": "Bash",
                    "input": {"command": _command(i // 2), "description": "look"},
                }
            )
        out.append(
            {
                "type": "assistant",
                "timestamp": _ts(later),
                "uuid": f"a{i}",
                "message": {"role": "assistant", "model": "claude-x", "content": blocks},
                **common,
            }
        )
        if i % 2 == 0:
            result = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": TOOL_OUTPUTS[i % len(TOOL_OUTPUTS)]}]
            out.append(user(later, f"r{i}", result, toolUseResult={"stdout": "ok"}))
        if i == 3:  # a sub-agent's prompt (a sidechain): not the person's words
            out.append(
                {**user(later, f"s{i}", "Never touch the database; always answer in JSON."), "isSidechain": True}
            )
    out.append(
        {
            "type": "system",
            "subtype": "stop_hook_summary",
            "timestamp": _ts(turns[-1][1] + timedelta(minutes=1)),
            "content": "ok",
            **common,
        }
    )
    return out


def codex(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    """Codex up to 0.16x: a prompt is a response_item user message and an event_msg user_message."""

    def line(when: datetime, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": _ts(when), "type": kind, "payload": payload}

    def item(when: datetime, role: str, text: str) -> dict[str, Any]:
        block = "input_text" if role == "user" else "output_text"
        return line(
            when, "response_item", {"type": "message", "role": role, "content": [{"type": block, "text": text}]}
        )

    start = turns[0][1] - timedelta(seconds=5)
    out = [
        line(
            start,
            "session_meta",
            {
                "id": sid,
                "timestamp": _ts(start),
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.160.0",
                "instructions": None,
                "source": "cli",
            },
        ),
        item(start, "user", "<user_instructions>\n\nAlways use tabs. Never push.\n\n</user_instructions>"),
        item(
            start,
            "user",
            f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request"
            "</approval_policy>\n</environment_context>",
        ),
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        out.append(item(when, "user", text))
        out.append(line(when, "event_msg", {"type": "user_message", "message": text, "images": []}))
        out.append(line(when, "turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5-codex"}))
        out.append(line(later, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}))
        if i % 2 == 0:
            call = {"command": ["bash", "-lc", _command(i // 2)], "workdir": cwd}
            out.append(
                line(
                    later,
                    "response_item",
                    {"type": "function_call", "name": "shell", "arguments": json.dumps(call), "call_id": f"c{i}"},
                )
            )
            out.append(
                line(
                    later,
                    "response_item",
                    {"type": "function_call_output", "call_id": f"c{i}", "output": TOOL_OUTPUTS[i % len(TOOL_OUTPUTS)]},
                )
            )
        out.append(item(later, "assistant", REPLIES[i % len(REPLIES)]))
        out.append(line(later, "event_msg", {"type": "agent_message", "message": REPLIES[i % len(REPLIES)]}))
        out.append(line(later, "event_msg", {"type": "token_count", "info": None}))
        if i == 2:  # kairos' Stop hook handed over a reminder: recorded like a prompt, in both places
            prompt = f'<hook_prompt hook_run_id="h{i}">{REMINDER}</hook_prompt>'
            out.append(item(later, "user", prompt))
            out.append(line(later, "event_msg", {"type": "user_message", "message": prompt, "images": []}))
    return out


def codex_0169(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    """Codex 0.169: prompts only as response_item messages, each content item tagged with a provenance."""

    def line(when: datetime, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": _ts(when), "type": kind, "payload": payload}

    def user(when: datetime, text: str, provenance: dict[str, Any] | None = None) -> dict[str, Any]:
        meta = {
            "turn_id": "t",
            "content_item_kinds": ["user.text"],
            "content_item_metadata": [{"provenance": provenance or {"type": "user"}}],
        }
        return line(
            when,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
                "internal_chat_message_metadata_passthrough": meta,
            },
        )

    start = turns[0][1] - timedelta(seconds=5)
    out = [
        line(
            start,
            "session_meta",
            {
                "id": sid,
                "timestamp": _ts(start),
                "cwd": cwd,
                "originator": "codex_exec",
                "cli_version": "0.169.0",
                "source": "cli",
                "base_instructions": {"text": _INSTRUCTIONS},
            },
        ),
        user(
            start,
            f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>Always use tabs.</INSTRUCTIONS>",
            {"type": "skills"},
        ),
        user(
            start,
            f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>",
            {"type": "harness", "hook": False},
        ),
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        out.append(line(when, "turn_context", {"cwd": cwd, "approval_policy": "never", "model": "gpt-5.1-codex"}))
        out.append(user(when, text))
        if i % 2 == 1:
            call = {"cmd": _command(i // 2)}
            out.append(
                line(
                    later,
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "exec_command",
                        "arguments": json.dumps(call),
                        "call_id": f"c{i}",
                    },
                )
            )
            out.append(
                line(
                    later,
                    "response_item",
                    {"type": "function_call_output", "call_id": f"c{i}", "output": TOOL_OUTPUTS[i % len(TOOL_OUTPUTS)]},
                )
            )
        reply = REPLIES[(i + 3) % len(REPLIES)]
        out.append(
            line(
                later,
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]},
            )
        )
        out.append(line(later, "event_msg", {"type": "agent_message", "message": reply}))
        if i == 1:  # kairos' Stop hook handed over a reminder: Codex records it as a user message
            out.append(
                user(
                    later,
                    f'<hook_prompt hook_run_id="h{i}">{REMINDER}</hook_prompt>',
                    {"type": "harness", "hook": True},
                )
            )
    return out


def gemini(turns: Turns, cwd: str, sid: str) -> dict[str, Any]:
    """Gemini CLI's session document (before 0.61): one JSON object with every message."""
    start = turns[0][1] - timedelta(seconds=5)
    messages: list[Any] = []
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        content: Any = text
        if i == 0:  # the first prompt carries Gemini's preamble and kairos' board before the words typed
            content = [
                {"text": f"<session_context>\nThis is the Gemini CLI. cwd: {cwd}\n</session_context>"},
                {"text": f"<hook_context>{BOARD}</hook_context>"},
                {"text": text},
            ]
        messages.append({"id": f"u{i}", "timestamp": _ts(when), "type": "user", "content": content})
        reply: dict[str, Any] = {
            "id": f"g{i}",
            "timestamp": _ts(later),
            "type": "gemini",
            "content": REPLIES[(i + 1) % len(REPLIES)],
            "model": "gemini-2.5-pro",
        }
        if i % 2 == 0:
            reply["toolCalls"] = [
                {
                    "id": f"r{i}",
                    "name": "run_shell_command",
                    "args": {"command": _command(i // 2)},
                    "status": "success",
                    "resultDisplay": TOOL_OUTPUTS[i % len(TOOL_OUTPUTS)],
                }
            ]
        messages.append(reply)
        if i == 2:
            messages.append({"id": f"i{i}", "timestamp": _ts(later), "type": "info", "content": "Request cancelled."})
        if i == 3:  # kairos' AfterAgent reminder becomes the next prompt
            messages.append({"id": f"k{i}", "timestamp": _ts(later), "type": "user", "content": REMINDER})
    last = turns[-1][1] + timedelta(seconds=20)
    return {
        "sessionId": sid,
        "projectHash": "8876362f5a5f00ff",
        "startTime": _ts(start),
        "lastUpdated": _ts(last),
        "messages": messages,
    }


def gemini_jsonl(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    """Gemini CLI 0.61: a metadata line, messages (again under their id when they change), ``$set`` updates."""
    start = turns[0][1] - timedelta(seconds=5)
    preamble = {
        "id": "d0492",
        "timestamp": _ts(start),
        "type": "user",
        "content": [{"text": f"<session_context>\nThis is the Gemini CLI. cwd: {cwd}\n</session_context>"}],
    }
    out: list[dict[str, Any]] = [
        {
            "sessionId": sid,
            "projectHash": "8876362f5a5f00ff",
            "startTime": _ts(start),
            "lastUpdated": _ts(start),
            "kind": "main",
        },
        {"$set": {"messages": [preamble]}},
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        parts = [{"text": text}]
        if i == 0:
            parts = [{"text": f"<hook_context>{BOARD}</hook_context>"}, {"text": text}]
        message = {"id": f"u{i}", "timestamp": _ts(when), "type": "user", "content": parts}
        out.append(message)
        if i % 3 == 1:
            out.append(message)  # written again under its id
        reply = {"id": f"g{i}", "timestamp": _ts(later), "type": "gemini", "content": [{"text": "Okay."}]}
        out.append(reply)
        full = {**reply, "content": [{"text": REPLIES[(i + 2) % len(REPLIES)]}], "model": "gemini-2.5-pro"}
        if i % 2 == 1:
            full["toolCalls"] = [
                {
                    "id": f"r{i}",
                    "name": "run_shell_command",
                    "args": {"command": _command(i // 2)},
                    "status": "success",
                    "resultDisplay": TOOL_OUTPUTS[i % len(TOOL_OUTPUTS)],
                }
            ]
        out.append(full)
        out.append({"$set": {"lastUpdated": _ts(later)}})
        if i == 1:
            out.append({"$set": {"messages": [preamble]}})
        if i == 2:  # kairos' AfterAgent reminder becomes the next prompt
            out.append({"id": f"k{i}", "timestamp": _ts(later), "type": "user", "content": [{"text": REMINDER}]})
            out.append({"id": f"i{i}", "timestamp": _ts(later), "type": "info", "content": "Agent execution blocked"})
    return out


def copilot(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    n = iter(range(100_000))

    def event(when: datetime, kind: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": f"e{next(n)}", "timestamp": _ts(when), "parentId": None, **extra}

    start = turns[0][1] - timedelta(seconds=5)
    out = [
        event(
            start,
            "session.start",
            {
                "sessionId": sid,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.102",
                "context": {"cwd": cwd},
            },
        ),
        event(start, "session.info", {"infoType": "folder_trust", "message": "trusted"}),
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        shown = f"<current_datetime>{_ts(when)}</current_datetime>\n\n{text}"
        if i == 0:  # what the model was shown: kairos' board (the prompt hook's context) before the words typed
            shown = f"<hook_context>{BOARD}</hook_context>\n{shown}"
        out.append(event(when, "user.message", {"content": text, "transformedContent": shown, "attachments": []}))
        if i == 2:
            out.append(event(when, "user.message", {"content": "Always follow the skill.", "source": "skill-pdf"}))
        out.append(event(later, "assistant.turn_start", {"turnId": str(i)}))
        out.append(
            event(
                later,
                "assistant.message",
                {"content": REPLIES[(i + 5) % len(REPLIES)], "messageId": f"m{i}", "toolRequests": []},
            )
        )
        if i % 2 == 0:
            args = {"command": _command(i // 2), "description": "look"}
            out.append(
                event(later, "tool.execution_start", {"toolCallId": f"c{i}", "toolName": "bash", "arguments": args})
            )
            out.append(
                event(
                    later,
                    "tool.execution_complete",
                    {"toolCallId": f"c{i}", "success": True, "result": {"content": TOOL_OUTPUTS[i % 4]}},
                )
            )
        if i == 3:
            out.append(event(later, "user.message", {"content": "sub-agent prompt: never edit tests"}, agentId="sub1"))
        out.append(event(later, "assistant.turn_end", {"turnId": str(i)}))
    out.append(event(turns[-1][1] + timedelta(minutes=1), "session.shutdown", {}))
    return out


RENDERERS: dict[str, Callable[[Turns, str, str], Any]] = {
    "claude": claude,
    "codex": codex,
    "codex-0.169": codex_0169,
    "gemini": gemini,
    "gemini-jsonl": gemini_jsonl,
    "copilot": copilot,
}
assert tuple(sorted(RENDERERS)) == tuple(sorted(SHAPES))


def render(folder: Path, shape: str, turns: Turns, cwd: str, sid: str) -> Path:
    """The session in ``shape`` under ``folder``: JSON lines, or one JSON document for ``gemini``."""
    path = folder / shape / FILE_NAMES[shape].format(sid=sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = RENDERERS[shape](turns, cwd, sid)
    if isinstance(written, dict):
        path.write_text(json.dumps(written, ensure_ascii=False, indent=1), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in written), encoding="utf-8")
    return path
