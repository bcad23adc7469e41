"""How many fires a cron expression has between two instants, and the newest of them, without listing them.

A long absence must not cost one next-fire computation per missed slot: a
minutely task down for two years has a million. :func:`count_fires` counts the
fires in ``(after, until]`` from the calendar (whole months at a time) and the
zone's offset changes, so its cost grows with the months and the offset changes
in the span, not with the fires. :func:`last_fires` finds the newest few by
narrowing a span with counts, then walks only that span.

Both agree with :func:`kairosd.core.schedule.fires.iter_fires` (the tests compare
them across zones and DST changes), DST rules included:

* **Wildcard jobs** fire at every instant whose wall time matches. Between two
  offset changes wall time is the instant plus a constant offset, so the count
  is the number of matching wall minutes in the shifted span; a repeated hour
  counts twice (it is in two spans), a skipped one never.
* **Fixed-time jobs** fire once per matching wall time. After a backward change
  the repeated wall times are not counted again; after a forward change the
  skipped ones (and the first wall time after them) are one fire, at the change.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from kairosd.core.schedule.cron import CronExpr
from kairosd.core.schedule.fires import _UTC_KEYS, _first_change, _offset_at, iter_fires

_TINY = timedelta(microseconds=1)
# No zone changes its offset twice within this (so one look back finds the change before a span).
_LOOK_BACK = timedelta(hours=7)


def count_fires(expr: CronExpr, after: datetime, until: datetime, zone: ZoneInfo) -> int:
    """The number of fires of ``expr`` in ``zone`` strictly after ``after`` and at or before ``until``
    (both aware): what ``iter_fires`` yields up to ``until``, counted without listing them."""
    if after.tzinfo is None or until.tzinfo is None:
        raise ValueError("after and until must be aware datetimes")
    start, end = after.astimezone(UTC), until.astimezone(UTC)
    if end <= start:
        return 0
    if zone.key in _UTC_KEYS:
        return _wall_count(expr, _naive(start), _naive(end))
    offset = _offset_at(zone, start)
    # The span may begin just after a change (the repeated or skipped wall times matter for fixed jobs).
    previous = _offset_at(zone, start - _LOOK_BACK)
    since = _first_change(zone, start - _LOOK_BACK, start, previous) if previous != offset else None
    total = 0
    seg_start, seg_prev = since, previous  # the change that opened the current span (None: no recent one)
    search_from = start
    while True:
        change = _first_change(zone, search_from, end, offset)
        # Wall times of this span: (start + offset, upper], upper exclusive of the next change.
        upper = _naive(end + offset) if change is None else _naive(change + offset) - _TINY
        lower = _naive(start + offset)
        if seg_start is not None and seg_prev != offset and expr.fixed_time:
            lower, extra = _fixed_lower(expr, seg_start, seg_prev, offset, start, lower)
            total += extra
        total += _wall_count(expr, lower, upper)
        if change is None:
            return total
        seg_start, seg_prev, search_from = change, offset, change
        offset = _offset_at(zone, change)
        # Instants from the change on: wall times from change + offset, inclusive.
        start = change - _TINY


def _fixed_lower(
    expr: CronExpr, change: datetime, before: timedelta, offset: timedelta, start: datetime, lower: datetime
) -> tuple[datetime, int]:
    """For a fixed-time job in the span that ``change`` opened (offset ``before`` -> ``offset``): the
    exclusive lower wall bound of its ordinary fires, and 1 if the change itself is a fire in the span."""
    if before > offset:
        # Backward: wall times from change + offset up to change + before were fired on their first pass.
        return max(lower, _naive(change + before) - _TINY), 0
    if start >= change:
        return lower, 0  # the change instant itself is not in (after, until]
    # Forward: every matching wall time in [change + before, change + offset] fires once, at the change.
    gap_lo, gap_hi = _naive(change + before) - _TINY, _naive(change + offset)
    hit = 1 if _wall_count(expr, gap_lo, gap_hi) else 0
    return max(lower, gap_hi), hit


def _naive(instant: datetime) -> datetime:
    return instant.replace(tzinfo=None)


def _wall_count(expr: CronExpr, lower: datetime, upper: datetime) -> int:
    """Matching wall minutes ``w`` with ``lower < w <= upper`` (naive), a month at a time."""
    if upper <= lower:
        return 0
    per_day = len(expr.hours) * len(expr.minutes)
    total = _month_upto(expr, upper, per_day) - _month_upto(expr, lower, per_day)
    year, month = lower.year, lower.month
    while (year, month) < (upper.year, upper.month):
        if month in expr.months:
            total += len(expr.days_in(year, month)) * per_day
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return total


def _month_upto(expr: CronExpr, wall: datetime, per_day: int) -> int:
    """Matching wall minutes in ``wall``'s month at or before ``wall``."""
    if wall.month not in expr.months:
        return 0
    days = expr.days_in(wall.year, wall.month)
    index = bisect_left(days, wall.day)
    count = index * per_day
    if index < len(days) and days[index] == wall.day:
        hours, minutes = expr.hours, expr.minutes
        h = bisect_left(hours, wall.hour)
        count += h * len(minutes)
        if h < len(hours) and hours[h] == wall.hour:
            count += bisect_right(minutes, wall.minute)
    return count


def last_fires(expr: CronExpr, after: datetime, until: datetime, zone: ZoneInfo, keep: int) -> list[datetime]:
    """The newest ``keep`` fires in ``(after, until]``, oldest first, as ``iter_fires`` gives them.

    Finds a span ending at ``until`` that holds at least ``keep`` fires (or reaches ``after``),
    widening it fourfold from an hour, narrows it by halves while it holds many more, then
    walks it: a handful of counts and at most about ``4 * keep`` next-fire computations.
    """
    if keep < 1 or until <= after:
        return []
    step, inner = timedelta(hours=1), until
    while True:
        lower = after if until - after <= step else until - step
        found = count_fires(expr, lower, until, zone)
        if found >= keep or lower == after:
            break
        inner, step = lower, step * 4
    # count(lower, until] >= keep (or lower is after) and count(inner, until] < keep: narrow by halves.
    while found > 4 * keep and inner - lower > timedelta(minutes=1):
        middle = lower + (inner - lower) / 2
        in_middle = count_fires(expr, middle, until, zone)
        if in_middle >= keep:
            lower, found = middle, in_middle
        else:
            inner = middle
    newest: deque[datetime] = deque(maxlen=keep)
    for fire in iter_fires(expr, lower, zone):
        if fire > until:
            break
        newest.append(fire)
    return list(newest)
