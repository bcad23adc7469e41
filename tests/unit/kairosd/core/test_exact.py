"""One-shots pinned to an exact second: ``--in`` and ``--at`` (kairosd.core.schedule.exact)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from kairosd.core.errors import InvalidTimeError
from kairosd.core.schedule.exact import resolve_at, resolve_in

BERLIN = ZoneInfo("Europe/Berlin")
UTCZ = ZoneInfo("UTC")
# 2026-06-01 12:00 in Berlin (CEST, +02:00).
NOW = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "delta"),
    [("90s", timedelta(seconds=90)), ("5m", timedelta(minutes=5)), ("1h30m", timedelta(minutes=90))],
)
def test_resolve_in(text, delta):
    """--in adds the duration to now and returns UTC."""
    result = resolve_in(text, NOW)
    assert result == NOW + delta
    assert result.utcoffset() == timedelta(0)


def test_resolve_in_converts_to_utc():
    """--in from a non-UTC now gives the same instant, expressed in UTC."""
    now = datetime(2026, 6, 1, 12, 0, tzinfo=BERLIN)
    assert resolve_in("90s", now) == datetime(2026, 6, 1, 10, 1, 30, tzinfo=UTC)
    assert resolve_in("90s", now).tzinfo is UTC


@pytest.mark.parametrize("text", ["", "soon", "0s", "-5m"])
def test_resolve_in_rejects(text):
    """--in rejects non-durations and non-positive durations."""
    with pytest.raises(InvalidTimeError):
        resolve_in(text, NOW)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # No offset: wall time in the zone (CET in December, +01:00).
        ("2026-12-01T09:00:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        ("2026-12-01T09:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        ("2026-12-01 09:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        # An explicit offset wins over the zone.
        ("2026-12-01T09:00:00+05:00", datetime(2026, 12, 1, 4, 0, tzinfo=UTC)),
        ("2026-12-01T09:00:00Z", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
        # A date alone is midnight in the zone.
        ("2026-12-01", datetime(2026, 11, 30, 23, 0, tzinfo=UTC)),
        # Summer wall time (CEST, +02:00).
        ("2026-07-01T09:00", datetime(2026, 7, 1, 7, 0, tzinfo=UTC)),
    ],
)
def test_resolve_at_iso(text, expected):
    """--at with an ISO date-time or date resolves to the UTC instant it names."""
    assert resolve_at(text, NOW, BERLIN) == expected


def test_resolve_at_returns_utc():
    """resolve_at returns an aware UTC datetime."""
    result = resolve_at("2026-12-01T09:00:00+05:00", NOW, BERLIN)
    assert result.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("13:00", datetime(2026, 6, 1, 11, 0, tzinfo=UTC)),  # later today
        ("12:00:01", datetime(2026, 6, 1, 10, 0, 1, tzinfo=UTC)),  # one second from now
        ("12:00", datetime(2026, 6, 2, 10, 0, tzinfo=UTC)),  # exactly now: not the future, so tomorrow
        ("09:00", datetime(2026, 6, 2, 7, 0, tzinfo=UTC)),  # passed today: tomorrow
        ("9:00", datetime(2026, 6, 2, 7, 0, tzinfo=UTC)),
        ("00:00", datetime(2026, 6, 1, 22, 0, tzinfo=UTC)),  # next midnight
    ],
)
def test_resolve_at_clock_today_or_tomorrow(text, expected):
    """A bare HH:MM[:SS] is the next such wall time in the zone: today if still ahead, else tomorrow."""
    assert resolve_at(text, NOW, BERLIN) == expected


def test_resolve_at_clock_uses_the_zone_date():
    """HH:MM counts "today" in the task's zone, not in UTC."""
    # 23:30 UTC on 2026-06-01 is already 01:30 on 2026-06-02 in Berlin.
    now = datetime(2026, 6, 1, 23, 30, tzinfo=UTC)
    assert resolve_at("02:00", now, BERLIN) == datetime(2026, 6, 2, 0, 0, tzinfo=UTC)
    assert resolve_at("02:00", now, UTCZ) == datetime(2026, 6, 2, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    ["2026-06-01T11:59:59", "2026-06-01T12:00:00", "2026-05-31", "2026-06-01T10:00:00Z", "2025-12-01T09:00"],
)
def test_resolve_at_rejects_past(text):
    """A time at or before now is rejected with a message saying it is in the past (never "next year")."""
    with pytest.raises(InvalidTimeError, match="past") as info:
        resolve_at(text, NOW, BERLIN)
    assert "next year" in str(info.value)


@pytest.mark.parametrize(
    "text", ["", "garbage", "tomorrow", "25:00", "12:60", "9:5", "2026-13-01", "2026-02-30", "12:00Z"]
)
def test_resolve_at_rejects_garbage(text):
    """Text that is neither ISO 8601 nor HH:MM, or names an impossible time, is an InvalidTimeError."""
    with pytest.raises(InvalidTimeError):
        resolve_at(text, NOW, BERLIN)


def test_resolve_at_clock_in_dst_gap_resolves_to_the_jump():
    """--at 02:30 in Berlin on the morning clocks spring forward (02:00 -> 03:00) resolves to 03:00+02:00."""
    now = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # 01:30 CET
    result = resolve_at("02:30", now, BERLIN)
    assert result == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    local = result.astimezone(BERLIN)
    assert (local.hour, local.minute) == (3, 0)
    assert local.utcoffset() == timedelta(hours=2)


def test_resolve_at_iso_in_dst_gap_resolves_to_the_jump():
    """An ISO wall time skipped by DST (no offset) resolves to the jump as well."""
    now = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    result = resolve_at("2026-03-29T02:30", now, BERLIN)
    assert result.astimezone(BERLIN).isoformat() == "2026-03-29T03:00:00+02:00"


def test_resolve_at_repeated_wall_time_takes_first_pass():
    """A wall time that occurs twice (clocks fall back) resolves to its first pass, at +02:00."""
    now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    result = resolve_at("2026-10-25T02:30", now, BERLIN)
    assert result == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert result.astimezone(BERLIN).utcoffset() == timedelta(hours=2)


def test_resolve_at_repeated_wall_time_with_offset_is_exact():
    """With an explicit offset the second pass of a repeated wall time can still be named."""
    now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    result = resolve_at("2026-10-25T02:30+01:00", now, BERLIN)
    assert result == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)


def test_resolve_at_offset_independent_of_now_zone():
    """now may be given in any zone; only the instant matters."""
    now = NOW.astimezone(timezone(timedelta(hours=-7)))
    assert resolve_at("13:00", now, BERLIN) == datetime(2026, 6, 1, 11, 0, tzinfo=UTC)
