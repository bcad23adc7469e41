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
        ("30d", "0 0 1 * *", 2629746, True),  # a month is 28-31 days: said so
        ("365d", "0 0 1 1 *", 31556952, True),  # issue 24: a year was monthly
        ("90d", "0 0 1 */3 *", 7889238, True),
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


# Issue 24, item 3: 365d, 90d, 45d and 20d all became "0 0 1 * *" (monthly).
@pytest.mark.parametrize(
    ("interval", "cron"),
    [
        ("20d", "0 0 */15 * *"),
        ("28d", "0 0 1 * *"),
        ("60d", "0 0 1 */2 *"),
        ("90d", "0 0 1 */3 *"),
        ("120d", "0 0 1 */4 *"),
        ("180d", "0 0 1 */6 *"),
        ("240d", "0 0 1 */6 *"),
        ("365d", "0 0 1 1 *"),
        ("52w", "0 0 1 1 *"),
    ],
)
def test_long_intervals_use_the_nearest_calendar_step(interval, cron):
    result = every_to_cron(interval)
    assert result.cron == cron
    assert result.note is not None
    assert cron in result.note


@pytest.mark.parametrize(
    ("interval", "suggested"),
    [
        ("45d", ["--every 30d", "--every 61d"]),
        ("36h", ["--every 1d", "--every 2d"]),
        ("22d", ["--every 15d", "--every 30d"]),
        ("600d", ["--every 365d"]),
    ],
)
def test_long_interval_with_nothing_near_is_refused_with_what_to_write(interval, suggested):
    with pytest.raises(InvalidTimeError) as caught:
        every_to_cron(interval)
    for option in suggested:
        assert option in caught.value.message
    for option in suggested:
        # What it suggests is accepted, and is one of the schedules the message names.
        result = every_to_cron(option.split()[1])
        assert result.cron in caught.value.message


def _mean_period_s(cron: str) -> float:
    """The real mean gap between fires of ``cron`` over 8 years (in UTC), from the fire calculator."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from kairosd.core.schedule.cron import parse_cron
    from kairosd.core.schedule.fires import next_fire

    expr, zone = parse_cron(cron), ZoneInfo("UTC")
    start = next_fire(expr, datetime(2025, 12, 31, 23, 59, tzinfo=UTC), zone)
    end = datetime(2034, 1, 1, tzinfo=UTC)
    count, last = 0, start
    current = start
    while current is not None and current < end:
        count, last = count + 1, current
        current = next_fire(expr, current, zone)
    assert start is not None
    assert count > 1
    return (last - start).total_seconds() / (count - 1)


def _step_candidates() -> list[int]:
    """Every period (seconds) the conversion can produce, from its own outputs over a coarse sweep."""
    return sorted(
        {every_to_cron(f"{m}m").effective_s for m in range(1, 1440)}
        | {r.effective_s for r in (_try(f"{d}d") for d in range(1, 3650)) if r is not None}
    )


def _try(text: str):
    try:
        return every_to_cron(text)
    except InvalidTimeError:
        return None


def test_every_interval_rounds_to_the_nearest_within_the_bound():
    """The README promises "rounded to the nearest": for every whole-minute interval under a day and every
    whole-day interval up to the limit, the result is the nearest period cron can repeat, at most a third
    off under a day and a quarter off from a day up; an interval is refused only when nothing is that near.
    The period each result claims is the cron expression's real mean gap between fires."""
    candidates = _step_candidates()
    for cron in {every_to_cron(t).cron for t in ("1d", "7d", "30d", "61d", "91d", "122d", "183d", "365d")}:
        period = next(r.effective_s for t in ("1d", "7d", "30d", "61d", "91d", "122d", "183d", "365d")
                      if (r := every_to_cron(t)).cron == cron)  # fmt: skip
        assert abs(_mean_period_s(cron) - period) <= 0.001 * period, cron
    sweep = [f"{m}m" for m in range(1, 1440)] + [f"{d}d" for d in range(1, 3651)] + [f"{h}h" for h in range(24, 400)]
    for text in sweep:
        asked = parse_duration(text)
        bound = 1 / 3 if asked < 86400 else 0.25
        eligible = [c for c in candidates if (c < 86400) == (asked < 86400) or c == 86400]
        nearest_error = min(abs(c - asked) for c in eligible)
        result = _try(text)
        if result is None:
            assert nearest_error > bound * asked, f"{text} refused though a step is within the bound"
            continue
        error = abs(result.effective_s - asked)
        assert error <= bound * asked + 1e-9, f"{text} -> {result.cron} is {error / asked:.0%} off"
        assert error == nearest_error, f"{text} -> {result.cron} is not the nearest step"
        if result.effective_s != asked:
            assert result.note is not None, f"{text}: the change is not said"
            assert result.cron in result.note, text
