"""A background task's turn ends with everything it started, however it ends (issue 27, finding 8).

The red-team cases: processes left in the group after the leader exited ran on,
and children made with ``setsid`` escaped timeouts and cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from registry_support import gone, make_registry, run, until, wait_file

from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import StartSpec

# Leaves one process in the group and one out of it (setsid), both ignoring SIGTERM, then exits 0.
LEAVER = (
    "sh -c 'trap \"\" TERM; echo $$ > in.pid; exec sleep 60' & "
    "setsid sh -c 'trap \"\" TERM; echo $$ > out.pid; exec sleep 60' & "
    "while [ ! -s in.pid ] || [ ! -s out.pid ]; do sleep 0.02; done; exit 0"
)


def kill_leftovers(tmp_path: Path) -> None:
    # Only matters if a test failed half-way: do not leave 60 s sleepers behind.
    for name in ("in.pid", "out.pid"):
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int((tmp_path / name).read_text()), signal.SIGKILL)


def test_what_a_turn_left_in_and_out_of_its_group_is_stopped_when_it_exits(tmp_path: Path) -> None:
    async def main() -> None:
        reg = make_registry(tmp_path, kill_grace_s=0.3)
        task = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sh", "-c", LEAVER], cwd=str(tmp_path)))
        record, timed_out = await reg.wait(task.id, 20)
        assert not timed_out
        assert record.status is JobStatus.COMPLETED, record.error
        pids = [int(await asyncio.to_thread(wait_file, tmp_path / name)) for name in ("in.pid", "out.pid")]
        await until(lambda: all(gone(pid) for pid in pids), "the leftovers to be stopped", 10)
        await reg.stop()

    try:
        run(main())
    finally:
        kill_leftovers(tmp_path)


def test_cancel_reaches_a_setsid_child_of_the_turn(tmp_path: Path) -> None:
    argv = ["sh", "-c", "setsid sh -c 'echo $$ > out.pid; exec sleep 60' & exec sleep 60"]

    async def main() -> None:
        reg = make_registry(tmp_path, kill_grace_s=0.3)
        task = await reg.start(StartSpec(kind=JobKind.SHELL, argv=argv, cwd=str(tmp_path)))
        escaped = int(await asyncio.to_thread(wait_file, tmp_path / "out.pid"))
        await reg.cancel(task.id)
        assert reg.get(task.id).status is JobStatus.CANCELLED
        await until(lambda: gone(escaped), "the setsid child to be stopped", 10)
        await reg.stop()

    try:
        run(main())
    finally:
        kill_leftovers(tmp_path)


def test_cancel_reports_a_task_that_ignored_sigterm_as_killed(tmp_path: Path) -> None:
    """``kairos task cancel`` tells why it took the grace: the task was killed with SIGKILL."""
    stubborn = ["sh", "-c", "trap '' TERM; echo $$ > in.pid; while :; do sleep 0.05; done"]

    async def main() -> None:
        reg = make_registry(tmp_path, kill_grace_s=0.3)
        hard = await reg.start(StartSpec(kind=JobKind.SHELL, argv=stubborn, cwd=str(tmp_path)))
        await asyncio.to_thread(wait_file, tmp_path / "in.pid")
        soft = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sleep", "60"], parent_id=hard.id))
        await until(lambda: reg.get(soft.id).pid is not None, "the child's pid")
        report = await reg.cancel_report(hard.id)
        assert [r.id for r in report.cancelled] == [hard.id, soft.id]
        assert report.killed == [hard.id]  # the child went at SIGTERM
        assert reg.get(hard.id).status is JobStatus.CANCELLED
        await reg.stop()

    try:
        run(main())
    finally:
        kill_leftovers(tmp_path)
