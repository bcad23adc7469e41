"""Relative dates to absolute ones: "tomorrow" said on 22 November becomes "on 2026-11-23".

A board entry outlives the day it was said on, so "deploy the fix tomorrow" must carry its date.
The anchor is when the words were said (the transcript's timestamp of that message), in the
user's zone (the date a person means depends on where they are).

What is rewritten (case-insensitive, an optional preposition in front is kept):

    today, tonight, this morning/afternoon/evening    on D
    tomorrow, yesterday, the day after tomorrow, ...  on D+1, on D-1, on D+2, ...
    in N days/weeks, N days/weeks ago                 on D+N, on D-N (weeks: 7 N)
    next/last/this week                               the week of <its Monday>
    next/last/this month                              in <Month YYYY>
    next/last/this <weekday>                          next: the first one after D; last: the last
                                                      one before D; this: the one in D's week

A bare weekday ("on Friday") is left as it is: which Friday is a guess.

Pure (no clock, no I/O). Must not import anything from kairosd.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from kairosd.core import lazyre

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
_PREP = r"(?:(?P<prep>on|by|until|till|before|after|from|since|for|in)\s+)?"
_N = r"(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|ten)"

Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[str, str]]]


def _days(offset: int) -> Callable[[re.Match[str], date], tuple[str, str]]:
    return lambda m, d: ("on", (d + timedelta(days=offset)).isoformat())


def _count(m: re.Match[str]) -> int:
    raw = m["n"].lower()
    return int(raw) if raw.isdigit() else _NUMBERS[raw]


def _in_n(m: re.Match[str], d: date) -> tuple[str, str]:
    days = _count(m) * (7 if m["unit"].lower().startswith("week") else 1)
    return "on", (d + timedelta(days=days)).isoformat()


def _ago(m: re.Match[str], d: date) -> tuple[str, str]:
    days = _count(m) * (7 if m["unit"].lower().startswith("week") else 1)
    return "on", (d - timedelta(days=days)).isoformat()


def _week(m: re.Match[str], d: date) -> tuple[str, str]:
    monday = d - timedelta(days=d.weekday())
    shift = {"next": 7, "last": -7, "this": 0}[m["which"].lower()]
    return "", f"the week of {(monday + timedelta(days=shift)).isoformat()}"


def _month(m: re.Match[str], d: date) -> tuple[str, str]:
    shift = {"next": 1, "last": -1, "this": 0}[m["which"].lower()]
    index = d.year * 12 + d.month - 1 + shift
    return "in", f"{MONTHS[index % 12]} {index // 12}"


def _weekday(m: re.Match[str], d: date) -> tuple[str, str]:
    target = WEEKDAYS.index(m["day"].lower())
    which = m["which"].lower()
    if which == "next":
        delta = (target - d.weekday()) % 7 or 7
    elif which == "last":
        delta = -((d.weekday() - target) % 7 or 7)
    else:
        delta = target - d.weekday()
    when = d + timedelta(days=delta)
    return "on", f"{WEEKDAYS[target].capitalize()} {when.isoformat()}"


def _rule(expr: str, fn: Callable[[re.Match[str], date], tuple[str, str]]) -> Rule:
    return re.compile(rf"\b{_PREP}{expr}\b", re.IGNORECASE), fn


_DAY = "(?P<day>" + "|".join(WEEKDAYS) + ")"
RULES: tuple[Rule, ...] = (
    _rule(r"the\s+day\s+after\s+tomorrow", _days(2)),
    _rule(r"the\s+day\s+before\s+yesterday", _days(-2)),
    _rule(r"(?:today|tonight|this\s+(?:morning|afternoon|evening))", _days(0)),
    _rule(r"tomorrow", _days(1)),
    _rule(r"yesterday", _days(-1)),
    (lazyre.compile(rf"\bin\s+{_N}\s+(?P<unit>days?|weeks?)\b", re.IGNORECASE), _in_n),
    _rule(rf"{_N}\s+(?P<unit>days?|weeks?)\s+ago", _ago),
    _rule(r"(?P<which>next|last|this)\s+week", _week),
    _rule(r"(?P<which>next|last|this)\s+month", _month),
    _rule(rf"(?P<which>next|last|this)\s+{_DAY}", _weekday),
)


# A word every expression has: most sentences have none, and then one cheap search settles it.
_ANY = lazyre.compile(r"\b(?:today|tonight|tomorrow|yesterday|ago|next|last|this|days?|weeks?)\b", re.IGNORECASE)


def local_date(when: datetime, zone: ZoneInfo) -> date:
    return when.astimezone(zone).date()


def absolutize(text: str, when: datetime, zone: ZoneInfo) -> str:
    """``text`` with its relative dates made absolute, relative to ``when`` (aware) in ``zone``."""
    if _ANY.search(text) is None:
        return text
    day = local_date(when, zone)
    for pattern, fn in RULES:
        if pattern.search(text) is None:
            continue

        def replace(m: re.Match[str], fn: Callable[[re.Match[str], date], tuple[str, str]] = fn) -> str:
            default_prep, absolute = fn(m, day)
            groups = m.groupdict()
            prep = groups.get("prep") or default_prep
            if not groups.get("prep") and m.string[m.end() : m.end() + 1] in ("'", "\u2019"):
                prep = ""  # "today's planning" is "2026-10-05's planning", not "on 2026-10-05's planning"
            return f"{prep} {absolute}" if prep else absolute

        text = pattern.sub(replace, text)
    return text
