"""A durable append-only JSON-lines log: one JSON object per line, fsynced per append.

The run ledger, the missed ledger and the inboxes are built on it. What a crash
can leave, and what a read makes of it:

- **A torn last line** (the crash came mid-append): ignored with a warning. The
  next append starts on a fresh line, so the torn bytes never swallow a new record.
- **A garbled line in the middle** (a torn line followed by later appends, or a
  hand edit): skipped with a warning naming the line number.
- **A temp file next to the log** (a crash during :meth:`JsonLog.rewrite`): the
  log itself is intact; :meth:`JsonLog.remove_stale_temp_files` clears it.

A read never raises for bad content, only for a file that cannot be read at all.
Blocking I/O throughout: async callers run these methods in a thread.

Must not import anything from kairosd except :mod:`kairosd.system.atomic`: it knows
JSON objects (and how pydantic models encode as one) and paths only, not what the records mean.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kairosd.system.atomic import fsync_dir, remove_stale_temp_files, write_atomic

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700

_NEWLINE = b"\n"


def _encode_one(record: dict[str, Any]) -> bytes:
    # ASCII escapes, not raw UTF-8: a lone surrogate kept from an unknown field must still encode.
    # Compact separators and no indent, so a record can never span lines.
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _encode(records: Sequence[dict[str, Any] | bytes]) -> bytes:
    """Lines for ``records``: JSON objects, or lines already encoded as :meth:`JsonLog.append` writes them."""
    return b"".join((r if isinstance(r, bytes) else _encode_one(r)) + _NEWLINE for r in records)


class JsonLog:
    """The log at ``path``. Single writer: one process (the lock holder) appends and rewrites.

    ``lines`` is the number of lines in the file as this object last knew it (set
    by :meth:`read` and :meth:`rewrite`, grown by :meth:`append`), so owners can
    decide when to compact without reading the file again.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self.lines = 0

    @property
    def path(self) -> Path:
        return self._path

    def append(self, records: Sequence[dict[str, Any] | bytes]) -> None:
        """Append ``records`` with one write and one fsync; durable when this returns.

        A record is a JSON object, or one already encoded as :meth:`append` writes it (compact JSON
        in ASCII, no newline): a caller with a faster encoder for its records hands those over.
        """
        self.append_lines([record if isinstance(record, bytes) else _encode_one(record) for record in records])

    def append_lines(self, lines: list[bytes]) -> None:
        """Append records already encoded (one JSON object each, no newline: :func:`kairosd.core.records.json_line`),
        with one write and one fsync; durable when this returns."""
        if not lines:
            return
        # No line may hold a newline: searched in the lines joined without one (a copy and a memchr, both
        # vectorised in C: a tenth of counting the newlines of the joined lines, 20,000-30,000 lines a pass).
        if _NEWLINE in b"".join(lines):
            raise ValueError("a log line must not contain a newline")
        data = _NEWLINE.join([*lines, b""])  # each line ends with one, and no copy of the whole appends it
        fd, created = self._open_for_append()
        try:
            size = os.fstat(fd).st_size
            # A torn last line (no newline) would glue itself to our first record; end it first.
            if size > 0 and os.pread(fd, 1, size - 1) != _NEWLINE:
                data = _NEWLINE + data  # completes the torn line; the line count is unchanged
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self._path.parent)  # the new file's entry must survive a crash too
        self.lines += len(lines)

    def read(self) -> list[dict[str, Any]]:
        """Every well-formed record, in order. An absent file is an empty log.

        Bad lines are skipped with a warning (never raised); an unreadable file
        raises :class:`OSError`.
        """
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            self.lines = 0
            return []
        raw_lines = data.split(_NEWLINE)
        if raw_lines and raw_lines[-1] == b"":
            raw_lines.pop()  # the terminator of the last complete line, not a line
        self.lines = len(raw_lines)
        records: list[dict[str, Any]] = []
        last = len(raw_lines)
        for number, raw in enumerate(raw_lines, start=1):
            if not raw.strip():
                continue
            problem = ""
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError; a line nested deep
                problem = str(exc)
            else:
                if isinstance(record, dict):
                    records.append(record)
                    continue
                problem = f"a JSON {type(record).__name__}, not an object"
            if number == last:
                log.warning(
                    "%s: ignoring a torn or garbled last line (%s), likely an append cut short by a crash",
                    self._path,
                    problem,
                )
            else:
                log.warning("%s: skipping garbled line %d (%s)", self._path, number, problem)
        return records

    def rewrite(self, records: Sequence[dict[str, Any] | bytes]) -> None:
        """Replace the whole log with ``records`` atomically (compaction)."""
        self._path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        write_atomic(self._path, _encode(records), mode=FILE_MODE)
        self.lines = len(records)

    def remove_stale_temp_files(self) -> None:
        """Remove temp files an interrupted :meth:`rewrite` left. Only for the single writer."""
        remove_stale_temp_files(self._path)

    def _open_for_append(self) -> tuple[int, bool]:
        """An fd open for reading and appending, and whether the file was created now."""
        # O_RDWR, not O_WRONLY: append peeks at the last byte to detect a torn line.
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            return os.open(self._path, flags), False
        except FileNotFoundError:
            pass
        self._path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        try:
            fd = os.open(self._path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            return os.open(self._path, flags), False
        try:
            os.fchmod(fd, FILE_MODE)  # os.open's mode is filtered by the umask; state files must be exact
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        return fd, True
