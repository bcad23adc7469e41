"""One-shots pinned to an exact second: ``--in 90s`` and ``--at TIME``.

``--at`` takes an ISO 8601 date-time (with or without an offset; without one
it is wall time in the task's zone), a date (midnight), or a bare ``HH:MM[:SS]``
meaning the next such wall time. A time that is not in the future is rejected:
kairos never quietly moves it to next year. Wall times that a DST change skips
resolve to the jump, repeated ones to their first pass (as cron does), and
``resolve_at_noted`` says so in a note.

Pure: ``now`` is always passed in. Must not import anything that does I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from kairosd.core.bounds import EARLIEST_TIME, LATEST_TIME
from kairosd.core.errors import InvalidTimeError
from kairosd.core.schedule.durations import parse_duration
from kairosd.core.schedule.fires import resolve_wall

# ASCII digits only: "\d" alone also matches Arabic-Indic or fullwidth digits.
_CLOCK_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$", re.ASCII)


def resolve_in(text: str, now: datetime) -> datetime:
    """``now`` plus the duration in ``text``, in UTC; before LATEST_TIME."""
    instant = now.astimezone(UTC) + timedelta(seconds=parse_duration(text))
    if instant >= LATEST_TIME:
        raise InvalidTimeError(f"{text[:40]!r} from now is past {LATEST_TIME.date().isoformat()}, the supported range")
    return instant


def resolve_at(text: str, now: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant ``text`` names (see module docstring); must be after ``now``."""
    return resolve_at_noted(text, now, zone)[0]


def resolve_at_noted(text: str, now: datetime, zone: ZoneInfo) -> tuple[datetime, str | None]:
    """``resolve_at``, and a note when the wall time fell in a DST gap (moved) or fold (one pass picked)."""
    raw = text.strip()
    if not (raw.isascii() and raw.isprintable()):
        # fromisoformat skips a NUL between date and time or after them, and reads non-ASCII digits.
        raise InvalidTimeError(f"{text[:40]!r} is not a time: only ASCII digits, letters and punctuation")
    clock = _CLOCK_RE.match(raw)
    if clock:
        hour, minute, second = int(clock[1]), int(clock[2]), int(clock[3] or 0)
        try:
            wall_time = time(hour, minute, second)
        except ValueError as exc:
            raise InvalidTimeError(f"{text!r} is not a time of day: {exc}") from exc
        today = now.astimezone(zone).date()
        for offset in (0, 1, 2):  # two days covers a wall time skipped by DST today
            wall = datetime.combine(today + timedelta(days=offset), wall_time)
            instant = resolve_wall(wall, zone)
            if instant > now:
                return instant, wall_note(wall, zone)
        raise InvalidTimeError(f"cannot find the next {text!r}")  # pragma: no cover - unreachable
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(raw), time())
        except ValueError:
            raise InvalidTimeError(
                f"{text!r} is not a time; use ISO 8601 (2026-12-01T09:00, 2026-12-01T09:00+01:00) or HH:MM"
            ) from None
    if not EARLIEST_TIME.year < parsed.year < LATEST_TIME.year:
        # Checked before converting: 9999-12-31T23:59 in Etc/GMT+12 is past datetime's range in UTC.
        raise InvalidTimeError(
            f"{text[:40]!r} is outside the supported years {EARLIEST_TIME.year}-{LATEST_TIME.year - 1}"
        )
    instant = resolve_wall(parsed, zone) if parsed.tzinfo is None else parsed.astimezone(UTC)
    if instant <= now:
        raise InvalidTimeError(
            f"{text} is in the past (now is {now.astimezone(zone).isoformat(timespec='seconds')}); "
            "kairos does not move it to next year"
        )
    return instant, wall_note(parsed, zone) if parsed.tzinfo is None else None


def wall_note(wall: datetime, zone: ZoneInfo) -> str | None:
    """What ``resolve_wall`` did to a naive ``wall`` time in a DST gap or fold, or None for an ordinary one."""
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    before, after = first.utcoffset(), second.utcoffset()
    if before == after:
        return None
    shown = wall.isoformat(sep=" ", timespec="seconds" if wall.second else "minutes")
    if before is not None and after is not None and before < after:
        jump = resolve_wall(wall, zone).astimezone(zone)
        return (
            f"{shown} does not exist in {zone.key} (the clocks go forward then); "
            f"using {jump.isoformat(sep=' ', timespec='minutes')}, the moment they change"
        )
    return (
        f"{shown} happens twice in {zone.key} (the clocks go back then); using the first, "
        f"{first.isoformat(sep=' ', timespec='minutes')} ({first.tzname()}), "
        f"not {second.isoformat(sep=' ', timespec='minutes')} ({second.tzname()}); "
        f"write {second.isoformat(timespec='minutes')} for the second"
    )
