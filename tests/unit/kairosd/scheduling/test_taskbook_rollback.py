"""A failed write puts the book back to what the store holds, whether or not a write came before it.

The book keeps a second copy of its tasks only once they differ from the store's (issue 16's
memory work), so each way to reach a rollback is checked: the first change after the load, a
change after a successful write, and a change after a write that others followed.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest

from kairosd.core.errors import StoreError
from kairosd.core.models import Task, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import StoreState
from kairosd.testing import InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


class BrokenStore(InMemoryStore):
    """Saves fail while ``broken`` is set."""

    broken = False
    gate: tuple[threading.Event, threading.Event] | None = None  # (entered, release) to hold a save

    def save(self, state: StoreState) -> None:
        if self.gate is not None:
            entered, release = self.gate
            entered.set()
            assert release.wait(10), "the test never released the save"
        if self.broken:
            raise StoreError("cannot write scheduled_tasks.json: No space left on device")
        super().save(state)


def _task(task_id: str, prompt: str = "p") -> Task:
    return new_task(prompt=prompt, created_at=T0, tz="UTC", cron="0 9 * * *", task_id=task_id)


def _book(*tasks: Task) -> tuple[TaskBook, BrokenStore]:
    store = BrokenStore(StoreState.empty().model_copy(update={"tasks": list(tasks)}))
    return TaskBook(store, store.load()), store


def _ids_and_prompts(book: TaskBook) -> dict[str, str]:
    return {task.id: task.prompt for task in book}


async def _fail(book: TaskBook, store: BrokenStore) -> set[str]:
    changed: set[str] = set()
    book.on_rollback.append(changed.update)
    store.broken = True
    with pytest.raises(StoreError):
        await book.commit()
    store.broken = False
    return changed


def test_the_first_change_after_the_load_is_rolled_back() -> None:
    async def main() -> None:
        book, store = _book(_task("aaaa0001", "one"), _task("aaaa0002", "two"))
        book.put(_task("aaaa0001", "changed"))
        book.remove("aaaa0002")
        book.put(_task("aaaa0003", "new"))
        assert await _fail(book, store) == {"aaaa0001", "aaaa0002", "aaaa0003"}
        assert _ids_and_prompts(book) == {"aaaa0001": "one", "aaaa0002": "two"}
        assert book.error is not None

    asyncio.run(main())


def test_a_change_after_a_write_is_rolled_back_to_that_write() -> None:
    async def main() -> None:
        book, store = _book(_task("aaaa0001", "one"))
        book.put(_task("aaaa0002", "written"))
        await book.commit()
        assert store.saves == 1
        book.put(_task("aaaa0001", "lost"))
        book.remove("aaaa0002")
        assert await _fail(book, store) == {"aaaa0001", "aaaa0002"}
        assert _ids_and_prompts(book) == {"aaaa0001": "one", "aaaa0002": "written"}
        # The next change writes on top of what the store holds.
        book.put(_task("aaaa0003", "after"))
        await book.commit()
        assert _ids_and_prompts(TaskBook(store, store.load())) == {
            "aaaa0001": "one",
            "aaaa0002": "written",
            "aaaa0003": "after",
        }

    asyncio.run(main())


def test_changes_made_while_a_write_runs_are_rolled_back_to_that_write() -> None:
    async def main() -> None:
        book, store = _book(_task("aaaa0001", "one"))
        entered, release = store.gate = (threading.Event(), threading.Event())
        book.put(_task("aaaa0001", "first"))
        writing = asyncio.ensure_future(book.commit())
        assert await asyncio.to_thread(entered.wait, 10)  # the write took its snapshot and is saving it
        book.put(_task("aaaa0002", "during"))
        release.set()
        await writing
        store.gate = None
        assert _ids_and_prompts(TaskBook(store, store.load())) == {"aaaa0001": "first"}
        assert await _fail(book, store) == {"aaaa0002"}
        assert _ids_and_prompts(book) == {"aaaa0001": "first"}

    asyncio.run(main())


def test_removing_an_unknown_id_changes_nothing() -> None:
    book, _ = _book(_task("aaaa0001"))
    assert book.remove("bbbb0001") is None
    assert not book.dirty
