"""Durations (``90s``, ``5m``, ``2h``, ``1d``, ``1h30m``) and `/loop`-style intervals as cron.

``every_to_cron`` follows Claude Code's `/loop` conversion: ``5m`` gives
``*/5 * * * *``, ``2h`` gives ``0 */2 * * *``, ``1d`` gives ``0 0 * * *``.
Cron can only repeat evenly within its parent unit, so an interval under a day
that does not divide it (``7m``, ``90m``, ``5h``) is rounded to the nearest one
that does (at most a third off), and the result says so. From a day up, cron
has day steps (1-15 days), a week and month steps (1, 2, 3, 4, 6 or 12
months): the nearest is used when it is at most a quarter off (``365d`` is
yearly, ``90d`` quarterly), and an interval with nothing that near (``45d``,
``36h``) is refused, naming the schedules to write instead.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from kairosd.core.bounds import MAX_DURATION_DAYS, MAX_DURATION_S
from kairosd.core.errors import InvalidTimeError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# re.ASCII: "\d" alone also matches Arabic-Indic ("٣") or fullwidth ("３") digits, which float() reads.
_PART_RE = re.compile(r"(\d+(?:\.\d+)?)(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)", re.ASCII)
_MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
_HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12)
# Every interval under a day that cron repeats evenly, in minutes (a day included, so
# 59m or 23h round up to it instead of down to 30m or 12h).
_CLEAN_MINUTES = (*_MINUTE_STEPS, *(60 * h for h in _HOUR_STEPS), 24 * 60)


def parse_duration(text: str) -> float:
    """Seconds in ``text``: one or more ``<number><unit>`` parts (s, m, h, d, w)."""
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise InvalidTimeError("empty duration; use e.g. 90s, 5m, 2h, 1d")
    if compact.startswith("-"):
        raise InvalidTimeError(f"{text!r}: durations must be positive; use e.g. 90s, 5m, 2h, 1d")
    pos, total = 0, 0.0
    for match in _PART_RE.finditer(compact):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)[0]]
        pos = match.end()
    if pos != len(compact):
        raise InvalidTimeError(f"{text!r} is not a duration; use e.g. 90s, 5m, 2h, 1d or 1h30m")
    if total <= 0:
        raise InvalidTimeError(f"{text!r} must be longer than zero")
    if not total <= MAX_DURATION_S:  # also catches inf from a number with thousands of digits
        raise InvalidTimeError(f"{text[:40]!r} is longer than the {MAX_DURATION_DAYS}d limit")
    return total


def format_duration(seconds: float) -> str:
    """A compact human form: 90 -> 1m30s, 7200 -> 2h."""
    whole = round(seconds)
    if whole == 0:
        return f"{seconds:.3g}s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, whole = divmod(whole, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


class Interval(NamedTuple):
    """An interval as cron: ``cron`` fires every ``effective_s`` seconds; ``note`` says
    why it differs from what was asked, or is None when it is exact."""

    cron: str
    requested_s: float
    effective_s: int
    note: str | None


def _nearest(value: int, choices: tuple[int, ...]) -> int:
    # Ties go to the longer interval: firing less often than asked is the cheaper surprise.
    return min(choices, key=lambda c: (abs(c - value), -c))


# The longest intervals cron repeats: (days, cron, what to call it, an --every that gives it).
_MONTH_DAYS = 365.2425 / 12
_LONG_STEPS: tuple[tuple[float, str, str, str], ...] = (
    (1.0, "0 0 * * *", "daily", "1d"),
    *((float(d), f"0 0 */{d} * *", f"every {d} days", f"{d}d") for d in range(2, 16) if d != 7),
    (7.0, "0 0 * * 0", "weekly, on Sundays", "7d"),
    (_MONTH_DAYS, "0 0 1 * *", "monthly, on the 1st", "30d"),
    *(
        (m * _MONTH_DAYS, f"0 0 1 */{m} *", f"every {m} months, on the 1st", f"{round(m * _MONTH_DAYS)}d")
        for m in (2, 3, 4, 6)
    ),
    (12 * _MONTH_DAYS, "0 0 1 1 *", "yearly, on 1 January", "365d"),
)
# From a day up a step is days or months off, so one is used only this near to what was asked.
LONG_ROUNDING_LIMIT = 0.25


def every_to_cron(text: str) -> Interval:
    """Turn a `/loop`-style interval into a cron expression (see module docstring)."""
    requested = parse_duration(text)
    # Seconds round up to whole minutes, like /loop (rounded to the millisecond first so
    # float noise such as 0.1h = 360.00000000000006 s does not add a minute).
    minutes = max(1, math.ceil(round(requested, 3) / 60))
    notes: list[str] = []
    if round(requested, 3) % 60:
        notes.append(f"cron fires on whole minutes, so {format_duration(requested)} became {minutes}m")
    step = _nearest(minutes, _CLEAN_MINUTES) if minutes < 24 * 60 else 24 * 60
    if step < 60:
        effective, cron = step * 60, "* * * * *" if step == 1 else f"*/{step} * * * *"
    elif step < 24 * 60:
        hours = step // 60
        effective, cron = step * 60, "0 * * * *" if hours == 1 else f"0 */{hours} * * *"
    elif minutes < 24 * 60:
        effective, cron = 86400, "0 0 * * *"  # under a day, rounded up to one (18h, 23h)
    else:
        return _long_interval(minutes, requested, notes)
    if effective != minutes * 60:
        notes.append(
            f"cron cannot repeat every {format_duration(minutes * 60)} evenly; "
            f"using every {format_duration(effective)} ({cron})"
        )
    return Interval(cron, requested, effective, "; ".join(notes) or None)


def _long_interval(minutes: int, requested: float, notes: list[str]) -> Interval:
    """A day or longer: the nearest of ``_LONG_STEPS`` (ties to the longer), if near enough."""
    days = minutes / 1440
    ranked = sorted(_LONG_STEPS, key=lambda step: (abs(step[0] - days), -step[0]))
    best_days, cron, label, _ = ranked[0]
    asked = format_duration(minutes * 60)
    if abs(best_days - days) > LONG_ROUNDING_LIMIT * days:
        shorter = max((s for s in _LONG_STEPS if s[0] < days), key=lambda s: s[0], default=None)
        longer = min((s for s in _LONG_STEPS if s[0] > days), key=lambda s: s[0], default=None)
        options = " or ".join(f"--every {s[3]} ({s[2]}, {s[1]})" for s in (shorter, longer) if s is not None)
        raise InvalidTimeError(
            f"cron cannot repeat every {asked}, and nothing it can is within a quarter of it; "
            f"write {options}, or give a cron expression"
        )
    effective = round(best_days * 86400)
    if effective != minutes * 60:
        notes.append(f"cron cannot repeat every {asked}; using {label} ({cron})")
    if cron.startswith("0 0 */"):
        notes.append("day steps restart each month (the 31st and the 1st may be close together)")
    return Interval(cron, requested, effective, "; ".join(notes) or None)
