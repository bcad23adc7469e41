"""Durations and `/loop`-style intervals as cron (kairosd.core.schedule.durations)."""

from __future__ import annotations

import pytest

from kairosd.core.errors import InvalidTimeError, UsageError
from kairosd.core.schedule.durations import every_to_cron, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("5min", 300),
        ("5 mins", 300),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("2 hours", 7200),
        ("2hrs", 7200),
        ("1.5h", 5400),
        ("1d", 86400),
        ("1w", 604800),
        ("  5M  ", 300),
        ("10sec", 10),
        ("1 day", 86400),
    ],
)
def test_parse_duration_forms(text, seconds):
    """Every accepted spelling of a duration gives its length in seconds."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "   ", "abc", "5x", "0m", "0s", "-5m", "5", "m5", "5m5", "1.5.5h", "5m-"])
def test_parse_duration_rejects(text):
    """Empty, non-duration, unknown-unit, zero and negative inputs raise InvalidTimeError (a usage error)."""
    with pytest.raises(InvalidTimeError) as info:
        parse_duration(text)
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == 2


# Issue 27, finding 6: "\d" and float() read these as 3, so "٣m" was three minutes.
UNICODE_DIGITS = ["\u0663m", "\uff13m", "1\u0660s", "\u09e7h", "\u0663.5h", "max:\u0663m"]


@pytest.mark.parametrize("text", UNICODE_DIGITS[:-1])
def test_parse_duration_takes_ascii_digits_only(text):
    with pytest.raises(InvalidTimeError, match="is not a duration"):
        parse_duration(text)


def test_jitter_and_intervals_take_ascii_digits_only():
    from kairosd.core.schedule.jitter import parse_jitter

    with pytest.raises(InvalidTimeError):
        parse_jitter(UNICODE_DIGITS[-1])
    with pytest.raises(InvalidTimeError):
        every_to_cron("\uff15m")


def test_parse_duration_zero_message():
    """A zero duration is rejected with a message that says it must be longer than zero."""
    with pytest.raises(InvalidTimeError, match="longer than zero"):
        parse_duration("0m")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(90, "1m30s"), (7200, "2h"), (86400, "1d"), (90061, "1d1h1m1s"), (45, "45s"), (0.25, "0.25s")],
)
def test_format_duration(seconds, text):
    """format_duration gives the compact human form (largest units first, zero parts left out)."""
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("interval", "cron", "effective_s", "has_note"),
    [
        ("1m", "* * * * *", 60, False),
        ("5m", "*/5 * * * *", 300, False),
        ("7m", "*/6 * * * *", 360, True),  # 7 does not divide 60: nearest clean step
        ("45s", "* * * * *", 60, True),  # seconds round up to a whole minute
        ("59m", "0 * * * *", 3600, True),  # hourly is 1 minute off; */30 would be 29
        ("60m", "0 * * * *", 3600, False),
        ("90m", "0 */2 * * *", 7200, True),  # 1h30m: tie between 1h and 2h goes to the longer
        ("2h", "0 */2 * * *", 7200, False),
        ("5h", "0 */6 * * *", 21600, True),
        ("12h", "0 */12 * * *", 43200, False),
        ("24h", "0 0 * * *", 86400, False),
        ("1d", "0 0 * * *", 86400, False),
        ("2d", "0 0 */2 * *", 172800, True),  # day steps restart each month
        ("7d", "0 0 * * 0", 604800, False),
        ("30d", "0 0 1 * *", 2592000, False),
    ],
)
def test_every_to_cron_table(interval, cron, effective_s, has_note):
    """every_to_cron gives /loop's cron expression, its real period, and a note exactly when it differs."""
    result = every_to_cron(interval)
    assert result.cron == cron
    assert result.effective_s == effective_s
    assert result.requested_s == parse_duration(interval)
    assert (result.note is not None) == has_note


@pytest.mark.parametrize(
    ("interval", "cron"),
    [
        ("45m", "0 * * * *"),  # 30m and 60m are equally near: the longer wins
        ("150m", "0 */3 * * *"),  # 2h and 3h equally near: the longer wins
        ("20h", "0 0 * * *"),  # a day is nearer than 12h
        ("23h", "0 0 * * *"),
        ("17h", "0 */12 * * *"),
        ("2.5d", "0 0 */3 * *"),  # 2d and 3d equally near: the longer wins
        ("61s", "*/2 * * * *"),  # any leftover second rounds up to the next minute
        ("0.1h", "*/6 * * * *"),  # 0.1 * 3600 is not exactly 360.0 in floats; still 6 minutes
        ("1w", "0 0 * * 0"),
    ],
)
def test_every_to_cron_rounds_to_nearest(interval, cron):
    """Intervals cron cannot repeat evenly go to the nearest clean one, ties to the longer."""
    assert every_to_cron(interval).cron == cron


def test_every_to_cron_notes_say_what_changed():
    """The note names both the requested and the effective interval."""
    assert every_to_cron("7m").note == "cron cannot repeat every 7m evenly; using every 6m (*/6 * * * *)"
    assert every_to_cron("45s").note == "cron fires on whole minutes, so 45s became 1m"
    note = every_to_cron("90m").note
    assert note is not None
    assert "1h30m" in note
    assert "2h" in note
    assert "0 */2 * * *" in note


def test_every_to_cron_rejects_bad_interval():
    """An interval that is not a duration is an InvalidTimeError, as in parse_duration."""
    with pytest.raises(InvalidTimeError):
        every_to_cron("soon")
