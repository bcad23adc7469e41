"""Whether a stored task can live its whole life in kairos: every date it will compute stays in range.

Python's dates end at year 9999, and a task's life adds to its dates: the
next fire after its anchor, jitter on top, the expiry day, a week of
catch-up before now. A record whose dates sit near either end (a
``last_scheduled_for`` in 9999, an expiry three million days out, a
``created_at`` in year 1 in a zone west of UTC) parses, then overflows at its
first fire. :func:`life_problem` says so at load, from the record's values
alone: every stored time must lie in [:data:`EARLIEST`, :data:`LATEST`), and
so must the expiry day. Inside that window no computation can leave Python's
range (a cron's next match is at most a few decades away, a jitter at most a
period). A record outside it is set aside at load (see :mod:`kairosd.store.quarantine`);
anything this misses is caught at run time, one task at a time (see :mod:`kairosd.scheduling.broken`).

Times that record the past (``created_at``, ``last_fired_at``,
``last_scheduled_for``) must also not lie ahead of the clock by more than
:data:`~kairosd.core.bounds.MAX_FUTURE_SKEW_S`: the next fire is computed after
them, so a ``lastFiredAt`` 32 years ahead would silence the task until then.
:func:`future_problem` says so, and an import refuses such an item (the file
is not kairos' own). :func:`clamp_future` is for a load: the daemon's own clock
stamped these times, and a clock that was set back (a wrong RTC, a manual
fix) must not cost the user their tasks, so a load sets each such time to now
and says so in a warning; the task then fires at its next slot after now.

Pure: no I/O. Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kairosd.core.bounds import EARLIEST_TIME as EARLIEST
from kairosd.core.bounds import LATEST_STORED_TIME as LATEST
from kairosd.core.bounds import MAX_FUTURE_SKEW_S
from kairosd.core.models import Task

_TIME_FIELDS = ("created_at", "last_fired_at", "last_scheduled_for", "at")
_PAST_FIELDS = ("created_at", "last_fired_at", "last_scheduled_for")  # "at" is the future by design
_SKEW = timedelta(seconds=MAX_FUTURE_SKEW_S)


def life_problem(task: Task) -> str | None:
    """Why ``task`` cannot be planned, fired, expired or caught up without a date overflow; None if it can."""
    for name in _TIME_FIELDS:
        value: datetime | None = getattr(task, name)
        if value is not None and not EARLIEST <= value < LATEST:
            return (
                f"{name} {value.isoformat()} is outside the supported range "
                f"({EARLIEST.date().isoformat()} to {LATEST.date().isoformat()})"
            )
    days = task.expires_after_days
    if task.expires and days is not None and days >= (LATEST - task.created_at).days:
        return (
            f"expires_after_days {days} puts the expiry past {LATEST.date().isoformat()}, "
            "the last day kairos can schedule"
        )
    return None


def _ahead(task: Task, now: datetime) -> list[str]:
    return [name for name in _PAST_FIELDS if (value := getattr(task, name)) is not None and value > now + _SKEW]


def future_problem(task: Task, now: datetime) -> str | None:
    """Why ``task`` records a past that has not happened yet (it would be silenced until then); None if not."""
    for name in _ahead(task, now):
        value: datetime = getattr(task, name)
        return (
            f"{name} {value.isoformat()} is {_how_far(value - now)} ahead of the clock "
            f"(now is {now.isoformat(timespec='seconds')}); the task would not fire until then"
        )
    return None


def clamp_future(task: Task, now: datetime) -> tuple[Task, str | None]:
    """``task`` with each past-recording time that lies ahead of the clock set to ``now``, and what changed."""
    names = _ahead(task, now)
    if not names:
        return task, None
    said = ", ".join(f"{name} {getattr(task, name).isoformat()}" for name in names)
    return task.model_copy(update=dict.fromkeys(names, now)), f"{said} lay ahead of the clock; set to now"


def _how_far(delta: timedelta) -> str:
    days = delta.total_seconds() / 86400
    return f"{days / 365.25:.0f} years" if days >= 730 else f"{days:.1f} days" if days >= 1 else f"{delta}"
