"""The store's anchors kept in step with the run ledger (kairosd.scheduling.anchors), without a scheduler loop.

A real TaskBook over an in-memory store that fails on demand, a real RunLedger
in tmp_path, a FakeClock. Background writes are flushed and awaited, never slept for.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.errors import StoreError
from kairosd.core.events import EventBus
from kairosd.core.models import Task, new_task
from kairosd.core.plan import Fire
from kairosd.core.records import Outcome, Run
from kairosd.scheduling.anchors import Anchors
from kairosd.scheduling.firing import Advance
from kairosd.scheduling.ledger import RunLedger
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)
SLOT = T0.replace(minute=5, second=0)


class BrokenStore(InMemoryStore):
    """Saves fail while ``broken`` is set."""

    broken = False

    def save(self, state: StoreState) -> None:
        if self.broken:
            raise StoreError("cannot write scheduled_tasks.json: No space left on device")
        super().save(state)


class Setup:
    def __init__(self, tmp_path: Path, *tasks: Task, persist_delay_s: float = 0.5) -> None:
        self.clock = FakeClock(T0)
        self.store = BrokenStore(StoreState(schema_version=2, tasks=list(tasks)))
        self.book = TaskBook(self.store, self.store.load())
        self.ledger = RunLedger(tmp_path / "runs.jsonl", self.clock)
        self.ledger.load()
        self.events = EventBus(self.clock.now)
        self.replanned: list[str] = []
        self.anchors = Anchors(self.book, self.ledger, self.events, persist_delay_s, self.replanned.append)

    async def settle(self) -> None:
        """Let the background store write go now and wait for it."""
        self.anchors.flush()
        while self.anchors.writing:
            await asyncio.wait(set(self.anchors.writing))

    def stored(self, task_id: str) -> Task:
        (task,) = [t for t in self.store.load().tasks if t.id == task_id]
        return task


def task(cron: str | None = "*/5 * * * *", **kw: Any) -> Task:
    kw.setdefault("created_at", T0)
    kw.setdefault("tz", "UTC")
    kw.setdefault("prompt", "check the PRs")
    return new_task(cron=cron, **kw)


def fired_run(t: Task, slot: datetime) -> Run:
    return Run(
        task_id=t.id,
        scheduled_for=slot,
        planned_for=slot,
        dispatched_at=slot,
        target=t.target.model_dump(mode="json"),
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_advances_share_one_background_store_write(tmp_path):
    """Anchors move in memory at once; the store gets them in one write, then the book's anchor is the only one."""

    async def main():
        a, b = task(), task("*/10 * * * *")
        s = Setup(tmp_path, a, b)
        s.anchors.advance([Advance(a, Fire(SLOT, SLOT), SLOT, True)])
        s.anchors.advance([Advance(b, Fire(SLOT, SLOT), SLOT, False)])
        assert s.book.get(a.id).last_fired_at == SLOT
        assert s.book.get(b.id).last_fired_at is None  # missed, not fired
        assert s.store.saves == 0
        await s.settle()
        assert s.store.saves == 1
        assert (s.stored(a.id).last_scheduled_for, s.stored(b.id).last_scheduled_for) == (SLOT, SLOT)
        assert not s.book.dirty

    run(main())


def test_nothing_to_advance_writes_nothing(tmp_path):
    async def main():
        s = Setup(tmp_path, task())
        s.anchors.advance([])
        assert s.anchors.writing == set()
        await s.settle()
        assert s.store.saves == 0

    run(main())


async def fired_while_the_store_refuses(tmp_path: Path) -> tuple[Task, Setup]:
    """A task that fired at SLOT while the store refused every write."""
    t = task()
    s = Setup(tmp_path, t)
    s.store.broken = True
    s.anchors.advance([Advance(t, Fire(SLOT, SLOT), SLOT, True)])
    await s.settle()
    return t, s


def test_a_rolled_back_store_write_keeps_the_ledgers_anchor_and_replans(tmp_path):
    """The store refuses the write: the book rolls back, the ledger's anchor is applied again (never fired
    twice), the task is replanned; once the store heals, the anchor reaches it."""

    async def main():
        t, s = await fired_while_the_store_refuses(tmp_path)
        assert s.book.error is not None
        assert s.replanned == [t.id]
        assert s.book.get(t.id).last_scheduled_for == SLOT  # applied again after the rollback
        assert s.anchors.anchor(s.book.get(t.id)) == SLOT
        assert s.stored(t.id).last_scheduled_for is None
        s.store.broken = False
        await s.anchors.persist_now()
        assert s.book.error is None
        assert s.stored(t.id).last_scheduled_for == SLOT

    run(main())


def test_the_anchor_is_the_later_of_the_store_and_the_ledger(tmp_path):
    """While the store lags, planning starts after the ledger's anchor; a store anchor ahead of it wins."""

    async def main():
        t, s = await fired_while_the_store_refuses(tmp_path)
        behind = t.model_copy(update={"last_scheduled_for": SLOT - timedelta(minutes=5)})
        ahead = t.model_copy(update={"last_scheduled_for": SLOT + timedelta(minutes=5)})
        assert s.anchors.anchor(behind) == SLOT
        assert s.anchors.anchor(ahead) == SLOT + timedelta(minutes=5)
        assert s.anchors.anchor(task()) == T0  # nothing handled: its creation time

    run(main())


def test_recover_applies_the_anchors_the_store_lost_and_says_so(tmp_path, caplog: pytest.LogCaptureFixture):
    """At start, fires the ledger has and the store does not (a crash in between) move the anchors;
    a one-shot so handled is removed. Tasks the store is up to date on are left alone."""
    rec, shot, current = task(), task(None, at=T0 + timedelta(minutes=1)), task()
    current = current.model_copy(update={"last_scheduled_for": SLOT})
    s = Setup(tmp_path, rec, shot, current)
    missed = fired_run(shot, T0 + timedelta(minutes=1)).model_copy(
        update={"dispatched_at": None, "finished_at": SLOT, "outcome": Outcome.MISSED}
    )
    s.ledger.record_many([fired_run(rec, SLOT), missed, fired_run(current, SLOT)])
    with caplog.at_level(logging.WARNING, logger="kairosd.scheduling.scheduler"):
        s.anchors.recover()
    assert s.book.get(rec.id).last_scheduled_for == SLOT
    assert s.book.get(rec.id).last_fired_at == SLOT
    assert shot.id not in s.book
    assert s.book.get(current.id) == current
    assert [r.getMessage() for r in caplog.records] == [
        "2 task(s) had fires recorded in the run ledger but not in the store; caught up"
    ]
