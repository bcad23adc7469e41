"""The data behind ``kairos timeline`` (``GET /v1/timeline``): fires planned and fires past, in a window.

Planned fires come from the scheduler's own schedule math (:func:`kairosd.core.schedule.fires.iter_fires`,
listed as whole epoch seconds by its cheaper twin :func:`~kairosd.core.schedule.fires.fire_seconds`, and the
jitter rule of :func:`kairosd.core.schedule.jitter.planned_time`, as :func:`kairosd.core.plan.upcoming` uses
them), so jitter is included and a drawn fire is the fire that will happen. Past fires are the run ledger's runs and the
missed ledger's records in the window. Everything is bounded: at most ``cap`` planned fires, runs and
missed slots per task, and the answer says which tasks were capped.

kairosd does not record when it was down. The spans are derived: a missed record whose reason is
"kairosd was not running" proves the daemon was down from its first missed slot until it noticed
(``detected_at``), and so does a catch-up run from its planned time until it was dispatched. Each span
is a lower bound of the real outage (it began after the last fire that went out); the answer says so.

Must not import the server, the store or the CLI.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from kairosd.core.models import SessionTarget, Task
from kairosd.core.records import MissedRecord, Outcome, Run
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import fire_seconds, iter_fires, next_fire, offset_changes
from kairosd.core.schedule.jitter import JitterPolicy, jitter_fraction, parse_jitter, planned_time, recurring_delay
from kairosd.scheduling.firing import NOT_RUNNING

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
DEFAULT_CAP = 2000  # fires per task per window: a minutely task over a day is 1,440
MAX_CAP = 20_000
MAX_WINDOW = timedelta(days=62)
DEFAULT_SPAN = timedelta(hours=24)  # either side of now
# A run is drawn at its dispatch; one planned this long before the window may have gone out inside it.
RUN_SLACK = timedelta(days=1)
DOWNTIME_SOURCE = (
    "derived: kairosd does not record its downtime; each span runs from the first fire missed "
    "while it was not running (or the first caught up late) until it noticed, so the real outage "
    "began earlier, after the last fire that went out"
)


def matches(task: Task, ids: set[str] | None, target: str | None, project: str | None, name: str | None) -> bool:
    """Whether ``task`` passes the timeline's filters (each one given must hold)."""
    if ids is not None and task.id not in ids:
        return False
    if target is not None and task.target.kind != target:
        return False
    if name is not None and name.casefold() not in (task.name or "").casefold():
        return False
    if project is not None:
        where = task.target.project if isinstance(task.target, SessionTarget) else getattr(task.target, "cwd", None)
        root = project.rstrip("/") or "/"
        if where is None or not (where == root or where.startswith(root.rstrip("/") + "/")):
            return False
    return True


def planned_fires(task: Task, now: datetime, end: datetime, cap: int) -> tuple[list[int], bool]:
    """Every fire of ``task`` planned in (now, end] (jitter included), as epoch microseconds, at most ``cap``
    in the order they are scheduled; and whether capped.

    Starts where the scheduler stands (the last slot handled, else the task's creation), as
    :func:`kairosd.core.plan.upcoming` does, so a fire held back by jitter past ``now`` is included.
    A recurring task's fires are whole numbers from :func:`~kairosd.core.schedule.fires.fire_seconds`
    with :func:`~kairosd.core.schedule.jitter.recurring_delay` added, the rule ``planned_time`` applies:
    a week of 1,000 tasks is ~50,000 fires, and a datetime each was most of the answer's time.
    """
    if task.paused:
        return [], False
    policy = parse_jitter(task.jitter)
    floor = task.last_scheduled_for or task.created_at
    low, high = _micros(now), _micros(end)
    if task.at is not None or not task.recurring:
        return _single_fire(task, policy, floor, low, high), False
    assert task.cron is not None
    expr = parse_cron(task.cron)
    seconds = fire_seconds(expr, max(floor, now - policy.max_delay), end, task.zone)
    if policy.kind == "none":
        # Sorted whole seconds: those after now are a slice (s * 10**6 > low holds for s > low // 10**6).
        first = bisect_right(seconds, low // 1_000_000)
        return [second * 1_000_000 for second in seconds[first : first + cap]], len(seconds) - first > cap
    # The period of the last fire in the window reaches past it: ask for the fire after.
    after_last = next_fire(expr, _EPOCH + timedelta(seconds=seconds[-1]), task.zone) if seconds else None
    following = seconds[1:] + ([int(after_last.timestamp())] if after_last is not None else [])
    frac = jitter_fraction(task.id)
    delays: dict[int, int] = {}  # microseconds by period in seconds: a task has few distinct periods
    for period in {b - a for a, b in zip(seconds, following, strict=False)}:
        delays[period] = recurring_delay(policy, frac, timedelta(seconds=period)) // _MICRO
    planned = [a * 1_000_000 + delays[b - a] for a, b in zip(seconds, following, strict=False)]
    if len(following) < len(seconds):
        planned.append(seconds[-1] * 1_000_000)  # no fire follows (the horizon ran out): not moved
    fires = [at for at in planned if low < at <= high]
    return fires[:cap], len(fires) > cap


def _single_fire(task: Task, policy: JitterPolicy, floor: datetime, low: int, high: int) -> list[int]:
    """The one fire of a task that fires once (``at``, or a cron that does not recur), if planned in (low, high]."""
    if task.at is not None:
        if task.at <= floor:
            return []
        scheduled: datetime | None = task.at.astimezone(UTC)
    else:
        assert task.cron is not None
        scheduled = next_fire(parse_cron(task.cron), floor, task.zone)
    if scheduled is None:
        return []
    planned = planned_time(
        policy, task.id, scheduled, recurring=False, following=None, created_at=task.created_at, zone=task.zone
    )
    at = _micros(planned)
    return [at] if low < at <= high else []


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICRO


def iso(micros: int) -> str:
    """An epoch-microseconds instant as ISO 8601 in UTC (as ``datetime.isoformat`` writes it)."""
    return isos([micros])[0]


# "HH:MM:" of each minute of a day and "SS" of each second: an instant's text is three lookups.
_MINUTES = [f"{hour:02d}:{minute:02d}:" for hour in range(24) for minute in range(60)]
_SECONDS = [f"{second:02d}" for second in range(60)]


def isos(instants: list[int]) -> list[str]:
    """:func:`iso` of each epoch-microseconds instant: the text ``datetime.isoformat`` gives in UTC, built from
    a day's date and lookups (a datetime each made 50,000 instants of a week a third of ``--json``)."""
    days: dict[int, str] = {}
    out = []
    for micros in instants:
        second, fraction = divmod(micros, 1_000_000)
        day, rest = divmod(second, 86400)
        date = days.get(day)
        if date is None:
            date = days[day] = (_EPOCH + timedelta(days=day)).date().isoformat() + "T"
        clock = _MINUTES[rest // 60] + _SECONDS[rest % 60]
        out.append(f"{date}{clock}.{fraction:06d}+00:00" if fraction else f"{date}{clock}+00:00")
    return out


def outcome_of(run: Run) -> str:
    """The kind a timeline draws a run as: delivered, late (caught up), failed, skipped, missed or running."""
    if run.outcome is None or run.outcome is Outcome.QUEUED:
        return "running"
    if run.outcome is Outcome.DELIVERED:
        return "late" if run.catch_up else "delivered"
    return run.outcome.value


def run_time(run: Run) -> datetime:
    """When a run happened, as drawn: dispatched, else finished, else planned."""
    return run.dispatched_at or run.started_at or run.planned_for


def missed_slots(task: Task | None, record: MissedRecord, cap: int) -> list[datetime]:
    """The slots a missed record summarises, recomputed from the task's schedule (at most ``cap``).

    A record counts its misses without listing them; the schedule gives them back. Without the task
    (removed) or its cron, only the newest slot (and the first) are known.
    """
    first = record.first_scheduled_for or record.scheduled_for
    if task is None or task.cron is None or record.count <= 2:
        return sorted({first, record.scheduled_for})[:cap]
    slots: list[datetime] = []
    for slot in iter_fires(parse_cron(task.cron), first - timedelta(seconds=1), task.zone):
        if slot > record.scheduled_for or len(slots) >= min(cap, record.count):
            break
        slots.append(slot)
    return slots


def downtime(records: Iterable[MissedRecord], runs: Iterable[Run], start: datetime, end: datetime) -> list[list[str]]:
    """The spans kairosd was down, merged and clipped to [start, end], as [from, to] ISO strings."""
    spans = [
        (r.first_scheduled_for or r.scheduled_for, r.detected_at) for r in records if r.reason.startswith(NOT_RUNNING)
    ]
    spans += [(r.planned_for, r.dispatched_at) for r in runs if r.catch_up and r.dispatched_at is not None]
    spans += [
        (r.planned_for, r.finished_at)
        for r in runs
        if r.outcome is Outcome.MISSED and r.finished_at is not None and (r.reason or "").startswith(NOT_RUNNING)
    ]
    merged: list[list[datetime]] = []
    for a, b in sorted((max(a, start), min(b, end)) for a, b in spans if b > start and a < end):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [[a.isoformat(), b.isoformat()] for a, b in merged]


def _planned(fires: list[int], start: datetime, end: datetime, bins: int | None) -> dict[str, Any]:
    if bins is None:
        return {"planned": isos(fires)}
    # The placement kairos.timeline.layout gives a listed instant: (epoch seconds - origin) * columns / span.
    origin, scale = start.timestamp(), bins / (end - start).total_seconds()
    counts = Counter([int((at / 1e6 - origin) * scale) for at in fires])
    if bins in counts:  # the window's end: the last slice
        counts[bins - 1] += counts.pop(bins)
    return {"planned_bins": sorted(counts.items()), "planned_count": len(fires)}


def dst_changes(zone_name: str, start: datetime, end: datetime) -> list[dict[str, str]]:
    return [
        {"at": at.isoformat(), "before": _offset(before), "after": _offset(after)}
        for at, before, after in offset_changes(ZoneInfo(zone_name), start, end)
    ]


def _offset(delta: timedelta) -> str:
    minutes = int(delta.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def build(
    tasks: list[Task],
    runs: list[Run],
    missed: list[MissedRecord],
    now: datetime,
    start: datetime,
    end: datetime,
    cap: int,
    started_at: datetime,
    bins: int | None = None,
) -> dict[str, Any]:
    """The timeline document for ``tasks`` (already filtered) over [start, end] at ``now``.

    With ``bins`` the planned fires come counted in that many equal slices of the window
    (``planned_bins``: [slice, count] pairs), not listed: what a chart of that many columns needs,
    without 50,000 instants to print and parse.
    """
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        if run.outcome is not Outcome.MISSED:  # a missed run repeats its missed record, which lists every slot
            by_task.setdefault(run.task_id, []).append(run)
    missed_by_task: dict[str, list[MissedRecord]] = {}
    for record in missed:
        first = record.first_scheduled_for or record.scheduled_for
        if record.scheduled_for >= start and first <= end:
            missed_by_task.setdefault(record.task_id, []).append(record)
    zones: dict[str, list[dict[str, str]]] = {}
    rows = []
    capped = []
    for task in tasks:
        fires, over = planned_fires(task, max(now, start), end, cap) if end > now else ([], False)
        past = sorted(by_task.get(task.id, []), key=run_time)
        if len(past) > cap:
            past, over = past[-cap:], True
        slots = [
            {"at": slot.isoformat(), "count": 1, "reason": record.reason, "action": record.action}
            for record in missed_by_task.get(task.id, [])
            for slot in missed_slots(task, record, cap)
            if start <= slot <= end
        ]
        if over:
            capped.append(task.id)
        if task.tz not in zones:
            zones[task.tz] = dst_changes(task.tz, start, end)
        rows.append(
            {
                "id": task.id,
                "name": task.name,
                "tz": task.tz,
                "schedule": task.cron or (task.at.isoformat() if task.at else None),
                "paused": task.paused,
                "capped": over,
                # Only the planned instants (jitter included): 1,000 tasks over a week are ~50,000 of them.
                **_planned(fires, start, end, bins),
                "runs": [
                    {
                        "run_id": r.run_id,
                        "at": run_time(r).isoformat(),
                        "scheduled_for": r.scheduled_for.isoformat(),
                        "outcome": outcome_of(r),
                        "late_by_s": r.late_by_s,
                        "manual": r.manual,
                        "reason": r.reason,
                    }
                    for r in past
                ],
                "missed": slots,
            }
        )
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "now": now.isoformat(),
        "cap": cap,
        "bins": bins,
        "capped": capped,
        "tasks": rows,
        "dst": {zone: changes for zone, changes in zones.items() if changes},
        "downtime": downtime(missed, runs, start, end),
        "downtime_source": DOWNTIME_SOURCE,
        "started_at": started_at.isoformat(),
    }
