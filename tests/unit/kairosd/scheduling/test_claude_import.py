"""``kairos import`` (POST /v1/import): only Claude Code's fields, the restart's catch-up rules, once per task.

Issue #13: a ``target`` key in a cloned project's file made a shell task. Issue
#15 item 8: old slots fired late at import, a year-old one-shot was delivered,
and a second import delivered it again.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kairosd.core.events import EventBus
from kairosd.core.models import InboxTarget
from kairosd.core.records import Outcome
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.service import Service
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.inbox import InboxStore
from kairosd.store.store import JsonStore, StoreState
from kairosd.testing import FakeClock, FakeDelivery, InMemoryStore

NOW = datetime(2026, 3, 2, 23, 0, tzinfo=UTC)


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


class Kd:
    """A scheduler and service on a fake clock over ``store`` (in memory unless given)."""

    def __init__(self, tmp_path: Path, store: Any = None) -> None:
        self.clock = FakeClock(NOW)
        self.store = store if store is not None else InMemoryStore(StoreState.empty())
        self.book = TaskBook(self.store, self.store.load())
        self.ledger = RunLedger(tmp_path / "runs.jsonl", self.clock)
        self.ledger.load()
        self.missed = MissedLedger(tmp_path / "missed.jsonl", self.clock)
        self.missed.load()
        self.events = EventBus(self.clock.now)
        self.delivery = FakeDelivery("inbox", clock=self.clock)
        self.sched = Scheduler(self.book, self.ledger, self.missed, {"inbox": self.delivery}, self.clock, self.events)
        self.service = Service(self.sched, InboxStore(tmp_path / "inbox", self.clock), self.clock, self.events, "UTC")

    async def start(self) -> Kd:
        await self.sched.start()
        await self.sched.drain(5)
        return self

    async def import_(self, doc: Any, dry_run: bool = False) -> dict[str, Any]:
        args = (True,) if dry_run else ()
        report = await self.service.import_claude(json.dumps(doc), "UTC", *args)
        await self.sched.drain(5)
        return report

    async def minutes(self, n: int) -> None:
        for _ in range(n):
            self.clock.advance(60)
            await self.sched.tick()
            await self.sched.drain(5)

    def runs(self) -> list[Any]:
        return list(reversed(self.ledger.list(None, 1000)))


def test_keys_that_are_not_claudes_are_dropped_and_reported_by_id(tmp_path: Path) -> None:
    doc = {
        "tasks": [
            {
                "id": "aa11bb22",
                "cron": "* * * * *",
                "prompt": "hi",
                "createdAt": ms(NOW),
                "recurring": True,
                "target": {"kind": "shell", "argv": ["/bin/sh", "-c", "touch /tmp/pwned"]},
                "catch_up": "all",
                "meta": {"x": 1},
            }
        ]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        report = await kd.import_(doc)
        assert report["dropped"] == [{"id": "aa11bb22", "keys": ["catch_up", "meta", "target"]}]
        task = kd.book.get("aa11bb22")
        assert task.target == InboxTarget()
        assert task.model_extra == {}
        assert task.meta == {}
        await kd.minutes(1)
        assert [handoff.prompt for handoff in kd.delivery.handoffs] == ["hi"]  # to the inbox, not a shell

    asyncio.run(main())


def test_an_id_that_is_not_claudes_shape_is_rejected_naming_the_id(tmp_path: Path) -> None:
    base = {"cron": "0 9 * * *", "prompt": "p", "createdAt": ms(NOW)}
    doc = {"tasks": [{**base, "id": "aa11bb22\n"}, {**base, "id": "AA11BB22"}, {**base, "id": "aa11bb2"}]}

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        report = await kd.import_(doc)
        assert report["imported"] == []
        assert [(r["index"], r["id"]) for r in report["rejected"]] == [
            (0, "aa11bb22\\n"),
            (1, "AA11BB22"),
            (2, "aa11bb2"),
        ]
        assert report["rejected"][0]["reason"] == (
            "id: 'aa11bb22\\n' is not a Claude Code task id (8 lowercase hex digits)"
        )
        assert len(kd.book) == 0

    asyncio.run(main())


def test_dry_run_shows_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    doc = {
        "tasks": [
            {"id": "ee55ff66", "cron": "0 12 * * *", "prompt": "old", "createdAt": ms(NOW - timedelta(days=365))},
            {"id": "aa11bb22", "cron": "0 9 * * *", "prompt": "new", "createdAt": ms(NOW), "target": {}},
            {"id": "bad", "cron": "0 9 * * *", "prompt": "p", "createdAt": ms(NOW)},
        ]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        seen: list[str] = []
        kd.events.publish = lambda kind, **data: seen.append(kind)  # type: ignore[method-assign]
        before = kd.store.load()
        report = await kd.import_(doc, dry_run=True)
        assert report["dry_run"] is True
        assert [(t["id"], t["on_import"]) for t in report["imported"]] == [
            ("ee55ff66", "1 missed fire(s) surfaced, not delivered"),
            ("aa11bb22", "nothing due yet"),
        ]
        assert report["dropped"] == [{"id": "aa11bb22", "keys": ["target"]}]
        assert [r["id"] for r in report["rejected"]] == ["bad"]
        assert len(kd.book) == 0
        assert kd.store.load() == before
        assert kd.runs() == []
        assert kd.missed.list() == []
        assert seen == []

    asyncio.run(main())


def test_a_year_old_one_shot_is_surfaced_not_delivered_and_a_second_import_does_nothing(tmp_path: Path) -> None:
    """Issue #15 item 8: it was delivered 364 days late, and again at the second import."""
    doc = {
        "tasks": [{"id": "ee55ff66", "cron": "0 12 * * *", "prompt": "p", "createdAt": ms(NOW - timedelta(days=365))}]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        first = await kd.import_(doc)
        assert [t["id"] for t in first["imported"]] == ["ee55ff66"]
        await kd.minutes(2)
        second = await kd.import_(doc)
        await kd.minutes(2)
        assert kd.delivery.handoffs == []
        assert [r.outcome for r in kd.runs()] == [Outcome.MISSED]
        [record] = kd.missed.list()
        assert record.action == "surfaced"
        assert record.reason.startswith("the fire was due before the task was imported")
        assert second["imported"] == []
        assert [s["id"] for s in second["skipped"]] == ["ee55ff66"]
        assert "imported before" in second["skipped"][0]["reason"]
        # Remembered durably: a restarted daemon (a new book over the same store) skips it too.
        again = await Kd(tmp_path / "again", kd.store).start()
        third = await again.import_(doc)
        assert third["imported"] == []
        assert again.delivery.handoffs == []

    (tmp_path / "again").mkdir()
    asyncio.run(main())


def _recurring_doc() -> dict[str, Any]:
    """Daily at 09:00, created 3 days ago, last fired by Claude yesterday at 09:02; now is 23:00."""
    return {
        "tasks": [
            {
                "id": "aa11bb22",
                "cron": "0 9 * * *",
                "prompt": "daily",
                "createdAt": ms(NOW - timedelta(days=3)),
                "lastFiredAt": ms(datetime(2026, 3, 1, 9, 2, tzinfo=UTC)),
                "recurring": True,
            }
        ]
    }


def test_a_recurring_import_follows_the_same_catch_up_rule_as_the_same_file_copied_in_as_the_store(
    tmp_path: Path,
) -> None:
    """Import and restart share one rule: today's 09:00 slot is a catch-up; earlier ones were Claude's."""

    def outcome(kd: Kd) -> list[tuple[Any, ...]]:
        return [(r.scheduled_for, r.outcome, r.catch_up, r.late_by_s) for r in kd.runs()]

    async def imported() -> list[tuple[Any, ...]]:
        kd = await Kd(tmp_path / "a").start()
        await kd.import_(_recurring_doc())
        assert kd.missed.list() == []  # slots up to lastFiredAt were handled by Claude
        return outcome(kd)

    async def copied_in() -> list[tuple[Any, ...]]:
        path = tmp_path / "b" / "scheduled_tasks.json"
        path.write_text(json.dumps(_recurring_doc()))
        kd = await Kd(tmp_path / "b", JsonStore(path, FakeClock(NOW), local_zone="UTC")).start()
        return outcome(kd)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    by_import, by_store = asyncio.run(imported()), asyncio.run(copied_in())
    assert by_import == by_store == [(datetime(2026, 3, 2, 9, tzinfo=UTC), Outcome.DELIVERED, True, 14 * 3600.0)]


def test_an_old_recurring_import_reports_every_miss_since_its_creation(tmp_path: Path) -> None:
    """Issue #15 item 8: the record said count 1008 over the first slots after creation. Issue 27: the
    year's misses are counted (not listed), from the first slot after creation."""
    doc = {
        "tasks": [
            {
                "id": "cc33dd44",
                "cron": "*/10 * * * *",
                "prompt": "p",
                "createdAt": ms(NOW - timedelta(days=365)),
                "recurring": True,
            }
        ]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        await kd.import_(doc)
        [record] = kd.missed.list()
        assert record.first_scheduled_for is not None
        created = NOW - timedelta(days=365)
        assert created < record.first_scheduled_for <= created + timedelta(minutes=10)
        assert record.count == 365 * 24 * 6 - 1
        [fired] = [r for r in kd.runs() if r.outcome is Outcome.DELIVERED]
        assert (fired.scheduled_for, fired.catch_up) == (NOW, True)

    asyncio.run(main())


def test_an_import_with_a_far_slot_neither_crashes_nor_saves_what_would_crash(tmp_path: Path) -> None:
    """Issue #13: "last_scheduled_for": 9999 answered 500 and saved a task that crashed every later start."""
    doc = {
        "tasks": [
            {
                "id": "aa11bb22",
                "cron": "* * * * *",
                "prompt": "p",
                "createdAt": ms(NOW),
                "recurring": True,
                "last_scheduled_for": "9999-12-31T23:59:59Z",
            },
            {
                "id": "aa11bb23",
                "cron": "* * * * *",
                "prompt": "p",
                "createdAt": ms(NOW),
                "lastFiredAt": 253402300799000,
            },
        ]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        report = await kd.import_(doc)
        assert [t["id"] for t in report["imported"]] == ["aa11bb22"]
        assert report["dropped"] == [{"id": "aa11bb22", "keys": ["last_scheduled_for"]}]
        [rejected] = report["rejected"]
        assert rejected["id"] == "aa11bb23"
        assert "outside the supported range" in rejected["reason"]
        await kd.minutes(2)
        assert len(kd.delivery.handoffs) == 2
        assert [t.id for t in kd.store.load().tasks] == ["aa11bb22"]

    asyncio.run(main())


def test_an_import_refuses_times_ahead_of_the_clock_that_would_silence_a_task(tmp_path: Path) -> None:
    """Issue 27, finding 6: a lastFiredAt 32 years ahead silenced the task until 2058; year 3000 loaded silently."""
    base = {"cron": "* * * * *", "prompt": "p", "createdAt": ms(NOW - timedelta(days=1)), "recurring": True}
    doc = {
        "tasks": [
            {**base, "id": "aa11bb21", "lastFiredAt": ms(NOW.replace(year=2058))},
            {**base, "id": "aa11bb22", "createdAt": ms(NOW.replace(year=3000))},
            {**base, "id": "aa11bb23", "lastFiredAt": ms(NOW + timedelta(seconds=60))},  # within the skew
            {**base, "id": "aa11bb24"},
        ]
    }

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        report = await kd.import_(doc)
        assert sorted(t["id"] for t in report["imported"]) == ["aa11bb23", "aa11bb24"]
        reasons = {r["id"]: r["reason"] for r in report["rejected"]}
        assert reasons["aa11bb21"].startswith("last_fired_at 2058-03-02T23:00:00+00:00 is 32 years ahead of the clock")
        assert reasons["aa11bb22"].startswith("created_at 3000-03-02T23:00:00+00:00 is 974 years ahead")
        await kd.minutes(2)
        assert {h.task_id for h in kd.delivery.handoffs} == {"aa11bb23", "aa11bb24"}

    asyncio.run(main())


def test_project_sends_the_imported_tasks_to_a_live_session_there(tmp_path: Path) -> None:
    import pytest

    from kairosd.core.errors import UsageError
    from kairosd.core.models import SessionTarget

    doc = {"tasks": [{"id": "aa11bb22", "cron": "0 9 * * *", "prompt": "p", "createdAt": ms(NOW), "target": {}}]}

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        with pytest.raises(UsageError, match="absolute"):
            await kd.service.import_claude(json.dumps(doc), "UTC", False, "relative/dir")
        report = await kd.service.import_claude(json.dumps(doc), "UTC", False, "/home/u/proj")
        assert report["imported"][0]["target"]["project"] == "/home/u/proj"
        assert kd.book.get("aa11bb22").target == SessionTarget(project="/home/u/proj")

    asyncio.run(main())


def test_a_catch_up_at_import_names_its_slot_as_the_cli_shows_times(tmp_path: Path) -> None:
    """Issue 24, item 13: ``on_import`` writes the slot as every human view does (to the second, no ``T``)."""
    task = {
        "id": "cc33dd44",
        "cron": "59 22 * * *",
        "recurring": True,
        "prompt": "p",
        "createdAt": ms(NOW - timedelta(days=1)),
    }
    doc = {"tasks": [task]}

    async def main() -> None:
        kd = await Kd(tmp_path).start()
        report = await kd.import_(doc, dry_run=True)
        assert [t["on_import"] for t in report["imported"]] == [
            "fires its 2026-03-02 22:59:00+00:00 slot now (catch-up, 60s late)"
        ]

    asyncio.run(main())
