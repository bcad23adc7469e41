"""fire_seconds is iter_fires, faster: the same fires in the same order, across DST changes of every kind
(each change is walked with iter_fires itself, and the fast listing resumes after it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sizes_support import full_size

from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import fire_seconds, iter_fires

CRONS = ["*/5 * * * *", "0 * * * *", "30 2 * * *", "0 2 * * 0", "15 1,2,3 * * *", "* 2 * * *", "0 0 29 2 *",
         "0 9 * * 1-5", "45 */3 * * *"]  # fmt: skip
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"]
# Around the changes of 2026: US (8 March, 1 November), EU (29 March, 25 October), Lord Howe (5 April,
# 4 October, half an hour), and a quiet week.
STARTS = [datetime(2026, 3, 6, 7, 13, 20, tzinfo=UTC), datetime(2026, 3, 27, 23, 0, tzinfo=UTC),
          datetime(2026, 4, 3, 12, 0, tzinfo=UTC), datetime(2026, 10, 2, 15, 30, tzinfo=UTC),
          datetime(2026, 10, 24, 1, 0, tzinfo=UTC), datetime(2026, 10, 30, 20, 5, tzinfo=UTC),
          datetime(2026, 11, 16, 0, 0, tzinfo=UTC), datetime(2028, 2, 20, 0, 0, tzinfo=UTC)]  # fmt: skip
# Each start is at most a few days before a change, so the 4- and 12-day spans cross it (the leap-day
# start needs the 12-day span to reach 29 February); the 40-day span runs only at full size
# (tests/sizes_support.py: KAIROS_TEST_SIZE=full, .ci/run), and so does the 12-day span of the other
# starts (most of the cost: the every-five-minutes walk). The small size still walks every start across
# its change, for every expression and zone.
LEAP_START = STARTS[-1]
SPANS_DAYS = (1, 4, 12, 40) if full_size() else (1, 4)


def spans_days(start: datetime) -> tuple[int, ...]:
    return (1, 4, 12) if start == LEAP_START and not full_size() else SPANS_DAYS


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("cron", CRONS)
def test_fire_seconds_are_iter_fires_up_to_the_end(cron, zone):
    expr, tz = parse_cron(cron), ZoneInfo(zone)
    for start in STARTS:
        for days in spans_days(start):
            # A start between whole seconds, and an end on one: (start, end] exactly.
            after, end = start + timedelta(microseconds=250_000), start + timedelta(days=days)
            expected = []
            for fire in iter_fires(expr, after, tz):
                if fire > end:
                    break
                expected.append(int(fire.timestamp()))
            assert fire_seconds(expr, after, end, tz) == expected, (cron, zone, start, days)
