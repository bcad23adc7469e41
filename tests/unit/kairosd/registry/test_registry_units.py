"""Small pieces of the registry: limits from env and config, the FIFO slot pool, record files, log chunks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from registry_support import until

from kairosd.config import load_config
from kairosd.jobs.joblog import read_chunk
from kairosd.jobs.limits import RegistryLimits
from kairosd.jobs.model import JobKind, JobRecord, clip
from kairosd.jobs.persist import RecordStore
from kairosd.jobs.slots import Slots
from kairosd.system.paths import Paths

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_registry_limits_come_from_the_loaded_config(tmp_path):
    """The registry reads [limits] as the one config loader left it: the environment applied, kill_grace in s."""
    paths = Paths.from_env({"KAIROS_HOME": str(tmp_path)})
    (tmp_path / "config").mkdir(mode=0o700)
    (tmp_path / "config" / "config.toml").write_text("[limits]\nmax_concurrent = 8\nmax_depth = 3\nkill_grace = 2.5\n")
    config = load_config(paths, {"KAIROS_MAX_CONCURRENT": "16"})
    limits = RegistryLimits.from_config(config.limits)
    assert limits == RegistryLimits(max_concurrent=16, max_depth=3, kill_grace_s=2.5)
    no_file = load_config(Paths.from_env({"KAIROS_HOME": str(tmp_path / "none")}), {})
    assert RegistryLimits.from_config(None) == RegistryLimits() == RegistryLimits.from_config(no_file.limits)


def test_slots_are_fifo_and_a_cancelled_waiter_passes_its_slot_on():
    """Waiters get freed slots in arrival order; one cancelled after it was handed a slot passes it on."""

    async def main() -> None:
        slots = Slots(1)
        await slots.acquire("holder")
        order: list[str] = []

        async def take(name: str) -> None:
            await slots.acquire(name)
            order.append(name)

        first = asyncio.create_task(take("first"))
        second = asyncio.create_task(take("second"))
        await until(lambda: slots.waiting == 2, "both to wait for the slot")
        slots.release("holder")  # handed to "first"...
        first.cancel()  # ...which gives up before it runs: the slot must reach "second"
        await asyncio.gather(first, return_exceptions=True)
        await second
        assert order == ["second"]
        assert (slots.in_use, slots.waiting, slots.peak) == (1, 0, 1)
        slots.release("second")
        assert slots.in_use == 0

    asyncio.run(main())


def test_a_blocked_holder_lends_its_slot_to_the_task_it_waits_on_and_gets_it_back():
    """Cap 1, held by a parent: its child starts on the loan ahead of the queue; the slot returns with
    the child's turn (not to the queue), and a withdrawn offer lends nothing more."""

    async def main() -> None:
        slots = Slots(1)
        await slots.acquire("parent")
        child = asyncio.create_task(slots.acquire("child"))
        other = asyncio.create_task(slots.acquire("other"))
        await until(lambda: slots.waiting == 2, "child and other to wait for the slot")
        assert slots.lent == 0
        assert slots.offer("parent", "child")
        await asyncio.wait_for(child, 1)  # ahead of "other", and at the cap
        assert (slots.in_use, slots.waiting, slots.lent, slots.peak) == (1, 1, 1, 1)
        slots.release("child")
        assert (slots.in_use, slots.waiting, slots.lent) == (1, 1, 0)  # back to the parent
        assert not other.done()
        slots.withdraw("parent", "child")
        slots.release("parent")
        await asyncio.wait_for(other, 1)
        assert (slots.in_use, slots.lent, slots.peak) == (1, 0, 1)
        assert not slots.offer("nobody", "other")  # only a holder has a slot to lend

    asyncio.run(main())


def test_a_loan_passes_down_a_chain_of_waits_and_an_early_end_counts_the_borrower():
    """parent -> child -> grandchild, each waiting on the next, share one slot; when the parent's wait
    ends first the child keeps running above the cap and nothing else starts until it is under."""

    async def main() -> None:
        slots = Slots(1)
        await slots.acquire("parent")
        slots.offer("parent", "child")
        await asyncio.wait_for(slots.acquire("child"), 1)
        slots.offer("child", "grandchild")
        await asyncio.wait_for(slots.acquire("grandchild"), 1)
        assert (slots.in_use, slots.lent) == (1, 2)
        queued = asyncio.create_task(slots.acquire("queued"))
        await until(lambda: slots.waiting == 1, "the third task to queue")
        slots.withdraw("parent", "child")  # a timeout: the parent works again, the child still runs
        assert (slots.in_use, slots.lent, slots.peak) == (2, 1, 2)
        slots.release("grandchild")  # back to the child, which now holds a slot of its own
        slots.withdraw("child", "grandchild")
        slots.release("child")
        assert (slots.in_use, slots.waiting) == (1, 1)  # still at the cap: "queued" waits
        slots.release("parent")
        await asyncio.wait_for(queued, 1)
        assert (slots.in_use, slots.lent) == (1, 0)

    asyncio.run(main())


def test_a_lender_that_ends_leaves_the_slot_to_its_borrower_and_its_offers_lapse():
    """The lender's turn ends while it lends: the borrower keeps the slot (no count change); the
    lender's pending offers are gone, so a late withdraw is harmless."""

    async def main() -> None:
        slots = Slots(1)
        await slots.acquire("parent")
        slots.offer("parent", "child")
        await asyncio.wait_for(slots.acquire("child"), 1)
        slots.release("parent")
        assert (slots.in_use, slots.lent, slots.holds("child"), slots.holds("parent")) == (1, 0, True, False)
        slots.withdraw("parent", "child")
        assert slots.in_use == 1
        slots.release("child")
        assert slots.in_use == 0

    asyncio.run(main())


def _record(record_id: str = "t0123456789") -> JobRecord:
    return JobRecord(
        id=record_id, kind=JobKind.SHELL, argv=["true"], prompt="", log_path="/x.log", created_at=T0, updated_at=T0
    )


def test_record_store_round_trip_keeps_unknown_fields(tmp_path: Path):
    """A saved record loads back equal; fields written by a newer kairos survive; ids are validated."""
    store = RecordStore(tmp_path / "registry")
    record = JobRecord.model_validate({**_record().model_dump(mode="json"), "from_the_future": 1})
    store.save(record)
    (loaded,) = store.load_all()
    assert loaded == record
    assert loaded.model_dump()["from_the_future"] == 1
    with pytest.raises(ValueError, match="not a task record id"):
        store.path_of("../escape")
    store.delete(record.id)
    assert store.load_all() == []


def test_record_store_removes_a_records_leftover_temp_file(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """A crash between write and rename leaves <id>.json.tmp-<pid>-<hex>: load_all removes it, the record loads."""
    store = RecordStore(tmp_path / "registry")
    record = _record()
    store.save(record)
    stale = store.path_of(record.id).with_name(f"{record.id}.json.tmp-123-abcd")
    stale.write_text("{half a record")
    assert store.load_all() == [record]
    assert not stale.exists()
    assert "left by an interrupted write" in caplog.text


def test_log_chunks_end_on_a_line_boundary(tmp_path: Path):
    """read_chunk cuts after the last newline when the limit falls inside a line."""
    path = tmp_path / "t.log"
    path.write_text("alpha\nbeta\ngamma\n")
    assert read_chunk(path, 0, limit=8) == ("alpha\n", 6, 17)
    assert read_chunk(path, 6, limit=100) == ("beta\ngamma\n", 17, 17)
    assert read_chunk(tmp_path / "missing.log", 0) == ("", 0, 0)


def test_clip_keeps_the_end():
    """Long responses keep their last characters, marked with an ellipsis."""
    assert clip("abcdef", 4) == "…def"
    assert clip("abc", 4) == "abc"
    assert clip(None, 4) is None
