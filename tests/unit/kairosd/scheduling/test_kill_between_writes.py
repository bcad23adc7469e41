"""A kill between the two appends of a pass (issue 27): the missed ledger neither loses nor doubles a miss.

A pass writes each task's missed record (the summary ``kairos missed`` and ``list --problems`` show) and
its runs (the commit point: the next start takes the anchors from them). kairosd killed between the two
appends must, once started again, list every miss exactly once. Written runs first, a kill before the
summaries lost them for good: the restarted pass found the fires handled and wrote nothing.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scheduler_support import Harness, task

from kairosd.core.models import CatchUp, Task
from kairosd.core.records import Outcome
from kairosd.testing import FakeClock

ANCHOR = datetime(2026, 3, 2, 10, tzinfo=UTC)
NOW = datetime(2026, 3, 5, 10, 30, tzinfo=UTC)  # three days of hourly fires missed


class Killed(BaseException):
    """kairosd dying (SIGKILL) at this point: nothing after it runs."""


def hourly(n: int, catch_up: CatchUp) -> list[Task]:
    return [
        task("0 * * * *", task_id=f"{0x20000000 + i:08x}", catch_up=catch_up, created_at=ANCHOR).model_copy(
            update={"last_scheduled_for": ANCHOR}
        )
        for i in range(n)
    ]


def kill_at_the_second_append(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Let the pass's first append through and kill kairosd at its second, whichever ledger that is."""
    appends: list[str] = []

    def watched(name: str, real: Any) -> Any:
        def append(*args: Any, **kwargs: Any) -> Any:
            appends.append(name)
            if len(appends) == 2:
                raise Killed
            return real(*args, **kwargs)

        return append

    monkeypatch.setattr(h.ledger, "record_many", watched("runs", h.ledger.record_many))
    monkeypatch.setattr(h.missed, "add", watched("missed", h.missed.add))
    return appends


@pytest.mark.parametrize("catch_up", [CatchUp.SKIP, CatchUp.ONCE])
def test_a_kill_between_the_appends_of_a_pass_loses_no_miss_and_doubles_none(tmp_path: Path, monkeypatch, catch_up):
    tasks = hourly(5, catch_up)

    async def first_life() -> list[str]:
        h = Harness(tmp_path, tasks, FakeClock(NOW))
        appends = kill_at_the_second_append(h, monkeypatch)
        with pytest.raises(Killed):
            await h.start()
        return appends

    appends = asyncio.run(first_life())
    assert appends == ["missed", "runs"]  # the summaries are written before the commit point
    monkeypatch.undo()

    async def second_life() -> Harness:
        # The store as the kill left it (its anchors are written only after the runs), the same ledgers.
        h = Harness(tmp_path, tasks, FakeClock(NOW + timedelta(seconds=5)))
        await h.start()
        await h.at(h.clock.now() + timedelta(seconds=5))
        return h

    h = asyncio.run(second_life())
    missed = h.missed.list()
    assert sorted(m.task_id for m in missed) == sorted(t.id for t in tasks)  # each task once
    expected = 72 if catch_up is CatchUp.SKIP else 71  # 10:00 on the 2nd was handled; `once` fires 10:00 today
    assert {m.count for m in missed} == {expected}
    for t in tasks:
        runs = h.runs(t.id)
        assert [r.outcome for r in runs if r.outcome is Outcome.MISSED] == [Outcome.MISSED]
        fired = [r for r in runs if r.outcome is not Outcome.MISSED]
        assert len(fired) == (0 if catch_up is CatchUp.SKIP else 1)


def test_the_missed_ledger_read_again_holds_each_miss_once(tmp_path: Path, monkeypatch) -> None:
    """On disk too: the record written before the kill and the one the restarted pass wrote are one."""
    from kairosd.scheduling.ledger import MissedLedger

    tasks = hourly(3, CatchUp.SKIP)

    async def lives() -> None:
        h = Harness(tmp_path, tasks, FakeClock(NOW))
        kill_at_the_second_append(h, monkeypatch)
        with pytest.raises(Killed):
            await h.start()
        monkeypatch.undo()
        h = Harness(tmp_path, tasks, FakeClock(NOW + timedelta(seconds=5)))
        await h.start()

    asyncio.run(lives())
    ledger = MissedLedger(tmp_path / "missed.jsonl", FakeClock(NOW))
    records = ledger.load()
    assert sorted(r.task_id for r in records) == sorted(t.id for t in tasks)
