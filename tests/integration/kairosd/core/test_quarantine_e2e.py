"""A real kairosd with bad records in its store: it starts, and status, doctor and list --problems say so.

kairosd is a real process; the verbs run in this process against it (:meth:`e2e_support.Env.here`):
what they print (and escape) is the point, not their interpreter's start."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from e2e_support import Env, env

from kairosd.core.models import new_task

__all__ = ["env"]  # the fixture, used below

pytestmark = pytest.mark.slow


def _record(task_id: str, **fields: object) -> dict[str, object]:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    return new_task(task_id="0000aaaa", prompt="p", cron="0 9 * * *", tz="UTC", created_at=created).model_dump(
        mode="json"
    ) | {"id": task_id, **fields}


def test_bad_records_are_set_aside_and_shown(env: Env) -> None:
    store = env.home / "state" / "scheduled_tasks.json"
    store.parent.mkdir(parents=True, mode=0o700)
    bad_cron = _record("bad0bad0", cron="61 * * * *")
    newline_id = _record("bad0bad1\n")
    far_anchor = _record("bad0bad2", last_scheduled_for="9999-12-31T23:59:59Z")
    good = _record("600d600d")
    store.write_text(json.dumps({"schema_version": 2, "tasks": [bad_cron, newline_id, far_anchor, good]}))
    env.start_daemon()

    assert [t["id"] for t in env.json_here("list")["tasks"]] == ["600d600d"]
    status = env.json_here("status")
    quarantine_path = str(env.home / "state" / "scheduled_tasks.quarantine.json")
    assert status["quarantine"] == {"count": 3, "path": quarantine_path}
    assert f"set aside:  3 task(s) in {quarantine_path}" in env.here("status").stdout

    problems = env.json_here("list", "--problems")
    assert problems["path"] == quarantine_path
    assert [e["record"] for e in problems["entries"]] == [bad_cron, newline_id, far_anchor]
    text = env.here("list", "--problems").stdout
    assert "bad0bad1\\n" in text  # escaped, on its row
    assert "invalid cron" in text
    assert "last_scheduled_for 9999-12-31T23:59:59+00:00 is outside" in problems["entries"][2]["reason"]

    doctor = json.loads(env.here("doctor", "--json", check=False).stdout)
    assert doctor["quarantine"]["count"] == 3
    assert any("kairos list --problems" in p for p in doctor["problems"])
    assert "set aside: 3 task(s)" in env.here("doctor", check=False).stdout

    # The next save of the store leaves them out; they stay in the quarantine file.
    env.here("pause", "600d600d")
    assert [t["id"] for t in json.loads(store.read_text())["tasks"]] == ["600d600d"]
    assert len(json.loads((env.home / "state" / "scheduled_tasks.quarantine.json").read_text())["entries"]) == 3
