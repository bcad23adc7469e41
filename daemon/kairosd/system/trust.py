"""Which of its own folders and files kairosd may trust, checked before it reads or creates anything.

The store holds shell commands that kairosd runs as this user, and the socket
receives prompts, so anyone who could change these files or folders could run
code as this user or read what the user schedules. The rule, the same as for
``config.toml`` (see :mod:`kairosd.system.filesafety`):

* kairos' own folders (state, data, runtime, and config if it exists) must
  belong to this user and must not be writable by their group or by others;
* every folder above them, up to ``/`` (``$XDG_STATE_HOME``, ``$HOME``,
  ``$KAIROS_HOME``, ``$XDG_RUNTIME_DIR``, ...), must belong to this user or root
  and must not be writable by group or others, unless it has the sticky bit
  (``/tmp``): there nobody can rename or replace a folder they do not own.
  Whoever can write any of them could move kairos' folders aside and put their
  own in place;
* the store, its lock, the run and missed ledgers and ``sessions.json``, where
  they exist, must belong to this user and not be writable by group or others.

Symlinks are followed: both the folder a path names and the one it really
sits in are checked. A violation is an :class:`UnsafePathError` that names the
path and the ``chmod``/``chown`` that fixes it; kairosd then refuses to start.

:func:`make_private_dir` creates a folder and every missing parent with mode
0700 (``mkdir -p`` would give the parents the umask's mode).

Must not import anything but :mod:`kairosd.core.errors` and :mod:`.paths`: ``kairos daemon start`` runs it too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kairosd.core.errors import KairosError
from kairosd.system.paths import Paths

PRIVATE_DIR_MODE = 0o700
# Files in the state folder that kairosd reads at start-up and acts on.
STATE_FILES = ("runs.jsonl", "missed.jsonl", "sessions.json", "scheduled_tasks.journal")


class UnsafePathError(KairosError):
    """A folder or file of kairos that another user could change; the message says how to fix it."""

    code = "unsafe_path"
    http_status = 403  # kairos will not use a path another user could change: refused, not a fault


def make_private_dir(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each new one with mode 0700 (exactly, whatever the umask)."""
    missing: list[Path] = []
    current = Path(os.path.abspath(folder))
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for level in reversed(missing):
        try:
            level.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: the check decides whether it can be trusted
        os.chmod(level, PRIVATE_DIR_MODE)


def prepare(paths: Paths, uid: int | None = None) -> None:
    """Create kairos' folders privately where missing, then :func:`check` them all (UnsafePathError)."""
    for folder in (paths.state_dir, paths.data_dir, paths.runtime_dir):
        parent_problem = _ancestors_problem(Path(folder).parent, uid)
        if parent_problem is not None:
            raise parent_problem  # do not create anything inside a folder others can change
        make_private_dir(folder)
    check(paths, uid)


def check(paths: Paths, uid: int | None = None) -> None:
    """Raise UnsafePathError for the first folder or file of ``paths`` that breaks the rule (module docstring)."""
    folders = [paths.state_dir, paths.data_dir, paths.runtime_dir]
    if os.path.exists(paths.config_dir):
        folders.append(paths.config_dir)
    for folder in folders:
        found = _ancestors_problem(Path(folder).parent, uid) or _folder_problem(folder, uid)
        if found is not None:
            raise found
    for file in (paths.store, paths.lock, *(paths.state_dir / name for name in STATE_FILES)):
        found = _file_problem(file, uid)
        if found is not None:
            raise found


def _first_problem(folder: Path, *, own: bool, uid: int | None) -> UnsafePathError | None:
    """The problem of ``folder`` as a parent (own=False: root may own it, sticky is fine), or None."""
    for candidate in sorted({Path(os.path.abspath(folder)), Path(os.path.realpath(folder))}):
        try:
            st = os.stat(candidate)
        except FileNotFoundError:
            continue  # created later by make_private_dir, then checked as kairos' own
        except OSError as exc:
            return UnsafePathError(f"cannot check {candidate}: {exc.strerror or exc}")
        found = _problem(candidate, st, own=own, uid=uid)
        if found is not None:
            return found
    return None


def _ancestors_problem(folder: Path, uid: int | None) -> UnsafePathError | None:
    """The first problem of ``folder`` or any folder above it (by its name and where it really is)."""
    chains = {Path(os.path.abspath(folder)), Path(os.path.realpath(folder))}
    for start in sorted(chains):
        for ancestor in (start, *start.parents):
            found = _first_problem(ancestor, own=False, uid=uid)
            if found is not None:
                return found
    return None


def _folder_problem(folder: Path, uid: int | None) -> UnsafePathError | None:
    real = Path(os.path.realpath(folder))
    found = _first_problem(folder, own=True, uid=uid)
    if found is None and real != Path(os.path.abspath(folder)):
        found = _ancestors_problem(real.parent, uid)  # a symlinked folder: where it really sits
    return found


def _file_problem(file: Path, uid: int | None) -> UnsafePathError | None:
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return UnsafePathError(f"cannot check {file}: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return None  # a folder where the store should be: whoever reads it says so, and keeps it
    return _problem(file, st, own=True, uid=uid)


def _problem(path: Path, st: os.stat_result, *, own: bool, uid: int | None) -> UnsafePathError | None:
    """The rule on one stat result: ``own`` for kairos' own folders and files (this user only, no sticky excuse)."""
    me = os.getuid() if uid is None else uid
    folder = stat.S_ISDIR(st.st_mode)
    what = "folder" if folder else "file"
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != me and (own or st.st_uid != 0):
        return UnsafePathError(
            f"{path}: this {what} belongs to another user (uid {st.st_uid}), so kairos refuses to trust it. "
            f"Fix it with: chown {_user_name(me)} {path}"
        )
    sticky_parent = not own and folder and mode & stat.S_ISVTX  # like /tmp: nobody replaces what is not theirs
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_parent:
        who = "others" if mode & stat.S_IWOTH else "its group"
        return UnsafePathError(
            f"{path}: this {what} is writable by {who} (mode {mode:o}), so kairos refuses to trust it. "
            f"Fix it with: chmod go-w {path}"
        )
    return None


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)
