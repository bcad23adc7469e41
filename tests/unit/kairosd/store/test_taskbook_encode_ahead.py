"""TaskBook.encode_ahead: after a start, each task's JSON is made off the request path (issue 28).

Loading a store does not encode its tasks, so the first ``kairos list --json`` after a start
encoded them all (~0.7 s at 100,000 tasks). kairosd runs encode_ahead once it answers; a listing
then encodes nothing. It takes turns with the loop, and a task changed or removed meanwhile is
not encoded in its old version (nor brought back).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

import kairosd.store.store as store_module
from kairosd.core.clock import SystemClock
from kairosd.core.models import Task, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import JsonStore, StoreState, encode_task
from kairosd.testing import InMemoryStore

N = 35


def _tasks() -> list[Task]:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        new_task(prompt=f"task {i}", created_at=now, tz="UTC", cron=f"{i} 9 * * *", task_id=f"{0x10 + i:08x}")
        for i in range(N)
    ]


@pytest.fixture(name="book")
def _book(tmp_path: Path) -> TaskBook:
    path = tmp_path / "scheduled_tasks.json"
    JsonStore(path, SystemClock()).save(StoreState.model_construct(schema_version=1, tasks=_tasks()))
    book = TaskBook(JsonStore(path, SystemClock()))
    book.load()
    return book


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    encoded: list[str] = []

    def counted(task: Task) -> str:
        encoded.append(task.id)
        return encode_task(task)

    monkeypatch.setattr(store_module, "encode_task", counted)
    return encoded


def test_after_encode_ahead_a_listing_encodes_nothing(book: TaskBook, monkeypatch: pytest.MonkeyPatch):
    encoded = _counting(monkeypatch)
    assert asyncio.run(book.encode_ahead(per_turn=10)) == N
    assert len(encoded) == N  # loading encoded none of them
    encoded.clear()
    texts = [book.encoded(task) for task in book]
    assert encoded == []
    assert texts == [encode_task(task) for task in book]


def test_it_takes_turns_and_skips_what_changed_meanwhile(book: TaskBook, monkeypatch: pytest.MonkeyPatch):
    encoded = _counting(monkeypatch)
    changed_id, removed_id = f"{0x10 + 30:08x}", f"{0x10 + 31:08x}"
    old = book.get(changed_id)
    new = old.model_copy(update={"prompt": "changed"})

    async def both() -> None:
        ahead = asyncio.ensure_future(book.encode_ahead(per_turn=10))
        await asyncio.sleep(0)  # its first turn
        assert len(encoded) == 10
        book.put(new)
        book.remove(removed_id)
        await ahead

    asyncio.run(both())
    assert changed_id not in encoded  # its old version is not wanted
    assert removed_id not in encoded
    assert len(encoded) == N - 2
    encoded.clear()
    assert book.encoded(new) == encode_task(new)
    assert encoded == [changed_id]  # the new version is encoded when asked for


def test_a_store_that_keeps_no_json_is_left_alone():
    book = TaskBook(InMemoryStore(StoreState.empty()))
    for task in _tasks():
        book.put(task)
    assert asyncio.run(book.encode_ahead()) == 0


def test_the_daemon_settles_once_the_json_is_made_or_the_work_is_cancelled():
    """kairosd turns its cycle collector on (frozen) when ``settled`` is set: after encode_ahead, so the
    new entries are frozen with the rest rather than walked by full collections as they grow; and also
    when a stop cancels the work, so the collector never stays off."""
    from types import SimpleNamespace

    from kairosd.app import daemon

    class Book:
        def __init__(self, hold: bool) -> None:
            self.hold = hold
            self.done = False

        async def encode_ahead(self) -> int:
            if self.hold:
                await asyncio.Event().wait()
            self.done = True
            return 0

    async def main(hold: bool) -> tuple[bool, bool]:
        settled = asyncio.Event()
        book = Book(hold)
        ticked = asyncio.Event()
        app = SimpleNamespace(book=book, scheduler=SimpleNamespace(ticked=ticked))
        work = asyncio.ensure_future(daemon._encode_ahead(app, settled, 0))  # type: ignore[arg-type]
        for _ in range(5):
            await asyncio.sleep(0)
        assert not book.done  # not before the scheduler's first tick (the start's catch-up)
        ticked.set()
        await asyncio.sleep(0)
        if hold:
            assert not settled.is_set()
            work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        return settled.is_set(), book.done

    assert asyncio.run(main(False)) == (True, True)
    assert asyncio.run(main(True)) == (True, False)
