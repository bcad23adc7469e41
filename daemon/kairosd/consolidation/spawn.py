"""Start the consolidation worker detached, and notice when it ends.

Detached means: a new session (``start_new_session``: no controlling terminal, so no signal
meant for the agent, the hook or kairosd reaches it), stdin from /dev/null, stdout and stderr
appended to the task's log, and ``KAIROS_SPAWNED=1`` in its environment. The worker is started
with ``--detach``: it forks, its parent writes the worker's pid to a file and exits at once (kairosd
reaps that parent right away), and the worker leads a session and process group of its own. So
the worker is nobody's child: no zombie for kairosd to reap, no subprocess object to keep, and
nothing that kills it when kairosd exits (an asyncio subprocess would die with the event loop).

Under systemd (``INVOCATION_ID`` set and ``systemd-run`` found) the worker is put in a transient
scope of its own (``systemd-run --user --scope``, which execs it), so stopping or restarting
kairosd.service (``KillMode=mixed`` kills what is left in its cgroup) does not end it either.

The end is noticed without polling where the kernel allows (a pidfd becomes readable when the
process exits, child or not); otherwise by polling. A pid is only trusted together with its
start time (psutil), so a reused pid is never taken for the worker.

Must not import the registry, the daemon or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

POLL_S = 0.2  # only where pidfd_open is unavailable
DETACH_TIMEOUT_S = 30.0  # the worker's parent only imports, forks and writes one file
WORKER_MODULE = "kairosd.consolidation.worker"


def worker_argv(request_path: Path, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", WORKER_MODULE, "--detach", str(request_path)]


def scoped(argv: Sequence[str], unit: str, environ: Mapping[str, str]) -> list[str]:
    """``argv`` wrapped in ``systemd-run --user --scope`` when kairosd runs under systemd."""
    if not environ.get("INVOCATION_ID"):
        return list(argv)
    runner = shutil.which("systemd-run", path=environ.get("PATH"))
    if runner is None:
        return list(argv)
    return [runner, "--user", "--scope", "--quiet", "--collect", f"--unit={unit}", "--", *argv]


def spawn_detached(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, log_path: Path, pid_path: Path
) -> int:
    """Start ``argv`` (a ``--detach`` worker) with its output appended to ``log_path``; the worker's pid.

    Blocking (it waits for the short-lived parent). OSError if the worker cannot be started.
    """
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        pid_path.unlink()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        parent = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(fd)  # the child has its own copy
    try:
        code = parent.wait(DETACH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # The whole group: whatever the stuck parent started must not be left running unaccounted for.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()
        raise OSError(f"the consolidation worker did not detach within {DETACH_TIMEOUT_S:g}s") from None
    try:
        pid = int(pid_path.read_text().strip())
    except (OSError, ValueError):
        raise OSError(f"the consolidation worker did not start (exit code {code}; see {log_path})") from None
    return pid


def started_at(pid: int) -> float | None:
    import psutil  # on use: not needed to start (docs/performance.md)

    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).create_time()
    return None


def same_process(pid: int | None, started: float | None) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (and has not exited)."""
    if pid is None or started is None:
        return False
    import psutil

    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def wait_exit(
    pid: int,
    *,
    started: float | None,
    timeout: float | None = None,  # noqa: ASYNC109 - a bound on the wait, reported as False
) -> bool:
    """Wait until the process ``pid`` that started at ``started`` ends (True) or ``timeout`` passes (False)."""
    if not same_process(pid, started):
        return True
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (OSError, AttributeError):  # an old kernel, or a seccomp policy that refuses it
        return await _poll(pid, started, timeout)
    try:
        if not same_process(pid, started):
            return True  # it ended (and the pid was reused) between the check and the open
        return await _readable(fd, timeout)
    finally:
        os.close(fd)


async def _readable(fd: int, timeout: float | None) -> bool:  # noqa: ASYNC109 - see wait_exit
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def on_ready() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, on_ready)
    try:
        await asyncio.wait_for(exited, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


async def _poll(pid: int, started: float | None, timeout: float | None) -> bool:  # noqa: ASYNC109 - see wait_exit
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    # No event exists for "that process ended" without a pidfd; polling is the fallback.
    while same_process(pid, started):
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True
