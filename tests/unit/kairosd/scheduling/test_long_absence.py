"""A long absence (issue 27, finding 2): missed-fire work is per task, not per missed slot.

A minutely task whose last handled slot is 1,000,000 minutes (about two years)
ago is handled at start, and after a forward clock jump inside the running
loop, with a bounded number of next-fire computations, and every catch-up
policy does what it says with truthful counts. kairosd tells systemd READY=1
before that work starts.

The work is counted (calls of the cron engine's wall-time search, which every
next-fire computation makes), never timed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from reliability_support import FlakyStore, SchedHarness

from kairosd.app.daemon import run, start_app
from kairosd.core.clock import Clock
from kairosd.core.models import CatchUp, Task, new_task
from kairosd.core.records import Outcome
from kairosd.core.schedule import fires
from kairosd.scheduling import firing
from kairosd.scheduling.firing import NOT_RUNNING
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState
from kairosd.system.paths import Paths
from kairosd.system.sdnotify import Notifier
from kairosd.testing import FakeClock

NOW = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)
SLOT = NOW.replace(second=0)  # the newest missed slot
MISSED = 1_000_000
# Generous: about 40 are made (a few counts, a walk over the newest half hour, the next plan). Listing the
# slots took one per slot in the 7-day window alone (10,080 for a minutely task).
MAX_NEXT_FIRE_WORK = 200


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cron engine's wall-time searches (each next-fire computation makes at least one)."""
    calls = [0]
    real = fires.next_wall_match

    def counted(*args: Any, **kwargs: Any) -> datetime | None:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(fires, "next_wall_match", counted)
    firing._due_before.cache_clear()  # tasks that share a schedule and a last slot share work; these must not
    return calls


def minutely(catch_up: CatchUp, anchor: datetime) -> Task:
    created = anchor - timedelta(minutes=1)
    t = new_task(prompt="check the PRs", cron="* * * * *", tz="UTC", created_at=created, catch_up=catch_up)
    return t.model_copy(update={"last_scheduled_for": anchor})


# What each policy fires (the newest slots, oldest first) and records: count, first, last, action.
EXPECTED = {
    CatchUp.SKIP: ([], MISSED, "recorded"),
    CatchUp.SURFACE: ([], MISSED, "surfaced"),
    CatchUp.ONCE: ([SLOT], MISSED - 1, "recorded"),
    CatchUp.ALL: ([SLOT - timedelta(minutes=m) for m in range(9, -1, -1)], MISSED - 10, "recorded"),
}


@pytest.mark.parametrize("catch_up", list(CatchUp))
@pytest.mark.parametrize("how", ["start", "jump"])
def test_a_million_missed_slots_are_handled_with_bounded_work(tmp_path, work, catch_up: CatchUp, how: str):
    """Down for 1,000,000 minutes (start), or the wall clock jumps that far in the running loop (jump)."""

    async def main() -> None:
        if how == "start":
            t = minutely(catch_up, SLOT - timedelta(minutes=MISSED))
            h = SchedHarness(tmp_path, FlakyStore(StoreState(schema_version=SCHEMA_VERSION, tasks=[t])), FakeClock(NOW))
            work[0] = 0
            await h.start()
        else:
            start = NOW - timedelta(minutes=MISSED)
            t = minutely(catch_up, SLOT - timedelta(minutes=MISSED))
            clock = FakeClock(start)
            h = SchedHarness(tmp_path, FlakyStore(StoreState(schema_version=SCHEMA_VERSION, tasks=[t])), clock)
            await h.start()
            assert h.missed.list() == []
            work[0] = 0
            clock.jump((NOW - start).total_seconds())  # a suspend: wall time moves, monotonic does not
            await h.tick()
        assert work[0] <= MAX_NEXT_FIRE_WORK, work[0]
        fired, count, action = EXPECTED[catch_up]
        assert [s for _, s in h.delivered(t.id)] == fired
        (record,) = h.missed.list()
        last = fired[0] - timedelta(minutes=1) if fired else SLOT
        assert (record.count, record.action) == (count, action)
        assert (record.first_scheduled_for, record.scheduled_for) == (SLOT - timedelta(minutes=MISSED - 1), last)
        assert record.reason == NOT_RUNNING if how == "start" else record.reason.startswith("the clock jumped")
        (missed_run,) = [r for r in h.ledger.list(t.id, 100) if r.outcome is Outcome.MISSED]
        assert f"({count:,} fires {action})" in missed_run.reason
        # The task moved past every slot and is planned for the next minute.
        assert h.book.get(t.id).last_scheduled_for == SLOT
        planned = h.sched.planned(t.id)
        assert planned is not None
        assert planned.scheduled_for == SLOT + timedelta(minutes=1)

    asyncio.run(main())


class RecordingNotifier(Notifier):
    """Keeps what kairosd tells systemd, and how many missed records there were when it said it."""

    def __init__(self) -> None:
        super().__init__(None)
        self.sent: list[tuple[tuple[str, ...], int]] = []
        self.missed_count = lambda: -1

    def notify(self, *assignments: str) -> bool:
        self.sent.append((assignments, self.missed_count()))
        return True


def test_ready_is_sent_before_the_catch_up_of_a_long_absence():
    """kairosd says READY=1 with nothing of the absence handled yet; the loop handles it after."""
    home = Path(tempfile.mkdtemp(prefix="kra", dir="/tmp"))  # short: AF_UNIX paths are ~107 bytes at most
    environ = {"KAIROS_HOME": str(home), "TZ": "UTC", "PATH": os.environ.get("PATH", "")}
    paths = Paths.from_env(environ)
    clock: Clock = FakeClock(NOW)
    tasks = [minutely(CatchUp.SKIP, SLOT - timedelta(days=7)), minutely(CatchUp.ONCE, SLOT - timedelta(days=700))]
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    JsonStore(paths.state_dir / "scheduled_tasks.json", clock).save(
        StoreState(schema_version=SCHEMA_VERSION, tasks=tasks)
    )

    async def main() -> list[tuple[tuple[str, ...], int]]:
        app, lock = start_app(paths, clock, environ, None)
        notifier = RecordingNotifier()
        notifier.missed_count = lambda: len(app.missed.list())
        ready = asyncio.Event()
        running = asyncio.ensure_future(run(app, notifier=notifier, ready=ready))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            for _ in range(3000):  # bounded: the loop's first tick records both tasks' misses
                if len(app.missed.list()) == 2:
                    break
                await asyncio.sleep(0.01)
            assert {m.count for m in app.missed.list()} == {7 * 24 * 60, 700 * 24 * 60 - 1}
        finally:
            app.request_stop()
            await asyncio.wait_for(running, 30)
            lock.release()
        return notifier.sent

    try:
        sent = asyncio.run(main())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    ready_at = [missed for assignments, missed in sent if "READY=1" in assignments]
    assert ready_at == [0]  # nothing recorded yet when READY=1 went out


@pytest.mark.parametrize("jitter", ["claude", "max:1d"])
def test_jitter_does_not_make_the_work_grow_with_its_reach(tmp_path, work, jitter: str):
    """A minutely task with jitter up to a day: only the newest slot can still be held back by it (a
    recurring fire's jitter is under its period), so the day of slots within its reach is not walked."""

    async def main() -> None:
        t = minutely(CatchUp.ONCE, SLOT - timedelta(minutes=MISSED)).model_copy(update={"jitter": jitter})
        h = SchedHarness(tmp_path, FlakyStore(StoreState(schema_version=SCHEMA_VERSION, tasks=[t])), FakeClock(NOW))
        work[0] = 0
        await h.start()
        assert work[0] <= MAX_NEXT_FIRE_WORK, work[0]
        (record,) = h.missed.list()
        fired = [s for _, s in h.delivered(t.id)]
        # The newest slot fires if its jitter lets it be due by now, else it waits (planned next).
        assert record.count + len(fired) in (MISSED, MISSED - 1)
        assert record.first_scheduled_for == SLOT - timedelta(minutes=MISSED - 1)

    asyncio.run(main())


def test_the_ledgers_hold_what_the_pass_made_byte_for_byte(tmp_path):
    """The lines a catch-up pass writes come from its records' prototypes (shared JSON encoded once): each
    is the line json_line makes of the record kept in memory, for tasks sharing a target and fires or
    not, with names and prompts that need escaping; read back, the ledgers hold the same records."""
    import json

    from kairosd.core.models import InboxTarget
    from kairosd.core.records import json_line
    from kairosd.scheduling.ledger import MissedLedger, RunLedger

    anchor = SLOT - timedelta(days=3)
    shared = InboxTarget(session="main")
    tasks = [
        minutely(catch_up, anchor).model_copy(
            update={"name": f"t{i} \u2603 \x7f", "prompt": f'say "hi" \\ {i}\n\U0001f600', "target": shared}
        )
        for i, catch_up in enumerate([CatchUp.ONCE, CatchUp.SKIP, CatchUp.ONCE, CatchUp.ALL, CatchUp.SKIP])
    ]
    tasks.append(minutely(CatchUp.ONCE, anchor - timedelta(hours=1)))  # its own fires and target

    async def main() -> SchedHarness:
        h = SchedHarness(tmp_path, FlakyStore(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks)), FakeClock(NOW))
        await h.start()
        return h

    h = asyncio.run(main())
    runs = {r.run_id: r for r in h.ledger.list(limit=1000)}
    missed = {m.id: m for m in h.missed.list()}
    assert len(missed) == len(tasks)
    written = {}
    for name in ("runs.jsonl", "missed.jsonl"):
        for line in (tmp_path / name).read_bytes().splitlines():
            record = json.loads(line)
            written.setdefault(record.get("run_id") or record["id"], []).append(line)
    for record_id, record in [*runs.items(), *missed.items()]:
        assert json_line(record) in written[record_id]
    again = RunLedger(tmp_path / "runs.jsonl", h.clock)
    again.load()
    assert {r.run_id: r for r in again.list(limit=1000)} == runs
    reread = MissedLedger(tmp_path / "missed.jsonl", h.clock)
    assert {m.id: m for m in reread.load()} == missed
