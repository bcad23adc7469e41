"""The view fields a listing appends to each task's JSON (kairosd.scheduling.viewtails), against text by hand.

One ViewTails encodes each distinct schedule and fire once for a piece of a listing. Fires that
compare equal must still read as themselves: the same instant in two zones, and the two
02:30 of a night the clocks go back (one zone: equal as wall times, with fold ignored, and
hashed alike), carry different offsets. Those tasks are neighbours in a listing (it is in fire
order), so they meet in one ViewTails.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from kairosd.core.models import Task, new_task
from kairosd.core.plan import Fire
from kairosd.core.schedule.explain import explain
from kairosd.scheduling.viewtails import ViewTails

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")


def _task(cron: str | None, tz: str, at: datetime | None = None, **fields: object) -> Task:
    return new_task(prompt="p", created_at=CREATED, tz=tz, cron=cron, at=at, task_id="0000000a", **fields)


def _fields(text: str) -> dict[str, object]:
    assert text.startswith(",")
    assert text.endswith("}")
    return json.loads("{" + text[1:])  # type: ignore[no-any-return]


def test_one_instant_in_two_zones_reads_in_each_zone():
    tails = ViewTails(explain)
    utc = _task("0 9 * * *", "UTC")
    berlin = _task("0 10 * * *", "Europe/Berlin")
    in_utc = datetime(2026, 3, 2, 9, 0, tzinfo=ZoneInfo("UTC"))
    in_berlin = datetime(2026, 3, 2, 10, 0, tzinfo=BERLIN)
    assert in_utc == in_berlin  # one instant
    first = _fields(tails.tail(utc, Fire(in_utc, in_utc), False))
    second = _fields(tails.tail(berlin, Fire(in_berlin, in_berlin), False))
    assert first["next_fires"] == [{"scheduled_for": "2026-03-02T09:00:00Z", "planned_for": "2026-03-02T09:00:00Z"}]
    assert second["next_fires"] == [
        {"scheduled_for": "2026-03-02T10:00:00+01:00", "planned_for": "2026-03-02T10:00:00+01:00"}
    ]
    assert second["planned_for"] == "2026-03-02T10:00:00+01:00"
    assert second["schedule"] == "0 10 * * *"
    assert second["explanation"] == explain("0 10 * * *")


def test_the_two_half_past_twos_of_a_night_the_clocks_go_back():
    tails = ViewTails(explain)
    task = _task("30 2 * * *", "Europe/Berlin")
    summer = datetime(2026, 10, 25, 2, 30, tzinfo=BERLIN)  # CEST, the first time
    winter = summer.replace(fold=1)  # CET, an hour later
    assert summer == winter
    assert hash(summer) == hash(winter)
    got = [_fields(tails.tail(task, Fire(when, when), False))["planned_for"] for when in (summer, winter, summer)]
    assert got == ["2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-25T02:30:00+02:00"]


def test_status_schedule_and_flags():
    tails = ViewTails(explain)
    at = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    once = _task(None, "Europe/Berlin", at=at)
    jittered = Fire(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), datetime(2026, 3, 2, 9, 3, 20, tzinfo=UTC))
    daily = _task("0 9 * * *", "UTC")
    assert _fields(tails.tail(once, Fire(at, at), True)) == {
        "status": "scheduled",
        "schedule": "2026-11-02T09:00:00+01:00",  # the instant in the task's zone
        "explanation": "once, at the exact time",
        "next_fires": [{"scheduled_for": "2026-11-02T08:00:00Z", "planned_for": "2026-11-02T08:00:00Z"}],
        "planned_for": "2026-11-02T08:00:00Z",
        "running": True,
    }
    assert _fields(tails.tail(daily, jittered, False))["next_fires"] == [
        {"scheduled_for": "2026-03-02T09:00:00Z", "planned_for": "2026-03-02T09:03:20Z"}
    ]
    assert _fields(tails.tail(daily, None, False)) == {
        "status": "done",
        "schedule": "0 9 * * *",
        "explanation": explain("0 9 * * *"),
        "next_fires": [],
        "planned_for": None,
        "running": False,
    }
    paused = daily.model_copy(update={"paused": True})
    assert _fields(tails.tail(paused, None, False))["status"] == "paused"
