"""The task model: validation, defaults per creator, unknown fields (kairosd.core.models)."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from kairosd.core.errors import InvalidTimeError
from kairosd.core.models import (
    AGENT_DEFAULT_EXPIRY_DAYS,
    CatchUp,
    CreatedBy,
    InboxTarget,
    ShellTarget,
    Task,
    new_task,
    new_task_id,
)

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
BASE: dict[str, Any] = {
    "id": "0123abcd",
    "prompt": "check the build",
    "created_at": T0,
    "cron": "*/5 * * * *",
}


def _errors(**fields: Any) -> list[ErrorDetails]:
    with pytest.raises(ValidationError) as info:
        Task(**(BASE | fields))
    return info.value.errors()


def test_minimal_task_defaults():
    """A task needs only id, prompt, created_at and a schedule; the rest has safe defaults."""
    task = Task(**BASE)
    assert task.recurring is True
    assert task.tz == "UTC"
    assert task.target == InboxTarget()
    assert task.jitter == "none"
    assert task.catch_up is CatchUp.ONCE
    assert task.expires_after_days is None
    assert task.meta == {}


@pytest.mark.parametrize("bad_id", ["0123ABCD", "0123abc", "0123abcde", "0123abcg", "", "0123-abc"])
def test_bad_id_rejected(bad_id):
    """Ids must be exactly 8 lowercase hex characters."""
    (error,) = _errors(id=bad_id)
    assert error["loc"] == ("id",)
    assert "8 lowercase hex" in error["msg"]


def test_new_task_id_is_valid():
    """new_task_id produces ids the model accepts."""
    for _ in range(20):
        Task(**(BASE | {"id": new_task_id()}))


@pytest.mark.parametrize("field", ["created_at", "last_fired_at"])
def test_naive_datetime_rejected(field):
    """Timestamps without a UTC offset are rejected."""
    (error,) = _errors(**{field: datetime(2026, 6, 1, 8, 0)})
    assert error["loc"] == (field,)
    assert "UTC offset" in error["msg"]


def test_naive_at_rejected():
    """An `at` without an offset is rejected too."""
    errors = _errors(cron=None, at=datetime(2026, 6, 2), recurring=False)
    assert any(e["loc"] == ("at",) and "UTC offset" in e["msg"] for e in errors)


def test_datetimes_normalised_to_utc():
    """Aware timestamps in any offset are stored as the same instant in UTC."""
    plus2 = timezone(timedelta(hours=2))
    task = Task(**(BASE | {"created_at": datetime(2026, 6, 1, 10, 0, tzinfo=plus2)}))
    assert task.created_at == T0
    assert task.created_at.tzinfo is UTC


@pytest.mark.parametrize("tz", ["Mars/Base", "", "Europe/Berlinn"])
def test_unknown_tz_rejected(tz):
    """An unknown IANA zone is rejected with the zone named."""
    (error,) = _errors(tz=tz)
    assert error["loc"] == ("tz",)
    assert f"unknown time zone {tz!r}" in error["msg"]


def test_known_tz_gives_zone():
    """Task.zone is the ZoneInfo for tz."""
    assert Task(**(BASE | {"tz": "Europe/Berlin"})).zone.key == "Europe/Berlin"


@pytest.mark.parametrize(
    ("cron", "message"),
    [("0 24 * * *", "hour: 24 is out of range 0-23"), ("61 * * * *", "minute")],
)
def test_bad_cron_message_passes_through(cron, message):
    """A bad cron expression fails on the cron field with the parser's message, naming the cron field."""
    (error,) = _errors(cron=cron)
    assert error["loc"] == ("cron",)
    assert message in error["msg"]


def test_needs_exactly_one_of_cron_and_at():
    """A task with both cron and at, or neither, is rejected."""
    both = _errors(at=T0 + timedelta(hours=1), recurring=False)
    neither = _errors(cron=None)
    for errors in (both, neither):
        assert "exactly one of 'cron' or 'at'" in errors[0]["msg"]


def test_at_cannot_be_recurring():
    """An exact-time task cannot be recurring."""
    (error,) = _errors(cron=None, at=T0 + timedelta(hours=1), recurring=True)
    assert "cannot be recurring" in error["msg"]


def test_jitter_normalised_and_validated():
    """jitter is stored in its normal form; an unknown policy is rejected."""
    assert Task(**(BASE | {"jitter": "MAX:90s"})).jitter == "max:1m30s"
    (error,) = _errors(jitter="bogus")
    assert error["loc"] == ("jitter",)


def test_expires_after_days_must_be_positive():
    """expires_after_days is at least 1 when given."""
    (error,) = _errors(expires_after_days=0)
    assert error["loc"] == ("expires_after_days",)


# --- new_task defaults -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("created_by", "expiry"),
    [
        (CreatedBy.CLI, None),
        (CreatedBy.IMPORT, None),
        (CreatedBy.MCP, AGENT_DEFAULT_EXPIRY_DAYS),
        (CreatedBy.HOOK, AGENT_DEFAULT_EXPIRY_DAYS),
    ],
)
@pytest.mark.parametrize(
    ("schedule", "recurring", "catch_up"),
    [
        ({"cron": "0 9 * * *"}, True, CatchUp.ONCE),
        ({"cron": "0 9 * * *", "recurring": False}, False, CatchUp.SURFACE),
        ({"at": T0 + timedelta(days=1)}, False, CatchUp.SURFACE),
    ],
)
def test_new_task_defaults(created_by, expiry, schedule, recurring, catch_up):
    """CLI/import tasks never expire, MCP/hook ones after 7 days; one-shots surface, recurring run once."""
    task = new_task(prompt="p", created_at=T0, tz="UTC", created_by=created_by, **schedule)
    assert task.created_by is created_by
    assert task.expires_after_days == expiry
    assert task.recurring is recurring
    assert task.catch_up is catch_up
    assert task.expires is (recurring and expiry is not None)


def test_new_task_explicit_values_win():
    """Explicit catch_up, expiry, id and extra fields override the defaults."""
    task = new_task(
        prompt="p",
        created_at=T0,
        tz="Europe/Berlin",
        cron="0 9 * * *",
        created_by=CreatedBy.MCP,
        task_id="deadbeef",
        catch_up=CatchUp.SKIP,
        expires_after_days=None,
        jitter="claude",
        name="morning",
    )
    assert (task.id, task.catch_up, task.expires_after_days) == ("deadbeef", CatchUp.SKIP, None)
    assert (task.jitter, task.name, task.tz) == ("claude", "morning", "Europe/Berlin")


@pytest.mark.parametrize("at", [T0, T0 - timedelta(seconds=1), T0 - timedelta(days=365)])
def test_new_task_past_at_rejected(at):
    """new_task rejects an `at` at or before created_at with a message saying it is in the past."""
    with pytest.raises(InvalidTimeError, match="in the past"):
        new_task(prompt="p", created_at=T0, tz="UTC", at=at)


def test_new_task_at_just_after_created_at_ok():
    """An `at` one second after created_at is accepted and is a non-recurring task."""
    task = new_task(prompt="p", created_at=T0, tz="UTC", at=T0 + timedelta(seconds=1))
    assert task.at == T0 + timedelta(seconds=1)
    assert task.cron is None


@pytest.mark.parametrize(
    ("fields", "expires"),
    [
        ({"created_by": CreatedBy.MCP}, True),
        ({"created_by": CreatedBy.MCP, "permanent": True}, False),
        ({"created_by": CreatedBy.MCP, "recurring": False}, False),
        ({"created_by": CreatedBy.CLI}, False),
        ({"created_by": CreatedBy.CLI, "expires_after_days": 3}, True),
    ],
)
def test_expires(fields, expires):
    """Task.expires: recurring, not permanent, and with an expiry set."""
    task = new_task(prompt="p", created_at=T0, tz="UTC", cron="0 9 * * *", **fields)
    assert task.expires is expires


# --- unknown fields and targets ----------------------------------------------------------------


def test_unknown_fields_round_trip():
    """Fields a newer kairos wrote (on the task and its target) survive model_dump / model_validate."""
    data = Task(**BASE).model_dump(mode="json")
    data["future_field"] = {"x": [1, 2]}
    data["target"] = {"kind": "shell", "argv": ["make", "test"], "env_policy": "clean"}
    task = Task.model_validate(data)
    assert isinstance(task.target, ShellTarget)
    dumped = task.model_dump(mode="json")
    assert dumped["future_field"] == {"x": [1, 2]}
    assert dumped["target"]["env_policy"] == "clean"
    assert dumped == data | {"target": data["target"] | {"cwd": None, "timeout_s": 300.0}}
    assert Task.model_validate(dumped) == task
    assert Task.model_validate(dumped).model_dump(mode="json") == dumped


def test_json_round_trip():
    """A full task survives a JSON string round trip unchanged."""
    task = new_task(
        prompt="p",
        created_at=T0,
        tz="Europe/Berlin",
        at=T0 + timedelta(hours=3),
        created_by=CreatedBy.HOOK,
        task_id="0badcafe",
        target={"kind": "shell", "argv": ["echo", "hi"], "cwd": "/tmp", "timeout_s": 5},
        meta={"session": "abc"},
    )
    assert Task.model_validate_json(task.model_dump_json()) == task


@pytest.mark.parametrize(
    ("target", "loc"),
    [
        ({"kind": "shell"}, ("target", "shell", "argv")),
        ({"kind": "shell", "argv": []}, ("target", "shell", "argv")),
        ({"kind": "shell", "argv": ["x"], "timeout_s": 0}, ("target", "shell", "timeout_s")),
        ({"kind": "mail"}, ("target",)),
    ],
)
def test_bad_target_rejected(target, loc):
    """A shell target needs a non-empty argv and a positive timeout; unknown kinds are rejected."""
    (error,) = _errors(target=target)
    assert error["loc"] == loc


@pytest.mark.parametrize(
    ("target", "cls"),
    [
        ({"kind": "inbox"}, InboxTarget),
        ({"kind": "inbox", "session": "s1"}, InboxTarget),
        ({"kind": "shell", "argv": ["true"]}, ShellTarget),
    ],
)
def test_target_discriminator(target, cls):
    """The target's kind picks the model class."""
    assert type(Task(**(BASE | {"target": target})).target) is cls


def test_shell_target_defaults():
    """A shell target defaults to no cwd and a 300 s timeout."""
    target = ShellTarget(argv=["true"])
    assert (target.kind, target.cwd, target.timeout_s) == ("shell", None, 300.0)


def test_a_task_is_never_changed_in_place():
    """A task is frozen and its meta read-only (issue 25): the store and the caches rely on it.

    Even a valid value is refused; a change is a new task, and the old one stays as it was.
    """
    task = Task(**{**BASE, "meta": {"k": [1]}})
    bare = Task(**BASE)
    for name, value in (("paused", True), ("prompt", "other"), ("meta", {}), ("from_newer", 1)):
        with pytest.raises(ValidationError, match="frozen"):
            setattr(task, name, value)
    for meta in (task.meta, bare.meta):
        for change in (
            lambda m: m.__setitem__("x", 1), lambda m: m.update(x=1), lambda m: m.setdefault("x", 1),
            lambda m: m.pop("k", None), lambda m: m.clear(), lambda m: m.__ior__({"x": 1}),
        ):  # fmt: skip
            with pytest.raises(TypeError, match="read-only"):
                change(meta)
    assert (task.meta, bare.meta, task.paused) == ({"k": [1]}, {}, False)
    changed = task.model_copy(update={"paused": True, "meta": {**task.meta, "x": 1}})
    assert (changed.paused, changed.meta, task.paused, task.meta) == (True, {"k": [1], "x": 1}, False, {"k": [1]})
    with pytest.raises(TypeError, match="read-only"):
        changed.meta["y"] = 2  # a copy given a new meta holds it read-only too


def test_a_read_only_meta_still_copies_dumps_and_pickles_as_a_dict():
    """Deep copies (the fake store's), pickles and dumps keep the values, and the copy is read-only too."""
    task = Task(**{**BASE, "meta": {"k": [1]}})
    for twin in (task.model_copy(deep=True), pickle.loads(pickle.dumps(task))):
        assert twin == task
        assert twin.meta["k"] is not task.meta["k"]
        with pytest.raises(TypeError):
            twin.meta["x"] = 1
    assert task.model_dump()["meta"] == {"k": [1]}
    assert '"meta":{"k":[1]}' in task.model_dump_json()
    assert json.dumps(task.meta) == '{"k": [1]}'


@pytest.mark.parametrize(
    ("changes", "loc", "message"),
    [
        ({"created_at": "2026-01-01T00:00:00"}, "created_at", "Value error, timestamps must carry a UTC offset"),
        ({"last_fired_at": "2026-01-01T00:00:00"}, "last_fired_at", "Value error, timestamps must carry a UTC offset"),
        (
            {"last_scheduled_for": "0001-01-02T00:00:00Z"},
            "last_scheduled_for",
            "Value error, last_scheduled_for 0001-01-02T00:00:00+00:00 is outside the supported range",
        ),
        ({"cron": None, "recurring": False, "at": "2026-07-01T09:00:00"}, "at", "Value error, timestamps must carry"),
        ({"name": "x" * 201}, "name", "String should have at most 200 characters"),
    ],
)
def test_a_tasks_times_and_texts_are_checked_by_field(changes: dict[str, Any], loc: str, message: str) -> None:
    """Each time (UTC offset, supported range) and the name's length are refused under their own name, from
    JSON (as the store reads a task) and from Python values; an empty one is valid."""
    fields = {**BASE, "cron": "0 9 * * *", **changes}
    for given in (json.dumps(fields, default=str), fields):
        with pytest.raises(ValidationError) as info:
            Task.model_validate_json(given) if isinstance(given, str) else Task.model_validate(given)
        error = info.value.errors(include_url=False)[0]
        assert error["loc"] == (loc,)
        assert error["msg"].startswith(message)
    empty = {"name": None, "last_fired_at": None, "last_scheduled_for": None}
    assert Task.model_validate({**BASE, "cron": "0 9 * * *", **empty}).name is None


def test_a_tasks_times_are_kept_in_utc() -> None:
    paris = timezone(timedelta(hours=2))
    task = Task.model_validate({**BASE, "cron": "0 9 * * *", "last_fired_at": datetime(2026, 6, 1, 10, tzinfo=paris)})
    assert task.last_fired_at == datetime(2026, 6, 1, 8, tzinfo=UTC)
    assert task.last_fired_at is not None
    assert task.last_fired_at.tzinfo is UTC
    assert task.created_at.tzinfo is UTC
