"""A store (or ledger) that cannot be written: clean errors, memory never ahead of disk, fires never repeated.

In process, on a fake clock, with a store that fails on demand. The real-process
versions (read-only folder, full disk, RLIMIT_FSIZE) are in test_unwritable.py.
"""

from __future__ import annotations

import asyncio
import errno
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from reliability_support import WAIT_S, FlakyStore, SchedHarness

from kairosd.core.clock import SystemClock
from kairosd.core.errors import StoreError
from kairosd.core.models import Task, new_task
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)
ENOSPC = OSError(errno.ENOSPC, "No space left on device")


def task(cron: str | None = None, **kw: Any) -> Task:
    kw.setdefault("created_at", T0)
    kw.setdefault("tz", "UTC")
    kw.setdefault("prompt", "check the PRs")
    return new_task(cron=cron, **kw)


def state(*tasks: Task) -> StoreState:
    return StoreState(schema_version=SCHEMA_VERSION, tasks=list(tasks))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---- the task book -------------------------------------------------------------------------------


def test_failed_write_rolls_back_and_fails_every_commit_it_carried():
    """Two adds sharing a failed write both get StoreError; memory is what the store holds; a later write heals."""

    async def main():
        a, b, c, d = (task("0 9 * * *") for _ in range(4))
        store = FlakyStore(state(a))
        book = TaskBook(store, store.load())
        undone: list[set[str]] = []
        book.on_rollback.append(undone.append)
        store.broken = StoreError("cannot write /x/scheduled_tasks.json: Read-only file system")

        async def add(t: Task) -> None:
            book.put(t)
            await book.commit()

        results = await asyncio.gather(add(b), add(c), return_exceptions=True)
        assert all(isinstance(r, StoreError) for r in results)
        assert "Read-only file system" in str(results[0])
        assert [t.id for t in book] == [a.id]
        assert book.error is not None
        assert not book.dirty
        assert undone == [{b.id, c.id}]
        store.broken = None
        await add(d)
        assert book.error is None
        assert store.task_ids() == {a.id, d.id}

    run(main())


def test_change_made_while_a_failing_write_runs_is_undone_and_its_commit_fails():
    """A change that arrives during the failing write is rolled back with it, and says so."""

    async def main():
        a, b = task("0 9 * * *"), task("0 10 * * *")
        store = FlakyStore()
        store.hold = threading.Event()
        book = TaskBook(store, store.load())
        store.broken = ENOSPC
        book.put(a)
        first = asyncio.ensure_future(book.commit())
        assert await asyncio.to_thread(store.saving.wait, WAIT_S)  # the write of `a` has started...
        book.put(b)  # ...and `b` arrives while it runs
        store.hold.set()
        with pytest.raises(StoreError, match="No space left"):
            await book.commit()
        with pytest.raises(StoreError):
            await first
        assert len(book) == 0
        assert store.task_ids() == set()

    run(main())


def test_removal_that_cannot_be_saved_is_undone():
    """A remove whose write fails leaves the task in memory, as on disk."""

    async def main():
        a = task("0 9 * * *")
        store = FlakyStore(state(a))
        book = TaskBook(store, store.load())
        store.broken = ENOSPC
        book.remove(a.id)
        with pytest.raises(StoreError):
            await book.commit()
        assert book.get(a.id) is not None

    run(main())


def test_commit_sync_writes_only_when_something_is_unsaved():
    """Shutdown's commit_sync skips a clean book and raises StoreError (after rolling back) on a failed write."""
    a = task("0 9 * * *")
    store = FlakyStore(state(a))
    book = TaskBook(store, store.load())
    book.commit_sync()
    assert store.saves == 0
    book.put(task("0 10 * * *"))
    store.broken = ENOSPC
    with pytest.raises(StoreError):
        book.commit_sync()
    assert [t.id for t in book] == [a.id]
    store.broken = None
    book.commit_sync()  # clean after the rollback: nothing to write
    assert store.saves == 0


def test_older_snapshot_never_overwrites_a_newer_one():
    """A background write that finishes after shutdown's newer save is dropped, not written over it."""
    store = FlakyStore()
    book = TaskBook(store, store.load())
    a = task("0 9 * * *")
    book.put(a)
    assert book._save(book.snapshot(), 2) is True
    assert book._save(state(), 1) is False
    assert store.task_ids() == {a.id}


def test_json_store_reports_a_failed_save_as_store_error_and_keeps_the_file(tmp_path, monkeypatch):
    """JsonStore.save turns an OSError into StoreError naming the file; the old file is intact, no temp left."""
    path = tmp_path / "state" / "scheduled_tasks.json"
    store = JsonStore(path, SystemClock())
    store.save(state(task("0 9 * * *")))
    before = path.read_bytes()

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("kairosd.system.atomic.os.write", full)
    with pytest.raises(StoreError, match=r"cannot write .*scheduled_tasks.json: No space left on device"):
        store.save(state(task("0 9 * * *"), task("0 10 * * *")))
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["scheduled_tasks.json"]


# ---- the scheduler ------------------------------------------------------------------------------


async def a_one_shot_and_a_five_minute_task(tmp_path: Path) -> tuple[Task, Task, FlakyStore, SchedHarness]:
    """A scheduler started at T0 on a store (still working) with a one-shot due at T0 + 60 s and */5."""
    shot = task(at=T0 + timedelta(seconds=60))
    rec = task("*/5 * * * *")
    store = FlakyStore(state(shot, rec))
    h = SchedHarness(tmp_path, store, FakeClock(T0))
    await h.start()
    return shot, rec, store, h


def test_fires_go_out_once_while_the_store_fails_and_the_store_catches_up(tmp_path):
    """Store failing: due fires go out once (ledger-recorded), never again; healed, the store catches up."""

    async def main():
        shot, rec, store, h = await a_one_shot_and_a_five_minute_task(tmp_path)
        store.broken = ENOSPC
        await h.at(T0.replace(minute=5, second=0))
        assert sorted(h.delivered()) == sorted([(shot.id, shot.at), (rec.id, T0.replace(minute=5, second=0))])
        assert h.book.error is not None
        assert "No space left" in (h.sched.status()["store_error"] or "")
        assert store.task_ids() == {shot.id, rec.id}  # the store is behind: the run ledger has the fires
        for _ in range(3):  # ticks while the store still fails: no repeat
            h.clock.advance(5)
            await h.tick()
        assert len(h.delivered()) == 2
        store.broken = None
        h.clock.advance(5)
        await h.tick()
        assert h.book.error is None
        assert h.sched.status()["store_error"] is None
        assert store.task_ids() == {rec.id}
        assert store.load().tasks[0].last_scheduled_for == T0.replace(minute=5, second=0)
        await h.at(T0.replace(minute=10, second=0))
        assert h.delivered(rec.id)[-1] == (rec.id, T0.replace(minute=10, second=0))
        assert len(h.delivered()) == 3

    run(main())


def test_store_failure_retries_at_the_retry_pace(tmp_path):
    """While the store fails, the loop sleeps at most store_retry_s, so it notices the store healing."""

    async def main():
        store = FlakyStore(state(task("0 12 * * *")))
        h = SchedHarness(tmp_path, store, FakeClock(T0), store_retry_s=5.0)
        await h.start()
        assert await h.tick() == 30.0
        store.broken = ENOSPC
        h.book.put(task("0 13 * * *"))
        with pytest.raises(StoreError):
            await h.book.commit()
        assert await h.tick() == 5.0
        store.broken = None
        await h.tick()
        assert h.book.error is None
        assert await h.tick() == 30.0

    run(main())


def test_nothing_fires_while_the_run_ledger_cannot_be_written(tmp_path, monkeypatch):
    """A fire that cannot be recorded is not delivered; the loop retries at a bounded pace; then it fires once."""

    async def main():
        rec = task("*/5 * * * *")
        store = FlakyStore(state(rec))
        h = SchedHarness(tmp_path, store, FakeClock(T0), store_retry_s=5.0)
        await h.start()
        real = h.ledger.record_many

        def broken(runs: Any, **_: Any) -> None:
            raise OSError(errno.EROFS, "Read-only file system")

        monkeypatch.setattr(h.ledger, "record_many", broken)
        delay = await h.at(T0.replace(minute=5, second=0))
        assert h.delivered() == []
        assert delay == 5.0
        assert "run ledger" in h.sched.status()["store_error"]
        assert store.load().tasks[0].last_scheduled_for is None
        monkeypatch.setattr(h.ledger, "record_many", real)
        h.clock.advance(5)
        await h.tick()
        assert h.delivered() == [(rec.id, T0.replace(minute=5, second=0))]
        assert h.sched.status()["store_error"] is None
        h.clock.advance(5)
        await h.tick()
        assert len(h.delivered()) == 1

    run(main())


def test_run_now_with_an_unwritable_ledger_is_a_store_error(tmp_path, monkeypatch):
    """`kairos run` answers StoreError (code store) when the run cannot be recorded, and delivers nothing."""

    async def main():
        rec = task("0 12 * * *")
        h = SchedHarness(tmp_path, FlakyStore(state(rec)), FakeClock(T0))
        await h.start()

        def broken(runs: Any, **_: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(h.ledger, "record_many", broken)
        with pytest.raises(StoreError) as err:
            await h.sched.run_now(rec.id)
        assert err.value.code == "store"
        await h.sched.drain(5)
        assert h.delivered() == []

    run(main())


def test_restart_after_a_crash_before_the_store_write_does_not_fire_again(tmp_path):
    """Fires in the ledger but not yet in the store (crash in between) are not repeated at the next start."""

    async def main():
        _, rec, store, first = await a_one_shot_and_a_five_minute_task(tmp_path)
        store.broken = ENOSPC  # the store never gets the anchors: as if kairosd died right after the fires
        await first.at(T0.replace(minute=5, second=0, microsecond=500_000))
        assert len(first.delivered()) == 2
        store.broken = None

        second = SchedHarness(tmp_path, store, FakeClock(T0.replace(minute=6)))
        await second.start()
        assert second.delivered() == []
        assert store.task_ids() == {rec.id}
        assert store.load().tasks[0].last_scheduled_for == T0.replace(minute=5, second=0)
        assert second.missed.list() == []
        await second.at(T0.replace(minute=10, second=0))
        assert second.delivered() == [(rec.id, T0.replace(minute=10, second=0))]

    run(main())


def test_api_changes_fail_with_code_store_and_change_nothing(tmp_path):
    """Through the service: add, remove and pause fail with StoreError (code store); the list is unchanged."""
    from kairosd.scheduling.service import Service
    from kairosd.store.inbox import InboxStore

    async def main():
        keep = task("0 9 * * *")
        store = FlakyStore(state(keep))
        h = SchedHarness(tmp_path, store, FakeClock(T0))
        await h.start()
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        store.broken = StoreError("cannot write /x/scheduled_tasks.json: Read-only file system")
        before = service.list_tasks()
        for call in (
            service.add({"prompt": "new", "cron": "0 8 * * *"}),
            service.remove([keep.id]),
            service.set_paused(keep.id, True),
        ):
            with pytest.raises(StoreError) as err:
                await call
            assert err.value.code == "store"
        assert service.list_tasks() == before
        assert h.sched.planned(keep.id) is not None  # the failed remove did not unschedule it
        assert "Read-only" in service.status()["store_error"]
        store.broken = None
        await service.set_paused(keep.id, True)
        assert store.load().tasks[0].paused is True
        assert service.status()["store_error"] is None

    run(main())


def test_inbox_write_failure_is_a_store_error(tmp_path, monkeypatch):
    """An inbox ack that cannot be written is a StoreError, not an internal error."""
    from kairosd.scheduling.service import Service
    from kairosd.store.inbox import InboxStore

    async def main():
        h = SchedHarness(tmp_path, FlakyStore(), FakeClock(T0))
        await h.start()
        inbox = InboxStore(tmp_path / "inbox", h.clock)
        service = Service(h.sched, inbox, h.clock, h.events, "UTC")

        def broken(*args: Any) -> None:
            raise OSError(errno.EIO, "Input/output error", str(tmp_path / "inbox" / "default.jsonl"))

        monkeypatch.setattr(InboxStore, "ack", broken)
        with pytest.raises(StoreError, match="Input/output error"):
            service.ack(None, None)
        monkeypatch.setattr(InboxStore, "list", broken)
        with pytest.raises(StoreError):
            service.inbox_items(None, False)

    run(main())


def test_json_store_in_a_read_only_folder(tmp_path):
    """Saving into a folder that refuses new files raises StoreError and keeps the old store."""
    folder = tmp_path / "state"
    store = JsonStore(folder / "scheduled_tasks.json", SystemClock())
    store.save(state(task("0 9 * * *")))
    before = (folder / "scheduled_tasks.json").read_bytes()
    folder.chmod(0o500)
    try:
        probe = folder / "probe"
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("running as root: a 0500 folder is still writable (test_unwritable.py covers root)")
        with pytest.raises(StoreError, match="Permission denied"):
            store.save(state())
    finally:
        folder.chmod(0o700)
    assert (folder / "scheduled_tasks.json").read_bytes() == before
