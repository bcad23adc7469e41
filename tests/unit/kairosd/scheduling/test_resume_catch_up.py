"""Issue 24, item 2: a one-shot paused past its time follows its catch-up policy on resume.

It used to become ``done`` without ever firing: resume moved its anchor past
the slot, so ``list`` showed it done, with nothing in history or ``missed``.
``done`` must mean that it ran, or that the miss was recorded and reported.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from scheduler_support import T0, Harness, task

from kairosd.core.models import CatchUp
from kairosd.core.records import Outcome
from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore
from kairosd.testing import FakeClock


async def _paused_past_its_time(tmp_path: Path, catch_up: CatchUp) -> tuple[Harness, Service, str, dict]:
    one_shot = task(at=T0 + timedelta(hours=1), recurring=False, catch_up=catch_up)
    h = Harness(tmp_path, [one_shot], FakeClock(T0))
    await h.start()
    service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
    await service.set_paused(one_shot.id[:5].upper(), True)  # a prefix, in upper case (item 10)
    await h.at(T0 + timedelta(hours=2))  # its time passes while it is paused
    assert h.runs(one_shot.id) == []
    view = await service.set_paused(one_shot.id, False)
    await h.sched.drain(5)
    return h, service, one_shot.id, view


def test_a_one_shot_with_catch_up_once_fires_late_on_resume(tmp_path: Path) -> None:
    async def main() -> None:
        h, _, task_id, view = await _paused_past_its_time(tmp_path, CatchUp.ONCE)
        runs = h.runs(task_id)
        assert [(r.outcome, r.catch_up) for r in runs] == [(Outcome.DELIVERED, True)]
        assert runs[0].scheduled_for == T0 + timedelta(hours=1)
        assert [j.prompt for j in h.delivery.handoffs] == ["check the PRs"]
        assert view["caught_up"]["action"] == "fired"
        assert view["caught_up"]["run_id"] == runs[0].run_id
        assert view["status"] == "done"
        assert h.book.find(task_id) is None  # done, because it ran

    asyncio.run(main())


def test_a_one_shot_with_catch_up_surface_is_recorded_as_missed_on_resume(tmp_path: Path) -> None:
    async def main() -> None:
        h, service, task_id, view = await _paused_past_its_time(tmp_path, CatchUp.SURFACE)
        assert h.delivery.handoffs == []
        assert [r.outcome for r in h.runs(task_id)] == [Outcome.MISSED]
        missed = service.missed()
        assert [(m["task_id"], m["action"]) for m in missed] == [(task_id, "surfaced")]
        assert "paused" in missed[0]["reason"]
        assert view["caught_up"]["action"] == "missed"
        assert "surfaced" in view["caught_up"]["reason"]

    asyncio.run(main())


def test_resuming_a_recurring_task_does_not_count_paused_slots_as_missed(tmp_path: Path) -> None:
    async def main() -> None:
        recurring = task("*/5 * * * *")
        h = Harness(tmp_path, [recurring], FakeClock(T0))
        await h.start()
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        await service.set_paused(recurring.id, True)
        await h.at(T0 + timedelta(hours=2))
        view = await service.set_paused(recurring.id, False)
        await h.sched.drain(5)
        assert h.runs(recurring.id) == []
        assert service.missed() == []
        assert "caught_up" not in view
        assert view["status"] == "scheduled"

    asyncio.run(main())
