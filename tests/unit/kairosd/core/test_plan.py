"""Upcoming fires: scheduled time plus jitter gives the planned time (kairosd.core.plan)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kairosd.core.models import Task, new_task
from kairosd.core.plan import Fire, fire_for, scheduled_after, upcoming

T0 = datetime(2026, 6, 1, 8, 10, tzinfo=UTC)  # 10:10 in Berlin
HALF = "80000000"  # jitter fraction 0.5


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _task(**fields: Any) -> Task:
    defaults: dict[str, Any] = {"prompt": "p", "created_at": T0, "tz": "UTC", "task_id": HALF}
    return new_task(**(defaults | fields))


def test_recurring_without_jitter():
    """Without jitter planned_for equals scheduled_for, and fires follow the cron from created_at."""
    task = _task(cron="0 * * * *")
    fires = upcoming(task, T0, 3)
    assert [f.scheduled_for for f in fires] == [_utc(2026, 6, 1, h, 0) for h in (9, 10, 11)]
    assert all(f.planned_for == f.scheduled_for for f in fires)


@pytest.mark.parametrize(
    ("jitter", "delay"),
    [("claude", timedelta(minutes=3)), ("max:10m", timedelta(minutes=5)), ("none", timedelta(0))],
)
def test_recurring_with_jitter(jitter, delay):
    """With jitter planned_for is scheduled_for plus the id's offset; scheduled_for stays on the cron."""
    task = _task(cron="0 * * * *", jitter=jitter)
    fires = upcoming(task, T0, 3)
    assert [f.scheduled_for for f in fires] == [_utc(2026, 6, 1, h, 0) for h in (9, 10, 11)]
    assert [f.planned_for - f.scheduled_for for f in fires] == [delay] * 3


def test_fires_are_in_the_task_zone():
    """Both times of a fire are aware datetimes in the task's zone."""
    task = _task(cron="0 9 * * *", tz="Europe/Berlin", jitter="claude")
    (fire,) = upcoming(task, T0, 1)
    assert fire.scheduled_for.isoformat() == "2026-06-02T09:00:00+02:00"
    assert fire.planned_for.isoformat() == "2026-06-02T09:15:00+02:00"  # daily: capped at 15 min
    assert str(fire.planned_for.tzinfo) == "Europe/Berlin"


def test_count_limits_the_list():
    """upcoming returns at most count fires."""
    task = _task(cron="* * * * *")
    assert len(upcoming(task, T0, 1)) == 1
    assert len(upcoming(task, T0, 7)) == 7


def test_recurring_starts_after_now_not_after_creation():
    """For a recurring task fires already past (and not held by jitter) are not listed."""
    task = _task(cron="0 * * * *")
    now = _utc(2026, 6, 3, 12, 30)
    assert upcoming(task, now, 1)[0].scheduled_for == _utc(2026, 6, 3, 13, 0)


def test_after_is_the_last_handled_fire():
    """after (the last handled scheduled time) excludes that fire and everything before it."""
    task = _task(cron="0 * * * *", jitter="claude")
    now = _utc(2026, 6, 1, 9, 2)
    assert upcoming(task, now, 1)[0].scheduled_for == _utc(2026, 6, 1, 9, 0)
    assert upcoming(task, now, 1, after=_utc(2026, 6, 1, 9, 0))[0].scheduled_for == _utc(2026, 6, 1, 10, 0)


def test_fire_held_by_jitter_is_still_listed():
    """A fire scheduled before now but planned after now (held back by jitter) is still upcoming."""
    task = _task(cron="0 * * * *", jitter="claude")  # planned 3 minutes after each hour
    held = upcoming(task, _utc(2026, 6, 1, 9, 2, 59), 2)
    assert held[0] == Fire(_utc(2026, 6, 1, 9, 0), _utc(2026, 6, 1, 9, 3))
    assert held[1].scheduled_for == _utc(2026, 6, 1, 10, 0)
    # Once the planned time is reached the fire is no longer upcoming.
    assert upcoming(task, _utc(2026, 6, 1, 9, 3), 1)[0].scheduled_for == _utc(2026, 6, 1, 10, 0)


def test_oneshot_cron_only_fire_is_first_match():
    """A one-shot cron task's only fire is the first match after created_at."""
    task = _task(cron="0 9 * * *", tz="Europe/Berlin", recurring=False)
    fires = upcoming(task, T0, 5)
    assert fires == [Fire(_utc(2026, 6, 2, 7, 0), _utc(2026, 6, 2, 7, 0))]


@pytest.mark.parametrize(
    "now", [_utc(2026, 6, 2, 7, 0), _utc(2026, 6, 2, 7, 0, 1), _utc(2026, 6, 3, 12, 0), _utc(2027, 1, 1)]
)
def test_oneshot_cron_gone_once_passed(now):
    """Once its first match has passed a one-shot cron task has no upcoming fire (never the next day's)."""
    task = _task(cron="0 9 * * *", tz="Europe/Berlin", recurring=False)
    assert upcoming(task, now, 5) == []


def test_at_task():
    """An `at` task has one fire at its exact time, until that time passes."""
    at = _utc(2026, 6, 1, 12, 0, 30)
    task = _task(at=at, tz="Europe/Berlin")
    (fire,) = upcoming(task, T0, 5)
    assert fire.scheduled_for == fire.planned_for == at
    assert fire.scheduled_for.isoformat() == "2026-06-01T14:00:30+02:00"
    assert upcoming(task, at - timedelta(seconds=1), 5) == [fire]
    assert upcoming(task, at, 5) == []


def test_at_task_with_claude_jitter_fires_early_at_half_hours():
    """An `at` task on the hour with claude jitter is planned frac * 90 s early."""
    at = _utc(2026, 6, 1, 12, 0)
    task = _task(at=at, jitter="claude")
    (fire,) = upcoming(task, T0, 1)
    assert fire.scheduled_for == at
    assert fire.planned_for == at - timedelta(seconds=45)


def test_scheduled_after_oneshot_yields_at_most_one():
    """scheduled_after gives one time for a one-shot and an unbounded series for a recurring task."""
    oneshot = _task(cron="* * * * *", recurring=False)
    assert list(scheduled_after(oneshot, T0)) == [_utc(2026, 6, 1, 8, 11)]
    recurring = scheduled_after(_task(cron="* * * * *"), T0)
    assert [next(recurring) for _ in range(3)] == [_utc(2026, 6, 1, 8, m) for m in (11, 12, 13)]


def test_fire_for_uses_the_following_scheduled_time():
    """fire_for derives the period from the cron: an every-5-minutes task with claude moves 15 s."""
    task = _task(cron="*/5 * * * *", jitter="claude")
    fire = fire_for(task, _utc(2026, 6, 1, 9, 0))
    assert fire.planned_for - fire.scheduled_for == timedelta(seconds=15)
