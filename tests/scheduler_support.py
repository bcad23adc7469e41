"""The scheduler on a fake clock, for the scheduling tests: a :class:`Harness` and a task factory.

A harness is a scheduler over an in-memory store, real ledgers in a test's folder and a
FakeDelivery; a test moves the FakeClock and calls ``tick()`` (``at``) directly. Used by
tests/unit/kairosd/scheduling/test_scheduler.py and the other tests of the scheduler.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kairosd.core.events import EventBus
from kairosd.core.models import Task, new_task
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, FakeDelivery, InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)  # a Monday


class Harness:
    def __init__(self, tmp_path: Path, tasks: list[Task], clock: FakeClock, **config: Any) -> None:
        self.clock = clock
        self.store = InMemoryStore(StoreState(schema_version=2, tasks=tasks))
        self.book = TaskBook(self.store, self.store.load())
        self.ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        self.ledger.load()
        self.missed = MissedLedger(tmp_path / "missed.jsonl", clock)
        self.missed.load()
        self.events = EventBus(clock.now)
        self.delivery = FakeDelivery("inbox", clock=clock, gate=config.pop("gate", None))
        self.sched = Scheduler(
            self.book, self.ledger, self.missed, {"inbox": self.delivery}, clock, self.events,
            SchedulerConfig(**config),
        )  # fmt: skip
        self.seen: list[tuple[str, dict[str, Any]]] = []
        publish = self.events.publish

        def capture(kind: str, **data: Any) -> None:
            self.seen.append((kind, data))
            publish(kind, **data)

        self.events.publish = capture  # type: ignore[method-assign]
        # A listener, as `kairos watch` or a hook would be: with none, kairosd tells nobody of a miss.
        self.listener = self.events.subscribe()

    async def start(self) -> None:
        await self.sched.start()
        await self.sched.drain(5)

    async def at(self, when: datetime) -> float:
        """Move both clocks to ``when`` (no suspend) and tick."""
        self.clock.advance((when - self.clock.now()).total_seconds())
        delay = await self.sched.tick()
        await self.sched.drain(5)
        return delay

    def runs(self, task_id: str | None = None) -> list[Any]:
        return list(reversed(self.ledger.list(task_id, 1000)))


def task(cron: str | None = None, **kw: Any) -> Task:
    kw.setdefault("created_at", T0)
    kw.setdefault("tz", "UTC")
    kw.setdefault("prompt", "check the PRs")
    return new_task(cron=cron, **kw)
