"""The ranges every value kairos accepts must stay inside, for the whole life of a task.

A value is checked where it enters (an API request, an import, a stored record
read at start-up), and the ranges are chosen so that everything done with it
later stays computable: a time plus the longest duration, expiry, jitter or
catch-up window stays far below ``datetime.max`` (year 9999), so no fire,
expiry or restart can overflow. The README's reliability section lists these
numbers; the CLI checks the same ones before it sends a request.

Pure and cheap: the CLI imports it on the ``kairos add`` path. Must not import
pydantic, asyncio or any kairosd module but :mod:`kairosd.core.errors`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from kairosd.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

# A time a person gives (an exact "at", "in" from now) lies in [EARLIEST_TIME, LATEST_TIME).
# A stored record's times (created, fired, last slot) may lie up to LATEST_STORED_TIME: the
# daemon's own clock stamps some of them, and a task keeps firing past LATEST_TIME. Both
# stay centuries below datetime's year 9999, so no computation over a task's life (the
# next fire over cron's 100-year horizon, a 7-day catch-up window, expiry) can overflow.
EARLIEST_TIME: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME: Final = datetime(2200, 1, 1, tzinfo=UTC)
LATEST_STORED_TIME: Final = datetime(9000, 1, 1, tzinfo=UTC)
# How far ahead of the clock a time that records the past (created, last fired, last slot) may be.
# Further ahead, it would silence the task until then: an import refuses it, a load sets it to now
# (see kairosd.core.lifecheck). Small, yet above NTP's usual steps and a slow second machine's clock.
MAX_FUTURE_SKEW_S: Final = 300
MAX_DURATION_DAYS: Final = 3650  # --in, --every, jitter's max:DUR (jitter has its own, smaller cap)
MAX_DURATION_S: Final = MAX_DURATION_DAYS * 86400
MAX_EXPIRY_DAYS: Final = 3650
MAX_TIMEOUT_S: Final = 7 * 86400  # a target's run time (shell, agent, webhook)

MAX_PROMPT_CHARS: Final = 100_000
MAX_NAME_CHARS: Final = 200
MAX_SHORT_CHARS: Final = 200  # a cron expression, a zone, a duration, an agent or model name
MAX_PATH_CHARS: Final = 4096
MAX_ARGV_ITEMS: Final = 256
MAX_ARG_CHARS: Final = 32_768
MAX_META_BYTES: Final = 16 * 1024  # a task's meta, as compact JSON
MAX_META_DEPTH: Final = 8
MAX_JSON_DEPTH: Final = 32  # any request body
# A stored document: the store (1), its task list (2), then a task as deep as a request may be.
MAX_STORED_DEPTH: Final = MAX_JSON_DEPTH + 2
MAX_LIST_ITEMS: Final = 10_000  # ids to acknowledge or remove in one request
MAX_QUERY_DIGITS: Final = 12


def unicode_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as UTF-8, or None.

    A lone surrogate (JSON's ``"\\udcff"``, or bytes that were not UTF-8 read with
    surrogateescape) cannot be encoded and would fail at save or fire time.
    """
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode text (it holds bytes that are not UTF-8, or a lone surrogate)"
    return None


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be handed to a process (argv, cwd, environment), or None: also no NUL."""
    return unicode_problem(value) or ("contains a NUL character" if "\0" in value else None)


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH, *, text: bool = True) -> str | None:
    """Why a parsed JSON value is unacceptable (nested deeper than ``max_depth``, a number that
    is not finite, or text that is not valid Unicode anywhere in it), or None. Iterative, so a
    deep value cannot exhaust the stack. ``inf`` (JSON's ``1e999``) would be written back as
    ``null``, so it is refused rather than silently changed. ``text=False`` leaves strings alone
    (a task's unknown fields keep whatever a newer kairos wrote)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict | list) and depth > max_depth:
            return f"{where or 'the body'} is nested deeper than {max_depth} levels"
        if isinstance(item, dict):
            for key, child in item.items():
                path = f"{where}.{key}" if where else str(key)
                problem = unicode_problem(key) if text and isinstance(key, str) else None
                if problem:
                    return f"a key in {where or 'the body'} {problem}"
                stack.append((child, depth + 1, path))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, str) and text:
            problem = unicode_problem(item)  # NUL is refused by the fields that reach a process
            if problem:
                return f"{where or 'the body'} {problem}"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{where or 'the body'} is not a finite number"
    return None


def zone_hint(name: str) -> str:
    """What to add to "unknown time zone NAME": a POSIX rule string (``EST5EDT,M3.2.0,M11.1.0``,
    ``<+03>-3``) is refused, not read as UTC, and the user is told why; otherwise nothing."""
    if any(ch.isdigit() or ch in ",<>" for ch in name):
        return " (a POSIX TZ rule string; kairos needs an IANA name such as America/New_York)"
    return ""


def check_text(value: str, field: str, max_chars: int) -> str:
    """``value`` if it is valid text of at most ``max_chars``; else UsageError naming the field and limit."""
    if len(value) > max_chars:
        raise UsageError(f"{field}: {len(value)} characters; the limit is {max_chars}")
    problem = text_problem(value)
    if problem:
        raise UsageError(f"{field} {problem}")
    return value


def check_stored_time(value: datetime, field: str) -> datetime:
    """``value`` if it lies in [EARLIEST_TIME, LATEST_STORED_TIME); else ValueError naming the field and range."""
    if not EARLIEST_TIME <= value < LATEST_STORED_TIME:
        raise ValueError(
            f"{field} {value.isoformat()} is outside the supported range "
            f"{EARLIEST_TIME.date().isoformat()} to {LATEST_STORED_TIME.date().isoformat()}"
        )
    return value


def query_int(raw: str | None, name: str, default: int, low: int, high: int) -> int:
    """A whole number from a query string, in [low, high]; UsageError naming the range otherwise.

    ASCII digits only: ``str.isdigit`` accepts ``"²"``, which ``int`` refuses, and
    a few thousand digits make ``int`` itself raise.
    """
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_QUERY_DIGITS) or not low <= int(raw) <= high:
        raise UsageError(f"{name} must be a whole number from {low} to {high}")
    return int(raw)
