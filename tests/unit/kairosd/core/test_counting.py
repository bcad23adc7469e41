"""Counting fires without listing them (kairosd.core.schedule.counting), checked against ``iter_fires``.

``count_fires`` and ``last_fires`` must give exactly what walking ``iter_fires``
gives, in every zone, across DST changes both ways, for fixed-time and wildcard
jobs; and their work must not grow with the number of fires.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sizes_support import full_size

from kairosd.core.schedule import fires
from kairosd.core.schedule.counting import count_fires, last_fires
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires

EXPRESSIONS = [
    "* * * * *",
    "*/5 * * * *",
    "0 * * * *",
    "30 2 * * *",
    "0,30 1-3 * * *",
    "*/20 2 * * *",
    "0 9 * * 1-5",
    "0 0 1 * *",
    "59 1 * * *",
    "0 3 * * *",
    "* 2 * * *",
    "0 2 29 2 *",
    "*/7 */3 * * *",
]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "America/Sao_Paulo"]
# Instants near offset changes: Berlin and New York both ways, Lord Howe's half-hour shifts, Chatham's 45-minute zone.
NEAR_CHANGES = [
    datetime(2026, 3, 29, 1, tzinfo=UTC),
    datetime(2026, 10, 25, 1, tzinfo=UTC),
    datetime(2026, 3, 8, 7, tzinfo=UTC),
    datetime(2026, 11, 1, 6, tzinfo=UTC),
    datetime(2026, 4, 4, 15, tzinfo=UTC),
    datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    datetime(2026, 9, 26, 14, tzinfo=UTC),
]


# Walking a minutely job's fires over up to 40 days (57,600 fires) is most of this module's time: at the
# small size (tests/sizes_support.py) its spans are cut to at most 3 days, still long enough to cross the
# offset change they start near (up to 6 hours away); the same cases at full size (KAIROS_TEST_SIZE=full,
# .ci/run) keep their whole spans, and every other expression keeps its long spans at both sizes.
SMALL_MINUTELY_SPAN = timedelta(days=3)


def walked(expr: str, after: datetime, until: datetime, zone: ZoneInfo) -> list[datetime]:
    return list(itertools.takewhile(lambda t: t <= until, iter_fires(parse_cron(expr), after, zone)))


def cases(seed: int, n: int) -> list[tuple[str, str, datetime, datetime]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        expr, zone = rng.choice(EXPRESSIONS), rng.choice(ZONES)
        if rng.random() < 0.7:
            after = rng.choice(NEAR_CHANGES) + timedelta(seconds=rng.randrange(-6 * 3600, 6 * 3600))
        else:
            after = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(60 * 24 * 700))
        span = timedelta(seconds=rng.choice([60, 3600, 5 * 3600, 13 * 3600, 3 * 86400, 40 * 86400]) * rng.random())
        if expr == "* * * * *" and not full_size():
            span = min(span, SMALL_MINUTELY_SPAN)
        out.append((expr, zone, after, after + span))
    return out


@pytest.mark.parametrize(("expr", "zone", "after", "until"), cases(27, 400))
def test_count_and_newest_agree_with_walking_the_fires(expr: str, zone: str, after: datetime, until: datetime):
    tz = ZoneInfo(zone)
    want = walked(expr, after, until, tz)
    assert count_fires(parse_cron(expr), after, until, tz) == len(want)
    for keep in (1, 3):
        assert last_fires(parse_cron(expr), after, until, tz, keep) == want[-keep:]


@pytest.mark.parametrize("expr", ["0,30 2 * * *", "*/15 1-3 * * *", "0 3 * * *", "* 2 * * *", "0 2,3 * * *"])
@pytest.mark.parametrize(
    ("zone", "change"),
    [
        ("Europe/Berlin", datetime(2026, 3, 29, 1, tzinfo=UTC)),  # 02:00 -> 03:00
        ("Europe/Berlin", datetime(2026, 10, 25, 1, tzinfo=UTC)),  # 03:00 -> 02:00
        ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, tzinfo=UTC)),  # half an hour back
    ],
)
def test_spans_starting_and_ending_on_every_side_of_a_change(expr: str, zone: str, change: datetime):
    """The skipped and repeated wall times: spans that start before, inside and after them."""
    tz = ZoneInfo(zone)
    for start_min in range(-240, 240, 13):
        after = change + timedelta(minutes=start_min, seconds=start_min % 3 * 20)
        for length in (1, 29, 61, 130, 400):
            until = after + timedelta(minutes=length)
            assert count_fires(parse_cron(expr), after, until, tz) == len(walked(expr, after, until, tz))


def test_an_empty_or_backward_span_has_no_fires():
    expr, now = parse_cron("* * * * *"), datetime(2026, 3, 5, tzinfo=UTC)
    assert count_fires(expr, now, now, ZoneInfo("UTC")) == 0
    assert count_fires(expr, now, now - timedelta(days=1), ZoneInfo("UTC")) == 0
    assert last_fires(expr, now, now - timedelta(days=1), ZoneInfo("UTC"), 3) == []
    with pytest.raises(ValueError, match="aware"):
        count_fires(expr, now.replace(tzinfo=None), now, ZoneInfo("UTC"))


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_two_years_of_a_minutely_task_are_counted_with_bounded_work(zone: str, monkeypatch: pytest.MonkeyPatch):
    """About a million fires: counted from the calendar, and the newest found with a few dozen next-fire
    computations, not a million."""
    calls = 0
    real = fires.next_fire

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(fires, "next_fire", counted)
    tz = ZoneInfo(zone)
    expr = parse_cron("* * * * *")
    after = datetime(2024, 3, 5, 10, 0, tzinfo=UTC)
    until = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)
    assert count_fires(expr, after, until, tz) == (until - after) // timedelta(minutes=1)
    assert last_fires(expr, after, until, tz, 11) == [until - timedelta(minutes=m) for m in range(10, -1, -1)]
    assert calls <= 4 * 11 + 2
