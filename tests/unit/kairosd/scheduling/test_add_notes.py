"""What ``add`` says about what it changed or cannot honour (issue 24, items 4 and 6): contradictory
options are refused, a capped jitter and a wall time moved by DST are named in the task's note."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.errors import UsageError
from kairosd.core.events import EventBus
from kairosd.delivery.shell import ShellDelivery
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.service import Service
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.inbox import InboxStore
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, FakeDelivery, InMemoryStore

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def _with_service(tmp_path: Path, body: Callable[[Service], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        clock = FakeClock(NOW)
        store = InMemoryStore(StoreState.empty())
        book = TaskBook(store, store.load())
        ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        ledger.load()
        missed = MissedLedger(tmp_path / "missed.jsonl", clock)
        missed.load()
        events = EventBus(clock.now)
        shell = ShellDelivery(tmp_path / "runs", clock, env={"PATH": "/nonexistent", "HOME": str(tmp_path)})
        deliveries = {"inbox": FakeDelivery("inbox"), "shell": shell}
        scheduler = Scheduler(book, ledger, missed, deliveries, clock, events)
        await scheduler.start()
        service = Service(scheduler, InboxStore(tmp_path / "inbox", clock), clock, events, "UTC")
        try:
            return await body(service)
        finally:
            await scheduler.shutdown(1.0)

    return asyncio.run(main())


def _add(tmp_path: Path, request: dict[str, Any]) -> dict[str, Any]:
    return _with_service(tmp_path, lambda service: service.add({"prompt": "p", **request}))


@pytest.mark.parametrize(
    ("request_", "refusal"),
    [
        ({"cron": "0 9 * * *", "expires_after_days": 3, "permanent": True}, "contradict each other"),
        ({"in": "1h", "expires_after_days": 3}, "expires_after_days is for recurring tasks"),
        ({"at": "2026-12-01T09:00", "expires_after_days": 3}, "expires_after_days is for recurring tasks"),
        ({"cron": "0 9 * * *", "once": True, "expires_after_days": 3}, "expires_after_days is for recurring tasks"),
    ],
)
def test_contradictory_options_are_refused(tmp_path, request_, refusal):
    """`--expires 3 --permanent` was accepted (permanent won), and --expires on a one-shot meant nothing."""
    with pytest.raises(UsageError, match=refusal):
        _add(tmp_path, request_)


def test_options_that_agree_are_kept(tmp_path):
    assert _add(tmp_path, {"cron": "0 9 * * *", "expires_after_days": None, "permanent": True})["permanent"]
    assert _add(tmp_path, {"cron": "0 9 * * *", "expires_after_days": 3})["expires_after_days"] == 3


def test_a_jitter_that_half_the_period_caps_is_named(tmp_path):
    """`--jitter max:1h` on a */5 task moves fires at most 2m30s, while nothing said so."""
    task = _add(tmp_path, {"cron": "*/5 * * * *", "jitter": "max:1h"})
    assert task["note"] == (
        "jitter max:1h is capped at 2m30s for this task: at most half the 5m between its fires, so runs cannot overlap"
    )
    assert _add(tmp_path, {"cron": "0 9 * * *", "jitter": "max:1h"})["note"] is None  # a day apart: 1h holds
    # The shortest gap counts: Friday to Monday is 3 days, Monday to Tuesday one.
    assert "capped at 12h" in _add(tmp_path, {"cron": "0 9 * * 1-5", "jitter": "max:1d"})["note"]


def test_an_interval_note_and_a_jitter_note_are_both_given(tmp_path):
    note = _add(tmp_path, {"every": "7m", "jitter": "max:10m"})["note"]
    assert note.startswith("cron cannot repeat every 7m evenly")
    assert "jitter max:10m is capped at 3m" in note


@pytest.mark.parametrize(
    ("at", "note"),
    [
        (
            "2027-03-28T02:30",
            "2027-03-28 02:30 does not exist in Europe/Berlin (the clocks go forward then); "
            "using 2027-03-28 03:00+02:00, the moment they change",
        ),
        (
            "2027-10-31T02:30",
            "2027-10-31 02:30 happens twice in Europe/Berlin (the clocks go back then); using the first, "
            "2027-10-31 02:30+02:00 (CEST), not 2027-10-31 02:30+01:00 (CET); write 2027-10-31T02:30+01:00 "
            "for the second",
        ),
        ("2027-03-28T04:30", None),
        ("2027-03-28T02:30+01:00", None),  # an offset names one instant: nothing was moved
    ],
)
def test_a_wall_time_in_a_dst_gap_or_fold_is_named(tmp_path, at, note):
    """`--at 2027-03-28T02:30 --tz Europe/Berlin` quietly became 03:00."""
    task = _add(tmp_path, {"at": at, "tz": "Europe/Berlin"})
    assert task["note"] == note


def test_a_clock_time_in_tomorrows_gap_is_named(tmp_path):
    """`--at 02:30` the day before the change: the next 02:30 is the one that does not exist."""

    async def body(service: Service) -> dict[str, Any]:
        service.clock.set(datetime(2027, 3, 27, 12, 0, tzinfo=UTC))  # type: ignore[attr-defined]
        return await service.add({"prompt": "p", "at": "02:30", "tz": "Europe/Berlin"})

    assert "02:30 does not exist in Europe/Berlin" in _with_service(tmp_path, body)["note"]


def test_check_target_false_skips_only_the_checks_that_may_pass_later(tmp_path):
    """Issue 24, item 7: a command not on the PATH is refused; `add --no-check` (check_target false) adds it."""
    target = {"kind": "shell", "argv": ["nosuchprogram"], "cwd": str(tmp_path)}
    with pytest.raises(UsageError, match="nosuchprogram is not found on kairosd's PATH"):
        _add(tmp_path, {"cron": "0 9 * * *", "target": target})
    assert _add(tmp_path, {"cron": "0 9 * * *", "target": target, "check_target": False})["id"]
    with pytest.raises(UsageError, match="working directory does not exist"):
        _add(tmp_path, {"cron": "0 9 * * *", "target": {**target, "cwd": "/nonexistent"}, "check_target": False})
