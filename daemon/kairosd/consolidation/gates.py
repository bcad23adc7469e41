"""The gates a consolidation request passes, in order, and why one stops it.

    1  enabled      [consolidation] enabled, and KAIROS_CONSOLIDATE is not 0 (kairosd's or the caller's)
    2  not_spawned  the session was not started by kairos itself (KAIROS_SPAWNED=1 on the caller, or a
                    session that is one of kairos' own background jobs): kairos never consolidates
                    its own runs, so a consolidation cannot trigger another
    3  transcript   the transcript can be read (it exists, is a regular file, is read in time)
       user_turns   at least ``min_user_turns`` human turns in it
       project      a project folder: the request's cwd or the transcript's, and it exists
    4  interval     at least ``min_interval_minutes`` since this project's last run started
    5  lock         no run for this project is going on; a request that comes while one is, is
                    coalesced into it (see :mod:`.service`)

Each check returns None (pass) or the reason it stops the request. The order is the issue's; the
cheap checks come first, the transcript is read only when 1 and 2 passed.

Pure. Must not import anything that does I/O.
"""

from __future__ import annotations

from datetime import datetime, timedelta

OFF_VALUES = ("0", "false", "no", "off")
ENV_SWITCH = "KAIROS_CONSOLIDATE"
SPAWNED_MARKER = "KAIROS_SPAWNED"


def switched_off(value: str | None) -> bool:
    return value is not None and value.strip().lower() in OFF_VALUES


def check_enabled(configured: bool, daemon_off: str | None, caller_value: str | None) -> str | None:
    """Why consolidation is off: the config, kairosd's own environment (``daemon_off``, as
    :attr:`kairosd.config.ConsolidationConfig.switched_off` says it) or the caller's; None: it is on."""
    if not configured:
        return "consolidation is disabled in the config ([consolidation] enabled = false)"
    if daemon_off:
        return daemon_off
    if switched_off(caller_value):
        return f"{ENV_SWITCH}={caller_value} is set in the session's environment"
    return None


def check_not_spawned(spawned: bool, own_task: str | None) -> str | None:
    if spawned:
        return f"the session was started by kairos ({SPAWNED_MARKER}=1 in its environment)"
    if own_task is not None:
        return f"the session is kairos' own background job {own_task}"
    return None


def check_user_turns(count: int, minimum: int, problem: str | None = None) -> str | None:
    if problem is not None:
        return problem
    if count < minimum:
        return f"{count} human turn{'s' if count != 1 else ''} in the transcript; at least {minimum} needed"
    return None


def check_interval(last_start: datetime | None, now: datetime, minutes: float) -> str | None:
    if last_start is None or minutes <= 0:
        return None
    due = last_start + timedelta(minutes=minutes)
    if now < due:
        left = (due - now).total_seconds()
        return (
            f"this project was consolidated {_ago((now - last_start).total_seconds())} ago; the minimum "
            f"interval is {minutes:g} min (next possible in {_ago(left)})"
        )
    return None


def _ago(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
