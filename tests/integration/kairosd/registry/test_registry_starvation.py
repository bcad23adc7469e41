"""The starvation rule: a task waiting on its own descendant lends it its slot.

Once end to end (parents that hold every slot run the real ``kairos task start`` and ``kairos task
wait`` against the daemon's socket, as an agent would), then at the registry: the loan ends with the
wait, status says what is lent, and a wait on a task that is not a descendant lends nothing.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, run, until, wait_file, write_script

from kairosd.api.server import UnixHttpServer
from kairosd.jobs.api import registry_routes
from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import Registry, StartSpec
from kairosd.scheduling.api import Api

CAP = 2
# A parent as an agent would be one: it starts a child through the CLI, then waits for it. Before the
# starvation rule both parents held both slots and their children queued until this wait gave up.
PARENT = f"""#!/bin/sh
set -e
id=$({sys.executable} -m kairos task start --agent fake --json "child of $KAIROS_TASK_ID" \\
     | {sys.executable} -c 'import json, sys; print(json.load(sys.stdin)["task"]["id"])')
{sys.executable} -m kairos task wait "$id" --timeout 15
"""


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    # Short and under /tmp: AF_UNIX socket paths are limited to ~107 bytes.
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))
    monkeypatch.setenv("KAIROS_HOME", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("KAIROS_TASK_ID", raising=False)
    monkeypatch.delenv("KAIROS_TASK_DEPTH", raising=False)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _working(reg: Registry) -> int:
    """Turns that hold a slot and are not lending it out (the agents actually at work), per status."""
    holding = [r for r in reg.list_tasks(JobStatus.RUNNING) if not r.queued]
    return len(holding) - int(reg.status()["slots"].get("lent", 0))


def test_parents_holding_every_slot_and_waiting_on_children_do_not_deadlock(home, tmp_path):
    """Cap 2, two parents each start a child and wait for it with `kairos task wait`: the children run on
    their parents' slots, both generations complete, and never more than 2 turns work at once."""
    adapter = FakeAdapter(fake_agent(tmp_path))
    parent_script = write_script(tmp_path, "parent", PARENT)
    seen: list[tuple[int, int]] = []  # (turns working, slots in use)

    async def main() -> None:
        reg = make_registry(home, adapter, max_concurrent=CAP)
        api = Api(None, lambda: None)  # type: ignore[arg-type]  # the registry routes never touch the service
        api.add_routes(registry_routes(reg))
        server = UnixHttpServer(home / "run" / "kairosd.sock", api.handle)
        await server.start()
        stop = asyncio.Event()

        async def sample() -> None:
            while not stop.is_set():
                seen.append((_working(reg), reg.slots.in_use))
                await asyncio.sleep(0.005)

        sampler = asyncio.create_task(sample())
        try:
            spec = StartSpec(kind=JobKind.SHELL, argv=[str(parent_script)], timeout_s=30)
            parents = [await reg.start(spec) for _ in range(CAP)]
            for parent in parents:
                done, timed_out = await reg.wait(parent.id, 25)
                assert (timed_out, done.status) == (False, JobStatus.COMPLETED), reg.log_path(parent.id).read_text()
            children = [c for p in parents for c in reg.children(p.id)]
            assert len(children) == CAP
            assert {(c.status, c.response) for c in children} == {
                (JobStatus.IDLE, f"echo: child of {p.id}") for p in parents
            }
            assert reg.status()["slots"] == {"limit": CAP, "in_use": 0, "waiting": 0, "lent": 0}
        finally:
            stop.set()
            await sampler
            await server.close(grace_s=1.0)
            await reg.stop()

    run(main())
    assert max(working for working, _ in seen) <= CAP
    assert max(in_use for _, in_use in seen) <= CAP


def test_the_loan_ends_with_the_wait_and_status_says_what_is_lent(tmp_path):
    """Cap 1: a hanging parent's child runs only while the parent waits on it; a cancelled wait takes the
    slot back (the child, already running, counts on its own), and the queue moves only under the cap."""
    adapter = FakeAdapter(fake_agent(tmp_path))

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, max_concurrent=1)
        parent = await reg.start(StartSpec(agent="fake", prompt=f"hang:{tmp_path / 'parent.pid'}"))
        await asyncio.to_thread(wait_file, tmp_path / "parent.pid")
        child_pid = tmp_path / "child.pid"
        child = await reg.start(StartSpec(agent="fake", prompt=f"hang:{child_pid}", parent_id=parent.id))
        other = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"]))
        await until(lambda: reg.slots.waiting == 2, "the child and the other task to queue")

        # A wait by a task that is not its ancestor lends nothing.
        _, timed_out = await reg.wait(child.id, 0.2, waiter=other.id)
        assert timed_out
        assert reg.get(child.id).queued

        waiting = asyncio.create_task(reg.wait(child.id, None, waiter=parent.id))
        await asyncio.to_thread(wait_file, child_pid)  # it runs although the cap is reached
        await until(lambda: not reg.get(child.id).queued, "the child to start")
        assert reg.status()["slots"] == {"limit": 1, "in_use": 1, "waiting": 1, "lent": 1}

        waiting.cancel()  # the waiter went away: the parent works again
        await asyncio.gather(waiting, return_exceptions=True)
        assert reg.status()["slots"] == {"limit": 1, "in_use": 2, "waiting": 1, "lent": 0}
        await reg.cancel(child.id)
        assert reg.status()["slots"] == {"limit": 1, "in_use": 1, "waiting": 1, "lent": 0}
        assert reg.get(other.id).queued  # the parent still holds the only slot

        await reg.cancel(parent.id)
        done, timed_out = await reg.wait(other.id, 10)
        assert (timed_out, done.status) == (False, JobStatus.COMPLETED)
        assert reg.status()["slots"] == {"limit": 1, "in_use": 0, "waiting": 0, "lent": 0}
        await reg.stop()

    run(main())
