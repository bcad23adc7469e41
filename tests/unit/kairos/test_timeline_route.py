"""``GET /v1/timeline`` on a kairosd wired by build_app, with a fake clock: planned fires from the scheduler's
own math (jitter included), past runs and missed fires, DST changes, derived downtime, the cap."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from session_support import Kairosd, remove_home, short_home

from kairos.client import ApiError, Client
from kairosd.core.protocol import route_path
from kairosd.core.records import MissedRecord
from kairosd.scheduling.firing import NOT_RUNNING
from kairosd.testing import FakeClock

# Saturday noon UTC: Europe/Berlin falls back from +02:00 to +01:00 at 01:00 UTC on Sunday 25 October 2026.
NOW = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
INBOX = {"kind": "inbox", "session": "s"}


@pytest.fixture(name="kd")
def kairosd() -> Iterator[Kairosd]:
    home = short_home("tl")
    daemon = Kairosd(home, clock=FakeClock(NOW)).start()
    try:
        yield daemon
    finally:
        daemon.stop()
        remove_home(home)


def _add(kd: Kairosd, **fields: Any) -> str:
    body = {"prompt": "p", "tz": "UTC", "target": INBOX, **fields}
    return str(kd.run(kd.service.add(body))["id"])


def _timeline(kd: Kairosd, **query: str) -> Any:
    return Client(kd.paths.socket).call("GET", route_path("timeline"), query=query)


def _row(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(row for row in doc["tasks"] if row["id"] == task_id)


def test_the_next_day_holds_every_planned_fire_and_the_zones_dst_change(kd):
    hourly = _add(kd, cron="0 * * * *", tz="Europe/Berlin", name="hourly")
    doc = _timeline(kd)
    assert doc["now"] == NOW.isoformat()
    assert doc["from"] == (NOW - timedelta(hours=24)).isoformat()
    assert doc["to"] == (NOW + timedelta(hours=24)).isoformat()
    planned = [datetime.fromisoformat(at) for at in _row(doc, hourly)["planned"]]
    # The fall-back hour repeats 02:00 local time; hourly is every UTC hour either way: 24 fires.
    assert len(planned) == 24
    assert planned[0] == NOW + timedelta(hours=1)
    assert doc["dst"] == {"Europe/Berlin": [{"at": "2026-10-25T01:00:00+00:00", "before": "+02:00", "after": "+01:00"}]}
    assert doc["capped"] == []
    # Counted in 48 slices of an hour each: one fire a slice from the hour after now; the window's end
    # belongs to the last slice.
    binned = _row(_timeline(kd, bins="48"), hourly)
    assert binned["planned_bins"] == [[i, 1] for i in range(25, 47)] + [[47, 2]]
    assert binned["planned_count"] == 24
    assert "planned" not in binned


def test_planned_fires_are_the_schedulers_own_with_jitter(kd):
    jittered = _add(kd, cron="*/30 * * * *", jitter="max:10m", name="jittered")
    doc = _timeline(kd)
    first = _row(doc, jittered)["planned"][0]
    # The scheduler's own plan for this task: the same instant, held back by jitter.
    view = kd.call(lambda: kd.service.get(jittered))
    fire = view["next_fires"][0]
    assert datetime.fromisoformat(first) == datetime.fromisoformat(fire["planned_for"])
    assert fire["planned_for"] != fire["scheduled_for"]


def test_past_runs_missed_slots_and_derived_downtime(kd):
    task = _add(kd, cron="*/10 * * * *", name="ten")
    run_id = kd.fire(task)
    down_from = NOW - timedelta(hours=5)
    record = MissedRecord(
        task_id=task,
        prompt="p",
        schedule="*/10 * * * *",
        first_scheduled_for=down_from,
        scheduled_for=down_from + timedelta(minutes=30),
        count=4,
        detected_at=down_from + timedelta(minutes=35),
        reason=NOT_RUNNING,
        action="recorded",
    )
    kd.call(lambda: kd.scheduler.missed.add([record]))
    doc = _timeline(kd)
    row = _row(doc, task)
    assert [(r["run_id"], r["outcome"], r["manual"]) for r in row["runs"]] == [(run_id, "delivered", True)]
    assert [m["at"] for m in row["missed"]] == [(down_from + timedelta(minutes=10 * i)).isoformat() for i in range(4)]
    assert doc["downtime"] == [[down_from.isoformat(), (down_from + timedelta(minutes=35)).isoformat()]]
    assert doc["downtime_source"].startswith("derived")


def test_filters_window_and_cap(kd):
    often = _add(kd, cron="* * * * *", name="often")
    other = _add(kd, cron="0 0 * * *", name="other", target={"kind": "shell", "argv": ["true"], "cwd": str(kd.home)})
    start = NOW + timedelta(hours=1)
    doc = _timeline(kd, **{"from": start.isoformat(), "to": (start + timedelta(hours=1)).isoformat(), "cap": "5"})
    assert _row(doc, often)["capped"] is True
    assert len(_row(doc, often)["planned"]) == 5
    assert doc["capped"] == [often]
    assert [r["id"] for r in _timeline(kd, name="OTH")["tasks"]] == [other]
    assert [r["id"] for r in _timeline(kd, target="shell")["tasks"]] == [other]
    assert [r["id"] for r in _timeline(kd, project=str(kd.home.parent))["tasks"]] == [other]
    assert [r["id"] for r in _timeline(kd, project=str(kd.home)[:-1])["tasks"]] == []
    assert [r["id"] for r in _timeline(kd, ids=often)["tasks"]] == [often]


def test_a_bad_window_is_refused(kd):
    with pytest.raises(ApiError, match="end after it starts"):
        _timeline(kd, **{"from": NOW.isoformat(), "to": (NOW - timedelta(hours=1)).isoformat()})
    # One end alone: the window is a day (or span seconds) from it.
    doc = _timeline(kd, **{"to": NOW.isoformat(), "span": "3600"})
    assert doc["from"] == (NOW - timedelta(hours=1)).isoformat()
    with pytest.raises(ApiError, match="no task starts with"):
        _timeline(kd, ids="ffffffff")
    with pytest.raises(ApiError, match="offset"):
        _timeline(kd, **{"from": "2026-10-24T10:00:00"})
    with pytest.raises(ApiError, match="at most 62 days"):
        _timeline(kd, **{"from": NOW.isoformat(), "to": (NOW + timedelta(days=70)).isoformat()})
