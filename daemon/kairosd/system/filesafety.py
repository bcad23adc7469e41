"""Whether kairos may trust a file: read commands from it, or run it as this user.

One rule, used for the config file (:mod:`kairosd.config`), agent definitions
(:mod:`kairosd.agents.catalog`) and hook commands (:mod:`kairosd.system.lifecycle`,
reported by :mod:`kairosd.app.doctor`). Anyone who can change such a file can make
kairos run their code as this user, so:

* the file must belong to this user or root, must not be writable by its group
  or by others, and must be a regular file;
* its folder must belong to this user or root and must not be writable by its
  group or others, unless it has the sticky bit (like ``/tmp``): there others
  cannot rename or replace a file they do not own.

For a path on disk (:func:`check_file`) the file is the one the path finally
points to (symlinks followed), and both the folder the path names and the
folder the file really sits in are checked. Only those folders are checked,
not every ancestor.

Which files a command line runs (:func:`command_files`):

* ``argv[0]``: a path (``~`` expanded, a relative one taken from the current
  folder) or a name looked up on the PATH the command will run with, as exec
  does; a command that is not found is not checked here (it cannot start);
* when ``argv[0]`` is a known interpreter (``sh``, ``bash``, ``python3``,
  ``perl``, ``node``, ...), its script: the first argument that is not an
  option and names an existing file. Nothing more when an option gives the code
  inline (``sh -c``, ``python3 -c``/``-m``, ``perl -e``, ``node -e``, ...);
* when ``argv[0]`` is ``env``, the command it runs (after its options and
  ``NAME=value`` words), by the same rules (``env -S`` is not followed).

Other arguments (data files, a program a script starts) are not checked.
Checking and then running leaves a gap, which is harmless for the files
checked: one that passes can only be changed by this user or root.

:func:`problem` is the pure rule on a stat result; the rest only stats files.
Must not import anything else from kairosd: the config loader depends on it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# Interpreter names (any version suffix) -> short option letters and long options that give code inline.
_INTERPRETERS: tuple[tuple[re.Pattern[str], str, frozenset[str]], ...] = (
    (re.compile(r"(ba|da|z|k|mk|a|c|tc|fi)?sh"), "c", frozenset({"--command"})),
    (re.compile(r"(python|pypy)[0-9.]*"), "cm", frozenset()),
    (re.compile(r"perl[0-9.]*"), "eE", frozenset()),
    (re.compile(r"ruby[0-9.]*"), "e", frozenset()),
    (re.compile(r"node(js)?|deno|bun"), "ep", frozenset({"--eval", "--print"})),
    (re.compile(r"php[0-9.]*"), "r", frozenset()),
    (re.compile(r"lua(jit)?[0-9.]*"), "e", frozenset()),
    (re.compile(r"tclsh[0-9.]*|Rscript"), "e", frozenset()),
)
_MAX_ENV_HOPS = 4  # `env env env ...` is not worth following further
_ENV_VALUE_OPTIONS = frozenset({"-u", "--unset", "-C", "--chdir"})  # env options whose value is the next word


@dataclass(frozen=True)
class Problem:
    """Why one stat result cannot be trusted: another owner, group/world-writable, or not a regular file."""

    kind: Literal["owner", "writable", "type"]
    uid: int
    mode: int  # permission bits only
    folder: bool

    @property
    def who(self) -> str:
        """Who else can write it: ``others`` or ``its group``."""
        return "others" if self.mode & stat.S_IWOTH else "its group"

    def __str__(self) -> str:
        if self.kind == "owner":
            return f"owned by another user (uid {self.uid})"
        if self.kind == "writable":
            return f"writable by {self.who} (mode {self.mode:o})"
        return "not a regular file"


def problem(st: os.stat_result, *, folder: bool = False, uid: int | None = None) -> Problem | None:
    """The rule (see the module docstring) on ``st``; ``uid`` is the trusting user (default: this process's)."""
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (os.getuid() if uid is None else uid, 0):
        return Problem("owner", st.st_uid, mode, folder)
    if folder and mode & stat.S_ISVTX:
        return None  # others cannot rename or replace a file they do not own in a sticky folder
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return Problem("writable", st.st_uid, mode, folder)
    if not folder and not stat.S_ISREG(st.st_mode):
        return Problem("type", st.st_uid, mode, folder)
    return None


@dataclass(frozen=True)
class Unsafe:
    """A file on disk that must not be trusted: which path (the file or its folder) and why."""

    path: Path
    problem: Problem

    @property
    def fix(self) -> str:
        """What the user can do about it, as a command where there is one."""
        if self.problem.kind == "writable":
            return f"chmod go-w {self.path}"
        if self.problem.kind == "owner" and self.problem.folder:
            return "move it to a folder you own"
        if self.problem.kind == "owner":
            return f"use a copy you own instead of {self.path}"
        return f"name a regular file instead of {self.path}"

    def __str__(self) -> str:
        what = "folder" if self.problem.folder else "file"
        return f"{self.path}: this {what} is {self.problem}"


def check_file(path: Path) -> Unsafe | None:
    """The first reason ``path`` (followed through symlinks) or its folders cannot be trusted, if any.

    The file's own check comes first; a file that is missing or cannot be
    stat'ed is not a trust problem (whoever opens or runs it reports that).
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    found = problem(st)
    if found is not None:
        return Unsafe(path, found)
    folders = {path.absolute().parent, Path(os.path.realpath(path)).parent}
    for folder in sorted(folders):
        try:
            folder_st = os.stat(folder)
        except OSError:
            continue
        found = problem(folder_st, folder=True)
        if found is not None:
            return Unsafe(folder, found)
    return None


def command_files(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files running ``argv`` would execute or interpret (see the module docstring), first ``argv[0]``'s.

    ``environ`` is the environment the command runs with (its PATH is searched).
    """
    env = os.environ if environ is None else environ
    files: list[Path] = []
    words = list(argv)
    for _ in range(_MAX_ENV_HOPS):
        if not words:
            break
        program = _resolve(words[0], env)
        if program is None:
            break
        files.append(program)
        name = os.path.basename(words[0])
        if name == "env":
            words = _after_env(words[1:])
            continue
        script = _script(name, words[1:])
        if script is not None:
            files.append(script)
        break
    return files


def check_command(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> list[Unsafe]:
    """Every file of :func:`command_files` that cannot be trusted, each with its reason."""
    found = (check_file(path) for path in command_files(argv, environ))
    return [unsafe for unsafe in found if unsafe is not None]


def _resolve(word: str, env: Mapping[str, str]) -> Path | None:
    """Where exec finds ``word``: a path as given (``~`` expanded), else the first hit on the PATH."""
    word = os.path.expanduser(word)
    if os.sep in word:
        return Path(os.path.abspath(word)) if os.path.exists(word) else None
    found = shutil.which(word, path=os.pathsep.join(os.get_exec_path(dict(env))))
    return None if found is None else Path(os.path.abspath(found))


def _script(name: str, args: Sequence[str]) -> Path | None:
    """The script file a known interpreter called ``name`` would read from ``args``, if there is one."""
    inline = _inline_options(name)
    if inline is None:
        return None
    letters, long_options = inline
    for arg in args:
        if arg == "--":
            continue
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in long_options:
                return None
            continue
        if arg.startswith("-") and len(arg) > 1:
            if set(arg[1:]) & set(letters):
                return None  # the code is on the command line (sh -c, python3 -c/-m, perl -e, ...)
            continue
        candidate = Path(os.path.abspath(os.path.expanduser(arg)))
        if candidate.is_file():
            return candidate
    return None


def _inline_options(name: str) -> tuple[str, frozenset[str]] | None:
    """For a known interpreter: its option letters and long options that give code inline; else None."""
    for pattern, letters, long_options in _INTERPRETERS:
        if pattern.fullmatch(name):
            return letters, long_options
    return None


def _after_env(args: Sequence[str]) -> list[str]:
    """The command ``env ARGS`` runs: what follows its options and ``NAME=value`` words."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-S", "--split-string") or arg.startswith(("-S", "--split-string=")):
            return []  # the command is inside one string: not followed
        if arg in _ENV_VALUE_OPTIONS:
            index += 2
        elif arg.startswith("-") or ("=" in arg and not arg.startswith("=")):
            index += 1
        else:
            return list(args[index:])
    return []
