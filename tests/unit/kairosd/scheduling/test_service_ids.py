"""New task ids never collide with a task that exists: 8 hex digits are short enough to repeat."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from kairosd.core.events import EventBus
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.service import Service
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.inbox import InboxStore
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, FakeDelivery, InMemoryStore


async def _service(tmp_path: Path) -> tuple[Service, InMemoryStore]:
    clock = FakeClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    store = InMemoryStore(StoreState.empty())
    book = TaskBook(store, store.load())
    ledger = RunLedger(tmp_path / "runs.jsonl", clock)
    ledger.load()
    missed = MissedLedger(tmp_path / "missed.jsonl", clock)
    missed.load()
    events = EventBus(clock.now)
    scheduler = Scheduler(book, ledger, missed, {"inbox": FakeDelivery("inbox")}, clock, events)
    await scheduler.start()
    return Service(scheduler, InboxStore(tmp_path / "inbox", clock), clock, events, "UTC"), store


def test_an_id_already_taken_is_drawn_again(tmp_path: Path) -> None:
    async def main() -> None:
        service, store = await _service(tmp_path)
        drawn = iter(["0000beef", "0000beef", "0000beef", "1234abcd"])
        service.new_id = lambda: next(drawn)
        first = await service.add({"prompt": "first", "cron": "0 9 * * *"})
        second = await service.add({"prompt": "second", "cron": "0 10 * * *"})
        assert (first["id"], second["id"]) == ("0000beef", "1234abcd")
        kept = {t.id: t.prompt for t in store.load().tasks}
        assert kept == {"0000beef": "first", "1234abcd": "second"}  # the first task was not replaced
        await service.scheduler.shutdown(1.0)

    asyncio.run(main())


def test_an_id_freed_by_a_delete_may_be_drawn_again(tmp_path: Path) -> None:
    async def main() -> None:
        service, store = await _service(tmp_path)
        service.new_id = lambda: "0000beef"
        first = await service.add({"prompt": "first", "cron": "0 9 * * *"})
        await service.remove([first["id"]])
        again = await service.add({"prompt": "again", "cron": "0 9 * * *"})
        assert again["id"] == "0000beef"
        assert [t.prompt for t in store.load().tasks] == ["again"]
        await service.scheduler.shutdown(1.0)

    asyncio.run(main())
