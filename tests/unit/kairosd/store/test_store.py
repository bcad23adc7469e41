"""The JSON store: atomic writes, crash recovery, corruption handling, migration."""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths_support import TESTS

from kairosd.core.errors import StoreCorruptError, StoreVersionError
from kairosd.core.models import CatchUp, CreatedBy, Task, new_task
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState
from kairosd.system.atomic import stale_temp_files, write_atomic
from kairosd.testing import FakeClock, InMemoryStore

FIXTURES = TESTS / "fixtures"
T0 = datetime(2026, 11, 21, 23, 15, 0, tzinfo=UTC)


def _task(task_id: str = "0123abcd", **fields: Any) -> Task:
    defaults: dict[str, Any] = {
        "prompt": "check the build",
        "created_at": T0,
        "tz": "UTC",
        "cron": "*/5 * * * *",
    }
    return new_task(task_id=task_id, **(defaults | fields))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "scheduled_tasks.json"


@pytest.fixture
def store(store_path: Path, clock: FakeClock) -> JsonStore:
    return JsonStore(store_path, clock, local_zone="Europe/Berlin")


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def test_missing_file_is_empty_store(store: JsonStore, store_path: Path) -> None:
    """A store that was never written loads as empty, current schema, and creates nothing."""
    state = store.load()
    assert state.schema_version == SCHEMA_VERSION
    assert state.tasks == []
    assert not store_path.parent.exists()


def test_round_trip_keeps_unknown_fields(store: JsonStore, store_path: Path) -> None:
    """Unknown top-level and per-task fields (from a newer kairos) survive load and save."""
    doc = {
        "schema_version": 2,
        "future_setting": {"a": 1},
        "tasks": [
            {
                **_task().model_dump(mode="json"),
                "future_task_field": [1, 2, 3],
                "target": {"kind": "inbox", "session": "s1", "future_target_field": True},
            }
        ],
    }
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps(doc))
    state = store.load()
    store.save(state)
    again = json.loads(store_path.read_text())
    assert again == doc
    assert store.load() == state


def test_save_then_load_is_identity(store: JsonStore) -> None:
    """What is saved is what loads back, field for field."""
    state = StoreState(
        schema_version=SCHEMA_VERSION,
        tasks=[_task("00000001"), _task("00000002", paused=True, name="n", meta={"k": "v"})],
    )
    store.save(state)
    assert store.load() == state


def test_save_format_and_permissions(store: JsonStore, store_path: Path) -> None:
    """The file is indented JSON ending in a newline, mode 0600, in a folder created 0700."""
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task()]))
    text = store_path.read_text()
    assert text.endswith("}\n")
    assert text.startswith('{\n  "schema_version": 2,')
    assert stat.S_IMODE(store_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store_path.parent.stat().st_mode) == 0o700


def test_save_leaves_no_temp_files(store: JsonStore, store_path: Path) -> None:
    """An atomic write leaves only the store itself in the folder."""
    for n in range(3):
        store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task(f"0000000{n}")]))
    assert _siblings(store_path) == {"scheduled_tasks.json"}


def test_save_does_not_require_ascii_input(store: JsonStore) -> None:
    """Non-ASCII prompts, and a lone surrogate kept from an unknown field, still save and load."""
    state = StoreState(schema_version=SCHEMA_VERSION, tasks=[_task(prompt_note="\ud800", prompt="prüfe ✓")])
    state.tasks[0] = state.tasks[0].model_copy(update={"prompt": "prüfe den Build ✓"})
    store.save(state)
    assert store.load() == state


def test_temp_file_from_crash_is_removed(store: JsonStore, store_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A partial temp file left by a crash mid-write is removed at load; the store is intact."""
    good = StoreState(schema_version=SCHEMA_VERSION, tasks=[_task()])
    store.save(good)
    tmp = store_path.with_name("scheduled_tasks.json.tmp-123-abc")
    tmp.write_bytes(b'{"schema_version": 2, "tasks": [{"id": "0123')
    with caplog.at_level(logging.WARNING, logger="kairosd.store.store"):
        assert store.load() == good
    assert not tmp.exists()
    assert any(str(tmp) in r.getMessage() for r in caplog.records)


def test_unrelated_files_are_not_removed(store: JsonStore, store_path: Path) -> None:
    """Only names of the exact temp pattern count as leftovers."""
    store.save(StoreState.empty())
    others = ["scheduled_tasks.json.bak", "scheduled_tasks.json.tmp", "other.json.tmp-1-ab"]
    for name in others:
        store_path.with_name(name).write_text("x")
    store.load()
    assert _siblings(store_path) == {"scheduled_tasks.json", *others}


def _assert_refused_and_copied(store: JsonStore, store_path: Path, content: bytes, *words: str) -> None:
    store_path.parent.mkdir(parents=True, exist_ok=True)
    store_path.write_bytes(content)
    with pytest.raises(StoreCorruptError) as info:
        store.load()
    copy = store_path.with_name("scheduled_tasks.json.corrupt-20261121T231500Z")
    assert store_path.read_bytes() == content
    assert copy.read_bytes() == content
    message = str(info.value)
    assert str(store_path) in message
    assert str(copy) in message
    assert "fix or remove it" in message
    assert "\n" not in message
    for word in words:
        assert word in message


def test_corrupt_json_is_refused_and_copied(store: JsonStore, store_path: Path) -> None:
    """Invalid JSON: StoreCorruptError, original byte-identical, a timestamped copy with the same bytes."""
    _assert_refused_and_copied(store, store_path, b'{"schema_version": 2, "tasks": [', "not valid JSON")


def test_invalid_task_is_set_aside_not_fatal(store: JsonStore, store_path: Path) -> None:
    """Parseable but invalid (a bad task id): that task goes to quarantine, the others load."""
    bad = _task().model_dump(mode="json") | {"id": "NOT-HEX"}
    good = _task("0123abce").model_dump(mode="json")
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"schema_version": 2, "tasks": [bad, good]}))
    assert [t.id for t in store.load().tasks] == ["0123abce"]
    [entry] = store.quarantine.entries()
    assert entry["record"] == bad
    assert entry["reason"].startswith("invalid id:")
    assert not any(".corrupt-" in name for name in _siblings(store_path))


def test_duplicate_ids_keep_the_first_and_set_the_rest_aside(store: JsonStore, store_path: Path) -> None:
    """Two tasks with one id are never merged: the later one is set aside, named."""
    task = _task().model_dump(mode="json")
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"schema_version": 2, "tasks": [task, task | {"prompt": "second"}]}))
    assert [t.prompt for t in store.load().tasks] == ["check the build"]
    [entry] = store.quarantine.entries()
    assert entry["record"]["prompt"] == "second"
    assert "'0123abcd' comes earlier" in entry["reason"]


@pytest.mark.parametrize("content", [b"[]", b'{"schema_version": "2", "tasks": []}', b"\xff\xfe"])
def test_wrong_shapes_are_refused(store: JsonStore, store_path: Path, content: bytes) -> None:
    """A non-object, a non-integer schema_version and non-UTF-8 bytes are all corrupt."""
    _assert_refused_and_copied(store, store_path, content)


def test_second_corruption_in_same_second_keeps_first_copy(store: JsonStore, store_path: Path) -> None:
    """A second failed load of other content does not overwrite the first copy."""
    store_path.parent.mkdir(parents=True)
    for content in (b"{", b"[1"):
        store_path.write_bytes(content)
        with pytest.raises(StoreCorruptError):
            store.load()
    names = _siblings(store_path)
    assert (store_path.parent / "scheduled_tasks.json.corrupt-20261121T231500Z").read_bytes() == b"{"
    assert (store_path.parent / "scheduled_tasks.json.corrupt-20261121T231500Z-1").read_bytes() == b"[1"
    assert len([n for n in names if ".corrupt-" in n]) == 2


def test_the_same_corrupt_content_is_copied_aside_once(store: JsonStore, store_path: Path, clock: FakeClock) -> None:
    """Issue #15 item 9: every failed start on one corrupt file used to add an identical copy."""
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(b"{")
    messages = []
    for _ in range(3):
        with pytest.raises(StoreCorruptError) as info:
            store.load()
        messages.append(info.value.message)
        clock.advance(60)
    copies = [n for n in _siblings(store_path) if ".corrupt-" in n]
    assert copies == ["scheduled_tasks.json.corrupt-20261121T231500Z"]
    assert all(copies[0] in message for message in messages)


def test_future_schema_is_refused_untouched(store: JsonStore, store_path: Path) -> None:
    """A store from a newer kairos raises StoreVersionError; the file is untouched and not copied."""
    content = b'{"schema_version": 3, "tasks": [], "new": 1}'
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(content)
    with pytest.raises(StoreVersionError, match=r"schema 3, this one reads up to 2\); upgrade kairos"):
        store.load()
    assert store_path.read_bytes() == content
    assert _siblings(store_path) == {"scheduled_tasks.json"}


def _load_fixture(store: JsonStore, store_path: Path) -> StoreState:
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes((FIXTURES / "store_v1_claude.json").read_bytes())
    return store.load()


def test_migrates_claude_v1_fixture(store: JsonStore, store_path: Path) -> None:
    """A Claude-shaped store (no schema_version) loads as v2 tasks in the given local zone."""
    state = _load_fixture(store, store_path)
    assert state.schema_version == 2
    recurring, one_shot, permanent = state.tasks
    assert [t.id for t in state.tasks] == ["3f9a1c2e", "a07b44d1", "c5e2f810"]
    for task in state.tasks:
        assert task.tz == "Europe/Berlin"
        assert task.created_by == CreatedBy.IMPORT
        assert task.expires_after_days is None
        assert task.at is None
    assert recurring.recurring
    assert not recurring.permanent
    assert recurring.catch_up == CatchUp.ONCE
    assert recurring.created_at == datetime(2025, 11, 21, 23, 15, tzinfo=UTC)
    assert recurring.last_fired_at == datetime(2025, 11, 21, 23, 20, tzinfo=UTC)
    assert not one_shot.recurring
    assert one_shot.catch_up == CatchUp.SURFACE
    assert one_shot.last_fired_at is None
    assert one_shot.created_at == datetime(2025, 11, 21, 23, 16, 52, 345000, tzinfo=UTC)
    assert permanent.recurring
    assert permanent.permanent
    assert permanent.cron == "0 9 * * 1-5"
    # Only Claude's own fields are read (a key it does not write, like this one, is dropped).
    assert permanent.model_extra == {}


def test_save_after_migration_writes_v2(store: JsonStore, store_path: Path) -> None:
    """Saving a migrated store writes schema 2 in snake_case, without the keys that are not Claude's."""
    state = _load_fixture(store, store_path)
    store.save(state)
    doc = json.loads(store_path.read_text())
    assert doc["schema_version"] == 2
    assert "originSessionId" not in doc["tasks"][2]
    assert "createdAt" not in doc["tasks"][0]
    assert doc["tasks"][0]["created_at"] == "2025-11-21T23:15:00Z"
    assert store.load() == state


def test_migration_sets_a_bad_v1_task_aside(store: JsonStore, store_path: Path) -> None:
    """A Claude store with an unconvertible task: that item (as Claude wrote it) goes to quarantine."""
    bad = {"id": "3f9a1c2e", "cron": "*/5 * * * *", "createdAt": 1}
    good = {"id": "3f9a1c2f", "cron": "*/5 * * * *", "prompt": "p", "createdAt": 1_700_000_000_000}
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"tasks": [bad, good]}))
    assert [t.id for t in store.load().tasks] == ["3f9a1c2f"]
    [entry] = store.quarantine.entries()
    assert entry["record"] == bad
    assert entry["reason"] == "missing 'prompt'"
    assert entry["id"] == "3f9a1c2e"


def test_write_atomic_exact_mode_and_stale_listing(tmp_path: Path) -> None:
    """write_atomic sets the exact mode despite the umask; stale_temp_files finds only its own pattern."""
    target = tmp_path / "ledger.jsonl"
    old = os.umask(0o077)
    try:
        write_atomic(target, b"a\n", mode=0o640)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_bytes() == b"a\n"
    leftover = tmp_path / "ledger.jsonl.tmp-42-deadbeef"
    leftover.write_bytes(b"")
    (tmp_path / "ledger.jsonl.tmp-x").write_bytes(b"")
    assert stale_temp_files(target) == [leftover]
    assert stale_temp_files(tmp_path / "missing" / "x.json") == []


def test_in_memory_store_copies_in_and_out() -> None:
    """The fake store hands out copies: changing a loaded or saved state changes nothing stored."""
    fake = InMemoryStore()
    state = StoreState(schema_version=SCHEMA_VERSION, tasks=[_task()])
    fake.save(state)
    state.tasks[0] = state.tasks[0].model_copy(update={"paused": True})  # a task itself is frozen
    loaded = fake.load()
    assert not loaded.tasks[0].paused
    loaded.tasks.clear()
    assert len(fake.load().tasks) == 1
    assert fake.saves == 1
    # The (frozen) tasks are shared; what else a state holds is copied, an unknown top-level field too.
    assert fake.load().tasks[0] is fake.load().tasks[0]
    fake.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[], future={"kept": [1]}))  # type: ignore[call-arg]
    fake.load().future["kept"].append(2)  # type: ignore[attr-defined]
    assert fake.load().future == {"kept": [1]}  # type: ignore[attr-defined]


_CRONS = st.sampled_from(["*/5 * * * *", "0 9 * * 1-5", "30 14 22 11 *", "0 0 1 1 *"])
_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10)
_TASKS = st.builds(
    _task,
    task_id=st.text(alphabet="0123456789abcdef", min_size=8, max_size=8),
    prompt=st.text(max_size=50),
    cron=_CRONS,
    created_at=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
    recurring=st.booleans(),
    paused=st.booleans(),
    permanent=st.booleans(),
    name=st.none() | st.text(max_size=10),
    meta=st.dictionaries(st.text(max_size=5), _JSON_SCALARS, max_size=3),
    last_fired_at=st.none() | st.just(T0 + timedelta(minutes=5)),
)


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tasks=st.lists(_TASKS, max_size=5, unique_by=lambda t: t.id))
def test_property_save_load_identity(tasks: list[Task]) -> None:
    """For generated tasks, save followed by load returns an equal state."""
    state = StoreState(schema_version=SCHEMA_VERSION, tasks=tasks)
    with tempfile.TemporaryDirectory() as folder:
        # A clock after every generated time: a time recording the past that lies ahead of the
        # clock is set to now at load (test_quarantine), which is not this property.
        store = JsonStore(Path(folder) / "scheduled_tasks.json", FakeClock(datetime(2100, 1, 2, tzinfo=UTC)))
        store.save(state)
        assert store.load() == state


@pytest.mark.parametrize("count", [0, 1, 3])
def test_the_line_reader_reads_its_own_layout_as_the_json_parser_does(store: JsonStore, store_path: Path, count: int):
    """A store kairos wrote is read line by line (the fast path), to exactly what parsing the JSON gives."""
    tasks = [_task(f"0000000{i}", name=f"t{i}", meta={"k": [i, ","]}) for i in range(count)]
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks, imported_claude_tasks=["a,b"], note="x"))
    data = store_path.read_bytes()
    fast = store._load_own(data)
    assert fast is not None
    careful = StoreState.model_validate(json.loads(data))
    assert fast.model_dump() == careful.model_dump()
    assert [t.id for t in fast.tasks] == [t.id for t in tasks]


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.rstrip("\n"),  # no final newline
        lambda text: text.replace('"tasks": [\n', '"tasks": [\n\n'),  # a blank line among the tasks
        lambda text: text.replace('"tasks": [\n', '"tasks":  [\n'),  # other spacing
        lambda text: text.replace("\n  ]\n}\n", "\n  ]\n }\n"),
        lambda text: text.replace("},\n    {", "}, {"),  # two tasks on one line
    ],
)
def test_any_other_layout_takes_the_careful_path_to_the_same_tasks(store: JsonStore, store_path: Path, edit) -> None:
    """Hand-edited layouts are not the line reader's: it declines, and the JSON parser reads them."""
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[_task("00000001"), _task("00000002")]))
    store_path.write_text(edit(store_path.read_text()))
    data = store_path.read_bytes()
    assert json.loads(data)  # still valid JSON
    assert store._load_own(data) is None
    assert [t.id for t in store.load().tasks] == ["00000001", "00000002"]
