"""The registry's detached records: work a caller starts itself that outlives kairosd (consolidation)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from registry_support import gone, make_registry, run, until

from kairosd.core.errors import UnavailableError
from kairosd.core.events import EventBus
from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import StartSpec
from kairosd.testing import FakeClock


def _spec(cwd: Path) -> StartSpec:
    return StartSpec(kind=JobKind.CONSOLIDATION, prompt="consolidate s1", agent="offline", cwd=str(cwd), session="s1")


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def test_record_attach_finish(tmp_path):
    """A detached record is running before its process exists, takes its pid, then ends as told."""

    async def main() -> None:
        clock = FakeClock()
        events = EventBus(clock.now)
        seen = events.subscribe(frozenset({"task_started", "task_updated"}))
        reg = make_registry(tmp_path, events=events, clock=clock)
        record = await reg.record_external(_spec(tmp_path))
        assert (record.status, record.detached, record.kind, record.queued) == (
            JobStatus.RUNNING, True, JobKind.CONSOLIDATION, False,
        )  # fmt: skip
        assert record.log_path == str(tmp_path / "data" / "tasks" / f"{record.id}.log")
        assert reg.slots.in_use == 0  # detached work holds no slot
        proc = _sleeper()
        try:
            record = await reg.attach_process(record.id, proc.pid)
            assert record.pid == proc.pid
            assert record.pid_started is not None
        finally:
            proc.kill()
            proc.wait()
        clock.advance(5)
        record = await reg.finish_external(record.id, ok=True, response="3 added")
        assert (record.status, record.response, record.pid, record.turns_done) == (
            JobStatus.COMPLETED,
            "3 added",
            None,
            1,
        )
        failed = await reg.record_external(_spec(tmp_path))
        failed = await reg.finish_external(failed.id, ok=False, error="no result")
        assert (failed.status, failed.error) == (JobStatus.FAILED, "no result")
        # A second finish (the watcher after a cancel, say) changes nothing.
        assert (await reg.finish_external(failed.id, ok=True)).status is JobStatus.FAILED
        first = await anext(seen)
        assert first["type"] == "task_started"
        assert first["task"]["detached"] is True
        await reg.stop()

    run(main())


def test_recovery_leaves_a_detached_run_alone(tmp_path):
    """A kairosd restart neither interrupts the record nor stops the process; the owner settles it."""

    async def main() -> None:
        reg = make_registry(tmp_path)
        record = await reg.record_external(_spec(tmp_path))
        proc = _sleeper()
        try:
            await reg.attach_process(record.id, proc.pid)
            await reg.stop()  # kairosd stops: the detached process goes on
            assert proc.poll() is None
            again = make_registry(tmp_path)
            interrupted = await again.recover()
            assert interrupted == []
            recovered = again.get(record.id)
            assert (recovered.status, recovered.pid) == (JobStatus.RUNNING, proc.pid)
            assert proc.poll() is None
            await again.stop()
        finally:
            proc.kill()
            proc.wait()

    run(main())


def test_cancel_stops_the_detached_group(tmp_path):
    """kairos task cancel reaches a detached process too (pid and start time checked)."""

    async def main() -> None:
        reg = make_registry(tmp_path, kill_grace_s=0.5)
        record = await reg.record_external(_spec(tmp_path))
        proc = _sleeper()
        await reg.attach_process(record.id, proc.pid)
        cancelled = await reg.cancel(record.id)
        assert [r.status for r in cancelled] == [JobStatus.CANCELLED]
        await until(lambda: proc.poll() is not None or gone(proc.pid), "the detached process to end")
        proc.wait()
        await reg.stop()

    run(main())


def test_wait_returns_when_the_owner_finishes(tmp_path):
    """The registry's long-poll settles on finish_external (what kairos consolidate --wait uses)."""

    async def main() -> None:
        reg = make_registry(tmp_path)
        record = await reg.record_external(_spec(tmp_path))
        waiter = asyncio.ensure_future(reg.wait(record.id, 10))
        await asyncio.sleep(0)  # one turn for it to start; that it keeps waiting has no event to await
        assert not waiter.done()
        await reg.finish_external(record.id, ok=True)
        settled, timed_out = await waiter
        assert (settled.status, timed_out) == (JobStatus.COMPLETED, False)
        await reg.stop()
        with pytest.raises(UnavailableError):
            await reg.record_external(_spec(tmp_path))

    run(main())
