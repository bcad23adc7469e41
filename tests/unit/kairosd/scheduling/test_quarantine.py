"""Issue #13: one bad record in the store never stops the daemon; it is set aside with the reason.

Each record below either failed the whole load or loaded and then crashed the
scheduler (at its first plan, fire, expiry or catch-up). Now it goes to
``scheduled_tasks.quarantine.json`` and the other task fires.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.events import EventBus
from kairosd.core.models import new_task
from kairosd.core.records import Outcome
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import JsonStore
from kairosd.testing import FakeClock, FakeDelivery

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)
GOOD_ID = "600d600d"


def _good() -> dict[str, Any]:
    task = new_task(task_id=GOOD_ID, prompt="good", cron="* * * * *", tz="UTC", created_at=T0)
    return task.model_dump(mode="json")


def _bad(**fields: Any) -> dict[str, Any]:
    base = new_task(task_id="bad0bad0", prompt="bad", cron="* * * * *", tz="UTC", created_at=T0)
    return base.model_dump(mode="json") | fields


BAD_RECORDS = {
    # Loaded, then every start died with OverflowError planning it.
    "anchor in 9999": (_bad(last_scheduled_for="9999-12-31T23:59:59Z"), "last_scheduled_for"),
    # Loaded, then the loop died at its first fire computing the expiry.
    "expiry past 9999": (_bad(expires_after_days=3_000_000), "expires_after_days"),
    # Loaded, then planning from year 1 in a zone west of UTC overflowed.
    "created in year 1": (_bad(created_at="0001-01-01T00:00:00Z", tz="America/New_York"), "created_at"),
    # A one-shot whose slot is out of range once jitter or a zone is applied.
    "at in 9999": (_bad(cron=None, at="9999-12-31T23:59:00Z", recurring=False), "at"),
    # These failed the whole load: the store was refused and nothing ran.
    "bad cron": (_bad(cron="61 * * * *"), "cron"),
    "bad zone": (_bad(tz="Mars/Olympus"), "tz"),
    # Issue 27, finding 6: refused with the reason, never read as UTC.
    "POSIX zone": (_bad(tz="EST5EDT,M3.2.0,M11.1.0"), "POSIX TZ rule string"),
    "wrong type": (_bad(paused="sometimes"), "paused"),
    "id with a trailing newline": (_bad(id="bad0bad0\n"), "id"),
    "not an object": ("just a string", "invalid"),
}


def _write(path: Path, tasks: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": 2, "tasks": tasks}))


async def _run_a_minute(store: JsonStore, clock: FakeClock, tmp_path: Path) -> tuple[TaskBook, RunLedger]:
    book = TaskBook(store, store.load())
    ledger = RunLedger(tmp_path / "runs.jsonl", clock)
    ledger.load()
    missed = MissedLedger(tmp_path / "missed.jsonl", clock)
    missed.load()
    sched = Scheduler(book, ledger, missed, {"inbox": FakeDelivery("inbox", clock=clock)}, clock, EventBus(clock.now))
    await sched.start()
    for _ in range(2):
        clock.advance(60)
        await sched.tick()
        await sched.drain(5)
    await sched.shutdown(1)
    book.commit_sync()
    return book, ledger


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_a_bad_record_is_set_aside_and_the_others_fire(tmp_path: Path, name: str) -> None:
    record, field = BAD_RECORDS[name]
    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    _write(path, [record, _good()])
    store = JsonStore(path, clock, local_zone="UTC")
    book, ledger = asyncio.run(_run_a_minute(store, clock, tmp_path))

    assert [t.id for t in book] == [GOOD_ID]
    assert [r.outcome for r in ledger.list(GOOD_ID)] == [Outcome.DELIVERED] * 2
    [entry] = store.quarantine.entries()
    assert entry["record"] == record
    assert field in entry["reason"]
    assert datetime.fromisoformat(entry["quarantined_at"]) == T0
    assert store.quarantine.status() == {"count": 1, "path": str(tmp_path / "scheduled_tasks.quarantine.json")}
    # Quarantined first, then gone from the store at its next save; a second load sets nothing aside.
    saved = json.loads(path.read_text())
    assert [t["id"] for t in saved["tasks"]] == [GOOD_ID]
    JsonStore(path, clock, local_zone="UTC").load()
    assert len(store.quarantine.entries()) == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"last_fired_at": "2058-03-02T10:00:00Z", "last_scheduled_for": "2058-03-02T10:00:00Z"},
        {"created_at": "3000-01-01T00:00:00Z"},
        {"created_at": "2026-03-03T10:00:00Z", "last_scheduled_for": "2026-03-02T10:06:00Z"},
    ],
)
def test_a_stored_time_ahead_of_the_clock_is_set_to_now_with_a_warning_and_the_task_fires(
    tmp_path: Path, fields: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27, finding 6: such a task loaded silently and stayed silent until 2058 (or year 3000).

    Set to now rather than aside: the daemon's own clock stamped these times, and a clock
    that was set back must not cost the user their tasks.
    """
    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    ahead = _bad(**fields)
    _write(path, [ahead, _good()])
    store = JsonStore(path, clock, local_zone="UTC")
    book, ledger = asyncio.run(_run_a_minute(store, clock, tmp_path))

    assert sorted(t.id for t in book) == sorted([GOOD_ID, "bad0bad0"])
    assert [r.outcome for r in ledger.list("bad0bad0")] == [Outcome.DELIVERED] * 2
    assert store.quarantine.entries() == []
    warned = [r.getMessage() for r in caplog.records if "bad0bad0" in r.getMessage()]
    assert len(warned) == 1
    assert "lay ahead of the clock; set to now" in warned[0]
    for name in fields:
        assert getattr(book.get("bad0bad0"), name) <= clock.now()


def test_a_record_set_aside_twice_is_kept_once(tmp_path: Path) -> None:
    """A daemon that dies before its next save finds the same record again: one entry, not two."""
    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    bad = _bad(cron="61 * * * *")
    _write(path, [bad, _good()])
    for _ in range(3):
        store = JsonStore(path, clock, local_zone="UTC")
        assert [t.id for t in store.load().tasks] == [GOOD_ID]
        assert store.set_aside == 1
        clock.advance(5)
    assert [e["record"] for e in store.quarantine.entries()] == [bad]


def test_nothing_is_dropped_when_the_quarantine_cannot_be_written(tmp_path: Path) -> None:
    """The record goes to quarantine first: if that fails, the start is refused and the store kept."""
    from kairosd.core.errors import StoreError

    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    _write(path, [_bad(cron="61 * * * *"), _good()])
    before = path.read_bytes()
    (tmp_path / "scheduled_tasks.quarantine.json").mkdir()  # a folder where the file should go
    with pytest.raises(StoreError, match="cannot be set aside"):
        JsonStore(path, clock, local_zone="UTC").load()
    assert path.read_bytes() == before


def test_claude_items_that_cannot_be_converted_are_set_aside_as_claude_wrote_them(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    ms = int((T0 - timedelta(hours=1)).timestamp() * 1000)
    good = {"id": "aa11bb22", "cron": "0 9 * * *", "prompt": "p", "createdAt": ms, "recurring": True}
    bad = {"id": "aa11bb23", "cron": "0 9 * * *", "prompt": "p", "createdAt": 10**20}
    path.write_text(json.dumps({"tasks": [bad, good]}))
    store = JsonStore(path, clock, local_zone="UTC")
    assert [t.id for t in store.load().tasks] == ["aa11bb22"]
    [entry] = store.quarantine.entries()
    assert entry["record"] == bad
    assert "createdAt" in entry["reason"]


def test_an_unreadable_quarantine_file_is_kept_aside_not_overwritten(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    path = tmp_path / "scheduled_tasks.json"
    _write(path, [_bad(cron="61 * * * *"), _good()])
    (tmp_path / "scheduled_tasks.quarantine.json").write_text("{ half written by hand")
    store = JsonStore(path, clock, local_zone="UTC")
    assert [t.id for t in store.load().tasks] == [GOOD_ID]
    assert len(store.quarantine.entries()) == 1
    kept = tmp_path / "scheduled_tasks.quarantine.json.unreadable-20260302T100030Z"
    assert kept.read_text() == "{ half written by hand"
