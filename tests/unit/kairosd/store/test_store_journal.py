"""The store's journal (issue 28): a change appends one line; the store file is rewritten only to compact it.

Pinned here: whatever the changes, the store read back (file plus journal) is the book, in the
book's order, and once compacted the file is byte for byte a fresh full write of the book; a
change does not rewrite the store file; and each crash rule of :mod:`kairosd.store.journal`.
"""

from __future__ import annotations

import asyncio
import errno
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.errors import StoreCorruptError, StoreError
from kairosd.core.models import Task, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store import store as store_module
from kairosd.store.store import JOURNAL_NAME, SCHEMA_VERSION, JsonStore, StoreState, read_folded
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def _task(task_id: str, prompt: str = "p") -> Task:
    return new_task(prompt=prompt, created_at=T0, tz="UTC", cron="0 9 * * *", task_id=task_id)


def _fresh_bytes(tmp_path: Path, state: StoreState) -> bytes:
    """What a full write of ``state`` into an empty folder gives."""
    folder = tmp_path / f"fresh-{random.random()}"
    folder.mkdir()
    JsonStore(folder / "scheduled_tasks.json", FakeClock(T0)).save(state)
    return (folder / "scheduled_tasks.json").read_bytes()


def _compacted_bytes(tmp_path: Path, path: Path) -> bytes:
    """The store at ``path`` (file and journal) loaded by a new JsonStore and written whole, elsewhere."""
    state = JsonStore(path, FakeClock(T0)).load()
    return _fresh_bytes(tmp_path, state)


async def _random_changes(book: TaskBook, rng: random.Random, rounds: int) -> None:
    """Puts, replacements, removals, an id removed and put again, a top-level field; commits grouped at random."""
    ids = [f"{i:08x}" for i in range(40)]
    for n in range(rounds):
        for _ in range(rng.randint(1, 6)):
            task_id = rng.choice(ids)
            roll = rng.random()
            if roll < 0.5:
                book.put(_task(task_id, f"v{n}"))
            elif roll < 0.8:
                book.remove(task_id)
            elif roll < 0.9:
                book.remove(task_id)
                book.put(_task(task_id, f"again {n}"))  # a reused id goes to the end
            else:
                book.set_field("imported", {"n": n})
        await book.commit()


@pytest.mark.parametrize("seed", range(6))
def test_any_sequence_of_changes_reads_back_as_the_book_and_compacts_to_a_fresh_write(tmp_path: Path, seed: int):
    path = tmp_path / "scheduled_tasks.json"
    store = JsonStore(path, FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task(f"{i:08x}", "seed") for i in range(0, 40, 3)]))
    book = TaskBook(store, store.load())
    rng = random.Random(seed)

    async def main() -> None:
        await _random_changes(book, rng, 30)

    asyncio.run(main())
    assert (tmp_path / JOURNAL_NAME).exists()
    loaded = JsonStore(path, FakeClock(T0)).load()
    assert [t.id for t in loaded.tasks] == [t.id for t in book]  # the same order, not only the same tasks
    assert loaded.tasks == list(book)
    assert loaded.model_extra == book.snapshot().model_extra
    assert read_folded(path) == loaded
    assert _compacted_bytes(tmp_path, path) == _fresh_bytes(tmp_path, book.snapshot())
    assert not book.dirty
    book.commit_sync()  # a stop: nothing unsaved, but the journal is folded in, so the file alone holds it all
    assert not (tmp_path / JOURNAL_NAME).exists()
    assert path.read_bytes() == _fresh_bytes(tmp_path, book.snapshot())
    saved = path.stat().st_mtime_ns
    book.commit_sync()  # nothing unsaved or journaled: no write
    assert path.stat().st_mtime_ns == saved


def test_a_change_appends_to_the_journal_and_leaves_the_store_file_alone(tmp_path: Path):
    path = tmp_path / "scheduled_tasks.json"
    store = JsonStore(path, FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("aaaa0001")]))
    before = path.read_bytes()
    book = TaskBook(store, store.load())

    async def main() -> None:
        book.put(_task("aaaa0002"))
        await book.commit()
        book.remove("aaaa0001")
        await book.commit()

    asyncio.run(main())
    assert path.read_bytes() == before
    assert len((tmp_path / JOURNAL_NAME).read_bytes().splitlines()) == 3  # header + two commits
    assert [t.id for t in JsonStore(path, FakeClock(T0)).load().tasks] == ["aaaa0002"]


def test_the_journal_is_compacted_once_it_outgrows_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(store_module, "MIN_COMPACT_BYTES", 0)
    path = tmp_path / "scheduled_tasks.json"
    store = JsonStore(path, FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task(f"{i:08x}") for i in range(5)]))
    book = TaskBook(store, store.load())
    sizes = []

    async def main() -> None:
        for i in range(12):
            book.put(_task(f"{i % 5:08x}", f"change {i}"))
            await book.commit()
            journal = tmp_path / JOURNAL_NAME
            sizes.append(journal.stat().st_size if journal.exists() else 0)

    asyncio.run(main())
    assert 0 in sizes[1:]  # compacted at least once on the way...
    assert max(sizes) <= 2 * path.stat().st_size + 1000  # ...before the journal grew far past the store
    assert JsonStore(path, FakeClock(T0)).load().tasks == list(book)


def _store_with_journal(tmp_path: Path) -> tuple[Path, TaskBook]:
    path = tmp_path / "scheduled_tasks.json"
    store = JsonStore(path, FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("aaaa0001"), _task("aaaa0002")]))
    book = TaskBook(store, store.load())

    async def main() -> None:
        book.put(_task("aaaa0003", "added"))
        await book.commit()
        book.remove("aaaa0001")
        await book.commit()

    asyncio.run(main())
    return path, book


def test_a_line_cut_short_by_a_crash_is_ignored_and_compacted_away(tmp_path: Path):
    path, _ = _store_with_journal(tmp_path)
    journal = tmp_path / JOURNAL_NAME
    with journal.open("ab") as f:
        f.write(b'{"del":["aaaa0002"],"put":[{"id":"aaaa00')  # an append the crash cut: never acknowledged
    store = JsonStore(path, FakeClock(T0))
    assert [t.id for t in store.load().tasks] == ["aaaa0002", "aaaa0003"]
    assert store.wants_compaction()
    # A torn end that happens to end in a newline (its length reached the disk, not all its bytes).
    with journal.open("ab") as f:
        f.write(b"\x00\x00\n")
    assert [t.id for t in JsonStore(path, FakeClock(T0)).load().tasks] == ["aaaa0002", "aaaa0003"]


def test_a_crash_between_the_compactions_rename_and_the_journals_removal_loses_and_repeats_nothing(
    tmp_path: Path,
):
    path, book = _store_with_journal(tmp_path)
    journal = tmp_path / JOURNAL_NAME
    left_behind = journal.read_bytes()
    book.put(_task("aaaa0004"))
    book.commit_sync()  # compacts: the new store is renamed into place, then the journal is removed
    journal.write_bytes(left_behind)  # ...as if the crash came between the two
    loaded = JsonStore(path, FakeClock(T0)).load()
    assert [t.id for t in loaded.tasks] == ["aaaa0002", "aaaa0003", "aaaa0004"]


def test_a_bad_line_before_a_good_one_is_corruption_and_nothing_is_changed(tmp_path: Path):
    path, _ = _store_with_journal(tmp_path)
    journal = tmp_path / JOURNAL_NAME
    lines = journal.read_bytes().split(b"\n")
    lines.insert(1, b"not json")
    journal.write_bytes(b"\n".join(lines))
    before = (path.read_bytes(), journal.read_bytes())
    with pytest.raises(StoreCorruptError, match=r"line 2 of .*scheduled_tasks\.journal is not a change"):
        JsonStore(path, FakeClock(T0)).load()
    assert (path.read_bytes(), journal.read_bytes()) == before


def test_a_failed_append_leaves_the_journal_as_it_was_and_the_next_write_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path, book = _store_with_journal(tmp_path)
    journal = tmp_path / JOURNAL_NAME
    before = journal.read_bytes()
    real_write = store_module.journal.os.write

    def half_then_full(fd: int, data: Any) -> int:
        monkeypatch.setattr(store_module.journal.os, "write", failing)
        return real_write(fd, bytes(data)[:10])  # part of the line reaches the file...

    def failing(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")  # ...then the disk is full

    monkeypatch.setattr(store_module.journal.os, "write", half_then_full)

    async def main() -> None:
        book.put(_task("aaaa0005"))
        with pytest.raises(StoreError, match=r"scheduled_tasks.json \(its journal.*No space left on device"):
            await book.commit()

    asyncio.run(main())
    assert journal.read_bytes() == before
    monkeypatch.setattr(store_module.journal.os, "write", real_write)

    async def again() -> None:
        book.put(_task("aaaa0006"))
        await book.commit()

    asyncio.run(again())
    assert not journal.exists()  # written whole: the rollback may have changed memory's order
    assert path.read_bytes() == _fresh_bytes(tmp_path, book.snapshot())
    assert "aaaa0005" not in {t.id for t in book}


def test_concurrent_changes_share_one_journal_line(tmp_path: Path):
    """Group commit: changes made while a write is pending go out together, as one line (one fsync)."""
    path = tmp_path / "scheduled_tasks.json"
    store = JsonStore(path, FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("aaaa0001")]))
    book = TaskBook(store, store.load())

    async def add(i: int) -> None:
        book.put(_task(f"{i:08x}"))
        await book.commit()

    async def main() -> None:
        await asyncio.gather(*(add(i) for i in range(20)))
        await asyncio.gather(*(add(i) for i in range(20, 30)))

    asyncio.run(main())
    lines = (tmp_path / JOURNAL_NAME).read_bytes().splitlines()
    assert len(lines) == 3  # the header, then one line for each burst
    assert [len(json.loads(line)["put"]) for line in lines[1:]] == [20, 10]
    assert len(JsonStore(path, FakeClock(T0)).load().tasks) == 31
