"""One reader per agent CLI's transcript format: parsed JSON objects in, :class:`Message` objects out.

The formats and what counts as a human turn are described in :mod:`kairosd.consolidation.transcripts.read`,
which tells the format and picks a reader from :data:`READERS`. A reader is fed one parsed object
at a time and may hold one back (Codex) until :meth:`close`; it fills in the session id and working
directory of :class:`ReadStats` as it meets them. ``feed`` is the hot path of a read: it is called
once per line, so the common cases (tool results, deltas) return early.

Must not import :mod:`kairosd.consolidation.transcripts.read` (it imports this), the registry, the
daemon, the board or anything that writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kairosd.consolidation.transcripts.model import Message, ReadStats, ToolUse, blocks_text, nonempty, parse_time
from kairosd.consolidation.transcripts.tools import tool_arguments, tool_use
from kairosd.core.reminder import OLD_REMINDER_LEAD, REMINDER_LEAD

# Claude Code user lines that a person did not type (slash-command echoes, shell output, notices).
_CLAUDE_NOT_TYPED = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "Caveat: The messages below were generated",
    "[Request interrupted by user",
)
# Codex puts its context in user-role messages; these are not the person's words.
_CODEX_PREAMBLES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
)
# Text an agent CLI or kairos put into a user message: Gemini's session preamble, kairos' board
# (SessionStart / BeforeAgent context) and a Stop hook's reason as Codex records it. Left out, or
# kairos would learn its own board back.
_INJECTED_BLOCK = re.compile(
    r"<(session_context|hook_context|hook_prompt)\b[^>]*>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
# A scheduled prompt kairos handed over at turn end (kairosd.core.reminder): the agent gets it as the
# next user message, but the person did not type it then. The older wording stays in older transcripts.
_KAIROS_REMINDER = (REMINDER_LEAD, OLD_REMINDER_LEAD)
_KAIROS_BOARD = "kairos context board for "


def typed_text(text: str) -> str:
    """``text`` without what was injected into it; empty if nothing a person typed is left."""
    if "<" in text:
        text = _INJECTED_BLOCK.sub("", text)
    stripped = text.strip()
    if stripped.startswith((*_KAIROS_REMINDER, _KAIROS_BOARD)):
        return ""
    return stripped


class _Reader:
    def __init__(self, stats: ReadStats) -> None:
        self.stats = stats

    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        raise NotImplementedError

    def close(self) -> Iterable[Message]:
        return ()


class _Claude(_Reader):
    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        kind = obj.get("type")
        if kind not in ("user", "assistant") or obj.get("isSidechain") is True:
            return ()
        if self.stats.cwd is None:
            self.stats.cwd = nonempty(obj.get("cwd"))
            self.stats.session_id = nonempty(obj.get("sessionId"))
        message = obj.get("message")
        if not isinstance(message, dict):
            return ()
        content = message.get("content")
        if (
            kind == "user"
            and type(content) is list
            and any(type(b) is dict and b.get("type") == "tool_result" for b in content)
        ):
            return ()  # a tool's result travels as a user message; nobody typed it (most user lines)
        at = parse_time(obj.get("timestamp"))
        if kind == "assistant":
            tools: list[ToolUse] = []
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_use" and nonempty(block.get("name")):
                        tools.append(tool_use(block["name"], tool_arguments(block.get("input"))))
            return (Message("assistant", blocks_text(content, ("text",)), at=at, tools=tuple(tools)),)
        text = blocks_text(content, ("text",))
        human = self._typed(obj, text)
        return (Message("user", text, human=human, at=at),)

    @staticmethod
    def _typed(obj: dict[str, Any], text: str) -> bool:
        if obj.get("isMeta") is True or obj.get("isCompactSummary") is True or "toolUseResult" in obj:
            return False
        if obj.get("userType") not in (None, "external"):
            return False
        if obj.get("promptSource") not in (None, "typed"):
            return False
        stripped = text.lstrip()
        return bool(stripped) and not stripped.startswith(_CLAUDE_NOT_TYPED)


_COPILOT_KINDS = frozenset({"session.start", "user.message", "assistant.message", "tool.execution_start"})


class _Copilot(_Reader):
    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        kind = obj.get("type")
        if kind not in _COPILOT_KINDS:
            return ()  # deltas, tool completions, turn markers: nothing for us (most lines)
        data = obj.get("data")
        if type(data) is not dict or obj.get("agentId"):
            return ()  # agentId marks a sub-agent's events
        at = parse_time(obj.get("timestamp"))
        if kind == "session.start":
            self.stats.session_id = nonempty(data.get("sessionId"))
            context = data.get("context")
            if isinstance(context, dict):
                self.stats.cwd = nonempty(context.get("cwd"))
            return ()
        if kind == "user.message":
            text = nonempty(data.get("content")) or ""
            # source names where an injected message came from (a skill); a typed one has none.
            human = bool(text.strip()) and data.get("source") in (None, "", "user")
            return (Message("user", text, human=human, at=at),)
        if kind == "assistant.message":
            if data.get("parentToolCallId"):
                return ()
            text = nonempty(data.get("content")) or ""
            return (Message("assistant", text, at=at),) if text else ()
        if kind == "tool.execution_start" and isinstance(data.get("toolName"), str):
            if data.get("parentToolCallId"):
                return ()
            tool = tool_use(data["toolName"], tool_arguments(data.get("arguments")))
            return (Message("assistant", "", at=at, tools=(tool,)),)
        return ()


class _Codex(_Reader):
    def __init__(self, stats: ReadStats) -> None:
        super().__init__(stats)
        # Up to 0.16x a typed prompt is logged twice: as a response_item user message and as an
        # event_msg user_message (the person's words alone). 0.169 writes only the item; so did
        # the oldest files. The item is held back until it is clear which kind of file this is.
        self.events_seen = False
        self.pending: Message | None = None

    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return ()
        at = parse_time(obj.get("timestamp"))
        ptype = payload.get("type")
        out: list[Message] = []
        if kind == "session_meta":
            self.stats.session_id = nonempty(payload.get("id"))
            self.stats.cwd = nonempty(payload.get("cwd"))
        elif kind == "event_msg" and ptype == "user_message":
            self.events_seen, self.pending = True, None
            text = typed_text(nonempty(payload.get("message")) or "")
            out.append(Message("user", text, human=bool(text), at=at))
        elif kind == "response_item":
            if ptype == "message" and payload.get("role") == "user":
                if self.events_seen or _from_hook(payload):
                    return out
                raw = blocks_text(payload.get("content"))
                text = "" if raw.lstrip().startswith(_CODEX_PREAMBLES) else typed_text(raw)
                if text:
                    out += self.close()
                    self.pending = Message("user", text, human=True, at=at)
                return out
            out += self.close()
            if ptype == "message" and payload.get("role") == "assistant":
                out.append(Message("assistant", blocks_text(payload.get("content")), at=at))
            elif ptype in ("function_call", "custom_tool_call") and isinstance(payload.get("name"), str):
                raw_args = payload.get("arguments", payload.get("input"))
                args = tool_arguments(raw_args)
                if payload["name"] == "apply_patch" and isinstance(raw_args, str) and not args:
                    args = {"input": raw_args}
                out.append(Message("assistant", "", at=at, tools=(tool_use(payload["name"], args),)))
            elif ptype == "local_shell_call" and isinstance(payload.get("action"), dict):
                out.append(Message("assistant", "", at=at, tools=(tool_use("local_shell", payload["action"]),)))
        return out

    def close(self) -> Iterable[Message]:
        pending, self.pending = self.pending, None
        return (pending,) if pending is not None and not self.events_seen else ()


def _from_hook(payload: dict[str, Any]) -> bool:
    """A Codex user message the person did not type: its provenance names a hook (0.169 tags each
    content item, ``{"type": "harness", "hook": true}``), or says it came from somewhere else than
    the user (the harness's context, skills)."""
    marks: list[Any] = [payload.get("provenance")]
    content = payload.get("content")
    if isinstance(content, list):
        marks += [b.get("provenance") for b in content if isinstance(b, dict)]
    passthrough = payload.get("internal_chat_message_metadata_passthrough")
    items = passthrough.get("content_item_metadata") if isinstance(passthrough, dict) else None
    if isinstance(items, list):
        marks += [item.get("provenance") for item in items if isinstance(item, dict)]
    kinds = set()
    for mark in marks:
        if isinstance(mark, str):
            kinds.add(mark.lower())
        elif isinstance(mark, dict):
            hook = mark.get("hook")
            if hook is not None and hook is not False:
                return True
            if isinstance(mark.get("type"), str):
                kinds.add(mark["type"].lower())
    if any("hook" in kind for kind in kinds):
        return True
    return bool(kinds) and "user" not in kinds


class _Gemini(_Reader):
    """Gemini CLI: the messages of a ``session-*.json`` document, or of 0.61's ``session-*.jsonl``
    (a metadata first line, then messages, ``{"$set": ...}`` updates, and a message written again
    under its id when it changes). Messages are held until :meth:`close`: the last version of each
    id wins, in the place where the id first appeared."""

    def __init__(self, stats: ReadStats) -> None:
        super().__init__(stats)
        self.messages: dict[str, Message | None] = {}

    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        update = obj.get("$set")
        if isinstance(update, dict):
            obj = update  # an update of the session's fields; messages, if it carries them
        if "type" not in obj:
            if self.stats.session_id is None:
                self.stats.session_id = nonempty(obj.get("sessionId"))
            messages = obj.get("messages")
            if isinstance(messages, list):  # a whole document on one line
                for item in messages:
                    if isinstance(item, dict):
                        self.feed(item)
            return ()
        key = obj.get("id")
        key = key if isinstance(key, str) and key else f"#{len(self.messages)}"
        self.messages[key] = self._message(obj)
        return ()

    @staticmethod
    def _message(obj: dict[str, Any]) -> Message | None:
        kind = obj.get("type")
        at = parse_time(obj.get("timestamp"))
        if kind == "user":
            raw = blocks_text(obj.get("content"))
            text = typed_text(raw)
            return Message("user", text or raw, human=bool(text), at=at)
        if kind == "gemini":
            tools = []
            calls = obj.get("toolCalls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict) and isinstance(call.get("name"), str):
                        tools.append(tool_use(call["name"], tool_arguments(call.get("args"))))
            return Message("assistant", blocks_text(obj.get("content")), at=at, tools=tuple(tools))
        return None

    def close(self) -> Iterable[Message]:
        messages, self.messages = self.messages, {}
        return [m for m in messages.values() if m is not None]


class _Generic(_Reader):
    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        role = obj.get("role")
        if role not in ("user", "assistant"):
            return ()
        text = blocks_text(obj.get("content"))
        at = parse_time(obj.get("timestamp"))
        return (Message(role, text, human=role == "user" and bool(text.strip()), at=at),)


READERS: dict[str, type[_Reader]] = {
    "claude": _Claude,
    "copilot": _Copilot,
    "codex": _Codex,
    "gemini": _Gemini,
    "generic": _Generic,
}
