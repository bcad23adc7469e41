"""Read-only views while kairosd is down (issue 24, item 9): ``list``, ``show``, ``history``,
``missed`` and ``board show`` read the files a real kairosd wrote and print what it printed, with
one note on stderr, exit 0, and change nothing on disk.

The first view while kairosd is down runs the CLI's ``python -m kairosd.app.offline`` child for
real; the others run its ``main`` in this process (tests/cli_inprocess_support.py, children_here):
what it answers is the test, and each child costs ~0.5 s of CPU. An unknown task runs a real child
that answers an error; a corrupt store, one in this process."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inprocess_support import children_here

from kairos.app import run
from kairos.client import Client
from kairos.commands.common import OFFLINE_NOTE
from kairosd.core.protocol import exit_code_for
from kairosd.system.paths import Paths

VIEWS = [
    ["list"],
    ["list", "--json"],
    ["history"],
    ["history", "--json"],
    ["missed"],
    ["missed", "--json"],
]


@pytest.fixture
def kairosd(kairos_home: Path) -> Iterator[subprocess.Popen[bytes]]:
    log = open(kairos_home / "kairosd.log", "ab")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen([sys.executable, "-m", "kairosd"], stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 60
    while not Client(timeout=5.0).ping():
        assert proc.poll() is None, (kairos_home / "kairosd.log").read_text()
        assert time.monotonic() < deadline, "kairosd did not answer within 60 s"
        time.sleep(0.02)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert not Client(timeout=1.0).ping()


def _files(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != "kairosd.log"
    }


def _populate(capsys: pytest.CaptureFixture[str], home: Path) -> tuple[str, str]:
    """Two tasks (one paused), a run of one, a board entry; returns the two ids."""
    code, out, err = _run(capsys, "add", "0 9 * * 1-5", "stand-up notes", "--json")
    assert code == 0, err
    first = json.loads(out)["task"]["id"]
    code, out, err = _run(capsys, "add", "30 17 * * *", "wrap up", "--json")
    assert code == 0, err
    second = json.loads(out)["task"]["id"]
    assert _run(capsys, "pause", second)[0] == 0
    assert _run(capsys, "run", first)[0] == 0
    deadline = time.monotonic() + 30
    while '"outcome":"delivered"' not in _run(capsys, "history", "--json")[1].replace(" ", ""):
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.05)
    code, _, err = _run(capsys, "board", "add", "--cwd", str(home), "the build needs python 3.11")
    assert code == 0, err
    return first, second


def test_views_print_what_kairosd_printed(kairosd, kairos_home, capsys, monkeypatch):
    first, second = _populate(capsys, kairos_home)
    views = [*VIEWS, ["show", first], ["show", second, "--json"], ["history", first]]
    views += [["board", "show", "--cwd", str(kairos_home)], ["board", "show", "--cwd", str(kairos_home), "--json"]]
    live = {}
    for argv in views:
        code, out, err = _run(capsys, *argv)
        assert code == 0, (argv, err)
        assert OFFLINE_NOTE not in err
        live[tuple(argv)] = out
    assert first in live[("list",)]
    assert "delivered" in live[("history",)]
    assert "python 3.11" in live[("board", "show", "--cwd", str(kairos_home))]
    _stop(kairosd)
    before = _files(kairos_home)
    ran_here: list[list[str]] = []
    for n, argv in enumerate(views):
        if n == 1:  # the first through a real child process, the rest in this one
            ran_here = children_here(monkeypatch, "kairosd.app.offline")
        code, out, err = _run(capsys, *argv)
        assert code == 0, (argv, err)
        assert out == live[tuple(argv)], argv
        assert err.strip().splitlines() == [f"kairos: {OFFLINE_NOTE}"], argv
    assert len(ran_here) >= len(views) - 1  # the offline answers were made
    assert _files(kairos_home) == before  # nothing read was changed, nothing was created


def test_unknown_task_while_down_is_not_found(kairos_home, capsys):
    code, out, err = _run(capsys, "show", "abcd1234")
    assert code == exit_code_for("not_found")
    assert out == ""
    assert OFFLINE_NOTE in err
    assert "no task starts with 'abcd1234'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("text", ['{"schema_version": 1, "tasks": [', '{"schema_version": 1, "tasks": [{"id": 5}]}'])
def test_corrupt_store_is_one_clear_line(kairos_home, capsys, monkeypatch, text):
    children_here(monkeypatch, "kairosd.app.offline")  # its error answer; the test above has a real child's
    store = Paths.from_env().store
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(text)
    code, out, err = _run(capsys, "list")
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert lines[0] == f"kairos: {OFFLINE_NOTE}"
    assert len(lines) == 2
    assert "cannot be read" in lines[1]
    assert str(store) in lines[1]
    assert "Traceback" not in err
