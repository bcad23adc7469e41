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
  [{type: user|gemini|info, content, toolCalls}]}``; since 0.61 ``chats/session-*.jsonl``: a
  metadata line, the messages one per line (a changed one again under its id), ``{"$set": ...}``
  updates. Content is a string or parts ``[{text}]``.
- **generic**: JSON lines of ``{role, content}`` (optional ``timestamp``).
- **opencode**: not a file of its own but a session in opencode's SQLite database, named by the
  database's path and the session's id (:mod:`kairosd.consolidation.transcripts.opencode`).

A human user turn is what a person typed: not a tool result, not a meta or injected message
(Claude's ``isMeta``, slash-command echoes, ``<local-command-stdout>``, compaction summaries,
sub-agent sidechains; Copilot's sub-agent and skill-injected messages; Codex's environment and
instruction preambles and hook prompts; Gemini's ``<session_context>``; kairos' own board and
scheduled reminders, wherever a CLI records them as user text).

The format is told by the first line read whole (JSON lines if it is an object), never by a
fixed number of bytes: Codex 0.169's first line is over 20 KB.

Reading is streaming, line by line, with a bound on a single line; a line that is not a JSON
object (or not UTF-8, or too long) is skipped and counted in :class:`ReadStats`, never fatal.
Everything read is data: nothing here follows a link, runs a command or evaluates text.

This module tells the format, picks a reader and counts; it re-exports the names callers use, so
they import from here alone. The rest is split by seam:

    model     the types (:class:`Message`, :class:`ReadStats`), bounded line reading
    tools     tool calls classified (shell, edit, read, to-do)
    formats   one reader per JSONL format
    opencode  OpenCode's SQLite store

Must not import the registry, the daemon, the board or anything that writes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from kairosd.consolidation.transcripts.formats import READERS
from kairosd.consolidation.transcripts.model import (
    MAX_LINE_BYTES,
    Message,
    ReadStats,
    ToolUse,
    iter_lines,
    nonempty,
    parse_objects,
    parse_time,
)
from kairosd.consolidation.transcripts.opencode import is_sqlite, read_session
from kairosd.consolidation.transcripts.tools import tool_use
from kairosd.system.boundedread import open_capped

__all__ = [
    "AGENT_FORMATS",
    "FORMATS",
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "SNIFF_OBJECTS",
    "Message",
    "ReadStats",
    "ToolUse",
    "count_human_turns",
    "iter_lines",
    "parse_objects",
    "parse_time",
    "read_document",
    "read_file",
    "read_messages",
    "sniff",
    "tool_use",
]

FORMATS = ("claude", "copilot", "codex", "gemini", "generic")
AGENT_FORMATS = {"claude": "claude", "copilot": "copilot", "codex": "codex", "gemini": "gemini"}
MAX_DOCUMENT_BYTES = 64 << 20  # a Gemini session is one JSON document: read whole, up to this
# A transcript is read up to this many bytes, the rest left with a note: the read's time is bounded
# whatever the path holds. Far above any real session (a long Codex day is tens of MB).
MAX_TRANSCRIPT_BYTES = 512 << 20
SNIFF_OBJECTS = 50  # objects looked at to tell the format before the hint is trusted

_CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"})
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_GEMINI_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})

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
    if "projectHash" in obj or (isinstance(obj.get("messages"), list) and "sessionId" in obj):
        return "gemini"  # a session document, or the metadata line that opens 0.61's JSON lines
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
    reader = READERS[fmt](stats)
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
    stats.session_id = nonempty(doc.get("sessionId"))
    reader = READERS["gemini"](stats)
    for item in doc["messages"]:
        stats.lines += 1
        if not isinstance(item, dict):
            stats.malformed += 1
            continue
        for message in reader.feed(item):
            yield _counted(message, stats)
    for message in reader.close():
        yield _counted(message, stats)


def read_file(
    path: str | os.PathLike[str],
    hint: str | None = None,
    stats: ReadStats | None = None,
    max_bytes: int = MAX_TRANSCRIPT_BYTES,
    session_id: str | None = None,
) -> Iterator[Message]:
    """The messages of the transcript at ``path`` (JSON lines, a Gemini session document, or session
    ``session_id`` of an opencode database).

    Bounded (:mod:`kairosd.system.boundedread`): a path that is not a regular file (a FIFO,
    ``/dev/zero``) raises ``OSError`` at once, and at most ``max_bytes`` are read; a longer file
    is read that far, with a note in ``stats``. Raises OSError when the file cannot be opened
    (or an opencode database stays locked); bad content never raises.
    """
    stats = stats if stats is not None else ReadStats()
    file, capped = open_capped(path, max_bytes)
    with file:
        if is_sqlite(file.peek(16)):
            file.close()  # sqlite opens it itself, read-only
            for message in read_session(path, session_id, stats):
                yield _counted(message, stats)
            return
        if _is_document(file):
            if capped.size > MAX_DOCUMENT_BYTES:
                stats.notes.append(
                    f"a JSON document of {capped.size} bytes is larger than {MAX_DOCUMENT_BYTES}; skipped"
                )
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
        if capped.truncated:
            stats.truncated = True
            stats.notes.append(
                f"the transcript is {capped.size} bytes; only the first {max_bytes} were read (the rest was not)"
            )


def count_human_turns(
    path: str | os.PathLike[str],
    hint: str | None = None,
    stop_at: int | None = None,
    max_bytes: int = MAX_TRANSCRIPT_BYTES,
    session_id: str | None = None,
) -> tuple[int, ReadStats]:
    """Human user turns in the transcript at ``path``; with ``stop_at``, stops reading once reached."""
    stats = ReadStats()
    count = 0
    for message in read_file(path, hint, stats, max_bytes, session_id):
        if message.human:
            count += 1
            if stop_at is not None and count >= stop_at:
                break
    return count, stats


def _is_document(file: IO[bytes]) -> bool:
    """A pretty-printed JSON document (Gemini's ``session-*.json``) rather than JSON lines: its first
    line, read whole (Codex 0.169 opens with a 20 KB one), is not a JSON object by itself."""
    try:
        while True:
            line = file.readline(MAX_LINE_BYTES + 1)
            if not line or line.strip():
                break
        if len(line) > MAX_LINE_BYTES or not line.lstrip().startswith(b"{"):
            return False  # an over-long first line is skipped as JSON lines are, never read whole
        try:
            return not isinstance(json.loads(line), dict)
        except ValueError:
            return True
    finally:
        file.seek(0)


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
