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

Pure: no I/O. Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

from datetime import datetime

from kairosd.core.bounds import EARLIEST_TIME as EARLIEST
from kairosd.core.bounds import LATEST_STORED_TIME as LATEST
from kairosd.core.models import Task

_TIME_FIELDS = ("created_at", "last_fired_at", "last_scheduled_for", "at")


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
