"""The systemd tests' sandbox: a short KAIROS_HOME with its own XDG folders and fake ``systemctl`` and
``journalctl`` first on PATH (:class:`Sandbox`, the ``box`` fixture), and ``systemd-analyze verify``.

There is no running systemd here: the fakes record their argv, and ``systemd-analyze`` comes from
Debian's ``systemd`` package (:func:`need` skips without it, and fails in CI, whose .ci/run installs
it). Used by tests/integration/kairos/commands/test_systemd.py, test_export_systemd.py and
test_json_documents_systemd.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import KairosCli


def need(tool: str) -> str:
    """The tool's path; skip without it (fail in CI, whose .ci/run installs it)."""
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing; .ci/run should have installed Debian's systemd package")
        pytest.skip(f"{tool} is not installed (apt-get install systemd)")
    return path


FAKE_SYSTEMCTL = """#!{python}
# A stand-in for systemctl: records its argv; FAKE_SYSTEMCTL_FAIL=VERB makes that verb fail,
# FAKE_SYSTEMCTL_SHOW is what `show` prints, FAKE_SYSTEMCTL_SPAWN=LOG makes `start kairosd.service`
# spawn a detached kairosd the way systemd would.
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_SYSTEMCTL_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[1:2] == [os.environ.get("FAKE_SYSTEMCTL_FAIL")]:
    sys.stderr.write("Failed to connect to bus: No medium found\\n")
    sys.exit(1)
if args[1:2] == ["show"]:
    sys.stdout.write(os.environ.get("FAKE_SYSTEMCTL_SHOW", ""))
if args[1:] == ["start", "kairosd.service"] and os.environ.get("FAKE_SYSTEMCTL_SPAWN"):
    with open(os.environ["FAKE_SYSTEMCTL_SPAWN"], "a") as out:
        subprocess.Popen([sys.executable, "-m", "kairosd"], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                         start_new_session=True, cwd="/")
"""

FAKE_JOURNALCTL = """#!/bin/sh
echo "2026-11-21T10:00:00+0000 host kairosd[42]: kairosd 0.1.0 serving on /run/user/0/kairos/kairosd.sock"
echo "2026-11-21T10:00:01+0000 host kairosd[42]: args: $*"
"""


class Sandbox(KairosCli):
    """A short KAIROS_HOME with its own XDG folders and fake systemctl/journalctl first on PATH."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "systemctl.log"
        self.log.touch()
        self._script("systemctl", FAKE_SYSTEMCTL.format(python=sys.executable))
        self._script("journalctl", FAKE_JOURNALCTL)
        self.runtime = root / "rt"
        self.runtime.mkdir(mode=0o700)
        self.env = {k: v for k, v in os.environ.items() if k not in sd_env_vars()}
        self.env.update(
            {
                "KAIROS_HOME": str(root / "home"),
                "XDG_CONFIG_HOME": str(root / "config"),
                "XDG_DATA_HOME": str(root / "data"),
                "XDG_RUNTIME_DIR": str(self.runtime),
                "HOME": str(root),
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "FAKE_SYSTEMCTL_LOG": str(self.log),
                "TZ": "UTC",
            }
        )
        self.pids: list[int] = []

    def _script(self, name: str, text: str) -> None:
        path = self.bin / name
        path.write_text(text)
        path.chmod(0o755)

    @property
    def unit_dir(self) -> Path:
        return self.root / "config" / "systemd" / "user"

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def user_manager(self) -> None:
        """Pretend a user manager runs: it listens on $XDG_RUNTIME_DIR/systemd/private."""
        (self.runtime / "systemd").mkdir(exist_ok=True)
        (self.runtime / "systemd" / "private").touch()

    def installed_and_started(self, **env: str) -> dict[str, Any]:
        """``kairos systemd install`` under a user manager, then ``kairos daemon start --json`` with ``env``
        added (its kairosd is stopped at the end of the test): what daemon start answered."""
        self.kairos("systemd", "install")
        self.user_manager()
        self.env.update(env)
        doc: dict[str, Any] = self.json("daemon", "start")
        self.pids.append(doc["pid"])
        return doc


def sd_env_vars() -> set[str]:
    from kairosd.system.sdnotify import SYSTEMD_VARS

    return {*SYSTEMD_VARS, "JOURNAL_STREAM", "INVOCATION_ID", "KAIROS_DISABLE_CRON", "XDG_STATE_HOME"}


@pytest.fixture
def box() -> Iterator[Sandbox]:
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))  # AF_UNIX paths must stay under 108 bytes
    sandbox = Sandbox(root)
    try:
        yield sandbox
    finally:
        for pid in sandbox.pids:
            _kill_if_kairosd(pid)
        shutil.rmtree(root, ignore_errors=True)


def _kill_if_kairosd(pid: int) -> None:
    """Kill a daemon a test left running, but only if the pid still is a kairosd (pids get reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"kairosd" in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def verify(units: Path, home: Path, name: str = "kairosd") -> None:
    """``systemd-analyze verify --user`` accepts every unit in ``units`` without a word about the units
    (any line naming ``name``)."""
    analyze = need("systemd-analyze")
    runtime = Path(tempfile.mkdtemp(dir="/tmp", prefix="kr"))
    try:
        proc = subprocess.run(
            [analyze, "verify", "--user", *sorted(str(p) for p in units.iterdir())],
            env={**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert [line for line in output.splitlines() if name in line] == [], output


SHOW_RUNNING = """LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
MainPID=4242
NRestarts=1
Result=success
ActiveEnterTimestamp=Sat 2026-11-21 10:00:00 UTC
FragmentPath=/root/.config/systemd/user/kairosd.service

LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
MainPID=0
NRestarts=0
Result=success
ActiveEnterTimestamp=
FragmentPath=
"""
