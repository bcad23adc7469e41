"""Parse and validate 5-field cron expressions into a compiled :class:`CronExpr`.

Grammar (Debian/Vixie cron, with the differences the README lists): ``*``,
``N``, ``N-M``, ``*/S``, ``N-M/S``, ``N/S`` (= ``N-max/S``, as cronsim reads it;
Debian's crontab refuses it), comma lists, month and weekday names in any case,
0 or 7 for Sunday (also as a range end: ``5-7``, ``FRI-SUN``), and the macros
``@yearly @annually @monthly @weekly @daily @midnight @hourly`` in any case.
Fields are separated by any whitespace, Unicode spaces included. Quartz
extensions (``L``, ``W``, ``#``, ``?``) and seconds are rejected with a clear
message.

Every error is a :class:`~kairosd.core.errors.CronSyntaxError` that names the field
and the offending text, e.g. ``hour: 24 is out of range 0-23``. An expression
that can never fire (``0 0 31 2 *``) is rejected here too.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar, cast

from kairosd.core.errors import CronSyntaxError

_V = TypeVar("_V")

FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# The longest month each month can have (February in a leap year).
_MAX_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MINUTE, _HOUR, _DOM, _MONTH, _DOW = range(5)


@dataclass(frozen=True, slots=True)  # slots: one instance per distinct expression a store holds
class CronExpr:
    """A compiled cron expression. Values are sorted tuples; ``dows`` uses 0=Sunday..6."""

    source: str
    # Canonical numeric form: macros expanded, names as numbers, "N/S" as "N-max/S".
    normalized: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    doms: tuple[int, ...]
    months: tuple[int, ...]
    dows: tuple[int, ...]
    # Vixie rule: if either day field starts with "*", both must match (AND);
    # otherwise a day matches when either does (OR).
    day_and: bool
    # Debian treats a job whose minute and hour fields both do not start with "*"
    # as a fixed-time job: it follows wall time through DST changes.
    fixed_time: bool
    _dom_set: frozenset[int] = field(repr=False, compare=False)
    _dow_set: frozenset[int] = field(repr=False, compare=False)

    @property
    def days_key(self) -> tuple[frozenset[int], frozenset[int], bool]:
        """What decides which days of a month match (the month itself aside)."""
        return (self._dom_set, self._dow_set, self.day_and)

    def days_in(self, year: int, month: int) -> tuple[int, ...]:
        """The days of ``year``/``month`` this expression matches, sorted."""
        key = (self._dom_set, self._dow_set, self.day_and, year, month)
        cached = _MONTH_DAYS.get(key)
        if cached is not None:
            return cached
        first_weekday, length = calendar.monthrange(year, month)
        first_dow = (first_weekday + 1) % 7  # calendar: Monday=0; cron: Sunday=0
        dom_set, dow_set = self._dom_set, self._dow_set
        if self.day_and:
            days = tuple(d for d in range(1, length + 1) if d in dom_set and (first_dow + d - 1) % 7 in dow_set)
        else:
            days = tuple(d for d in range(1, length + 1) if d in dom_set or (first_dow + d - 1) % 7 in dow_set)
        if len(_MONTH_DAYS) > 4096:  # bounded: long-running daemons walk many months
            _MONTH_DAYS.clear()
        _MONTH_DAYS[key] = days = _shared(days)
        return days


def _number(text: str, idx: int, term: str) -> int:
    name = FIELD_NAMES[idx]
    upper = text.upper()
    if idx == _MONTH and upper in MONTH_NAMES:
        return MONTH_NAMES.index(upper) + 1
    if idx == _DOW and upper in DAY_NAMES:
        return DAY_NAMES.index(upper)
    if text == "":
        # "-1", "/5", "MON-": the text at fault is the whole term, not the empty part of it.
        raise CronSyntaxError(f"{term!r} is missing a value (write N, N-M or */S)", name)
    if not text.isascii() or not text.isdigit():
        if any(ch in text.upper() for ch in "LW#?"):
            raise CronSyntaxError(f"{term!r}: the L, W, # and ? extensions are not supported", name)
        hint = ""
        if idx == _MONTH:
            hint = " or a month name (JAN-DEC)"
        elif idx == _DOW:
            hint = " or a day name (SUN-SAT)"
        where = f" in {term!r}" if term != text else ""
        raise CronSyntaxError(f"{text!r}{where} is not a number{hint}", name)
    value = int(text)
    lo, hi = _BOUNDS[idx]
    if not lo <= value <= hi:
        raise CronSyntaxError(f"{value} is out of range {lo}-{hi}", name)
    return value


def _parse_term(term: str, idx: int, full: str) -> tuple[set[int], str]:
    """The values ``term`` stands for, and the term in canonical numeric form."""
    name = FIELD_NAMES[idx]
    lo, hi = _BOUNDS[idx]
    if term == "":
        raise CronSyntaxError(f"empty list item in {full!r}", name)
    base, slash, step_text = term.partition("/")
    step = 1
    if slash:
        if not step_text.isascii() or not step_text.isdigit():
            raise CronSyntaxError(f"step {step_text!r} in {term!r} is not a number", name)
        step = int(step_text)
        if step < 1:
            raise CronSyntaxError(f"step in {term!r} must be at least 1", name)
    suffix = f"/{step}" if slash else ""
    if base == "*":
        start, end = lo, hi
        canonical = "*"
    elif "-" in base:
        if base.count("-") > 1:
            raise CronSyntaxError(f"{term!r} is not a range: a range is N-M, with one '-'", name)
        first, _, last = base.partition("-")
        start, end = _number(first, idx, term), _number(last, idx, term)
        if idx == _DOW and end == 0 and start > 0:
            end = 7  # "FRI-SUN" / "5-0": Sunday closes the week
        if end < start:
            raise CronSyntaxError(f"range {base!r} goes backwards", name)
        # A one-value range is that value, with or without a step (Vixie cron);
        # cronsim reads "2-2/3" as "2/3", so spell it plainly.
        canonical, suffix = (str(start), "") if start == end else (f"{start}-{end}", suffix)
    else:
        start = _number(base, idx, term)
        # "N/S" means N to the field's maximum in steps of S (as cronsim reads it; Debian's crontab refuses it).
        end = hi if slash else start
        canonical = f"{start}-{hi}" if slash else str(start)
    return set(range(start, end + 1, step)), canonical + suffix


_SHARED: dict[Any, Any] = {}
# The days of a month that day sets match, by (days of month, days of week, AND rule, year, month):
# shared by every expression with the same day fields, rather than a dict in each expression
# (tracemalloc at start with 10,000 tasks over 1,440 expressions: 0.3 MB of per-expression dicts).
_MONTH_DAYS: dict[tuple[frozenset[int], frozenset[int], bool, int, int], tuple[int, ...]] = {}


def _shared(value: _V) -> _V:
    """One object for equal (immutable) tuples and sets of values: distinct expressions mostly share them.

    tracemalloc at start with 10,000 tasks over 1,440 distinct expressions counted ~1.2 MB of equal
    tuples and weekday sets held once per expression (and per month walked) before they were shared.
    """
    if len(_SHARED) > 4096:  # bounded, like the parse cache
        _SHARED.clear()
    return cast(_V, _SHARED.setdefault(value, value))


@lru_cache(maxsize=1024)
def _parse_field(text: str, idx: int) -> tuple[frozenset[int], str]:
    # Cached on its own: many distinct expressions share their fields ("0", "*", "1-5"), so a big
    # store parses each field text once.
    values: set[int] = set()
    canonical: list[str] = []
    for term in text.split(","):
        term_values, term_text = _parse_term(term, idx, text)
        values |= term_values
        canonical.append(term_text)
    return frozenset(values), ",".join(canonical)


@lru_cache(maxsize=4096)
def parse_cron(expr: str) -> CronExpr:
    """Compile ``expr`` or raise :class:`CronSyntaxError` naming the field at fault."""
    if not isinstance(expr, str):
        raise CronSyntaxError("a cron expression must be a string")
    text = " ".join(expr.split())
    if text.startswith("@"):
        macro = text.lower()
        if macro == "@reboot":
            raise CronSyntaxError("@reboot is not supported: kairos fires on the clock, not at boot")
        if macro not in MACROS:
            raise CronSyntaxError(f"unknown macro {text!r} (known: {', '.join(MACROS)})")
        text = MACROS[macro]
    parts = text.split(" ") if text else []
    if len(parts) != 5:
        raise CronSyntaxError(
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)} in {expr!r}"
        )
    parsed = [_parse_field(part, idx) for idx, part in enumerate(parts)]
    sets = [values for values, _ in parsed]
    dows = {d % 7 for d in sets[_DOW]}
    day_and = parts[_DOM].startswith("*") or parts[_DOW].startswith("*")
    if day_and:
        possible = [d for d in sets[_DOM] if any(d <= _MAX_DAYS[m] for m in sets[_MONTH])]
        if not possible:
            months = ", ".join(calendar.month_name[m] for m in sorted(sets[_MONTH]))
            raise CronSyntaxError(
                f"{parts[_DOM]!r} never occurs in {months}, so this expression never fires",
                "day-of-month",
            )
    return CronExpr(
        source=expr,
        normalized=" ".join(text for _, text in parsed),
        minutes=_shared(tuple(sorted(sets[_MINUTE]))),
        hours=_shared(tuple(sorted(sets[_HOUR]))),
        doms=_shared(tuple(sorted(sets[_DOM]))),
        months=_shared(tuple(sorted(sets[_MONTH]))),
        dows=_shared(tuple(sorted(dows))),
        day_and=day_and,
        fixed_time=not parts[_MINUTE].startswith("*") and not parts[_HOUR].startswith("*"),
        _dom_set=frozenset(sets[_DOM]),
        _dow_set=_shared(frozenset(dows)),
    )
