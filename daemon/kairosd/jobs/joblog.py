"""Per-task log files: every output line of every turn, plus kairos' own turn markers.

``<logs_dir>/<task id>.log``, 0600 in a 0700 folder, appended to with
O_APPEND. Line ``n`` (from 0) is the one published with ``seq`` ``n``, which is
how a follower joins the backlog and the live stream without gaps or repeats.
Not fsynced: a log is for reading along, the record is what must survive.

Blocking I/O: reads of a whole log run in a thread.

Must not import the registry, the scheduler or the server.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
MAX_READ_BYTES = 1 << 20


def open_log(path: Path) -> int:
    """An fd appending to ``path`` (created 0600 if new)."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # os.open's mode is filtered by the umask
    except OSError:
        os.close(fd)
        raise
    return fd


def append_line(fd: int, line: str) -> None:
    """One line (which must not contain a newline), written with one write()."""
    data = (line + "\n").encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_lines(fd: int, lines: list[str]) -> None:
    """Lines (none containing a newline), written with one write() for them all."""
    data = "".join(line + "\n" for line in lines).encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def count_lines(path: Path) -> int:
    """Complete lines in ``path`` (0 if it does not exist)."""
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def read_lines(path: Path) -> list[str]:
    """Every complete line (a torn last one, still being written, is left for the live stream)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return data.decode("utf-8", "replace").split("\n")[:-1]


def read_chunk(path: Path, offset: int, limit: int = MAX_READ_BYTES) -> tuple[str, int, int]:
    """Up to ``limit`` bytes from ``offset``, cut after the last newline when possible:
    (text, next offset, file size)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(min(offset, size))
            data = f.read(limit)
    except FileNotFoundError:
        return "", 0, 0
    if len(data) == limit and b"\n" in data:
        data = data[: data.rindex(b"\n") + 1]  # do not split a line (or a UTF-8 sequence) between reads
    return data.decode("utf-8", "replace"), min(offset, size) + len(data), size
