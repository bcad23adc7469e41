"""The timeline's planned fires (kairosd.scheduling.timeline.planned_fires) are the scheduler's: every fire
of iter_fires moved by planned_time, across DST changes, with every kind of jitter and the cap.

planned_fires lists them as integers (fire_seconds plus recurring_delay) for speed; this compares it with
the plain datetime path it replaced, fire by fire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sizes_support import full_size

from kairosd.core.models import Task
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires
from kairosd.core.schedule.jitter import parse_jitter, planned_time
from kairosd.scheduling.timeline import iso, isos, planned_fires

CREATED = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
# Around the US change (8 March), the EU change (29 March) and the EU fall back (25 October).
NOWS = [datetime(2026, 3, 6, 7, 13, 20, tzinfo=UTC), datetime(2026, 3, 27, 23, 0, tzinfo=UTC),
        datetime(2026, 10, 23, 12, 0, 30, 500, tzinfo=UTC)]  # fmt: skip
# Each change (a Sunday) is at most two days after its start: the small size (tests/sizes_support.py)
# compares two and a half days from each start, across it; KAIROS_TEST_SIZE=full (.ci/run) four.
WINDOW = timedelta(days=4) if full_size() else timedelta(days=2, hours=12)


def _reference(task: Task, now: datetime, end: datetime, cap: int) -> tuple[list[datetime], bool]:
    """iter_fires and planned_time, one datetime at a time (what planned_fires must give)."""
    policy = parse_jitter(task.jitter)
    floor = task.last_scheduled_for or task.created_at
    assert task.cron is not None
    slots = iter_fires(parse_cron(task.cron), max(floor, now - policy.max_delay), task.zone)
    fires: list[datetime] = []
    scheduled = next(slots, None)
    while scheduled is not None and scheduled <= end:
        following = next(slots, None)
        planned = planned_time(
            policy, task.id, scheduled, recurring=True, following=following, created_at=task.created_at, zone=task.zone
        )
        if now < planned <= end:
            if len(fires) >= cap:
                return fires, True
            fires.append(planned.astimezone(UTC))
        scheduled = following
    return fires, False


@pytest.mark.parametrize("jitter", ["none", "max:5m", "max:2h", "claude"])
@pytest.mark.parametrize("cron", ["*/7 * * * *", "0 * * * *", "30 2 * * *", "15 1,2,3 * * 0"])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_planned_fires_are_planned_time_of_iter_fires(jitter, cron, zone):
    task = Task(id="9f3a01c2", prompt="p", created_at=CREATED, cron=cron, tz=zone, jitter=jitter)
    for now in NOWS:
        end = now + WINDOW
        for cap in (3, 20_000):
            expected, capped = _reference(task, now, end, cap)
            got, got_capped = planned_fires(task, now, end, cap)
            assert [iso(at) for at in got] == [at.isoformat() for at in expected], (now, cap)
            assert got_capped == capped


def test_isos_is_datetime_isoformat_in_utc():
    # Whole seconds and fractions, across midnights, a leap day and the epoch's own day.
    starts = [datetime(2028, 2, 28, 23, 59, 58, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC), NOWS[2]]
    instants = [start + timedelta(microseconds=n * 333_337) for start in starts for n in range(0, 40)]
    instants += [start + timedelta(hours=n, seconds=n) for start in starts for n in range(0, 60)]
    micros = [(at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) for at in instants]
    assert isos(micros) == [at.isoformat() for at in instants]
    assert iso(micros[1]) == instants[1].isoformat()
