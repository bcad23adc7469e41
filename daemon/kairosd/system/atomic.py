"""Crash-safe whole-file writes: write a temp file, fsync, rename over, fsync the folder.

A reader (or the next start after a crash) sees either the old file or the new
one, never a mix. A crash can leave a ``<name>.tmp-<pid>-<random>`` file next
to the target; :func:`remove_stale_temp_files` removes those at recovery.
Generic on purpose: the store, ledgers and inboxes all write this way.

Must not import anything from kairos or kairosd: it knows bytes and paths only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
from pathlib import Path

log = logging.getLogger(__name__)

_TEMP_MARK = ".tmp-"


def temp_path_for(path: Path) -> Path:
    """A fresh temp name in the target's folder (same file system, so the rename is atomic)."""
    return path.with_name(f"{path.name}{_TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new bytes.

    The file gets exactly ``mode`` (the umask does not narrow or widen it).
    The folder must exist.
    """
    tmp = temp_path_for(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode)
    try:
        try:
            os.fchmod(fd, mode)  # os.open's mode is filtered by the umask; state files must be exact
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)  # the data must be on disk before the rename makes it the file of record
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)  # makes the rename itself durable


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (a rename or a new file) to disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stale_temp_files(path: Path) -> list[Path]:
    """Temp files that :func:`write_atomic` left next to ``path`` (a crash between open and rename).

    Only safe to delete while the caller is the file's single writer (for the
    store, while holding the store lock): a live writer's temp file looks the same.
    """
    pattern = re.compile(re.escape(path.name + _TEMP_MARK) + r"\d+-\w+")
    try:
        entries = list(path.parent.iterdir())
    except FileNotFoundError:
        return []
    return sorted(p for p in entries if pattern.fullmatch(p.name))


def remove_stale_temp_files(path: Path) -> None:
    """Remove what :func:`stale_temp_files` finds, with a warning each. Only for the file's single writer.

    The rename is the commit point, so a temp file is an unfinished write and ``path`` itself is intact.
    """
    for tmp in stale_temp_files(path):
        log.warning("removing %s, left by an interrupted write; %s is intact", tmp, path.name)
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove %s: %s", tmp, exc)
