"""What every transcript reader shares: the message types, bounded line reading, and small parsers.

:class:`Message` is what :mod:`kairosd.consolidation.transcripts.read` yields; :class:`ReadStats` is what
a read saw. The helpers (``parse_time``, ``nonempty``, ``blocks_text``) are the field parsers the
per-agent readers in :mod:`kairosd.consolidation.transcripts.formats` have in common.

The bottom of the transcript modules: must not import the other ``transcript*`` modules, the
registry, the daemon, the board or anything that writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

MAX_LINE_BYTES = 16 << 20  # longer lines (a pasted core dump) are skipped, so memory stays bounded


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
    truncated: bool = False  # the file was longer than the read's byte cap; its end was not read
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
            "truncated": self.truncated,
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


# ---- field parsers --------------------------------------------------------------------------


def nonempty(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
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


def blocks_text(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    """The text of a message's content: a string, or the joined text of its blocks of ``kinds``
    (a block with no ``type`` but a ``text``, as Gemini's parts are, is a text block)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type", "text") in kinds]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""
