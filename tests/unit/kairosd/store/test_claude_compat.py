"""Converting Claude Code's scheduled_tasks.json shape to kairos tasks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kairosd.core.errors import UsageError
from kairosd.core.models import CatchUp, CreatedBy, Task
from kairosd.store.claude_compat import claude_task_to_v2, dropped_keys, read_claude_tasks
from kairosd.store.migrations import SCHEMA_VERSION, migrate, schema_version_of

ZONE = "America/New_York"


def _item(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "3f9a1c2e",
        "cron": "*/5 * * * *",
        "prompt": "p",
        "createdAt": 1763766900000,
    }
    return base | fields


def test_one_shot_conversion() -> None:
    """A task without 'recurring' is a one-shot: surfaced if missed, no expiry, imported, local zone."""
    out = claude_task_to_v2(_item(), ZONE)
    assert out == {
        "id": "3f9a1c2e",
        "prompt": "p",
        "cron": "*/5 * * * *",
        "recurring": False,
        "tz": ZONE,
        "created_at": "2025-11-21T23:15:00+00:00",
        "created_by": "import",
        "permanent": False,
        "catch_up": "surface",
        "expires_after_days": None,
    }


def test_recurring_permanent_conversion_with_last_fire() -> None:
    """recurring/permanent flags carry over, lastFiredAt becomes last_fired_at, catch-up is 'once'."""
    task = Task.model_validate(
        claude_task_to_v2(_item(recurring=True, permanent=True, lastFiredAt=1763767200500), ZONE)
    )
    assert task.recurring
    assert task.permanent
    assert task.catch_up == CatchUp.ONCE
    assert task.created_by == CreatedBy.IMPORT
    assert task.last_fired_at == datetime(2025, 11, 21, 23, 20, 0, 500000, tzinfo=UTC)
    assert task.zone.key == ZONE


def test_keys_that_are_not_claudes_are_not_read() -> None:
    """Issue #13: a key such as "target" in a cloned project's file must not become the task's target."""
    item = _item(agentId="a1", extra={"x": 1}, target={"kind": "shell", "argv": ["/bin/sh"]}, **{"bad\nkey": 1})
    task = Task.model_validate(claude_task_to_v2(item, ZONE))
    assert task.model_extra == {}
    assert task.target.kind == "inbox"
    assert dropped_keys(item) == ["agentId", "bad\\nkey", "extra", "target"]


def test_a_recurring_tasks_last_fire_is_its_anchor_as_in_claude_code() -> None:
    task = Task.model_validate(claude_task_to_v2(_item(recurring=True, lastFiredAt=1763767200500), ZONE))
    assert task.last_scheduled_for == task.last_fired_at


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        (_item(createdAt=None), "createdAt"),
        (_item(createdAt=True), "createdAt"),
        (_item(lastFiredAt="yesterday"), "lastFiredAt"),
        (_item(recurring="yes"), "recurring"),
        (_item(prompt=3), "prompt"),
        ({"id": "3f9a1c2e", "cron": "*/5 * * * *", "createdAt": 1}, "missing 'prompt'"),
        ("not an object", "expected an object"),
    ],
)
def test_malformed_items_raise_value_error(item: Any, reason: str) -> None:
    """The conversion names the field at fault."""
    with pytest.raises(ValueError, match=reason):
        claude_task_to_v2(item, ZONE)


def test_read_reports_rejects_with_index_and_reason() -> None:
    """Good items become tasks; bad cron, missing prompt, bad id and a repeated id are reported by index."""
    doc = {
        "tasks": [
            _item(id="00000001", recurring=True),
            _item(id="00000002", cron="61 * * * *"),
            {"id": "00000003", "cron": "*/5 * * * *", "createdAt": 1763766900000},
            _item(id="NOTHEX!!"),
            _item(id="00000005"),
            _item(id="00000001"),
        ]
    }
    result = read_claude_tasks(json.dumps(doc).encode(), ZONE)
    assert [t.id for t in result.tasks] == ["00000001", "00000005"]
    assert [(r.index, r.id) for r in result.rejected] == [
        (1, "00000002"),
        (2, "00000003"),
        (3, "NOTHEX!!"),
        (5, "00000001"),
    ]
    reasons = {r.index: r.reason for r in result.rejected}
    assert reasons[1].startswith("cron:")
    assert "minute" in reasons[1]
    assert reasons[2] == "missing 'prompt'"
    assert reasons[3] == "id: 'NOTHEX!!' is not a Claude Code task id (8 lowercase hex digits)"
    assert reasons[5] == "id: '00000001' appears earlier in the file"


def test_an_item_nested_deeper_than_claude_writes_is_rejected_and_the_others_convert() -> None:
    """Measured before parsing (no RecursionError), and only that item is rejected (issue 27, finding 6)."""
    good = {"id": "0000000a", "cron": "* * * * *", "prompt": "p", "createdAt": 1_700_000_000_000}
    text = json.dumps({"tasks": [good]})[:-2] + ', {"id": "0000000b", "prompt": ' + "[" * 100_000
    text += "]" * 100_000 + ', "cron": "* * * * *", "createdAt": 1}]}'
    result = read_claude_tasks(text, ZONE)
    assert [t.id for t in result.tasks] == ["0000000a"]
    assert [(r.id, r.reason) for r in result.rejected] == [("0000000b", "nested deeper than 32 levels")]


def test_a_document_whose_task_list_is_too_deep_is_refused() -> None:
    with pytest.raises(UsageError, match="nested deeper than"):
        read_claude_tasks("[" * 100_000 + "]" * 100_000, ZONE)


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity", "1" * 5000])
def test_an_item_with_a_number_that_is_not_finite_is_rejected(number: str) -> None:
    """1e999 was read as inf (then written as null); now that item is rejected, naming the number."""
    text = '{"tasks": [{"id": "0000000b", "cron": "* * * * *", "prompt": "p", "createdAt": ' + number + "}]}"
    result = read_claude_tasks(text, ZONE)
    assert result.tasks == []
    [rejected] = result.rejected
    assert rejected.id == "0000000b"
    assert "number" in rejected.reason


def test_read_accepts_str_and_empty_list() -> None:
    """Text input works too, and an empty task list is an empty result."""
    result = read_claude_tasks('{"tasks": []}', ZONE)
    assert result.tasks == []
    assert result.rejected == []


@pytest.mark.parametrize("data", ["{", "[]", '{"tasks": {}}', b"\xff"])
def test_read_rejects_documents_that_are_not_claude_files(data: str | bytes) -> None:
    """A document that is not JSON or has no 'tasks' list is a usage error for the whole file."""
    with pytest.raises(UsageError, match=r"not a Claude scheduled_tasks\.json"):
        read_claude_tasks(data, ZONE)


def test_migrate_v1_keeps_top_level_unknowns_and_is_noop_when_current() -> None:
    """migrate upgrades a versionless document to the current schema and leaves a current one alone."""
    raw = {"tasks": [_item()], "claudeSetting": 1}
    assert schema_version_of(raw) == 1
    out = migrate(raw, ZONE)
    assert out["schema_version"] == SCHEMA_VERSION
    assert out["claudeSetting"] == 1
    assert out["tasks"][0]["tz"] == ZONE
    assert raw == {"tasks": [_item()], "claudeSetting": 1}  # the input is not modified
    current = {"schema_version": SCHEMA_VERSION, "tasks": []}
    assert migrate(current, ZONE) == current


@pytest.mark.parametrize("version", [0, -1, "2", True, 1.5])
def test_schema_version_must_be_positive_int(version: object) -> None:
    """A schema_version that is not a positive integer is rejected rather than guessed at."""
    with pytest.raises(ValueError, match="schema_version"):
        schema_version_of({"schema_version": version})


def test_migrate_refuses_newer() -> None:
    """migrate does not pretend to downgrade a newer document."""
    with pytest.raises(ValueError, match="newer"):
        migrate({"schema_version": SCHEMA_VERSION + 1}, ZONE)
