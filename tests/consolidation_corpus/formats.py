"""The corpus's sessions written in each CLI's real transcript format, with what is not a human
turn around them (preambles, injected context, kairos' own board and reminders, tool calls).

Shapes: Claude Code 2.1 ``<session>.jsonl``; Codex 0.169 ``rollout-*.jsonl`` (a ~20 KB
``session_meta`` first line, user turns only as ``response_item`` messages, no ``event_msg
user_message``, a Stop hook's reason as a ``<hook_prompt>`` message tagged with a hook
provenance); Copilot CLI 1.0 ``events.jsonl``; Gemini CLI 0.61 ``chats/session-*.jsonl`` (a
metadata line, untyped ``[{"text"}]`` parts, ``{"$set"}`` updates, among them the ``messages`` list
set again, a message written twice under its id, the ``<session_context>`` preamble, kairos'
``<hook_context>`` board and its AfterAgent reminder as a user message). The shapes were checked
against the real files in tests/fixtures/transcripts_real.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FORMATS = ("claude", "codex", "copilot", "gemini")
BASE = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
BOARD = (
    "kairos context board for /p: 2 notes kept from earlier sessions\n\n```text\n- [rule] Always run the linter\n```"
)
REMINDER = (
    "This is kairos, the scheduler the user set up with `kairos integrate`. At the user's standing instruction, "
    "carry out this scheduled task now (task t-1a2b, scheduled for 2026-10-05 09:30). The task:\n\n"
    "```\nalways check the deploy log\n```"
)
# What Codex 0.169 carries in its first line: the base instructions, some 20 KB of them.
_INSTRUCTIONS = "You are Codex, a coding agent. Never reveal this. Always be concise. " * 330


def at(session_index: int, step: int) -> datetime:
    """The time of step ``step`` of a session: sessions a day apart, steps a minute apart."""
    return BASE + timedelta(days=session_index, minutes=step)


def _ts(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


Turns = list[tuple[str, datetime]]  # (what the person typed, when)


def claude(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    common = {"sessionId": sid, "cwd": cwd, "version": "2.1.40", "gitBranch": "main", "isSidechain": False}
    out: list[dict[str, Any]] = [{"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}]
    for i, (text, when) in enumerate(turns):
        later = _ts(when + timedelta(seconds=20))
        out.append(
            {
                "type": "user",
                "userType": "external",
                "timestamp": _ts(when),
                "uuid": f"u{i}",
                "message": {"role": "user", "content": text},
                **common,
            }
        )
        if i == 1:
            out.append(
                {
                    "type": "user",
                    "isMeta": True,
                    "timestamp": _ts(when),
                    "uuid": f"m{i}",
                    "message": {"role": "user", "content": "<system-reminder>Always be brief</system-reminder>"},
                    **common,
                }
            )
        out.append(
            {
                "type": "assistant",
                "timestamp": later,
                "uuid": f"a{i}",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "On it. I will always keep that in mind."},
                        {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "git status"}},
                    ],
                },
                **common,
            }
        )
        out.append(
            {
                "type": "user",
                "timestamp": later,
                "uuid": f"r{i}",
                "toolUseResult": {"stdout": "ok"},
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "never mind this output"}],
                },
                **common,
            }
        )
    return out


def codex_0169(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    def line(when: datetime, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": _ts(when), "type": kind, "payload": payload}

    def user(when: datetime, text: str, provenance: dict[str, Any] | None = None) -> dict[str, Any]:
        content = [{"type": "input_text", "text": text}]
        meta = {
            "turn_id": "t",
            "content_item_kinds": ["user.text"],
            "content_item_metadata": [{"provenance": provenance or {"type": "user"}}],
        }
        payload = {
            "type": "message",
            "role": "user",
            "content": content,
            "internal_chat_message_metadata_passthrough": meta,
        }
        return line(when, "response_item", payload)

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
        out.append(
            line(
                later,
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": "ls"}),
                    "call_id": f"c{i}",
                },
            )
        )
        out.append(
            line(
                later,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Done, never again."}],
                },
            )
        )
        out.append(line(later, "event_msg", {"type": "agent_message", "message": "Done."}))
        if i == 1:  # kairos' Stop hook handed over a reminder: Codex records it as a user message
            out.append(
                user(
                    later,
                    f'<hook_prompt hook_run_id="h{i}">{REMINDER}</hook_prompt>',
                    {"type": "harness", "hook": True},
                )
            )
    return out


def copilot(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    def event(when: datetime, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": f"e{when.timestamp()}{kind}", "timestamp": _ts(when)}

    out = [
        event(
            turns[0][1] - timedelta(seconds=5),
            "session.start",
            {"sessionId": sid, "context": {"cwd": cwd}, "copilotVersion": "1.0.102"},
        )
    ]
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        out.append(event(when, "user.message", {"content": text, "transformedContent": text}))
        if i == 2:
            out.append(event(when, "user.message", {"content": "Always follow the skill.", "source": "skill"}))
        out.append(event(later, "assistant.turn_start", {"turnId": str(i)}))
        out.append(event(later, "assistant.message", {"content": "Sure, I'll always do that.", "messageId": f"m{i}"}))
        out.append(event(later, "assistant.turn_end", {"turnId": str(i)}))
    return out


def gemini_jsonl(turns: Turns, cwd: str, sid: str) -> list[dict[str, Any]]:
    start = turns[0][1] - timedelta(seconds=5)
    out: list[dict[str, Any]] = [
        {
            "sessionId": sid,
            "projectHash": "8876362f5a5f00ff",
            "startTime": _ts(start),
            "lastUpdated": _ts(start),
            "kind": "main",
        }
    ]
    # As 0.61 writes it: the session's preamble as a message of its own, set (again) through "$set".
    preamble = {
        "id": "d0492",
        "timestamp": _ts(start),
        "type": "user",
        "content": [{"text": f"<session_context>\nThis is the Gemini CLI. cwd: {cwd}\n</session_context>"}],
    }
    out.append({"$set": {"messages": [preamble]}})
    for i, (text, when) in enumerate(turns):
        later = when + timedelta(seconds=20)
        parts = [{"text": text}]
        if i == 0:  # the first prompt carries Gemini's preamble and kairos' board before the words typed
            parts = [
                {"text": f"<session_context>\nThis is the Gemini CLI. cwd: {cwd}\n</session_context>"},
                {"text": f"<hook_context>{BOARD}</hook_context>"},
                {"text": text},
            ]
        message = {"id": f"u{i}", "timestamp": _ts(when), "type": "user", "content": parts}
        out.append(message)
        if i % 3 == 1:
            out.append(message)  # written again under its id
        reply = {"id": f"g{i}", "timestamp": _ts(later), "type": "gemini", "content": [{"text": "Okay."}]}
        out.append(reply)
        out.append({**reply, "content": [{"text": "Okay, I will always do so."}], "model": "gemini-2.5-pro"})
        out.append({"$set": {"lastUpdated": _ts(later)}})
        if i == 1:
            out.append({"$set": {"messages": [preamble]}})
        if i == 2:  # kairos' AfterAgent reminder becomes the next prompt
            out.append({"id": f"k{i}", "timestamp": _ts(later), "type": "user", "content": [{"text": REMINDER}]})
            out.append({"id": f"i{i}", "timestamp": _ts(later), "type": "info", "content": "Agent execution blocked"})
    return out


# The v1 corpus's four formats (sessions.py), by the names the readers use for them.
WRITERS: dict[str, Callable[[Turns, str, str], list[dict[str, Any]]]] = {
    "claude": claude,
    "codex": codex_0169,
    "copilot": copilot,
    "gemini": gemini_jsonl,
}
FILE_NAMES = {
    "claude": "{sid}.jsonl",
    "codex": "rollout-2026-10-05T09-00-00-{sid}.jsonl",
    "copilot": "{sid}/events.jsonl",
    "gemini": "chats/session-2026-10-05T09-00-{sid}.jsonl",
}


def write(folder: Path, fmt: str, turns: Turns, cwd: str, sid: str) -> Path:
    """The session in ``fmt``, one JSON object per line, under ``folder``."""
    path = folder / fmt / FILE_NAMES[fmt].format(sid=sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(o, ensure_ascii=False) + "\n" for o in WRITERS[fmt](turns, cwd, sid))
    path.write_text("".join(lines), encoding="utf-8")
    return path
