"""Tasks loaded from the store share what they can (issue 16) and stay the same tasks.

The loader gives tasks one "fields set", one empty ``meta`` and one empty unknown-fields dict, and
a dict of fields that shares its keys with the other tasks'. None of that may show: a loaded task
equals the saved one and dumps the same; a task is frozen and what it shares is read-only, so a
change is a new task and leaves the others alone (issue 25).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from kairosd.core.models import ShellTarget, Task, new_task
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def _tasks() -> list[Task]:
    plain = [
        new_task(prompt=f"task {i}", created_at=T0, tz="UTC", cron="0 9 * * *", task_id=f"{i:08x}") for i in range(5)
    ]
    with_meta = new_task(prompt="m", created_at=T0, tz="UTC", cron="0 9 * * *", task_id="0000aaaa", meta={"k": [1]})
    unknown = Task.model_validate({**plain[0].model_dump(mode="json"), "id": "0000bbbb", "from_newer": {"x": 1}})
    shell = new_task(
        prompt="s", created_at=T0, tz="UTC", at=T0.replace(year=2027), task_id="0000cccc",
        target=ShellTarget(argv=["true"]),
    )  # fmt: skip
    return [*plain, with_meta, unknown, shell]


def test_loaded_tasks_equal_the_saved_ones_and_change_one_at_a_time(tmp_path: Path) -> None:
    saved = _tasks()
    store = JsonStore(tmp_path / "scheduled_tasks.json", FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=saved))
    loaded = store.load().tasks
    assert loaded == saved
    assert [t.model_dump_json() for t in loaded] == [t.model_dump_json() for t in saved]
    assert loaded[6].model_extra == {"from_newer": {"x": 1}}
    assert loaded[5].meta == {"k": [1]}

    first, second = loaded[0], loaded[1]
    # Issue 25: what the loader shares cannot be changed through one task.
    with pytest.raises(ValidationError, match="frozen"):
        first.paused = True
    for shared in (first.meta, first.model_extra, first.target.model_extra):
        with pytest.raises(TypeError, match="read-only"):
            shared["now"] = "set"  # type: ignore[index]
    assert (second.paused, second.meta, second.model_extra, second.target.model_extra) == (False, {}, {}, {})
    first = first.model_copy(update={"paused": True, "meta": {"now": "set"}})
    assert (first.paused, first.model_dump()["meta"], second.paused, second.meta) == (True, {"now": "set"}, False, {})
    copy = second.model_copy(update={"prompt": "other"})
    assert (copy.prompt, second.prompt) == ("other", "task 1")
    # Saved again, the store reads back the same tasks.
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=loaded))
    assert store.load().tasks == loaded


def _mutable_parts(task: Task) -> dict[str, object]:
    """Every container a task holds (its own and its target's), by where it sits."""
    parts: dict[str, object] = {}
    for where, model in (("task", task), ("target", task.target)):
        parts[f"{where} extra"] = model.__pydantic_extra__
        for name, value in model.__dict__.items():
            if isinstance(value, dict | list | set):
                parts[f"{where}.{name}"] = value
    return parts


def test_two_loaded_tasks_share_no_dict_that_one_could_change(tmp_path: Path) -> None:
    """Whatever two loaded tasks share by identity (an empty meta, the unknown-fields dict, an inbox
    target's) refuses changes: a write through one task would otherwise reach them all."""
    store = JsonStore(tmp_path / "scheduled_tasks.json", FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=_tasks()))
    loaded = store.load().tasks
    seen: dict[int, list[str]] = {}
    objects: dict[int, object] = {}
    for task in loaded:
        for where, value in _mutable_parts(task).items():
            seen.setdefault(id(value), []).append(f"{task.id} {where}")
            objects[id(value)] = value
    shared = {key: places for key, places in seen.items() if len(places) > 1}
    assert shared, "the loader shares nothing any more: this test no longer looks at anything"
    for key, places in shared.items():
        value = objects[key]
        assert isinstance(value, dict), places
        with pytest.raises(TypeError):
            value["x"] = 1  # type: ignore[index]
        assert "x" not in value


def test_a_fresh_daemon_process_loads_lean_tasks(tmp_path: Path) -> None:
    """In a new interpreter (as kairosd starts), each loaded task's dict is smaller than pydantic's own."""
    store = JsonStore(tmp_path / "scheduled_tasks.json", FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=_tasks()))
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from kairosd.core.clock import SystemClock
        from kairosd.core.models import Task
        from kairosd.store.store import JsonStore

        tasks = JsonStore(Path(sys.argv[1]), SystemClock()).load().tasks
        own = Task.model_validate_json(tasks[0].model_dump_json())
        assert all(sys.getsizeof(t.__dict__) < sys.getsizeof(own.__dict__) for t in tasks), "not lean"
        plain = [t for t in tasks if not t.meta and not t.model_extra]
        assert len({id(t.meta) for t in plain}) == 1 and len({id(t.__pydantic_extra__) for t in plain}) == 1
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "scheduled_tasks.json")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_task_put_back_changed_keeps_the_layout_of_the_one_it_replaces(tmp_path: Path) -> None:
    """A catch-up pass puts back a copy of every task, its anchor moved (``model_copy``): the copy
    takes the replaced task's fields set (2 KB a task) and stays the same task in every other way;
    the task it replaced is left as it was (a failed write rolls back to it)."""
    from kairosd.scheduling.taskbook import TaskBook
    from kairosd.testing import InMemoryStore

    saved = _tasks()
    store = JsonStore(tmp_path / "scheduled_tasks.json", FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=saved))
    book = TaskBook(InMemoryStore(store.load()))
    book.load()
    before = book.get(saved[0].id)
    moved = before.model_copy(update={"last_scheduled_for": T0})
    assert moved.__pydantic_fields_set__ is not before.__pydantic_fields_set__
    book.put(moved)
    assert book.get(moved.id).__pydantic_fields_set__ is before.__pydantic_fields_set__
    assert moved == saved[0].model_copy(update={"last_scheduled_for": T0})
    assert before.last_scheduled_for is None
    assert before == saved[0]
    with pytest.raises(ValidationError, match="frozen"):
        moved.paused = True  # tasks are frozen: a change is a new task, never one shared with another
    assert (moved.paused, before.paused) == (False, False)


def test_a_moved_task_is_its_model_copy_in_the_lean_layout(tmp_path: Path) -> None:
    """``moved`` (a catch-up moves the anchor of every task) gives what ``model_copy`` gives, with the
    loaded tasks' layout: a dict on the shared keys and the original's fields set; unknown fields are
    copied, never shared; the original is left alone, and so are the other tasks after a change."""
    from kairosd.core.models import moved

    store = JsonStore(tmp_path / "scheduled_tasks.json", FakeClock(T0))
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=_tasks()))
    for task in store.load().tasks:
        copy = moved(task, last_scheduled_for=T0, last_fired_at=T0)
        assert copy == task.model_copy(update={"last_scheduled_for": T0, "last_fired_at": T0})
        assert (
            copy.model_dump_json()
            == task.model_copy(update={"last_scheduled_for": T0, "last_fired_at": T0}).model_dump_json()
        )
        assert copy.__pydantic_fields_set__ is task.__pydantic_fields_set__
        assert sys.getsizeof(copy.__dict__) <= sys.getsizeof(task.__dict__)
        assert (task.last_scheduled_for, task.last_fired_at) == (None, None)
        if task.model_extra:
            assert copy.model_extra == task.model_extra
            assert copy.model_extra is not task.model_extra
        with pytest.raises(ValidationError, match="frozen"):
            copy.paused = True
        assert not task.paused
    with pytest.raises(TypeError, match="no field 'nope'"):
        moved(task, nope=1)
