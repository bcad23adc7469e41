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
from collections.abc import Mapping
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
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [MAIN, *argv]  # as `python -m kairos` has it (installed_script looks at argv[0])
        sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(stdin.encode())), out, err
        code = _dispatch(list(argv))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_stdio
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["kairos", *argv], code, _text(out), _text(err))


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


OFFLINE_MODULE = "kairosd.app.offline"


def offline_here(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Make the CLI's read-only views while kairosd is down (:func:`kairos.commands.common.offline_call`)
    run ``python -m kairosd.app.offline`` in this process: the same ``main`` on the same arguments, its
    stdout, stderr and exit code handed back as :func:`subprocess.run` would. A child costs ~0.5 s of
    CPU (it imports and builds the whole app); keep a real one where the child itself is the test.
    Every other ``subprocess.run`` is left alone. Returns the list of argv run here (to check it was)."""
    real_run = subprocess.run
    ran: list[list[str]] = []

    def run(argv: Any, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(argv, list) and argv[1:3] == ["-m", OFFLINE_MODULE]):
            return real_run(argv, *args, **kwargs)
        from kairosd.app.offline import main

        ran.append(argv)
        saved = sys.stdin, sys.stdout, sys.stderr
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
        try:
            sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO()), out, err
            try:
                code = main(argv[3:])
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
