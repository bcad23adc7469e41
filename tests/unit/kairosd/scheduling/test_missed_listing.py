"""Issue 24, item 5: `kairos missed` lists fires caught up late too, with what was done;
``--catch-up surface`` is for one-shots only; ``add --help`` says what each policy does."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from scheduler_support import T0, Harness, task

from kairosd.core.errors import UsageError
from kairosd.core.models import CatchUp
from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore
from kairosd.testing import FakeClock


def test_missed_lists_a_fire_caught_up_late_and_clear_forgets_it(tmp_path: Path) -> None:
    async def main() -> None:
        hourly = task("0 * * * *", catch_up=CatchUp.ONCE)
        h = Harness(tmp_path, [hourly], FakeClock(T0 + timedelta(hours=3)))  # kairosd was down 3 hours
        await h.start()
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        listed = service.missed()
        # The 11:00 and 12:00 slots are recorded (count 2); 13:00 was fired late, and is listed too.
        assert sorted((m["task_id"], m["action"], m["count"]) for m in listed) == [
            (hourly.id, "caught up: fired late", 1),
            (hourly.id, "recorded", 2),
        ]
        late = next(m for m in listed if m["action"].startswith("caught up"))
        [run] = [r for r in h.runs(hourly.id) if r.catch_up]
        assert late["run_id"] == run.run_id
        assert late["scheduled_for"] == run.scheduled_for.isoformat()
        assert await service.clear_missed() == 2
        assert service.missed() == []
        assert h.book.get_field("missed_cleared_at") is not None  # durable in the store

    asyncio.run(main())


def test_surface_is_refused_on_a_recurring_task_and_kept_for_one_shots(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, [], FakeClock(T0))
        await h.start()
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        with pytest.raises(UsageError, match="surface is for one-shots"):
            await service.add({"cron": "0 9 * * *", "prompt": "x", "catch_up": "surface"})
        with pytest.raises(UsageError, match="surface is for one-shots"):
            await service.add({"every": "2h", "prompt": "x", "catch_up": "surface"})
        one_shot = await service.add({"in": "2h", "prompt": "x", "catch_up": "surface"})
        assert one_shot["catch_up"] == "surface"
        once = await service.add({"cron": "0 9 * * *", "once": True, "prompt": "x", "catch_up": "surface"})
        assert once["catch_up"] == "surface"

    asyncio.run(main())


def test_add_help_says_what_each_catch_up_policy_does_and_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from kairos.app import run

    with pytest.raises(SystemExit):
        run(["add", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("skip: record them", "once (default for recurring tasks)", "all: fire the misses",
                  "surface (default for one-shots, one-shots only)"):  # fmt: skip
        assert words in text
