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


def test_a_moved_anchor_is_put_as_put_does_and_a_rollback_undoes_it() -> None:
    """A catch-up pass puts each task with its anchor moved (``put_moved``: the task's id given, no paused
    count to change, as a moved anchor pauses nothing): the book holds the moved task and its count stays;
    a refused write rolls it back to the task as it was, and the count stays right."""
    from kairosd.core.plan import Fire
    from kairosd.scheduling.firing import advanced

    store = BrokenStore(StoreState.empty().model_copy(update={"tasks": [_task("aaaaaaa1", True), _task("bbbbbbb2")]}))
    book = TaskBook(store, store.load())
    slot = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
    for task_id in ("aaaaaaa1", "bbbbbbb2"):
        current = book.get(task_id)
        updated, removal = advanced(current, Fire(slot, slot), slot, True)
        assert removal is None
        book.put_moved(task_id, updated, current)
        assert book.get(task_id) is updated
    assert book.paused == _counted(book) == 1
    assert book.dirty
    store.broken = True
    with pytest.raises(StoreError):
        asyncio.run(book.commit())
    assert [book.get(i).last_scheduled_for for i in ("aaaaaaa1", "bbbbbbb2")] == [None, None]
    assert book.paused == _counted(book) == 1
