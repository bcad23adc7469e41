"""Tasks loaded from the store share what they can (issue 16) and stay the same tasks.

The loader gives tasks one "fields set", one empty ``meta`` and one empty unknown-fields dict, and
a dict of fields that shares its keys with the other tasks'. None of that may show: a loaded task
equals the saved one, dumps the same, and a change to one task leaves the others alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

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
    first.paused = True
    first.meta = {"now": "set"}
    assert (second.paused, second.meta, second.model_extra) == (False, {}, {})
    assert first.model_dump()["meta"] == {"now": "set"}
    copy = second.model_copy(update={"prompt": "other"})
    assert (copy.prompt, second.prompt) == ("other", "task 1")
    # Saved again, the store reads back the same tasks.
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=loaded))
    assert store.load().tasks == loaded


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
    moved.paused = True
    assert (moved.paused, before.paused) == (True, False)


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
        copy.paused = True
        assert not task.paused
    with pytest.raises(TypeError, match="no field 'nope'"):
        moved(task, nope=1)
