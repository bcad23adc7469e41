"""``kairos ARGV`` run in this process, answered as :func:`subprocess.run` answers: :func:`kairos_here`.

For the tests about what the CLI prints, parses and refuses (output format, escaping, errors, exit
codes), not about the process: a ``kairos`` process costs ~0.15-0.25 s of CPU (the interpreter and
its imports), the same call here a few milliseconds. It takes the environment, working directory and argv
a process would get, and stdin, stdout and stderr as pipes would be (not a terminal, each with a
byte ``buffer`` under the text stream: ``kairos hook`` reads ``sys.stdin.buffer``), and dispatches
as ``kairos/__main__.py`` does (``hook`` and ``__complete`` before the parser). What a process adds
(the interpreter's start, its imports, stdio encoding, signals, exit at teardown) stays checked by
each suite's real-process tests.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import kairos.__main__

MAIN = kairos.__main__.__file__


def kairos_here(
    *argv: str, env: Mapping[str, str], cwd: str | os.PathLike[str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``kairos ARGV`` with ``env`` as the whole environment, in ``cwd``, ``stdin`` on its stdin: its exit
    code, stdout and stderr. Not thread-safe (it swaps ``os.environ``, the working directory and stdio)."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_stdio = sys.stdin, sys.stdout, sys.stderr
    saved_argv = sys.argv
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="")
    try:
        _set_environ(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [MAIN, *argv]  # as `python -m kairos` has it (installed_script looks at argv[0])
        sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(stdin.encode())), out, err
        code = _dispatch(list(argv))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_stdio
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        _set_environ(saved_env)
    return subprocess.CompletedProcess(["kairos", *argv], code, _text(out), _text(err))


def _set_environ(env: Mapping[str, str]) -> None:
    """Make ``os.environ`` exactly ``env``, changing only what differs: a variable both have is never
    missing meanwhile (a harness kairosd's thread may start a process while a call runs)."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _dispatch(argv: list[str]) -> int:
    """What ``kairos/__main__.py`` runs for ``argv``, as an exit code."""
    try:
        if argv[:1] == ["hook"]:
            from kairos.integrations.hook import main as hook_main

            return hook_main(argv[1:])
        if argv[:1] == ["__complete"]:
            from kairos.dynamic import main as complete_main

            return complete_main(argv[1:])
        from kairos.app import run

        return run(argv)
    except SystemExit as exc:  # argparse's usage errors and --help
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8", errors="backslashreplace")


def _offline_main(argv: list[str]) -> int:
    from kairosd.app.offline import main

    return main(argv)


def _doctor_main(argv: list[str]) -> int:
    from kairosd.app.doctor import main

    return main()


# The children the CLI runs as ``python -m MODULE ARGS``, and what their ``if __name__ == "__main__"`` runs.
CHILD_MAINS: dict[str, Callable[[list[str]], int]] = {
    "kairosd.app.offline": _offline_main,  # kairos.commands.common.offline_call: the views while kairosd is down
    "kairosd.app.doctor": _doctor_main,  # kairos.commands.doctor.local_report: doctor from this shell
}


def children_here(monkeypatch: pytest.MonkeyPatch, *modules: str) -> list[list[str]]:
    """Make the CLI's ``python -m MODULE`` children (``modules``, from :data:`CHILD_MAINS`) run in this
    process: the same ``main`` on the same arguments and environment, its stdout, stderr and exit code
    handed back as :func:`subprocess.run` would. Such a child costs ~0.3-0.5 s of CPU (it imports most
    of kairosd); keep a real one where the child itself is the test. Every other ``subprocess.run``
    (and one given its own ``env`` or ``cwd``, or reading bytes) is left alone. Returns the argv run
    here, to check it was. (What a child learns of its parent differs: doctor's ``pid`` is then this
    process's parent's, not the CLI's.)"""
    real_run = subprocess.run
    ran: list[list[str]] = []

    def run(argv: Any, *args: Any, **kwargs: Any) -> Any:
        here = isinstance(argv, list) and argv[1:2] == ["-m"] and argv[2:3] and argv[2] in modules
        own = kwargs.get("env") is not None or kwargs.get("cwd") is not None or not kwargs.get("text")
        if not here or own:
            return real_run(argv, *args, **kwargs)
        ran.append(argv)
        saved = sys.stdin, sys.stdout, sys.stderr
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
        try:
            sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO()), out, err
            try:
                code = CHILD_MAINS[argv[2]](argv[3:])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # as the child would end: a traceback on stderr, exit 1
                import traceback

                traceback.print_exc()
                code = 1
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
        return subprocess.CompletedProcess(argv, code, _text(out), _text(err))

    monkeypatch.setattr(subprocess, "run", run)
    return ran
