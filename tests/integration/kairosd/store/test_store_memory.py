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
