"""A background task that floods its output: capped per turn, and bounded work per chunk (issue 27, finding 3).

The red-team case: four ``yes`` tasks pushed ``kairos status`` past 3 s, because
every 2-byte line of every chunk was written, published and fanned out on the
event loop, one at a time. Here the work the loop does between two of its
turns is counted (events published), not timed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from registry_support import make_registry, run

from kairosd.core.events import EventBus
from kairosd.jobs.model import JobKind, JobRecord, JobStatus
from kairosd.jobs.registry import StartSpec
from kairosd.jobs.turns import LIVE_LINES_PER_CHUNK
from kairosd.testing import FakeClock

FLOOD_BYTES = 8 << 20  # 4 Mi lines of "y"
CAP = 256 << 10


class CountingBus(EventBus):
    """Counts task_notification events, and the most published between two turns of the event loop."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock.now)
        self.notifications = 0
        self.since_tick = 0
        self.most_per_tick = 0

    def publish(self, kind: str, **data: object) -> None:
        if kind == "task_notification":
            self.notifications += 1
            self.since_tick += 1
            self.most_per_tick = max(self.most_per_tick, self.since_tick)
        super().publish(kind, **data)

    async def tick(self) -> None:
        while True:
            self.since_tick = 0
            await asyncio.sleep(0)


def test_a_flood_is_cut_at_the_cap_with_a_note_and_the_loop_does_bounded_work_per_chunk(tmp_path: Path) -> None:
    clock = FakeClock()
    bus = CountingBus(clock)

    async def main() -> JobRecord:
        reg = make_registry(tmp_path, events=bus, clock=clock, max_output=CAP)
        ticker = asyncio.create_task(bus.tick())
        try:
            task = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sh", "-c", f"yes | head -c {FLOOD_BYTES}"]))
            record, timed_out = await reg.wait(task.id, 60)
        finally:
            ticker.cancel()
            await reg.stop()
        assert not timed_out
        return record

    record = run(main())
    assert record.status is JobStatus.COMPLETED, record.error
    log = Path(record.log_path).read_bytes()
    # Two marker lines and the note besides the capped output.
    assert CAP <= len(log) < CAP + 1024
    note = f"[kairos: output cut after {CAP} bytes; {FLOOD_BYTES - CAP} more bytes discarded]"
    assert note in log.decode().splitlines()[-2]
    assert log.decode().splitlines()[-1].startswith("--- kairos: turn 1 ended")
    # Per turn of the loop: one chunk per stream at most, each within the live budget (plus markers).
    assert bus.most_per_tick <= 2 * LIVE_LINES_PER_CHUNK + 4, bus.most_per_tick
    assert bus.notifications < CAP // 2  # fewer than the lines kept, far fewer than the 4 Mi printed


def test_several_floods_leave_the_loop_free_for_other_work(tmp_path: Path) -> None:
    """Four ``yes`` tasks, uncapped in time: a coroutine that wants the loop every 10 ms still gets it."""
    clock = FakeClock()
    bus = CountingBus(clock)

    async def main() -> list[str]:
        reg = make_registry(tmp_path, events=bus, clock=clock, max_output=CAP)
        tasks = [await reg.start(StartSpec(kind=JobKind.SHELL, argv=["yes"])) for _ in range(4)]
        loop = asyncio.get_running_loop()
        worst = 0.0
        for _ in range(100):  # about a second of floods at 10 ms a step
            before = loop.time()
            await asyncio.sleep(0.01)
            worst = max(worst, loop.time() - before)
        for task in tasks:
            await reg.cancel(task.id)
        # Generous (a shared machine): with every line published on its own, `kairos status` took 16 s
        # under four floods (bench/bench_output_flood.py); the count of work per tick is pinned above.
        assert worst < 2.0, worst
        await reg.stop()
        return [reg.get(task.id).log_path for task in tasks]

    logs = run(main())
    assert bus.notifications < 4 * (CAP // 2)
    for log in logs:
        assert Path(log).stat().st_size < CAP + 1024
