"""Durability of the registry: a kill -9 of the process that runs it leaves records that come back as
interrupted (never re-run, their leftover groups stopped); records survive restarts; bad files are set aside;
a graceful stop interrupts what runs; old finished records are pruned."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from registry_support import WAIT_S, FakeAdapter, fake_agent, gone, make_registry, run, until, wait_file

from kairosd.core.errors import ConflictError
from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import StartSpec

# Runs a registry with one long shell task (running) and one waiting for the only slot (queued),
# and says READY once both records, and the running one's pid, are on disk.
CRASHER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from kairosd.core.clock import SystemClock
    from kairosd.core.events import EventBus
    from kairosd.jobs.limits import RegistryLimits
    from kairosd.jobs.model import JobKind
    from kairosd.jobs.persist import RecordStore
    from kairosd.jobs.registry import Registry, StartSpec

    root = Path(sys.argv[1])

    async def main():
        clock = SystemClock()
        reg = Registry(RecordStore(root / "registry"), root / "logs", clock, EventBus(clock.now),
                       lambda name: None, RegistryLimits(max_concurrent=1))
        await reg.recover()
        running = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sleep", "600"]))
        queued = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sleep", "1"]))
        path = root / "registry" / f"{running.id}.json"
        deadline = time.monotonic() + 30  # else exit: the test reads EOF instead of READY, and fails
        while json.loads(path.read_text()).get("pid") is None:
            if time.monotonic() > deadline:
                sys.exit("the running task's pid never reached its record")
            await asyncio.sleep(0.01)
        print("READY", running.id, queued.id, flush=True)
        await asyncio.sleep(600)  # stands for kairosd running on, until the test kills it (-9)

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_kill_9_leaves_interrupted_records_never_rerun(tmp_path: Path):
    """After SIGKILL of the registry's process, running and queued records become interrupted on load,
    the orphaned process group is stopped, and nothing runs again."""
    proc = subprocess.Popen([sys.executable, "-c", CRASHER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded: the script exits (EOF) if anything goes wrong
        assert line.startswith("READY"), line
        _, running_id, queued_id = line.split()
        on_disk = json.loads((tmp_path / "registry" / f"{running_id}.json").read_text())
        orphan = on_disk["pid"]
        assert on_disk["status"] == "running"
        assert not gone(orphan)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=WAIT_S)
        if proc.stdout is not None:
            proc.stdout.close()
    assert not gone(orphan)  # its own session: the daemon's death alone does not end it

    async def main() -> None:
        reg = make_registry(tmp_path)
        reg._store.folder = tmp_path / "registry"  # the crashed process's layout
        interrupted = await reg.recover()
        assert {r.id for r in interrupted} == {running_id, queued_id}
        for task_id in (running_id, queued_id):
            record = reg.get(task_id)
            assert record.status is JobStatus.INTERRUPTED
            assert record.error == "kairosd stopped while it was running; it was not re-run"
            assert record.pid is None
            assert record.turns[-1].ok is False
        assert reg.get(running_id).turns[-1].error == "kairosd stopped while this turn ran"
        assert reg.get(queued_id).turns[-1].error == "kairosd stopped while this turn waited for a slot"
        assert reg.slots.in_use == 0  # nothing was started again
        with pytest.raises(ConflictError, match="shell job"):
            await reg.send(running_id, "again")
        (cancelled,) = await reg.cancel(queued_id)  # interrupted is not terminal: it can still be cancelled
        assert cancelled.status is JobStatus.CANCELLED

    run(main())
    deadline = time.monotonic() + WAIT_S
    while not gone(orphan) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone(orphan)
    saved = json.loads((tmp_path / "registry" / f"{running_id}.json").read_text())
    assert saved["status"] == "interrupted"


def test_records_survive_a_restart_and_bad_files_are_set_aside(tmp_path: Path):
    """A new registry on the same folders loads every record as it was; a corrupt file is moved aside."""
    adapter = FakeAdapter(fake_agent(tmp_path))

    async def first() -> tuple[str, str]:
        reg = make_registry(tmp_path, adapter)
        chat = await reg.start(StartSpec(agent="fake", prompt="remember me"))
        shell = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"]))
        await reg.wait(chat.id, 10)
        await reg.wait(shell.id, 10)
        await reg.stop()
        return chat.id, shell.id

    chat_id, shell_id = run(first())
    folder = tmp_path / "state" / "registry"
    (folder / "t0123456789.json").write_text("{not json")

    async def second() -> None:
        reg = make_registry(tmp_path, adapter)
        assert await reg.recover() == []
        assert {r.id for r in reg.list_tasks()} == {chat_id, shell_id}
        chat = reg.get(chat_id)
        assert (chat.status, chat.response) == (JobStatus.IDLE, "echo: remember me")
        # The idle conversation resumes across the restart.
        await reg.send(chat_id, "still there?")
        chat, _ = await reg.wait(chat_id, 10)
        assert (chat.turns_done, chat.response) == (2, "echo: still there?")
        assert adapter.requests[-1].resume_session == f"sess-{chat_id}"
        await reg.stop()

    run(second())
    assert (folder / "t0123456789.json.corrupt").exists()
    assert not (folder / "t0123456789.json").exists()
    assert all(oct(os.stat(p).st_mode & 0o777) == "0o600" for p in folder.glob("*.json"))


def test_graceful_stop_interrupts_running_and_queued_turns(tmp_path: Path):
    """stop() ends turns in flight (group stopped) as interrupted; idle tasks stay idle; new starts are refused."""
    adapter = FakeAdapter(fake_agent(tmp_path))

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, max_concurrent=1, kill_grace_s=0.3)
        idle = await reg.start(StartSpec(agent="fake", prompt="hi"))
        await reg.wait(idle.id, 10)
        busy = await reg.start(StartSpec(agent="fake", prompt=f"hang-hard:{tmp_path / 'pid'}"))
        queued = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"]))
        pid = int(await asyncio.to_thread(wait_file, tmp_path / "pid"))
        await reg.stop()
        assert gone(pid)
        assert reg.get(busy.id).status is JobStatus.INTERRUPTED
        assert reg.get(busy.id).error == "kairosd stopped while it ran; it was not re-run"
        assert reg.get(queued.id).status is JobStatus.INTERRUPTED
        assert reg.get(idle.id).status is JobStatus.IDLE
        with pytest.raises(Exception, match="shutting down"):
            await reg.start(StartSpec(agent="fake", prompt="late"))

    run(main())


def test_old_finished_records_are_pruned_with_their_logs(tmp_path: Path):
    """At start-up only keep_finished terminal records are kept (the newest); their logs go with them."""

    async def fill() -> list[str]:
        reg = make_registry(tmp_path)
        ids = []
        for _ in range(4):
            record = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["echo", "x"]))
            await reg.wait(record.id, 10)
            reg._clock.advance(1)  # type: ignore[attr-defined]
            ids.append(record.id)
        await reg.stop()
        return ids

    ids = run(fill())

    async def reload() -> None:
        reg = make_registry(tmp_path, keep_finished=2)
        await reg.recover()
        assert {r.id for r in reg.list_tasks()} == set(ids[2:])

    run(reload())
    logs = tmp_path / "data" / "tasks"
    assert sorted(p.stem for p in logs.glob("*.log")) == sorted(ids[2:])


def test_finished_records_and_their_logs_are_pruned_while_kairosd_runs(tmp_path: Path):
    """Not only at start-up: a daemon that runs for weeks keeps about keep_finished logs, not all of them."""

    async def main() -> list[str]:
        reg = make_registry(tmp_path, keep_finished=2)
        ids = []
        for _ in range(5):
            record = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["echo", "x"]))
            await reg.wait(record.id, 10)
            reg._clock.advance(1)  # type: ignore[attr-defined]
            ids.append(record.id)
        await until(lambda: len(reg.list_tasks()) <= 3, "the oldest records to be pruned")
        kept = [r.id for r in reg.list_tasks()]
        await reg.stop()
        return kept

    kept = run(main())
    assert len(kept) <= 3  # the two kept, and the newest that finished after the last start
    logs = tmp_path / "data" / "tasks"
    assert sorted(p.stem for p in logs.glob("*.log")) == sorted(kept)
