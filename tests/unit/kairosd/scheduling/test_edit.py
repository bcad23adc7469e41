"""Issue 24, item 17: ``kairos edit ID`` changes a task in place; its id and its history stay."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from scheduler_support import T0, Harness, task

from kairosd.core.errors import UsageError
from kairosd.core.records import Outcome
from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore
from kairosd.testing import FakeClock


async def _service(tmp_path: Path, *tasks: Any) -> tuple[Harness, Service]:
    h = Harness(tmp_path, list(tasks), FakeClock(T0))
    await h.start()
    return h, Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")


def test_edit_changes_schedule_and_prompt_and_keeps_the_id_and_history(tmp_path: Path) -> None:
    async def main() -> None:
        every5 = task("*/5 * * * *")
        h, service = await _service(tmp_path, every5)
        await h.at(T0.replace(minute=5, second=0))
        assert [r.outcome for r in h.runs(every5.id)] == [Outcome.DELIVERED]
        doc = await service.edit(every5.id[:4].upper(), {"cron": "0 * * * *", "prompt": "hourly now", "name": "h"})
        assert doc["id"] == every5.id
        assert doc["changed"] == ["name", "prompt", "schedule"]
        assert doc["cron"] == "0 * * * *"
        stored = h.book.get(every5.id)
        assert (stored.prompt, stored.name, stored.created_at) == ("hourly now", "h", every5.created_at)
        await h.at(T0.replace(minute=10, second=0))  # the old */5 slot: no fire any more
        await h.at(T0.replace(hour=11, minute=0, second=0))
        runs = h.runs(every5.id)
        assert [r.scheduled_for.minute for r in runs] == [5, 0]  # the history goes on under the same id
        assert [j.prompt for j in h.delivery.handoffs] == ["check the PRs", "hourly now"]
        assert ("task_changed", {"task_id": every5.id, "changed": ["name", "prompt", "schedule"]}) in h.seen

    asyncio.run(main())


def test_edit_validates_like_add_and_changes_nothing_when_refused(tmp_path: Path) -> None:
    async def main() -> None:
        daily = task("0 9 * * *")
        h, service = await _service(tmp_path, daily)
        before = h.book.get(daily.id)
        for body, words in (
            ({"cron": "61 * * * *"}, "61"),
            ({"cron": "0 9 * * *", "every": "2h"}, "at most one schedule"),
            ({"catch_up": "surface"}, "surface is for one-shots"),
            ({"jitter": "sometimes"}, "jitter"),
            ({"tz": "Mars/Olympus"}, "unknown time zone"),
            ({}, "nothing to change"),
            ({"prompt": "   "}, "non-empty prompt"),
        ):
            with pytest.raises(UsageError, match=words):
                await service.edit(daily.id, body)
            assert h.book.get(daily.id) is before, body
        one_shot = await service.edit(daily.id, {"in": "2h", "catch_up": "surface"})
        assert (one_shot["recurring"], one_shot["catch_up"]) == (False, "surface")
        assert one_shot["next_fires"][0]["scheduled_for"] == (T0 + timedelta(hours=2)).isoformat().replace(
            "+00:00", "Z"
        )

    asyncio.run(main())
