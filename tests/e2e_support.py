"""A real kairosd and the kairos CLI as processes, each test in a short KAIROS_HOME of its own (AF_UNIX
paths are limited to ~107 bytes): :class:`Env` and its fixture ``env``.

Used by tests/integration/kairosd/test_e2e.py and test_quarantine_e2e.py.

:meth:`Env.here` runs a ``kairos`` verb in this process instead (``kairos.app.run``, what the
process runs after its interpreter starts), for a test about the daemon rather than the CLI's process.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import KairosCli, kairosd_answers, kairosd_get

from kairosd import testing


def wait_for(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    return testing.wait_for(condition, what, timeout, poll=0.05)


class Env(KairosCli):
    cli_timeout_s = 30.0

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
        self.env.pop("KAIROS_DISABLE_CRON", None)
        self.env.pop("CLAUDE_CODE_DISABLE_CRON", None)
        self.daemons: list[subprocess.Popen[str]] = []

    @property
    def socket(self) -> Path:
        return self.home / "run" / "kairosd.sock"

    def log(self, proc: subprocess.Popen[str]) -> str:
        return (self.home / f"kairosd-{proc.pid}.log").read_text()

    def api(self, route: str, **params: str) -> Any:
        """GET ``route`` in this process: what a poll reads (see :func:`cli_support.kairosd_get`)."""
        return kairosd_get(self.env, route, **params)

    def start_daemon(self, wait: bool = True) -> subprocess.Popen[str]:
        # A file, not a pipe: a chatty daemon must never block on a full pipe.
        log_path = self.home / f"kairosd-{len(self.daemons)}.tmp"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kairosd"], env=self.env, stdout=subprocess.DEVNULL, stderr=log, text=True
            )
        log_path.rename(self.home / f"kairosd-{proc.pid}.log")
        self.daemons.append(proc)
        if wait:
            wait_for(lambda: kairosd_answers(self.env) or proc.poll() is not None, what="kairosd to answer")
            assert proc.poll() is None, self.log(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.daemons:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


@pytest.fixture
def env() -> Iterator[Env]:
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="ke"))
    e = Env(home)
    try:
        yield e
    finally:
        e.stop_all()
        shutil.rmtree(home, ignore_errors=True)
