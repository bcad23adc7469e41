"""The store contract (issue 25), run over every store implementation.

The daemon writes its tasks through :class:`kairosd.scheduling.taskbook.TaskBook` into a
:class:`kairosd.store.store.Store`. Three implementations exist, and tests of everything above the
store use one of them in place of another, so each must keep the same promises:

- ``json``: :class:`JsonStore` rewriting the whole file at every commit (its ``load``/``save`` only);
- ``journal``: :class:`JsonStore` as kairosd uses it, each commit one line appended to its journal;
- ``memory``: :class:`kairosd.testing.InMemoryStore`, the fake other tests use.

Each test reopens the store (a new object on the same file: a restart) before it reads back.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.models import Task, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import JOURNAL_NAME, SCHEMA_VERSION, JsonStore, Store, StoreState
from kairosd.testing import FakeClock, InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


class WholeFileStore:
    """A :class:`JsonStore` seen through the :class:`Store` protocol alone: no journal, whole saves."""

    def __init__(self, inner: JsonStore) -> None:
        self._inner = inner

    def load(self) -> StoreState:
        return self._inner.load()

    def save(self, state: StoreState) -> None:
        self._inner.save(state)


@dataclass
class Backend:
    """One store implementation: ``open()`` gives a store on the same data (a restart)."""

    name: str
    open: Callable[[], Store]
    check_written: Callable[[], None]  # the commits took this implementation's own path


def _json_backend(folder: Path, *, journal: bool) -> Backend:
    path = folder / "scheduled_tasks.json"

    def open_store() -> Store:
        store = JsonStore(path, FakeClock(T0))
        return store if journal else WholeFileStore(store)

    def check_written() -> None:
        journal_path = folder / JOURNAL_NAME
        has_lines = journal_path.exists() and journal_path.stat().st_size > 0
        assert has_lines is journal, f"journal {'empty' if journal else 'written'}: {journal_path}"

    return Backend("journal" if journal else "json", open_store, check_written)


def _memory_backend() -> Backend:
    store = InMemoryStore()
    return Backend("memory", lambda: store, lambda: None)


@pytest.fixture(params=["json", "journal", "memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "memory":
        yield _memory_backend()
    else:
        yield _json_backend(tmp_path, journal=request.param == "journal")


def _task(task_id: str, prompt: str = "p", **extra: Any) -> Task:
    return new_task(prompt=prompt, created_at=T0, tz="UTC", cron="0 9 * * *", task_id=task_id, **extra)


def _book(backend: Backend) -> TaskBook:
    store = backend.open()
    return TaskBook(store, store.load())


def _commit(book: TaskBook) -> None:
    asyncio.run(book.commit())


def _reopened(backend: Backend) -> StoreState:
    return backend.open().load()


def _dump(state: StoreState) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return [t.model_dump(mode="json") for t in state.tasks], dict(state.model_extra or {})


def test_a_new_store_loads_empty_at_the_current_schema(backend: Backend) -> None:
    state = _reopened(backend)
    assert (state.schema_version, state.tasks, state.model_extra or {}) == (SCHEMA_VERSION, [], {})


def test_a_saved_state_reads_back_whole(backend: Backend) -> None:
    """``save`` replaces everything: tasks in order, every field, unknown top-level fields."""
    first = StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("aaaa0001"), _task("aaaa0002")], old={"x": 1})
    backend.open().save(first)
    second = StoreState(
        schema_version=SCHEMA_VERSION,
        tasks=[_task("bbbb0002", "second", meta={"k": "v"}), _task("aaaa0001", "again")],
        imported={"from": "claude", "n": 2},
    )
    backend.open().save(second)
    assert _dump(_reopened(backend)) == _dump(second)


def test_committed_changes_survive_a_restart_in_the_books_order(backend: Backend) -> None:
    """Puts, a replacement, a removal and an id put again (it goes to the end), a top-level field."""
    book = _book(backend)
    for n in range(4):
        book.put(_task(f"cccc000{n}", f"v{n}"))
    _commit(book)
    book.put(_task("cccc0001", "replaced"))
    book.remove("cccc0002")
    book.remove("cccc0000")
    book.put(_task("cccc0000", "back at the end"))
    book.set_field("imported", {"n": 1})
    _commit(book)
    backend.check_written()
    state = _reopened(backend)
    assert [(t.id, t.prompt) for t in state.tasks] == [
        ("cccc0001", "replaced"),
        ("cccc0003", "v3"),
        ("cccc0000", "back at the end"),
    ]
    assert (state.model_extra or {}) == {"imported": {"n": 1}}
    assert _dump(state) == _dump(book.snapshot())


def test_a_loaded_state_changed_without_saving_changes_nothing(backend: Backend) -> None:
    backend.open().save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("dddd0001")]))
    loaded = backend.open().load()
    loaded.tasks.append(_task("dddd0002"))
    with pytest.raises(TypeError):
        loaded.tasks[0].meta["changed"] = True  # a task's meta is read-only (tasks are frozen)
    assert _dump(_reopened(backend)) == _dump(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("dddd0001")]))


@pytest.mark.parametrize("seed", range(3))
def test_any_sequence_of_commits_reads_back_as_the_book(backend: Backend, seed: int) -> None:
    rng = random.Random(seed)
    book = _book(backend)
    ids = [f"{i:08x}" for i in range(12)]
    for n in range(25):
        for _ in range(rng.randint(1, 4)):
            task_id, roll = rng.choice(ids), rng.random()
            if roll < 0.55:
                book.put(_task(task_id, f"v{n}"))
            elif roll < 0.9:
                book.remove(task_id)
            else:
                book.set_field("imported", {"n": n})
        _commit(book)
        if n % 8 == 7:  # a restart now and then: the next commits go on from what was read back
            assert _dump(_reopened(backend)) == _dump(book.snapshot())
            book = _book(backend)
    assert _dump(_reopened(backend)) == _dump(book.snapshot())
