"""opencode's transcripts: one session's messages out of its SQLite database (``opencode.db``).

opencode (1.18) keeps every session of a user in ``$XDG_DATA_HOME/opencode/opencode.db`` (``opencode
db path``; ``OPENCODE_DB`` moves it), in WAL mode. kairos' plugin hands over that path and the
session's id; the tables read are:

- ``session(id, directory, ...)``: the session's working folder;
- ``message(id, session_id, time_created, data)``: ``data.role`` is ``user`` or ``assistant``;
- ``part(id, message_id, session_id, data)``: ``data.type`` is ``text`` (``text``, and ``synthetic``
  or ``ignored`` when opencode or a plugin added it), ``tool`` (``tool``, ``state.input``),
  ``reasoning``, ``step-start``, ...

A human turn is the text a person typed: the text parts of a user message that are neither
``synthetic`` nor ``ignored``, less what kairos itself put there (a scheduled reminder sent into
the session; see :func:`~kairosd.consolidation.transcripts.formats.typed_text`). Tool output is
never read: only the fields used are extracted, in SQL, so a part holding a large tool result is
not loaded.

The database is opened read-only (``mode=ro``, never ``immutable``: the WAL holds the newest
turns), after checking that the path is a regular file (:func:`~kairosd.system.boundedread.open_regular`).
A writer holding a lock is waited for ``busy_timeout_s``, then the read fails with an ``OSError``
that says so. At most ``max_rows`` rows are read (the rest left with a note). Rows whose JSON is
malformed are skipped and counted.

Must not import :mod:`kairosd.consolidation.transcripts.read` (it imports this), the registry, the
daemon, the board or anything that writes.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from kairosd.consolidation.transcripts.formats import typed_text
from kairosd.consolidation.transcripts.model import Message, ReadStats, nonempty
from kairosd.consolidation.transcripts.tools import tool_arguments, tool_use
from kairosd.system.boundedread import open_regular

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 5.0  # what opencode itself sets (busy_timeout=5000)
MAX_ROWS = 200_000  # messages and parts together: far above a long day's session
MAX_TEXT_CHARS = 1 << 20  # a text part longer than this (a pasted dump) is cut

# Only the fields used, taken out in SQL; json_valid keeps one malformed row from failing the query.
_MESSAGES = """
SELECT id, time_created, json_valid(data),
       CASE WHEN json_valid(data) THEN json_extract(data, '$.role') END
FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT ?
"""
_PARTS = """
SELECT message_id, json_valid(data),
       CASE WHEN json_valid(data) THEN json_extract(data, '$.type') END,
       CASE WHEN json_valid(data) THEN substr(json_extract(data, '$.text'), 1, ?) END,
       CASE WHEN json_valid(data) THEN json_extract(data, '$.synthetic') END,
       CASE WHEN json_valid(data) THEN json_extract(data, '$.ignored') END,
       CASE WHEN json_valid(data) THEN json_extract(data, '$.tool') END,
       CASE WHEN json_valid(data) THEN substr(json_extract(data, '$.state.input'), 1, ?) END
FROM part WHERE session_id = ? ORDER BY id LIMIT ?
"""


class DatabaseBusy(OSError):
    """The database stayed locked by a writer for longer than the busy timeout."""


def is_sqlite(head: bytes) -> bool:
    """Whether a file that begins with ``head`` (its first 16 bytes or more) is a SQLite database."""
    return head[: len(SQLITE_MAGIC)] == SQLITE_MAGIC


def read_session(
    path: str | os.PathLike[str],
    session_id: str | None,
    stats: ReadStats,
    *,
    max_rows: int = MAX_ROWS,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
) -> Iterator[Message]:
    """The messages of opencode session ``session_id`` in the database at ``path``, in order.

    Raises ``OSError``: the path is not a regular file or cannot be opened, the database is locked
    past ``busy_timeout_s`` (:class:`DatabaseBusy`), or it is not an opencode database.
    """
    stats.format = "opencode"
    if not session_id:
        raise OSError(errno.EINVAL, f"{os.fspath(path)} is an opencode database: a session id is needed to read it")
    rows = _rows(os.path.abspath(os.fspath(path)), session_id, max_rows, busy_timeout_s)
    directory, messages, parts = rows
    stats.session_id, stats.cwd = session_id, directory
    if len(messages) >= max(1, max_rows // 2) or len(messages) + len(parts) >= max_rows:
        stats.truncated = True
        stats.notes.append(f"only the first {max_rows} rows of the session were read (the rest were not)")
    by_message: dict[str, list[tuple[Any, ...]]] = {}
    for row in parts:
        stats.lines += 1
        if not row[1]:
            stats.malformed += 1
            continue
        by_message.setdefault(row[0], []).append(row)
    for message_id, created, valid, role in messages:
        stats.lines += 1
        if not valid:
            stats.malformed += 1
            continue
        message = _message(role, _time(created), by_message.get(message_id, ()))
        if message is not None:
            yield message


def _rows(
    path: str, session_id: str, max_rows: int, busy_timeout_s: float
) -> tuple[str | None, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with open_regular(path):  # a FIFO or a device is refused before sqlite opens it
        pass
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s, check_same_thread=False)
    except sqlite3.Error as exc:
        raise OSError(errno.EIO, f"cannot open the opencode database {path}: {exc}") from None
    try:
        conn.execute("PRAGMA query_only = 1")
        found = conn.execute("SELECT directory FROM session WHERE id = ?", (session_id,)).fetchone()
        # Half the rows for messages at most: each has a part or more, and without them it says nothing.
        messages = conn.execute(_MESSAGES, (session_id, max(1, max_rows // 2))).fetchall()
        parts = conn.execute(_PARTS, (MAX_TEXT_CHARS, MAX_TEXT_CHARS, session_id, max(0, max_rows - len(messages))))
        return (nonempty(found[0]) if found else None), messages, parts.fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise DatabaseBusy(
                errno.EBUSY, f"the opencode database {path} stayed locked for over {busy_timeout_s:g}s; not read"
            ) from None
        raise OSError(errno.EIO, f"{path} is not an opencode database this kairos can read: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise OSError(errno.EIO, f"cannot read the opencode database {path}: {exc}") from None
    finally:
        conn.close()


def _message(role: Any, at: datetime | None, parts: Any) -> Message | None:
    if role == "user":
        texts = [row[3] for row in parts if row[2] == "text" and isinstance(row[3], str) and not _set(row[4], row[5])]
        raw = "\n".join(texts)
        text = typed_text(raw)
        return Message("user", text or raw, human=bool(text), at=at)
    if role == "assistant":
        text = "\n".join(row[3] for row in parts if row[2] == "text" and isinstance(row[3], str))
        tools = tuple(
            tool_use(row[6], tool_arguments(_json(row[7])))
            for row in parts
            if row[2] == "tool" and isinstance(row[6], str) and row[6]
        )
        return Message("assistant", text, at=at, tools=tools)
    return None


def _set(*flags: Any) -> bool:
    return any(flag not in (None, 0, False, "false") for flag in flags)


def _json(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _time(value: Any) -> datetime | None:
    """opencode's ``time_created``: milliseconds since the epoch."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
