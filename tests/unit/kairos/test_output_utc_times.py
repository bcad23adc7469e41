"""fmt_time shows a UTC time without datetime exactly as datetime shows it (kairos.output._utc_text).

``kairos list`` in a UTC shell formats kairosd's ``YYYY-MM-DDTHH:MM:SS+00:00`` times by hand, so
that it need not import datetime (tests/integration/kairos/test_import_budget.py). Every text below,
real dates and near misses (a 29 February off leap years, month 13, 24:00, a leap second, year 0,
other offsets, fractions, other digits and separators), is shown as the datetime path shows it:
reformatted when ``datetime.fromisoformat`` reads it, as it came when it does not.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from kairos.output import _fmt_time


def _by_datetime(text: str, zone: str | None) -> str:
    """What fmt_time showed before it had a path without datetime."""
    try:
        when = datetime.fromisoformat(text)
        if zone is not None and when.tzinfo is not None:
            when = when.astimezone(UTC)
    except ValueError:
        return text
    return when.isoformat(sep=" ", timespec="seconds")


YEARS = ["0000", "0001", "1900", "2000", "2023", "2024", "2100", "9999"]
MONTHS = [f"{m:02d}" for m in range(14)]
DAYS = ["00", "01", "28", "29", "30", "31", "32"]
TIMES = ["00:00:00", "23:59:59", "24:00:00", "12:60:00", "12:00:60"]

GRID = [f"{y}-{m}-{d}T{t}+00:00" for y, m, d, t in itertools.product(YEARS, MONTHS, DAYS, TIMES)]
ODD = [
    "2026-11-23T09:00:00+00:00",
    "2026-11-23T09:00:00Z",
    "2026-11-23T09:00:00-00:00",
    "2026-11-23T09:00:00+01:00",
    "2026-11-23T09:00:00.5+00:00",
    "2026-11-23T09:00:00.000000+00:00",
    "2026-11-23 09:00:00+00:00",
    "2026-11-23t09:00:00+00:00",
    "2026/11/23T09:00:00+00:00",
    "2026-11-23T09.00.00+00:00",
    "2026-11-23T09:00:00+00.00",
    "2026-11-23T09:00:00+0000",
    "\u0662026-11-23T09:00:00+00:00",  # an Arabic-Indic digit: isdigit() says yes, fromisoformat no
    "+026-11-23T09:00:00+00:00",
    "2026-1-23T09:00:00+00:000",
    "2026-11-23T09:00:00",
    "",
    "not a time at all, of 25!",
]


@pytest.mark.parametrize("zone", [None, "UTC"])
def test_every_text_reads_as_datetime_reads_it(zone: str | None) -> None:
    wrong = [(text, _fmt_time(text, zone), _by_datetime(text, zone)) for text in GRID + ODD]
    assert [w for w in wrong if w[1] != w[2]] == []


def test_the_grid_holds_both_kinds() -> None:
    """The comparison above means something: it holds texts datetime reads and texts it refuses."""
    read = [text for text in GRID if _by_datetime(text, "UTC") != text]
    assert 500 < len(read) < len(GRID) - 500
    assert "2024-02-29T23:59:59+00:00" in read
    assert "2023-02-29T23:59:59+00:00" not in read
