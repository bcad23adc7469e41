"""Next fire times of a compiled cron expression in an IANA zone, with Debian's DST rules.

Two kinds of job, as Debian cron (and cronsim) tell them apart:

* **Fixed-time jobs** (neither the minute nor the hour field starts with ``*``)
  follow the wall clock. A time in a skipped interval (spring forward) fires
  once, at the instant of the jump; a time in a repeated interval (fall back)
  fires once, on the first pass.
* **Wildcard jobs** (``*`` or ``*/S`` in the minute or hour field) follow real
  time: they fire at every instant whose wall time matches. Skipped wall times
  do not exist, so nothing is caught up; repeated wall times match twice.

The search walks the calendar field by field in wall time (not minute by
minute), and only asks the zone for offsets near the result, which is what
makes it faster than cronsim and croniter. Every result is strictly after the
given instant.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from kairosd.core.schedule.cron import CronExpr

# Debian's leap-day rule means a valid expression may next fire 8+ years out
# (2096-02-29 -> 2104-02-29); day-of-week AND Feb 29 can take ~40 years.
HORIZON_YEARS = 100
_MINUTE = timedelta(minutes=1)
_SECOND = timedelta(seconds=1)
# No zone shifts its clock by more than this at once (Debian cron treats larger
# steps as clock corrections); a start this far from any change cannot see
# repeated wall times from before it.
_MAX_SHIFT = timedelta(hours=6)
# Zone transitions are assumed to be at least this far apart (true of every
# zone in tzdata since 1970); we look for one with a probe per step.
_PROBE_STEP = timedelta(days=7)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Matching days by (months, day fields, first, last): the tasks of one timeline share a few patterns.
_DAYS: dict[tuple[object, ...], tuple[int, ...]] = {}
_UTC_KEYS = frozenset({"UTC", "Etc/UTC", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu", "GMT", "Etc/GMT"})


def next_wall_match(expr: CronExpr, wall: datetime, inclusive: bool = False) -> datetime | None:
    """The first naive wall time matching ``expr`` at or after ``wall`` (after, if not inclusive).

    Seconds are ignored: cron matches whole minutes.
    """
    start = wall.replace(second=0, microsecond=0)
    if not inclusive or start != wall:
        start += _MINUTE
    year, month, day, hour, minute = start.year, start.month, start.day, start.hour, start.minute
    months, hours, minutes = expr.months, expr.hours, expr.minutes
    for y in range(year, year + HORIZON_YEARS + 1):
        mi = bisect_left(months, month) if y == year else 0
        for m in months[mi:]:
            same_month = y == year and m == month
            days = expr.days_in(y, m)
            di = bisect_left(days, day) if same_month else 0
            for d in days[di:]:
                if same_month and d == day:
                    hi = bisect_left(hours, hour)
                    if hi < len(hours):
                        h = hours[hi]
                        if h == hour:
                            ni = bisect_left(minutes, minute)
                            if ni < len(minutes):
                                return datetime(y, m, d, h, minutes[ni])
                            hi += 1
                            if hi == len(hours):
                                continue
                            h = hours[hi]
                        return datetime(y, m, d, h, minutes[0])
                    continue
                return datetime(y, m, d, hours[0], minutes[0])
    return None


def _offset_at(zone: ZoneInfo, instant: datetime) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def _first_change(zone: ZoneInfo, start: datetime, end: datetime, offset: timedelta) -> datetime | None:
    """The first instant in (start, end] whose UTC offset differs from ``offset``, or None."""
    lo = start
    while lo < end:
        hi = min(lo + _PROBE_STEP, end)
        if _offset_at(zone, hi) != offset:
            # Transitions fall on whole seconds: narrow (a, b] to under a second,
            # then the change is the first whole second after a.
            a, b = lo, hi  # offset(a) == offset, offset(b) != offset
            while b - a > _SECOND:
                mid = (a + (b - a) // 2).replace(microsecond=0)
                if mid <= a:
                    mid += _SECOND
                if mid >= b:
                    break
                if _offset_at(zone, mid) == offset:
                    a = mid
                else:
                    b = mid
            change = a.replace(microsecond=0) + _SECOND
            return change if change <= b else b
        lo = hi
    return None


def offset_changes(zone: ZoneInfo, start: datetime, end: datetime) -> list[tuple[datetime, timedelta, timedelta]]:
    """Every change of ``zone``'s UTC offset in (start, end]: (instant, offset before, offset after)."""
    changes = []
    offset = _offset_at(zone, start)
    at: datetime | None = start
    while at is not None:
        at = _first_change(zone, at, end, offset)
        if at is not None:
            after = _offset_at(zone, at)
            changes.append((at, offset, after))
            offset = after
    return changes


def resolve_wall(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant a naive wall time in ``zone`` stands for, in UTC, by Debian's fixed-time rules:
    a skipped time resolves to the jump, a repeated time to its first pass."""
    first = wall.replace(tzinfo=zone, fold=0).utcoffset()
    second = wall.replace(tzinfo=zone, fold=1).utcoffset()
    assert first is not None
    assert second is not None
    if first >= second:
        # Normal, or repeated (fall back): the first pass has the larger offset.
        return (wall - first).replace(tzinfo=UTC)
    # Skipped (spring forward): fire at the jump. PEP 495 gives the pre-jump
    # offset for fold=0, so the jump lies between these two instants.
    before = (wall - second).replace(tzinfo=UTC)
    change = _first_change(zone, before, (wall - first).replace(tzinfo=UTC), _offset_at(zone, before))
    assert change is not None
    return change


def next_fire(expr: CronExpr, after: datetime, zone: ZoneInfo) -> datetime | None:
    """The first fire of ``expr`` strictly after the aware instant ``after``, in ``zone``.

    Returns an aware datetime in ``zone`` (so it prints with its offset), or
    None if the expression has no match within the horizon.
    """
    if after.tzinfo is None:
        raise ValueError("after must be an aware datetime")
    utc_after = after.astimezone(UTC)
    if zone.key in _UTC_KEYS:
        wall_utc = next_wall_match(expr, utc_after.replace(tzinfo=None))
        return None if wall_utc is None else wall_utc.replace(tzinfo=zone)
    if expr.fixed_time:
        return _next_fixed(expr, utc_after, zone)
    return _next_wildcard(expr, utc_after, zone)


def _next_fixed(expr: CronExpr, after: datetime, zone: ZoneInfo) -> datetime | None:
    wall = after.astimezone(zone).replace(tzinfo=None)
    while True:
        candidate = next_wall_match(expr, wall)
        if candidate is None:
            return None
        instant = resolve_wall(candidate, zone)
        # A start inside the second pass of a repeated hour can resolve to the
        # first pass, which is already over: that run has happened, move on.
        if instant > after:
            return instant.astimezone(zone)
        wall = candidate


def _next_wildcard(expr: CronExpr, after: datetime, zone: ZoneInfo) -> datetime | None:
    start, inclusive = after, False
    while True:
        local = start.astimezone(zone)
        offset = local.utcoffset()
        assert offset is not None
        candidate = next_wall_match(expr, local.replace(tzinfo=None), inclusive)
        if candidate is None:
            return None
        instant = (candidate - offset).replace(tzinfo=UTC)
        if instant - start > _PROBE_STEP:
            far = _far_instant(zone, start, offset, candidate)
            if far is not None:
                return far.astimezone(zone)
        change = _first_change(zone, start, instant, offset)
        if change is None:
            return instant.astimezone(zone)
        # The wall clock jumped before the candidate: search again from the jump,
        # in the new offset; the jump instant itself may match.
        start, inclusive = change, True


def _far_instant(zone: ZoneInfo, start: datetime, offset: timedelta, candidate: datetime) -> datetime | None:
    """The instant of a far-away wildcard candidate without probing every week up to it.

    Between ``start`` and the candidate the wall clock shows only times that do
    not match (the candidate is the first match after the start's wall time),
    except wall times repeated by a backward change: those are below the
    start's wall time only if the change comes within ``_MAX_SHIFT`` of the start.
    So if the candidate's wall time exists exactly once, and the offset does not
    change soon after the start, the candidate's own instant is the answer.
    None means: take the careful path.
    """
    first = candidate.replace(tzinfo=zone, fold=0).utcoffset()
    second = candidate.replace(tzinfo=zone, fold=1).utcoffset()
    if first is None or first != second:
        return None
    if _offset_at(zone, start + _MAX_SHIFT) != offset:
        return None
    return (candidate - first).replace(tzinfo=UTC)


def iter_fires(expr: CronExpr, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    """Fire times strictly after ``after``, in order, until the horizon runs out."""
    current = after
    while True:
        nxt = next_fire(expr, current, zone)
        if nxt is None:
            return
        yield nxt
        current = nxt


def fire_seconds(expr: CronExpr, after: datetime, end: datetime, zone: ZoneInfo) -> list[int]:
    """The fires of :func:`iter_fires` in (after, end], as whole epoch seconds (fires fall on whole seconds).

    Where the zone's offset holds still (no change within ``_MAX_SHIFT`` of the stretch), a fire is a
    wall match less the offset, for fixed-time and wildcard jobs alike: those are listed as integers
    straight from the expression's fields, a day at a time (well under 1 µs a fire against ~40 for a
    ``next_fire`` call: a week of 1,000 tasks' fires for a timeline). Only the ``_MAX_SHIFT`` either
    side of each change is walked with :func:`iter_fires`; past it, the listing resumes.
    """
    current, stop = after.astimezone(UTC), end.astimezone(UTC)
    out: list[int] = []
    in_day = [hour * 3600 + minute * 60 for hour in expr.hours for minute in expr.minutes]  # sorted
    while current < stop:
        before = current - _MAX_SHIFT
        offset = _offset_at(zone, before)
        change = _first_change(zone, before, stop + _MAX_SHIFT, offset)
        stable_until = stop if change is None else min(change - _MAX_SHIFT, stop)
        if stable_until > current:
            shift = int(offset.total_seconds())
            _wall_seconds(expr, in_day, current.timestamp() + shift, stable_until.timestamp() + shift, shift, out)
            current = stable_until
        if change is None:
            break
        resume = min(change + _MAX_SHIFT, stop)
        for fire in iter_fires(expr, current, zone):
            if fire > resume:
                break
            out.append(int(fire.timestamp()))
        else:
            break  # the horizon ran out: no fire follows
        current = resume
    return out


def _wall_seconds(expr: CronExpr, in_day: list[int], low: float, high: float, shift: int, out: list[int]) -> None:
    """Append to ``out`` the wall times matching ``expr`` in (low, high] less ``shift``; all three are
    epoch seconds of the wall clock read as UTC."""
    for day in _matching_days(expr, int(low // 86400), int(high // 86400)):
        start = day * 86400  # the wall clock's midnight
        if low < start and start + 86400 <= high:
            out.extend([start - shift + second for second in in_day])  # a whole day inside: no bounds to check
        else:
            out.extend([start - shift + second for second in in_day if low < start + second <= high])


def _matching_days(expr: CronExpr, first: int, last: int) -> tuple[int, ...]:
    """The days (since the epoch) in [first, last] whose date matches ``expr``'s month and day fields."""
    key = (expr.months, expr.days_key, first, last)
    days = _DAYS.get(key)
    if days is None:
        if len(_DAYS) > 1024:  # bounded: a timeline asks for a few windows, a long-running daemon for many
            _DAYS.clear()
        months, matched = frozenset(expr.months), []
        date = (_EPOCH + timedelta(days=first)).date()
        for day in range(first, last + 1):
            if date.month in months and date.day in expr.days_in(date.year, date.month):
                matched.append(day)
            date += timedelta(days=1)
        days = _DAYS[key] = tuple(matched)
    return days
