"""The kairos CLI as a separate process, for the end-to-end suites (each with a KAIROS_HOME of its own),
and :func:`kairosd_answers` and :func:`kairosd_get`, what they poll while they wait for a kairosd."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from cli_inprocess_support import kairos_here

from kairos.app import run
from kairos.client import ApiError, Client, DaemonNotRunning
from kairosd.core.protocol import route_path
from kairosd.system.paths import socket_path


def kairosd_answers(environ: Mapping[str, str]) -> bool:
    """Whether the kairosd of ``environ`` (its KAIROS_HOME) answers ``GET /status``, as ``kairos status``
    asks, but from this process: a test polls this while kairosd starts, and a ``kairos status``
    process per poll (~0.2 s of CPU each, back to back) took the CPU from the start it waited for."""
    socket = socket_path(environ)
    if not os.path.exists(socket):  # not bound yet
        return False
    try:
        Client(socket, timeout=5.0).call("GET", route_path("status"))
    except (DaemonNotRunning, ApiError):
        return False
    return True


def kairosd_get(environ: Mapping[str, str], route: str, query: Mapping[str, str] | None = None, **params: str) -> Any:
    """GET route ``route`` (kairosd.core.protocol.ROUTES) from the kairosd of ``environ``, in this process:
    what a test polls while it waits for kairosd to do something. A ``kairos`` process per poll costs
    ~0.2 s of CPU each, back to back for as long as the wait lasts; the test then reads the CLI once."""
    return Client(socket_path(environ), timeout=10.0).call("GET", route_path(route, **params), query=query)


class KairosCli:
    """``kairos`` and ``kairos ... --json`` run as a process with ``self.env``."""

    env: dict[str, str]
    cli_timeout_s = 60.0

    def kairos(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``kairos ARGS``; with ``check``, a non-zero exit fails the test with kairos' stderr."""
        proc = subprocess.run(
            [sys.executable, "-m", "kairos", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=self.cli_timeout_s,
            input=stdin,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kairos {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.kairos(*args, "--json").stdout)

    def here(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kairos ARGS`` as :meth:`kairos` runs it, but in this process (:func:`cli_inprocess_support.kairos_here`;
        a process costs ~0.15 s of CPU, an interpreter and kairos' imports): for what a verb prints, writes
        and asks of kairosd, not for the process."""
        done = kairos_here(*args, env=self.env)
        if check and done.returncode != 0:
            raise AssertionError(f"kairos {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def json_here(self, *args: str) -> Any:
        return json.loads(self.here(*args, "--json").stdout)


async def kairos_in_thread(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``kairos ARGV`` in this process, on a worker thread so that the event loop (the server under
    test) keeps serving: its exit code, stdout and stderr."""
    code = await asyncio.to_thread(run, list(argv))
    out, err = capsys.readouterr()
    return code, out, err
