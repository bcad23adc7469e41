"""The book's count of paused tasks (what ``status()`` reports) follows every change, a rollback too.

status() is polled; it used to count the paused tasks of the whole book at each call.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from kairosd.core.errors import StoreError
from kairosd.core.models import Task, moved, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import StoreState
from kairosd.testing import InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


class BrokenStore(InMemoryStore):
    """Saves fail while ``broken`` is set."""

    broken = False

    def save(self, state: StoreState) -> None:
        if self.broken:
            raise StoreError("cannot write scheduled_tasks.json: No space left on device")
        super().save(state)


def _task(task_id: str, paused: bool = False) -> Task:
    task = new_task(prompt="p", created_at=T0, tz="UTC", cron="0 9 * * *", task_id=task_id)
    return moved(task, paused=True) if paused else task


def _counted(book: TaskBook) -> int:
    return sum(1 for task in book if task.paused)


def test_the_count_follows_loads_puts_and_removals() -> None:
    tasks = [_task("aaaaaaa1", True), _task("bbbbbbb2"), _task("ccccccc3")]
    store = BrokenStore(StoreState.empty().model_copy(update={"tasks": tasks}))
    book = TaskBook(store)
    book.load()
    assert book.paused == 1
    book.put(moved(book.get("bbbbbbb2"), paused=True))  # paused
    book.put(moved(book.get("bbbbbbb2"), paused=True))  # paused again: no change
    book.put(_task("ddddddd4", True))  # a new paused task
    assert book.paused == _counted(book) == 3
    book.put(moved(book.get("aaaaaaa1"), paused=False))  # resumed
    book.remove("ddddddd4")
    book.remove("ccccccc3")  # not paused
    book.remove("eeeeeee5")  # not there
    assert book.paused == _counted(book) == 1


def test_a_rollback_restores_the_count() -> None:
    store = BrokenStore(StoreState.empty().model_copy(update={"tasks": [_task("aaaaaaa1", True), _task("bbbbbbb2")]}))
    book = TaskBook(store, store.load())
    book.put(moved(book.get("bbbbbbb2"), paused=True))
    book.remove("aaaaaaa1")
    book.put(_task("ccccccc3", True))
    assert book.paused == 2
    store.broken = True
    with pytest.raises(StoreError):
        asyncio.run(book.commit())
    assert book.paused == _counted(book) == 1
