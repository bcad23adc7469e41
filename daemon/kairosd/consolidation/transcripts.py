"""Transcript readers: one normalised stream of messages out of each agent CLI's session file.

Formats (the line shapes are reverse-engineered by others; see the research notes, §1):

- **claude**: Claude Code ``~/.claude/projects/<project>/<session>.jsonl``. Lines carry ``type``
  (``user``, ``assistant``, ``system``, ``summary``, ...), ``timestamp`` and ``message``
  (``{role, content}``; content is a string or blocks: ``text``, ``tool_use``, ``tool_result``).
- **copilot**: Copilot CLI ``~/.copilot/session-state/<session>/events.jsonl``: ``{type, data,
  id, timestamp, parentId}`` with ``user.message``, ``assistant.message``, ``tool.execution_start``.
- **codex**: Codex ``~/.codex/sessions/Y/M/D/rollout-*.jsonl``: ``{timestamp, type, payload}``
  with ``session_meta``, ``response_item`` (messages, ``function_call``), ``event_msg``
  (``user_message``: what the person typed), ``turn_context``.
- **gemini**: Gemini CLI's ``chats/session-*.json``: one JSON document ``{sessionId, messages:
  [{type: user|gemini|info, content, toolCalls}]}`` (or the same messages one per line).
- **generic**: JSON lines of ``{role, content}`` (optional ``timestamp``).

A human user turn is what a person typed: not a tool result, not a meta or injected message
(Claude's ``isMeta``, slash-command echoes, ``<local-command-stdout>``, compaction summaries,
sub-agent sidechains; Copilot's sub-agent and skill-injected messages; Codex's environment and
instruction preambles).

Reading is streaming, line by line, with a bound on a single line; a line that is not a JSON
object (or not UTF-8, or too long) is skipped and counted in :class:`ReadStats`, never fatal.
Everything read is data: nothing here follows a link, runs a command or evaluates text.

Must not import the registry, the daemon, the board or anything that writes.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

FORMATS = ("claude", "copilot", "codex", "gemini", "generic")
AGENT_FORMATS = {"claude": "claude", "copilot": "copilot", "codex": "codex", "gemini": "gemini"}
MAX_LINE_BYTES = 16 << 20  # longer lines (a pasted core dump) are skipped, so memory stays bounded
MAX_DOCUMENT_BYTES = 64 << 20  # a Gemini session is one JSON document: read whole, up to this
SNIFF_OBJECTS = 50  # objects looked at to tell the format before the hint is trusted

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
_CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"})
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_GEMINI_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})

# Tool names, per CLI, grouped by what they tell us.
_SHELL_TOOLS = frozenset(
    {"bash", "shell", "powershell", "run_in_terminal", "run_shell_command", "exec_command", "shell_command",
     "container.exec", "local_shell", "execute_command"}
)  # fmt: skip
_EDIT_TOOLS = frozenset(
    {"edit", "write", "multiedit", "notebookedit", "create", "str_replace_editor", "str_replace", "write_file",
     "replace", "edit_file", "apply_patch", "insert", "create_file"}
)  # fmt: skip
_READ_TOOLS = frozenset({"read", "view", "read_file", "read_many_files", "cat"})
_TODO_TOOLS = frozenset({"todowrite", "update_plan", "update_todo", "write_todos"})
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "absolute_path")
_DONE = frozenset({"completed", "complete", "done", "cancelled", "canceled"})


@dataclass(slots=True)  # not frozen: a frozen __init__ costs, and a read makes tens of thousands
class ToolUse:
    """What one tool call tells us: a shell command, paths it edited or read, or a to-do list."""

    kind: str  # "shell", "edit", "read", "todo" or "other"
    name: str
    command: str | None = None
    paths: tuple[str, ...] = ()
    open_todos: tuple[str, ...] | None = None  # a to-do tool's items not done yet (None: not a to-do tool)


@dataclass(slots=True)
class Message:
    role: str  # "user" or "assistant"
    text: str
    human: bool = False  # a person typed it (a user turn)
    at: datetime | None = None
    tools: tuple[ToolUse, ...] = ()


@dataclass
class ReadStats:
    """What a read saw. ``malformed``: lines skipped (not JSON, not an object, not UTF-8, too long)."""

    format: str | None = None
    lines: int = 0
    malformed: int = 0
    human_turns: int = 0
    messages: int = 0
    first_at: datetime | None = None
    last_at: datetime | None = None
    session_id: str | None = None
    cwd: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "lines": self.lines,
            "malformed": self.malformed,
            "human_turns": self.human_turns,
            "messages": self.messages,
            "first_at": self.first_at.isoformat() if self.first_at else None,
            "last_at": self.last_at.isoformat() if self.last_at else None,
            "notes": list(self.notes),
        }


# ---- reading lines --------------------------------------------------------------------------


def iter_lines(file: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The file's lines; ``None`` for a line longer than ``max_bytes`` (skipped without holding it)."""
    while True:
        line = file.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # drain the rest of the over-long line in bounded pieces
                rest = file.readline(max_bytes)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


_DECODE = json.JSONDecoder().decode  # json.loads without its per-call encoding detection (lines are UTF-8)


def parse_objects(lines: Iterable[bytes | None], stats: ReadStats) -> Iterator[dict[str, Any]]:
    """Each line's JSON object; anything else is counted as malformed and skipped."""
    decode = _DECODE
    for raw in lines:
        if raw is None:
            stats.lines += 1
            stats.malformed += 1
            continue
        if not raw.strip():
            continue
        stats.lines += 1
        try:
            obj = decode(raw.decode("utf-8"))
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            stats.malformed += 1
            continue
        if type(obj) is not dict:
            stats.malformed += 1
            continue
        yield obj


# ---- the format -----------------------------------------------------------------------------


def sniff(obj: dict[str, Any]) -> str | None:
    """The format one object belongs to, if it says so clearly."""
    kind = obj.get("type")
    if isinstance(kind, str):
        if kind in _CODEX_TYPES and "payload" in obj:
            return "codex"
        if "." in kind and "data" in obj:
            return "copilot"
        if kind in _CLAUDE_TYPES and ("message" in obj or "sessionId" in obj or "uuid" in obj):
            return "claude"
        if kind in _GEMINI_TYPES and "content" in obj and "message" not in obj:
            return "gemini"
    if isinstance(obj.get("messages"), list) and ("sessionId" in obj or "projectHash" in obj):
        return "gemini"
    if "role" in obj and "content" in obj:
        return "generic"
    return None


def read_messages(
    lines: Iterable[bytes | None], hint: str | None = None, stats: ReadStats | None = None
) -> Iterator[Message]:
    """The messages of a JSON-lines transcript, in order. ``hint``: the agent or format to assume when
    the lines do not say (the lines win: a generic transcript handed over as ``claude`` still reads).

    ``stats`` (filled in while iterating) counts lines, malformed lines and human turns.
    """
    stats = stats if stats is not None else ReadStats()
    objects = parse_objects(lines, stats)
    buffered: list[dict[str, Any]] = []
    fmt: str | None = None
    for obj in objects:
        buffered.append(obj)
        fmt = sniff(obj)
        if fmt is not None or len(buffered) >= SNIFF_OBJECTS:
            break
    fmt = fmt or AGENT_FORMATS.get(hint or "", hint if hint in FORMATS else None) or "generic"
    stats.format = fmt
    reader = _READERS[fmt](stats)
    feed = reader.feed
    for obj in buffered:
        for message in feed(obj):
            yield _counted(message, stats)
    for obj in objects:  # the hot loop: one pass, no further generator layers
        for message in feed(obj):
            stats.messages += 1
            if message.human:
                stats.human_turns += 1
            at = message.at
            if at is not None:  # (what _counted does, inline)
                if stats.first_at is None or at < stats.first_at:
                    stats.first_at = at
                if stats.last_at is None or at > stats.last_at:
                    stats.last_at = at
            yield message
    for message in reader.close():
        yield _counted(message, stats)


def read_document(doc: Any, stats: ReadStats) -> Iterator[Message]:
    """The messages of a Gemini CLI session document (``{sessionId, messages: [...]}``)."""
    stats.format = "gemini"
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        stats.notes.append("not a Gemini session document (no messages list)")
        return
    stats.session_id = _str(doc.get("sessionId"))
    reader = _Gemini(stats)
    for item in doc["messages"]:
        stats.lines += 1
        if not isinstance(item, dict):
            stats.malformed += 1
            continue
        for message in reader.feed(item):
            yield _counted(message, stats)


def read_file(
    path: str | os.PathLike[str], hint: str | None = None, stats: ReadStats | None = None
) -> Iterator[Message]:
    """The messages of the transcript at ``path`` (JSON lines, or a Gemini session document).

    Raises OSError when the file cannot be opened; bad content never raises.
    """
    stats = stats if stats is not None else ReadStats()
    with open(path, "rb") as file:
        if _is_document(file):
            size = os.fstat(file.fileno()).st_size
            if size > MAX_DOCUMENT_BYTES:
                stats.notes.append(f"a JSON document of {size} bytes is larger than {MAX_DOCUMENT_BYTES}; skipped")
                stats.malformed += 1
                return
            try:
                doc = json.loads(file.read())
            except ValueError:
                stats.lines += 1
                stats.malformed += 1
                return
            yield from read_document(doc, stats)
            return
        yield from read_messages(iter_lines(file), hint, stats)


def count_human_turns(
    path: str | os.PathLike[str], hint: str | None = None, stop_at: int | None = None
) -> tuple[int, ReadStats]:
    """Human user turns in the transcript at ``path``; with ``stop_at``, stops reading once reached."""
    stats = ReadStats()
    count = 0
    for message in read_file(path, hint, stats):
        if message.human:
            count += 1
            if stop_at is not None and count >= stop_at:
                break
    return count, stats


def _is_document(file: IO[bytes]) -> bool:
    """A pretty-printed JSON document (Gemini) rather than JSON lines: its first line is not an object."""
    head = file.read(4096)
    file.seek(0)
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    first = text.split(b"\n", 1)[0]
    try:
        return not isinstance(json.loads(first), dict)
    except ValueError:
        return True


def _counted(message: Message, stats: ReadStats) -> Message:
    stats.messages += 1
    if message.human:
        stats.human_turns += 1
    if message.at is not None:
        if stats.first_at is None or message.at < stats.first_at:
            stats.first_at = message.at
        if stats.last_at is None or message.at > stats.last_at:
            stats.last_at = message.at
    return message


# ---- helpers --------------------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp (``Z`` or an offset; naive ones are taken as UTC), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)  # Python 3.11 reads a trailing "Z" too
    except ValueError:
        return None
    if when.tzinfo is UTC:
        return when
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _blocks_text(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") in kinds]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments: an object, or a JSON string of one (Codex, sometimes Copilot)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _command_of(args: dict[str, Any]) -> str | None:
    raw = args.get("command", args.get("cmd"))
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
        # Codex runs ["bash", "-lc", "make test"]: the script is what was meant.
        if len(raw) >= 3 and raw[1] in ("-lc", "-c"):
            return str(raw[2])
        return shlex.join(raw)
    return None


def _patch_paths(patch: str) -> tuple[str, ...]:
    """Paths an ``apply_patch`` text touches (``*** Update File: X``, ``*** Add File: X``)."""
    found: list[str] = []
    for line in patch.splitlines():
        for mark in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
            if line.startswith(mark):
                found.append(line[len(mark) :].strip())
    return tuple(found)


def tool_use(name: str, args: dict[str, Any]) -> ToolUse:
    """Classify one tool call by its (case-insensitive) name and arguments."""
    key = name.lower()
    if key in _TODO_TOOLS:
        items = args.get("todos", args.get("plan"))
        open_items: list[str] = []
        if isinstance(items, list):
            for item in items:
                if not isinstance(item, dict):
                    continue
                text = item.get("content", item.get("step", item.get("description")))
                status = str(item.get("status", "")).lower()
                if isinstance(text, str) and text.strip() and status not in _DONE:
                    open_items.append(text.strip())
        return ToolUse("todo", name, open_todos=tuple(open_items))
    if key in _SHELL_TOOLS:
        return ToolUse("shell", name, command=_command_of(args))
    if key in _EDIT_TOOLS or key in _READ_TOOLS:
        paths = [args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)]
        edits = args.get("edits")
        if key == "apply_patch":
            patch = args.get("input", args.get("patch"))
            paths += list(_patch_paths(patch)) if isinstance(patch, str) else []
        elif isinstance(edits, list):
            paths += [e["file_path"] for e in edits if isinstance(e, dict) and isinstance(e.get("file_path"), str)]
        return ToolUse("edit" if key in _EDIT_TOOLS else "read", name, paths=tuple(dict.fromkeys(paths)))
    return ToolUse("other", name)


# ---- one reader per format --------------------------------------------------------------------


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
            self.stats.cwd = _str(obj.get("cwd"))
            self.stats.session_id = _str(obj.get("sessionId"))
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
                    if isinstance(block, dict) and block.get("type") == "tool_use" and _str(block.get("name")):
                        tools.append(tool_use(block["name"], _arguments(block.get("input"))))
            return (Message("assistant", _blocks_text(content, ("text",)), at=at, tools=tuple(tools)),)
        text = _blocks_text(content, ("text",))
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
            self.stats.session_id = _str(data.get("sessionId"))
            context = data.get("context")
            if isinstance(context, dict):
                self.stats.cwd = _str(context.get("cwd"))
            return ()
        if kind == "user.message":
            text = _str(data.get("content")) or ""
            # source names where an injected message came from (a skill); a typed one has none.
            human = bool(text.strip()) and data.get("source") in (None, "", "user")
            return (Message("user", text, human=human, at=at),)
        if kind == "assistant.message":
            if data.get("parentToolCallId"):
                return ()
            text = _str(data.get("content")) or ""
            return (Message("assistant", text, at=at),) if text else ()
        if kind == "tool.execution_start" and isinstance(data.get("toolName"), str):
            if data.get("parentToolCallId"):
                return ()
            tool = tool_use(data["toolName"], _arguments(data.get("arguments")))
            return (Message("assistant", "", at=at, tools=(tool,)),)
        return ()


class _Codex(_Reader):
    def __init__(self, stats: ReadStats) -> None:
        super().__init__(stats)
        # A typed prompt is logged twice: as a response_item user message and as an event_msg
        # user_message. The event is the person's words alone; older files only have the item.
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
            self.stats.session_id = _str(payload.get("id"))
            self.stats.cwd = _str(payload.get("cwd"))
        elif kind == "event_msg" and ptype == "user_message":
            self.events_seen, self.pending = True, None
            text = _str(payload.get("message")) or ""
            out.append(Message("user", text, human=bool(text.strip()), at=at))
        elif kind == "response_item":
            if ptype == "message" and payload.get("role") == "user":
                text = _blocks_text(payload.get("content"))
                if not self.events_seen and text.strip() and not text.lstrip().startswith(_CODEX_PREAMBLES):
                    out += self.close()
                    self.pending = Message("user", text, human=True, at=at)
                return out
            out += self.close()
            if ptype == "message" and payload.get("role") == "assistant":
                out.append(Message("assistant", _blocks_text(payload.get("content")), at=at))
            elif ptype in ("function_call", "custom_tool_call") and isinstance(payload.get("name"), str):
                raw = payload.get("arguments", payload.get("input"))
                args = _arguments(raw)
                if payload["name"] == "apply_patch" and isinstance(raw, str) and not args:
                    args = {"input": raw}
                out.append(Message("assistant", "", at=at, tools=(tool_use(payload["name"], args),)))
            elif ptype == "local_shell_call" and isinstance(payload.get("action"), dict):
                out.append(Message("assistant", "", at=at, tools=(tool_use("local_shell", payload["action"]),)))
        return out

    def close(self) -> Iterable[Message]:
        pending, self.pending = self.pending, None
        return (pending,) if pending is not None and not self.events_seen else ()


class _Gemini(_Reader):
    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        kind = obj.get("type")
        at = parse_time(obj.get("timestamp"))
        if kind == "user":
            text = _blocks_text(obj.get("content"))
            return (Message("user", text, human=bool(text.strip()), at=at),)
        if kind == "gemini":
            tools = []
            calls = obj.get("toolCalls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict) and isinstance(call.get("name"), str):
                        tools.append(tool_use(call["name"], _arguments(call.get("args"))))
            return (Message("assistant", _blocks_text(obj.get("content")), at=at, tools=tuple(tools)),)
        return ()


class _Generic(_Reader):
    def feed(self, obj: dict[str, Any]) -> Iterable[Message]:
        role = obj.get("role")
        if role not in ("user", "assistant"):
            return ()
        text = _blocks_text(obj.get("content"))
        at = parse_time(obj.get("timestamp"))
        return (Message(role, text, human=role == "user" and bool(text.strip()), at=at),)


_READERS: dict[str, type[_Reader]] = {
    "claude": _Claude,
    "copilot": _Copilot,
    "codex": _Codex,
    "gemini": _Gemini,
    "generic": _Generic,
}
