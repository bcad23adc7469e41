"""Issue #13: an exception while planning, firing or expiring ONE task pauses that task; the loop goes on.

``kairos add '* * * * *' --expires 3000000 x`` used to kill the scheduler loop
at the next minute ("date value out of range"). The records are written
straight into the task book here (the API will refuse such values): the guard
must hold for whatever is stored.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scheduler_support import T0, Harness, task

from kairosd.core.records import Outcome
from kairosd.scheduling import scheduler as scheduler_module
from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore


def _paused_with_reason(h: Harness, task_id: str, *words: str) -> str:
    current = h.book.get(task_id)
    assert current.paused
    reason = current.paused_reason or ""
    assert all(word in reason for word in words), reason
    failed = [r for r in h.runs(task_id) if r.outcome is Outcome.FAILED]
    assert failed
    assert failed[-1].reason == reason
    return reason


def test_an_expiry_past_year_9999_pauses_that_task_and_the_loop_goes_on(tmp_path: Path) -> None:
    async def main() -> None:
        # model_copy does not validate: the record is as a bug or a hand edit would leave it.
        bad = task("* * * * *", prompt="x").model_copy(update={"expires_after_days": 3_000_000})
        good = task("* * * * *", prompt="good")
        h = Harness(tmp_path, [bad, good], clock=_clock())
        await h.start()
        for minute in (1, 2, 3):
            await h.at(T0.replace(minute=minute, second=0) + timedelta(hours=0))
        assert [r.outcome for r in h.runs(good.id)] == [Outcome.DELIVERED] * 3
        _paused_with_reason(h, bad.id, "expire", "OverflowError", "out of range", "kairos resume")
        # It fired once (the fire was recorded before the expiry was computed), then never again.
        assert [r.outcome for r in h.runs(bad.id)] == [Outcome.DELIVERED, Outcome.FAILED]
        assert h.book.get(bad.id).last_scheduled_for == T0.replace(minute=1, second=0)
        assert (
            "task_changed",
            {"task_id": bad.id, "paused": True, "paused_reason": h.book.get(bad.id).paused_reason},
        ) in h.seen
        # The store holds the paused task with its reason.
        stored = {t.id: t for t in h.store.load().tasks}
        assert stored[bad.id].paused
        assert stored[bad.id].paused_reason

    asyncio.run(main())


def test_an_anchor_in_year_9999_pauses_that_task_at_start(tmp_path: Path) -> None:
    async def main() -> None:
        bad = task("* * * * *").model_copy(
            update={"last_scheduled_for": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)}
        )
        good = task("* * * * *", prompt="good")
        h = Harness(tmp_path, [bad, good], clock=_clock())
        await h.start()
        await h.at(T0.replace(minute=1, second=0))
        assert [r.outcome for r in h.runs(good.id)] == [Outcome.DELIVERED]
        _paused_with_reason(h, bad.id, "plan", "OverflowError")

    asyncio.run(main())


def test_a_decision_that_raises_for_one_task_pauses_only_that_task(tmp_path: Path, monkeypatch: Any) -> None:
    """Whatever raises while deciding (here: forced), the other tasks of the same pass still fire."""
    real = scheduler_module.decide

    def decide(due: Any, *args: Any, **kwargs: Any) -> Any:
        due = list(due)
        if any(item.task.prompt == "bad" for item in due):
            raise ValueError("year 10000 is out of range")
        return real(due, *args, **kwargs)

    monkeypatch.setattr(scheduler_module, "decide", decide)

    async def main() -> None:
        bad = task("* * * * *", prompt="bad")
        good = task("* * * * *", prompt="good")
        h = Harness(tmp_path, [bad, good], clock=_clock())
        await h.start()
        await h.at(T0.replace(minute=1, second=0))
        await h.at(T0.replace(minute=2, second=0))
        assert [r.outcome for r in h.runs(good.id)] == [Outcome.DELIVERED] * 2
        _paused_with_reason(h, bad.id, "fire", "ValueError: year 10000")
        assert h.book.get(bad.id).last_scheduled_for == T0.replace(minute=1, second=0)

    asyncio.run(main())


def test_the_loop_survives_a_failed_pass(tmp_path: Path, monkeypatch: Any) -> None:
    """The last guard: a pass that raises outside any one task is logged, and the loop ticks again."""

    async def main() -> None:
        h = Harness(tmp_path, [task("* * * * *")], clock=_clock(), max_sleep_s=0.01, store_retry_s=0.01)
        await h.start()
        real, calls = h.sched.tick, []

        async def tick() -> float:
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")
            if len(calls) == 3:
                stop.set()
            return await real()

        monkeypatch.setattr(h.sched, "tick", tick)
        stop = asyncio.Event()
        await asyncio.wait_for(h.sched.run(stop), 5)
        assert len(calls) == 3

    asyncio.run(main())


def test_resume_clears_the_reason(tmp_path: Path) -> None:
    async def main() -> None:
        bad = task("* * * * *").model_copy(update={"expires_after_days": 3_000_000})
        h = Harness(tmp_path, [bad], clock=_clock())
        await h.start()
        await h.at(T0.replace(minute=1, second=0))
        assert h.book.get(bad.id).paused_reason
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        view = service.get(bad.id)
        assert view["status"] == "paused"
        assert "expire" in view["paused_reason"]
        view = await service.set_paused(bad.id, False)
        assert view["paused_reason"] is None
        assert not view["paused"]

    asyncio.run(main())


def _clock() -> Any:
    from kairosd.testing import FakeClock

    return FakeClock(T0)
