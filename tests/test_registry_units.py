"""Small pieces of the registry: limits from env and config, the FIFO slot pool, record files, log chunks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kairosd.errors import UsageError
from kairosd.registry.limits import Limits, resolve_limits
from kairosd.registry.model import TaskKind, TaskRecord, clip
from kairosd.registry.persist import RecordStore
from kairosd.registry.slots import Slots
from kairosd.registry.tasklog import read_chunk

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_limits_env_wins_over_config_and_defaults_fill_the_rest():
    """KAIROS_MAX_CONCURRENT/KAIROS_MAX_DEPTH beat [limits]; kill_grace is read as kill_grace_s."""
    limits = resolve_limits(
        {"max_concurrent": 8, "max_depth": 3, "kill_grace": 2.5, "unrelated": True},
        {"KAIROS_MAX_CONCURRENT": "16"},
    )
    assert limits == Limits(max_concurrent=16, max_depth=3, kill_grace_s=2.5)
    assert resolve_limits(None, {}) == Limits()


@pytest.mark.parametrize(
    ("config", "env", "message"),
    [
        (None, {"KAIROS_MAX_CONCURRENT": "257"}, "KAIROS_MAX_CONCURRENT must be a whole number from 1 to 256"),
        (None, {"KAIROS_MAX_CONCURRENT": "0"}, "from 1 to 256, not '0'"),
        (None, {"KAIROS_MAX_DEPTH": "two"}, "KAIROS_MAX_DEPTH must be a whole number from 0 to 64"),
        ({"max_concurrent": 2.5}, {}, r"\[limits\] max_concurrent must be a whole number"),
        ({"kill_grace_s": True}, {}, r"\[limits\] kill_grace_s must be a number"),
    ],
)
def test_bad_limits_name_their_source(config, env, message):
    """A limit out of range or of the wrong type is a UsageError naming the variable or the key."""
    with pytest.raises(UsageError, match=message):
        resolve_limits(config, env)


def test_slots_are_fifo_and_a_cancelled_waiter_passes_its_slot_on():
    """Waiters get freed slots in arrival order; one cancelled after it was handed a slot passes it on."""

    async def main() -> None:
        slots = Slots(1)
        await slots.acquire()
        order: list[str] = []

        async def take(name: str) -> None:
            await slots.acquire()
            order.append(name)

        first = asyncio.create_task(take("first"))
        second = asyncio.create_task(take("second"))
        await asyncio.sleep(0)
        assert slots.waiting == 2
        slots.release()  # handed to "first"...
        first.cancel()  # ...which gives up before it runs: the slot must reach "second"
        await asyncio.gather(first, return_exceptions=True)
        await second
        assert order == ["second"]
        assert (slots.in_use, slots.waiting, slots.peak) == (1, 0, 1)
        slots.release()
        assert slots.in_use == 0

    asyncio.run(main())


def _record(record_id: str = "t0123456789") -> TaskRecord:
    return TaskRecord(
        id=record_id, kind=TaskKind.SHELL, argv=["true"], prompt="", log_path="/x.log", created_at=T0, updated_at=T0
    )


def test_record_store_round_trip_keeps_unknown_fields(tmp_path: Path):
    """A saved record loads back equal; fields written by a newer kairos survive; ids are validated."""
    store = RecordStore(tmp_path / "registry")
    record = TaskRecord.model_validate({**_record().model_dump(mode="json"), "from_the_future": 1})
    store.save(record)
    (loaded,) = store.load_all()
    assert loaded == record
    assert loaded.model_dump()["from_the_future"] == 1
    with pytest.raises(ValueError, match="not a task record id"):
        store.path_of("../escape")
    store.delete(record.id)
    assert store.load_all() == []


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
