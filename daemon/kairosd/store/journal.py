"""The store's journal: changes appended beside ``scheduled_tasks.json`` between two full writes of it.

Why (issue 28): a change used to rewrite the whole store, so one client's adds ran at a
fraction of the rate of plain atomic rewrites of a file that size (32/s at 10,000 tasks
against 210), and slower still as the store grew. Now a commit appends one line here and
fsyncs it; the store file is rewritten (compacted) only when the journal has grown as
large as the store, at a clean stop, and after a load that found something to fold in.

The file, ``scheduled_tasks.journal`` (JSON lines):

- the first line names the store file the changes apply to:
  ``{"journal": 1, "base": [crc32, size]}`` of that file's bytes (an absent store is
  ``b""``);
- each further line is one commit, applied in this order: ``"del"`` (ids removed),
  ``"put"`` (whole tasks: a present id is replaced in place, an absent one is appended),
  ``"set"`` (the store's top-level fields, all of them, when one changed).

Crash rules (they add to the store's, see :mod:`kairosd.store.store`):

- **A line cut short** (a crash during an append): only the end of the file can be, and
  that commit was never acknowledged (its fsync had not returned); it is ignored, with a
  warning, and the next write compacts it away.
- **A crash between the two steps of a compaction** (the new store is renamed into
  place, then the journal is removed): the journal's base no longer matches the store, so
  it is known to be folded in already and is ignored (with a warning: the same happens to a
  journal left by a crash when the store was then edited by hand; the edit wins).
- **A journal whose lines do not parse before a line that does** (not a crash: a disk
  fault or an edit): the store is corrupt; kairos refuses to start and changes nothing.

Must not import anything from kairos or kairosd but :mod:`kairosd.system.atomic`: it knows
lines and files, not tasks.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import zlib
from pathlib import Path
from typing import Any

from kairosd.system.atomic import fsync_dir

log = logging.getLogger(__name__)

VERSION = 1
FILE_MODE = 0o600


class JournalCorrupt(ValueError):
    """The journal cannot be read as this module writes it (not a crash's torn end)."""


def base_of(data: bytes) -> list[int]:
    """What a journal line 1 says of the store file it applies to: its CRC-32 and size."""
    return [zlib.crc32(data), len(data)]


def record(dels: list[str], puts: list[str], fields: dict[str, Any] | None) -> bytes:
    """One commit as a journal line; ``puts`` are tasks already encoded as compact JSON."""
    parts = ['{"del":', json.dumps(dels), ',"put":[', ",".join(puts), "]"]
    if fields is not None:
        parts += [',"set":', json.dumps(fields, separators=(",", ":"))]
    parts.append("}\n")
    return "".join(parts).encode("utf-8")


class Journal:
    """Appends to the journal at ``path``; the store's single writer owns it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.size = 0  # bytes of the journal this process writes (0: none yet since the last compaction)

    def append(self, line: bytes, base: list[int]) -> None:
        """Make ``line`` durable: a new journal (header and line) on the first call after :meth:`discard`."""
        if self._fd is None:
            self._start(json.dumps({"journal": VERSION, "base": base}).encode() + b"\n" + line)
            return
        try:
            _write_all(self._fd, line)
            os.fdatasync(self._fd)
        except BaseException:
            # Cut the partial line off, so the next append does not follow garbage; if even that
            # fails, forget the file: the next write must then be a compaction (see JsonStore).
            try:
                os.ftruncate(self._fd, self.size)
            except OSError:
                self.close()
            raise
        self.size += len(line)

    def _start(self, data: bytes) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.path, flags, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            _write_all(fd, data)
            os.fsync(fd)
            fsync_dir(self.path.parent)  # the new file's name must survive a crash too
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise
        self._fd, self.size = fd, len(data)

    def discard(self) -> None:
        """After a compaction: the journal's changes are in the store; the next append starts a new one.

        Removing the file is tidiness only: one left behind (a failed unlink, a crash) has the old
        store as its base and is ignored, and the next append truncates it.
        """
        self.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self.size = None, 0


def read(path: Path, base: list[int]) -> tuple[list[dict[str, Any]], bool]:
    """The commits of the journal at ``path`` that apply to a store with ``base``, and whether it has any file.

    Returns ``([], True)`` for a journal of another base (already folded in) or one whose
    header was cut short. Raises :class:`JournalCorrupt` when a line that does not parse
    comes before one that does (see the module's crash rules), OSError when it cannot be read.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], False
    lines = data.split(b"\n")
    parsed: list[Any] = []
    for line in lines[:-1]:  # the piece after the last newline is a torn line (or b"")
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(None)
    while parsed and not _is_record(parsed[-1]):
        parsed.pop()  # a torn end: the newline of a later write made it to disk before its bytes
    if len(parsed) < len(lines) - 1 or lines[-1]:
        log.warning("%s ends with a change cut short by a crash; it was never acknowledged and is ignored", path)
    if not parsed:
        return [], True
    header = parsed[0]
    if not (isinstance(header, dict) and header.get("journal") == VERSION and isinstance(header.get("base"), list)):
        raise JournalCorrupt(f"{path} does not start as a kairos journal (version {VERSION})")
    if header["base"] != base:
        # After a compaction cut short, its changes are in the store; after an edit of the store while
        # kairosd was down, the edit wins. Either way the store as it is now is what loads.
        log.warning(
            "%s applies to an earlier version of the store (a rewrite cut short, or an edit); its %d change(s) "
            "are not applied again",
            path, len(parsed) - 1,
        )  # fmt: skip
        return [], True
    commits = parsed[1:]
    for number, commit in enumerate(commits, start=2):
        if not _is_record(commit):
            raise JournalCorrupt(f"line {number} of {path} is not a change, and later lines are")
    return commits, True


def _is_record(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("del", []), list)
        and isinstance(item.get("put", []), list)
        and isinstance(item.get("set", {}), dict)
        and ("del" in item or "put" in item or "journal" in item)
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
