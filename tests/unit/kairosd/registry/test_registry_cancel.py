"""Recursive cancellation with real process groups: children, grandchildren, queued and idle descendants."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from registry_support import FakeAdapter, fake_agent, gone, make_registry, run, until, wait_file

from kairosd.core.errors import ConflictError
from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import StartSpec


def test_cancel_reaches_every_descendant_and_kills_their_groups(tmp_path: Path):
    """Cancelling the root ends children, grandchildren (one ignoring SIGTERM), a queued and an idle one."""
    adapter = FakeAdapter(fake_agent(tmp_path))

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, max_concurrent=3, kill_grace_s=0.3)
        root = await reg.start(StartSpec(agent="fake", prompt=f"hang:{tmp_path / 'root.pid'}"))
        idle = await reg.start(StartSpec(agent="fake", prompt="idle child", parent_id=root.id))
        idle, _ = await reg.wait(idle.id, 10)
        finished = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"], parent_id=root.id))
        finished, _ = await reg.wait(finished.id, 10)
        child = await reg.start(StartSpec(agent="fake", prompt=f"spawn:{tmp_path / 'grand.pid'}", parent_id=root.id))
        grandchild = await reg.start(
            StartSpec(kind=JobKind.SHELL, argv=["sh", "-c", "echo $$ > grandchild.pid; exec sleep 600"],
                      cwd=str(tmp_path), parent_id=child.id)
        )  # fmt: skip
        queued = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sleep", "600"], parent_id=grandchild.id))
        pids = [
            int(await asyncio.to_thread(wait_file, tmp_path / name))
            for name in ("root.pid", "grand.pid", "grandchild.pid")
        ]
        await until(lambda: reg.get(child.id).pid is not None, "the child's pid")
        pids.append(reg.get(child.id).pid)
        assert reg.get(queued.id).queued
        assert not any(gone(pid) for pid in pids)

        cancelled = await reg.cancel(root.id)

        assert cancelled[0].id == root.id
        assert {r.id for r in cancelled} == {root.id, idle.id, child.id, grandchild.id, queued.id}
        for record in cancelled:
            assert reg.get(record.id).status is JobStatus.CANCELLED
            assert reg.get(record.id).finished_at is not None
        assert reg.get(finished.id).status is JobStatus.COMPLETED  # a finished descendant stays as it was
        assert reg.get(queued.id).turns[0].started_at is None  # never started
        await until(lambda: all(gone(pid) for pid in pids), "every process of every group to be gone", 10)
        assert reg.slots.in_use == 0
        assert await reg.cancel(root.id) == []  # already cancelled: nothing to do, not an error (issue 24)
        with pytest.raises(ConflictError, match="is cancelled; it cannot start children"):
            await reg.start(StartSpec(agent="fake", prompt="late", parent_id=root.id))
        await reg.stop()

    run(main())


def test_cancel_an_idle_task_needs_no_process(tmp_path: Path):
    """An idle task cancels at once; its turn history stays."""
    adapter = FakeAdapter(fake_agent(tmp_path))

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt="hi"))
        await reg.wait(record.id, 10)
        (cancelled,) = await reg.cancel(record.id)
        assert (cancelled.status, cancelled.response) == (JobStatus.CANCELLED, "echo: hi")
        await reg.stop()

    run(main())
