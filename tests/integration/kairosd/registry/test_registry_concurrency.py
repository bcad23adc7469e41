"""The registry's concurrency cap under load, with real processes: never more than the cap running,
the rest queued in order; idle multi-turn tasks hold no slot and a follow-up takes one again."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from registry_support import FakeAdapter, fake_agent, make_registry, run, until, wait_file, write_script

from kairosd.jobs.model import JobKind, JobStatus
from kairosd.jobs.registry import StartSpec

CAP = 3
TASKS = 12

# Counts how many copies run at once, under an exclusive lock, and keeps the highest count seen.
COUNTER = f"""#!{sys.executable}
import fcntl, os, sys, time
folder = sys.argv[1]
def bump(delta):
    with open(os.path.join(folder, "lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.path.join(folder, "now")
        now = int(open(path).read() or 0) if os.path.exists(path) else 0
        now += delta
        open(path, "w").write(str(now))
        peak_path = os.path.join(folder, "peak")
        peak = int(open(peak_path).read() or 0) if os.path.exists(peak_path) else 0
        open(peak_path, "w").write(str(max(peak, now)))
bump(1)
# Hold until the test has seen the queue (a loaded machine may take longer than any fixed time to start
# all twelve: the first copies must not finish first), then stay a while: tasks started over the cap
# would overlap here (what is tested).
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(folder, "release")) and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.2)
bump(-1)
"""


def test_never_more_than_the_cap_running(tmp_path: Path):
    """12 tasks at once with a cap of 3: at most 3 processes ever run together, all 12 complete, FIFO."""
    counter = write_script(tmp_path, "counter", COUNTER)
    seen_running: list[int] = []

    async def main() -> None:
        reg = make_registry(tmp_path, max_concurrent=CAP)
        stop = asyncio.Event()

        async def sample() -> None:
            # The registry's own accounting, sampled while the load runs.
            while not stop.is_set():
                running = [r for r in reg.list_tasks() if r.status is JobStatus.RUNNING and not r.queued]
                seen_running.append(len(running))
                assert reg.slots.in_use <= CAP
                await asyncio.sleep(0.005)

        sampler = asyncio.create_task(sample())
        records = [
            await reg.start(StartSpec(kind=JobKind.SHELL, argv=[str(counter), str(tmp_path)])) for _ in range(TASKS)
        ]
        await until(lambda: reg.slots.waiting == TASKS - CAP, "the tasks beyond the cap to queue")
        assert sum(reg.get(r.id).queued for r in records) >= TASKS - CAP
        (tmp_path / "release").touch()
        for record in records:
            done, timed_out = await reg.wait(record.id, 20)
            assert (timed_out, done.status) == (False, JobStatus.COMPLETED), done.error
        stop.set()
        await sampler
        assert reg.slots.peak == CAP
        assert (reg.slots.in_use, reg.slots.waiting) == (0, 0)
        started = [reg.get(r.id).turns[0].started_at for r in records]
        assert started == sorted(started)  # the queue is FIFO
        await reg.stop()

    run(main())
    assert int((tmp_path / "peak").read_text()) <= CAP
    assert int((tmp_path / "now").read_text()) == 0
    assert max(seen_running) <= CAP


def test_idle_tasks_hold_no_slot_and_a_follow_up_takes_one(tmp_path: Path):
    """Cap 1: an idle agent task lets another task run; its follow-up then queues until the slot frees."""
    adapter = FakeAdapter(fake_agent(tmp_path))
    pidfile = tmp_path / "pid"

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, max_concurrent=1)
        chat = await reg.start(StartSpec(agent="fake", prompt="first"))
        chat, _ = await reg.wait(chat.id, 10)
        assert chat.status is JobStatus.IDLE
        assert reg.slots.in_use == 0
        busy = await reg.start(StartSpec(agent="fake", prompt=f"hang:{pidfile}"))
        await asyncio.to_thread(wait_file, pidfile)  # it runs although the idle task exists
        assert reg.get(busy.id).queued is False
        follow_up = await reg.send(chat.id, "second")
        await until(lambda: reg.slots.waiting == 1, "the follow-up to queue")
        assert (reg.get(chat.id).status, reg.get(chat.id).queued) == (JobStatus.RUNNING, True)
        _, timed_out = await reg.wait(follow_up.id, 0.2)
        assert timed_out  # still queued behind the hanging task
        await reg.cancel(busy.id)
        chat, timed_out = await reg.wait(chat.id, 10)
        assert (timed_out, chat.status, chat.response) == (False, JobStatus.IDLE, "echo: second")
        await reg.stop()

    run(main())
