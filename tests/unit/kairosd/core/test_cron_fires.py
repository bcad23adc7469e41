"""Next fire times: calendar edge cases and Debian's DST rules, checked against hand-verified instants.

Zone transitions used below (from tzdata, printed with zoneinfo to be sure):

* Europe/Berlin 2026: 03-29 02:00+01 -> 03:00+02 (02:xx skipped); 10-25 03:00+02 -> 02:00+01 (02:xx twice).
* America/New_York 2023: 03-12 02:00-05 -> 03:00-04; 11-05 02:00-04 -> 01:00-05 (01:xx twice).
* Australia/Lord_Howe 2023 (30-minute shift): 10-01 02:00+10:30 -> 02:30+11 (02:00-02:29 skipped);
  04-02 02:00+11 -> 01:30+10:30 (01:30-01:59 twice). Both are the first Sunday of the month.
* America/Santiago 2023 (at midnight): 09-03 00:00-04 -> 01:00-03 (00:xx skipped);
  04-01 24:00-03 -> 23:00-04 (23:xx on 04-01 twice).
* Pacific/Chatham 2023 (+12:45/+13:45): 09-24 02:45+12:45 -> 03:45+13:45 (02:45-03:44 skipped);
  04-02 03:45+13:45 -> 02:45+12:45 (02:45-03:44 twice).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires, next_fire

B, NY, LH, SCL, CHA = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Chatham",
)

# (expression, task zone, start (aware ISO), the first fires strictly after start, ISO with offsets).
CASES = [
    # --- Europe/Berlin -------------------------------------------------------------------------
    pytest.param(
        "30 2 * * *",
        B,
        "2026-10-24T12:00:00+02:00",
        ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"],
        id="berlin-fall-fixed-fires-once",
    ),
    pytest.param(
        "30 2 * * *",
        B,
        "2026-10-25T02:30:00+02:00",
        ["2026-10-26T02:30:00+01:00"],
        id="berlin-fall-fixed-no-second-pass",
    ),
    pytest.param(
        "30 2 * * *",
        B,
        "2026-10-25T02:10:00+01:00",
        ["2026-10-26T02:30:00+01:00"],
        id="berlin-fall-fixed-start-in-second-pass",
    ),
    pytest.param(
        "10,50 2 * * *",
        B,
        "2026-10-25T02:20:00+01:00",
        ["2026-10-26T02:10:00+01:00", "2026-10-26T02:50:00+01:00"],
        id="berlin-fall-fixed-start-in-second-pass-list",
    ),
    pytest.param(
        "0,30 2 * * *",
        B,
        "2026-10-25T00:00:00+02:00",
        ["2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:00:00+01:00"],
        id="berlin-fall-fixed-list-first-pass",
    ),
    pytest.param(
        "*/30 * * * *",
        B,
        "2026-10-25T01:00:00+02:00",
        [
            "2026-10-25T01:30:00+02:00",
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:30:00+02:00",
            "2026-10-25T02:00:00+01:00",
            "2026-10-25T02:30:00+01:00",
            "2026-10-25T03:00:00+01:00",
        ],
        id="berlin-fall-wildcard-twice",
    ),
    pytest.param(
        "30 * * * *",
        B,
        "2026-10-25T01:00:00+02:00",
        [
            "2026-10-25T01:30:00+02:00",
            "2026-10-25T02:30:00+02:00",
            "2026-10-25T02:30:00+01:00",
            "2026-10-25T03:30:00+01:00",
        ],
        id="berlin-fall-hourly-at-30-twice",
    ),
    pytest.param(
        "30 2 * * *",
        B,
        "2026-03-28T12:00:00+01:00",
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        id="berlin-spring-fixed-at-jump",
    ),
    pytest.param(
        "0,30 2 * * *",
        B,
        "2026-03-28T12:00:00+01:00",
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        id="berlin-spring-two-fixed-times-in-gap-fire-once",
    ),
    pytest.param(
        "30 2,3 * * *",
        B,
        "2026-03-28T12:00:00+01:00",
        ["2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"],
        id="berlin-spring-fixed-gap-then-after",
    ),
    pytest.param(
        "30 2 * * *",
        B,
        "2026-03-29T03:00:00+02:00",
        ["2026-03-30T02:30:00+02:00"],
        id="berlin-spring-fixed-start-at-jump",
    ),
    pytest.param(
        "*/30 * * * *",
        B,
        "2026-03-29T01:00:00+01:00",
        ["2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"],
        id="berlin-spring-wildcard-skips",
    ),
    pytest.param(
        "* 2 * * *",
        B,
        "2026-03-29T01:58:00+01:00",
        ["2026-03-30T02:00:00+02:00", "2026-03-30T02:01:00+02:00"],
        id="berlin-spring-wildcard-hour-gone",
    ),
    # --- America/New_York ----------------------------------------------------------------------
    pytest.param(
        "30 2 * * *",
        NY,
        "2023-03-11T12:00:00-05:00",
        ["2023-03-12T03:00:00-04:00", "2023-03-13T02:30:00-04:00"],
        id="ny-spring-fixed-at-jump",
    ),
    pytest.param(
        "*/20 2 * * *",
        NY,
        "2023-03-12T00:00:00-05:00",
        ["2023-03-13T02:00:00-04:00"],
        id="ny-spring-wildcard-skips-hour",
    ),
    pytest.param(
        "30 1 * * *",
        NY,
        "2023-11-04T12:00:00-04:00",
        ["2023-11-05T01:30:00-04:00", "2023-11-06T01:30:00-05:00"],
        id="ny-fall-fixed-once",
    ),
    pytest.param(
        "30 1 * * *",
        NY,
        "2023-11-05T01:15:00-05:00",
        ["2023-11-06T01:30:00-05:00"],
        id="ny-fall-fixed-start-in-second-pass",
    ),
    pytest.param(
        "*/30 1 * * *",
        NY,
        "2023-11-05T00:00:00-04:00",
        [
            "2023-11-05T01:00:00-04:00",
            "2023-11-05T01:30:00-04:00",
            "2023-11-05T01:00:00-05:00",
            "2023-11-05T01:30:00-05:00",
            "2023-11-06T01:00:00-05:00",
        ],
        id="ny-fall-wildcard-twice",
    ),
    # --- Australia/Lord_Howe (30-minute DST) ---------------------------------------------------
    pytest.param(
        "15 2 * * *",
        LH,
        "2023-09-30T12:00:00+10:30",
        ["2023-10-01T02:30:00+11:00", "2023-10-02T02:15:00+11:00"],
        id="lord-howe-spring-fixed-at-jump",
    ),
    pytest.param(
        "0 2 * * *",
        LH,
        "2023-09-30T12:00:00+10:30",
        ["2023-10-01T02:30:00+11:00", "2023-10-02T02:00:00+11:00"],
        id="lord-howe-spring-fixed-on-hour",
    ),
    pytest.param(
        "45 2 * * *",
        LH,
        "2023-09-30T12:00:00+10:30",
        ["2023-10-01T02:45:00+11:00"],
        id="lord-howe-spring-fixed-after-gap",
    ),
    pytest.param(
        "*/15 2 * * *",
        LH,
        "2023-10-01T00:00:00+10:30",
        ["2023-10-01T02:30:00+11:00", "2023-10-01T02:45:00+11:00", "2023-10-02T02:00:00+11:00"],
        id="lord-howe-spring-wildcard-skips-half-hour",
    ),
    pytest.param(
        "0 * * * *",
        LH,
        "2023-10-01T00:30:00+10:30",
        ["2023-10-01T01:00:00+10:30", "2023-10-01T03:00:00+11:00"],
        id="lord-howe-spring-hourly-02-gone",
    ),
    pytest.param(
        "30 * * * *",
        LH,
        "2023-10-01T00:45:00+10:30",
        ["2023-10-01T01:30:00+10:30", "2023-10-01T02:30:00+11:00", "2023-10-01T03:30:00+11:00"],
        id="lord-howe-spring-hourly-at-30",
    ),
    pytest.param(
        "* 17 * * *",
        LH,
        "2023-10-01T16:58:00+11:00",
        ["2023-10-01T17:00:00+11:00", "2023-10-01T17:01:00+11:00"],
        id="lord-howe-after-spring-starts-on-hour",
    ),
    pytest.param(
        "45 1 * * *",
        LH,
        "2023-04-01T12:00:00+11:00",
        ["2023-04-02T01:45:00+11:00", "2023-04-03T01:45:00+10:30"],
        id="lord-howe-fall-fixed-once",
    ),
    pytest.param(
        "45 1 * * *",
        LH,
        "2023-04-02T01:35:00+10:30",
        ["2023-04-03T01:45:00+10:30"],
        id="lord-howe-fall-fixed-start-in-second-pass",
    ),
    pytest.param(
        "*/15 1 * * *",
        LH,
        "2023-04-02T00:00:00+11:00",
        [
            "2023-04-02T01:00:00+11:00",
            "2023-04-02T01:15:00+11:00",
            "2023-04-02T01:30:00+11:00",
            "2023-04-02T01:45:00+11:00",
            "2023-04-02T01:30:00+10:30",
            "2023-04-02T01:45:00+10:30",
            "2023-04-03T01:00:00+10:30",
        ],
        id="lord-howe-fall-wildcard-half-hour-twice",
    ),
    pytest.param(
        "0 * * * *",
        LH,
        "2023-04-02T00:30:00+11:00",
        ["2023-04-02T01:00:00+11:00", "2023-04-02T02:00:00+10:30", "2023-04-02T03:00:00+10:30"],
        id="lord-howe-fall-hourly",
    ),
    pytest.param(
        "30 * * * *",
        LH,
        "2023-04-02T00:45:00+11:00",
        ["2023-04-02T01:30:00+11:00", "2023-04-02T01:30:00+10:30", "2023-04-02T02:30:00+10:30"],
        id="lord-howe-fall-hourly-at-30-twice",
    ),
    pytest.param(
        "* 17 * * *",
        LH,
        "2023-04-02T16:59:00+10:30",
        ["2023-04-02T17:00:00+10:30", "2023-04-02T17:01:00+10:30"],
        id="lord-howe-after-fall-starts-on-hour",
    ),
    # --- America/Santiago (transitions at midnight) --------------------------------------------
    pytest.param(
        "0 0 * * *",
        SCL,
        "2023-09-01T12:00:00-04:00",
        ["2023-09-02T00:00:00-04:00", "2023-09-03T01:00:00-03:00", "2023-09-04T00:00:00-03:00"],
        id="santiago-spring-midnight-at-jump",
    ),
    pytest.param(
        "*/15 0 * * *",
        SCL,
        "2023-09-02T12:00:00-04:00",
        ["2023-09-04T00:00:00-03:00"],
        id="santiago-spring-wildcard-midnight-hour-gone",
    ),
    pytest.param(
        "0 * 3 9 *",
        SCL,
        "2023-09-02T12:00:00-04:00",
        ["2023-09-03T01:00:00-03:00", "2023-09-03T02:00:00-03:00"],
        id="santiago-spring-wildcard-day-starts-at-1",
    ),
    pytest.param(
        "30 23 * * *",
        SCL,
        "2023-03-31T12:00:00-03:00",
        ["2023-03-31T23:30:00-03:00", "2023-04-01T23:30:00-03:00", "2023-04-02T23:30:00-04:00"],
        id="santiago-fall-fixed-once",
    ),
    pytest.param(
        "*/30 23 * * *",
        SCL,
        "2023-04-01T12:00:00-03:00",
        [
            "2023-04-01T23:00:00-03:00",
            "2023-04-01T23:30:00-03:00",
            "2023-04-01T23:00:00-04:00",
            "2023-04-01T23:30:00-04:00",
            "2023-04-02T23:00:00-04:00",
        ],
        id="santiago-fall-wildcard-twice",
    ),
    pytest.param(
        "0 0 * * *",
        SCL,
        "2023-04-01T12:00:00-03:00",
        ["2023-04-02T00:00:00-04:00", "2023-04-03T00:00:00-04:00"],
        id="santiago-fall-midnight-once",
    ),
    # --- Pacific/Chatham (+12:45/+13:45, transitions at 02:45 standard time) --------------------
    pytest.param(
        "0 3 * * *",
        CHA,
        "2023-09-23T12:00:00+12:45",
        ["2023-09-24T03:45:00+13:45", "2023-09-25T03:00:00+13:45"],
        id="chatham-spring-fixed-at-jump",
    ),
    pytest.param(
        "*/5 3 * * *",
        CHA,
        "2023-09-24T00:00:00+12:45",
        [
            "2023-09-24T03:45:00+13:45",
            "2023-09-24T03:50:00+13:45",
            "2023-09-24T03:55:00+13:45",
            "2023-09-25T03:00:00+13:45",
        ],
        id="chatham-spring-wildcard-quarter-hour-left",
    ),
    pytest.param(
        "15 3 * * *",
        CHA,
        "2023-04-01T12:00:00+13:45",
        ["2023-04-02T03:15:00+13:45", "2023-04-03T03:15:00+12:45"],
        id="chatham-fall-fixed-once",
    ),
    pytest.param(
        "*/30 3 * * *",
        CHA,
        "2023-04-02T00:00:00+13:45",
        [
            "2023-04-02T03:00:00+13:45",
            "2023-04-02T03:30:00+13:45",
            "2023-04-02T03:00:00+12:45",
            "2023-04-02T03:30:00+12:45",
            "2023-04-03T03:00:00+12:45",
        ],
        id="chatham-fall-wildcard-twice",
    ),
    pytest.param(
        "*/5 2 * * *",
        CHA,
        "2023-04-02T02:30:00+13:45",
        [
            "2023-04-02T02:35:00+13:45",
            "2023-04-02T02:40:00+13:45",
            "2023-04-02T02:45:00+13:45",
            "2023-04-02T02:50:00+13:45",
            "2023-04-02T02:55:00+13:45",
            "2023-04-02T02:45:00+12:45",
            "2023-04-02T02:50:00+12:45",
            "2023-04-02T02:55:00+12:45",
            "2023-04-03T02:00:00+12:45",
        ],
        id="chatham-fall-wildcard-last-quarter-twice",
    ),
    # --- Feb 29 --------------------------------------------------------------------------------
    pytest.param(
        "0 0 29 2 *",
        "UTC",
        "2025-01-01T00:00:00+00:00",
        ["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"],
        id="feb-29",
    ),
    pytest.param(
        "0 0 29 2 *",
        "UTC",
        "2097-01-01T00:00:00+00:00",
        ["2104-02-29T00:00:00+00:00"],
        id="feb-29-skips-2100",
    ),
    pytest.param(
        "0 0 29 2 1",
        "UTC",
        "2027-01-01T00:00:00+00:00",
        [
            "2027-02-01T00:00:00+00:00",
            "2027-02-08T00:00:00+00:00",
            "2027-02-15T00:00:00+00:00",
            "2027-02-22T00:00:00+00:00",
            "2028-02-07T00:00:00+00:00",
            "2028-02-14T00:00:00+00:00",
            "2028-02-21T00:00:00+00:00",
            "2028-02-28T00:00:00+00:00",
            "2028-02-29T00:00:00+00:00",
            "2029-02-05T00:00:00+00:00",
        ],
        id="feb-29-or-mondays-in-feb",
    ),
    pytest.param(
        "0 0 29 2 *",
        B,
        "2028-02-28T23:30:00+00:00",
        ["2032-02-29T00:00:00+01:00"],
        id="feb-29-start-after-it-began-in-zone",
    ),
    # --- Day fields ----------------------------------------------------------------------------
    pytest.param(
        "0 0 13 * 5",
        "UTC",
        "2023-01-01T00:00:00+00:00",
        [
            "2023-01-06T00:00:00+00:00",
            "2023-01-13T00:00:00+00:00",
            "2023-01-20T00:00:00+00:00",
            "2023-01-27T00:00:00+00:00",
            "2023-02-03T00:00:00+00:00",
            "2023-02-10T00:00:00+00:00",
            "2023-02-13T00:00:00+00:00",
            "2023-02-17T00:00:00+00:00",
        ],
        id="both-day-fields-or",
    ),
    pytest.param(
        "0 16 */2 * sat",
        "UTC",
        "2023-05-02T00:00:00+00:00",
        [
            "2023-05-13T16:00:00+00:00",
            "2023-05-27T16:00:00+00:00",
            "2023-06-03T16:00:00+00:00",
            "2023-06-17T16:00:00+00:00",
        ],
        id="star-rule-and",
    ),
    pytest.param(
        "0 12 1-31 * MON",
        "UTC",
        "2023-05-02T00:00:00+00:00",
        [
            "2023-05-02T12:00:00+00:00",
            "2023-05-03T12:00:00+00:00",
            "2023-05-04T12:00:00+00:00",
            "2023-05-05T12:00:00+00:00",
        ],
        id="dom-range-or-fires-daily",
    ),
    pytest.param(
        "0 0 31 * *",
        "UTC",
        "2023-01-31T00:00:00+00:00",
        ["2023-03-31T00:00:00+00:00", "2023-05-31T00:00:00+00:00", "2023-07-31T00:00:00+00:00"],
        id="31st-skips-short-months",
    ),
    # --- Steps across boundaries ---------------------------------------------------------------
    pytest.param(
        "*/7 * * * *",
        "UTC",
        "2023-05-02T00:50:00+00:00",
        ["2023-05-02T00:56:00+00:00", "2023-05-02T01:00:00+00:00", "2023-05-02T01:07:00+00:00"],
        id="step-7-restarts-each-hour",
    ),
    pytest.param(
        "5-59/15 * * * *",
        "UTC",
        "2023-05-02T00:50:00+00:00",
        [
            "2023-05-02T01:05:00+00:00",
            "2023-05-02T01:20:00+00:00",
            "2023-05-02T01:35:00+00:00",
            "2023-05-02T01:50:00+00:00",
            "2023-05-02T02:05:00+00:00",
        ],
        id="range-step-minutes",
    ),
    pytest.param(
        "0 9 * * 1-5/2",
        "UTC",
        "2023-04-30T00:00:00+00:00",
        [
            "2023-05-01T09:00:00+00:00",
            "2023-05-03T09:00:00+00:00",
            "2023-05-05T09:00:00+00:00",
            "2023-05-08T09:00:00+00:00",
        ],
        id="weekday-range-step-mon-wed-fri",
    ),
    pytest.param(
        "0 */5 * * *",
        "UTC",
        "2023-05-01T19:00:00+00:00",
        ["2023-05-01T20:00:00+00:00", "2023-05-02T00:00:00+00:00", "2023-05-02T05:00:00+00:00"],
        id="hour-step-across-midnight",
    ),
    pytest.param(
        "*/10 * * * *",
        "UTC",
        "2023-12-31T23:45:00+00:00",
        ["2023-12-31T23:50:00+00:00", "2024-01-01T00:00:00+00:00", "2024-01-01T00:10:00+00:00"],
        id="step-across-year-end",
    ),
    pytest.param(
        "*/10 * * * *",
        B,
        "2024-02-29T23:45:00+01:00",
        ["2024-02-29T23:50:00+01:00", "2024-03-01T00:00:00+01:00", "2024-03-01T00:10:00+01:00"],
        id="step-across-leap-month-end",
    ),
    pytest.param(
        "*/10 * * * *",
        NY,
        "2023-01-31T23:45:00-05:00",
        ["2023-01-31T23:50:00-05:00", "2023-02-01T00:00:00-05:00", "2023-02-01T00:10:00-05:00"],
        id="step-across-month-end",
    ),
    # --- Names and macros ----------------------------------------------------------------------
    pytest.param(
        "30 8 * feb-MAR Sat,sun",
        "UTC",
        "2023-01-30T00:00:00+00:00",
        ["2023-02-04T08:30:00+00:00", "2023-02-05T08:30:00+00:00", "2023-02-11T08:30:00+00:00"],
        id="names-any-case",
    ),
    pytest.param(
        "0 0 * * FRI-SUN",
        "UTC",
        "2023-05-02T00:00:00+00:00",
        ["2023-05-05T00:00:00+00:00", "2023-05-06T00:00:00+00:00", "2023-05-07T00:00:00+00:00"],
        id="fri-to-sun-wraps",
    ),
    pytest.param(
        "0 0 * * 7",
        "UTC",
        "2023-05-02T00:00:00+00:00",
        ["2023-05-07T00:00:00+00:00", "2023-05-14T00:00:00+00:00"],
        id="sunday-as-7",
    ),
    pytest.param("@yearly", B, "2023-05-02T00:00:00+02:00", ["2024-01-01T00:00:00+01:00"], id="@yearly"),
    pytest.param("@annually", "UTC", "2023-05-02T00:00:00+00:00", ["2024-01-01T00:00:00+00:00"], id="@annually"),
    pytest.param("@monthly", B, "2023-05-02T00:00:00+02:00", ["2023-06-01T00:00:00+02:00"], id="@monthly"),
    pytest.param(
        "@weekly",
        "UTC",
        "2023-05-02T00:00:00+00:00",
        ["2023-05-07T00:00:00+00:00", "2023-05-14T00:00:00+00:00"],
        id="@weekly-sunday",
    ),
    pytest.param("@daily", NY, "2023-05-02T00:00:00-04:00", ["2023-05-03T00:00:00-04:00"], id="@daily"),
    pytest.param("@midnight", "UTC", "2023-05-02T00:00:00+00:00", ["2023-05-03T00:00:00+00:00"], id="@midnight"),
    pytest.param(
        "@hourly",
        B,
        "2026-10-25T01:30:00+02:00",
        ["2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"],
        id="@hourly-is-wildcard-through-fall-back",
    ),
    # --- Strictly after, microseconds, start in another zone -----------------------------------
    pytest.param(
        "0 9 * * *",
        B,
        "2023-05-02T09:00:00+02:00",
        ["2023-05-03T09:00:00+02:00"],
        id="strictly-after-fire-time",
    ),
    pytest.param(
        "* * * * *",
        "UTC",
        "2023-05-02T12:00:00+00:00",
        ["2023-05-02T12:01:00+00:00", "2023-05-02T12:02:00+00:00"],
        id="strictly-after-every-minute",
    ),
    pytest.param(
        "0 9 * * *",
        B,
        "2023-05-02T08:59:59.999999+02:00",
        ["2023-05-02T09:00:00+02:00"],
        id="microseconds-before",
    ),
    pytest.param(
        "0 9 * * *",
        B,
        "2023-05-02T09:00:00.000001+02:00",
        ["2023-05-03T09:00:00+02:00"],
        id="microseconds-after",
    ),
    pytest.param(
        "* * * * *",
        "UTC",
        "2023-05-02T12:00:30.5+00:00",
        ["2023-05-02T12:01:00+00:00"],
        id="seconds-ignored",
    ),
    pytest.param(
        # The only 03:xx wall time left on 2026-03-29 in Berlin starts at the jump (01:00 UTC), exactly
        # seven days and a microsecond after the start.
        "*/30 3 29 3 *",
        B,
        "2026-03-22T01:00:00.000001+00:00",
        ["2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"],
        id="microseconds-start-a-week-before-jump",
    ),
    pytest.param(
        "0 9 * * *",
        B,
        "2023-05-02T07:30:00+00:00",
        ["2023-05-03T09:00:00+02:00"],
        id="start-in-utc",
    ),
    pytest.param(
        "0 9 * * *",
        B,
        "2023-05-01T23:30:00-04:00",
        ["2023-05-02T09:00:00+02:00"],
        id="start-in-new-york",
    ),
    pytest.param(
        "30 2 * * *",
        B,
        "2026-10-25T01:10:00+00:00",
        ["2026-10-26T02:30:00+01:00"],
        id="start-in-utc-inside-second-pass",
    ),
    pytest.param(
        "0 0 * * *",
        "UTC",
        "2023-05-02T23:30:00-04:00",
        ["2023-05-04T00:00:00+00:00"],
        id="utc-task-start-in-new-york",
    ),
]


@pytest.mark.parametrize(("expr", "zone", "start", "expected"), CASES)
def test_fires(expr, zone, start, expected):
    """iter_fires yields exactly the hand-verified instants, each in the task zone with its offset."""
    fires = list(islice(iter_fires(parse_cron(expr), datetime.fromisoformat(start), ZoneInfo(zone)), len(expected)))
    assert [fire.isoformat() for fire in fires] == expected
    assert all(str(fire.tzinfo) == zone for fire in fires)


@pytest.mark.parametrize(("expr", "zone", "start", "expected"), CASES)
def test_next_fire_is_first_of_iter(expr, zone, start, expected):
    """next_fire returns the first expected instant, strictly after the start."""
    after = datetime.fromisoformat(start)
    fire = next_fire(parse_cron(expr), after, ZoneInfo(zone))
    assert fire is not None
    assert fire.isoformat() == expected[0]
    assert fire > after


def test_next_fire_rejects_naive_start():
    """A naive start is ambiguous and rejected with ValueError."""
    with pytest.raises(ValueError, match="aware"):
        next_fire(parse_cron("* * * * *"), datetime(2023, 5, 2, 12, 0), ZoneInfo("UTC"))


_PROPERTY_ZONES = ["UTC", B, NY, LH, SCL, CHA, "Asia/Kolkata", "Europe/Dublin"]
_PROPERTY_EXPRS = [
    "* * * * *",
    "*/7 * * * *",
    "30 * * * *",
    "0 * * * *",
    "*/15 1,2,3 * * *",
    "30 2 * * *",
    "0,30 2 * * *",
    "45 1 * * *",
    "0 0 * * *",
    "*/5 0,23 * * *",
    "0 3 * * *",
    "0 0 29 2 1",
    "0 9 * * 1-5",
    "5-59/20 2-3 * * 0",
]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    expr=st.sampled_from(_PROPERTY_EXPRS),
    zone=st.sampled_from(_PROPERTY_ZONES),
    start=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31)),
)
def test_iter_fires_strictly_increasing(expr, zone, start):
    """iter_fires yields strictly increasing whole-minute instants, all after the start."""
    after = start.replace(tzinfo=UTC)
    previous = after
    for fire in islice(iter_fires(parse_cron(expr), after, ZoneInfo(zone)), 40):
        assert fire > previous
        assert fire.second == 0
        assert fire.microsecond == 0
        previous = fire
    assert previous - after < timedelta(days=366 * 20)
