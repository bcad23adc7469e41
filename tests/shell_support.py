"""The shell target's test helpers: a handoff and a ShellDelivery on a fake clock, scripts, and bounded
waits on the processes a run starts (``gone``, ``wait_until``, ``pid_in``, ``kill_leftover``).

Used by tests/integration/kairosd/delivery/test_shell_delivery.py, test_shell_leaks.py and
test_shell_bounds.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psutil

from kairosd.core.models import ShellTarget
from kairosd.delivery.base import Handoff
from kairosd.delivery.shell import ShellDelivery
from kairosd.testing import FakeClock

T0 = datetime(2026, 11, 21, 23, 15, 2, tzinfo=UTC)
TASK_ID = "a1b2c3d4"
# kairosd stops what a run left behind outside its group by the run's id (KAIROS_RUN_ID, found in
# /proc by procgroup.find_strays), for every process of this user. A run id fixed for the whole suite
# let one xdist worker's run stop another worker's commands (and another checkout's, on a shared
# machine): each test process gets its own, as each kairosd run has its own.
RUN_ID = f"r{os.getpid():012x}"
WAIT_S = 20.0  # upper bound for anything the tests wait on; passing runs take far less
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(WAIT_S * 2):
            return await coro

    return asyncio.run(bounded())


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def handoff(argv: list[str], run_id: str = RUN_ID, prompt: str = "hello kairos", **target: Any) -> Handoff:
    return Handoff(
        run_id=run_id,
        task_id=TASK_ID,
        task_name="demo",
        prompt=prompt,
        target=ShellTarget(argv=argv, **target),
        scheduled_for=T0,
        planned_for=T0 + timedelta(seconds=3),
        late_by_s=4.25,
        catch_up=True,
    )


def delivery(tmp_path: Path, **kwargs: Any) -> ShellDelivery:
    return ShellDelivery(tmp_path / "runs", FakeClock(T0), **kwargs)


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for a reaper that is not us counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pid_in(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


async def await_pid(path: Path) -> int:
    """The pid a test script wrote to ``path``, once it is there (bounded wait)."""
    deadline = time.monotonic() + WAIT_S
    while (pid := pid_in(path)) is None:
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)
    return pid


def kill_leftover(pid_file: Path) -> None:
    # Only matters if a test failed half-way: do not leave a 60 s sleeper behind.
    pid = pid_in(pid_file)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
