"""Deterministic jitter: how far a planned fire moves from its scheduled time.

The offset is seeded from the task id (``int(id[:8], 16) / 2**32``, as Claude
Code does), so it is the same on every restart and every machine. Jitter only
moves the *planned* time; the next scheduled time is always computed from the
nominal schedule, so it never drifts.

Policies:

* ``none`` (default): fire on time.
* ``claude``: Claude Code's numbers. Recurring tasks fire up to 10% of their
  period late, at most 15 minutes; one-shots scheduled at :00 or :30 fire up to
  90 s early, but never before the task was created.
* ``max:DURATION``: recurring and one-shot tasks fire up to DURATION late; for
  recurring tasks never more than half the period, so runs cannot overlap.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from kairosd.core.errors import InvalidTimeError
from kairosd.core.schedule.durations import format_duration, parse_duration

CLAUDE_RECURRING_FRACTION = 0.1
CLAUDE_RECURRING_CAP = timedelta(minutes=15)
CLAUDE_ONESHOT_LEAD = timedelta(seconds=90)
CLAUDE_ONESHOT_MINUTE_MOD = 30
MAX_JITTER = timedelta(days=1)
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class JitterPolicy:
    kind: str  # "none" | "claude" | "max"
    cap: timedelta = timedelta(0)

    @property
    def spec(self) -> str:
        if self.kind == "max":
            return f"max:{format_duration(self.cap.total_seconds())}"
        return self.kind

    @property
    def max_delay(self) -> timedelta:
        """The most any fire can be moved late under this policy."""
        return {"none": timedelta(0), "claude": CLAUDE_RECURRING_CAP}.get(self.kind, self.cap)


@lru_cache(maxsize=256)
def parse_jitter(text: str) -> JitterPolicy:
    """The policy ``text`` names (cached: a catch-up pass asks once per task, 10,000 times for the same
    few spellings; the policy is frozen)."""
    value = text.strip().lower()
    if value in ("", "none", "off", "0"):
        return JitterPolicy("none")
    if value == "claude":
        return JitterPolicy("claude")
    if value.startswith("max:"):
        cap = timedelta(seconds=parse_duration(value[4:]))
        if cap > MAX_JITTER:
            raise InvalidTimeError(f"jitter {text!r} is longer than the 1d limit")
        return JitterPolicy("max", cap)
    raise InvalidTimeError(f"unknown jitter {text!r}; use none, claude or max:DURATION (e.g. max:90s)")


def capped_jitter(spec: str, gaps: list[timedelta]) -> timedelta | None:
    """The most a ``max:DUR`` jitter can really move a recurring task whose fires are ``gaps`` apart, when
    that is less than DUR (half the shortest gap, see ``planned_time``); None when DUR holds as given."""
    try:
        policy = parse_jitter(spec)
    except InvalidTimeError:
        return None
    if policy.kind != "max" or not gaps:
        return None
    half = min(gaps) / 2
    return half if half < policy.cap else None


def capped_jitter_note(spec: str, gaps: list[timedelta]) -> str | None:
    """What ``kairos add`` and ``show`` say when ``capped_jitter`` cuts the asked jitter."""
    cap = capped_jitter(spec, gaps)
    if cap is None:
        return None
    return (
        f"jitter {spec} is capped at {format_duration(cap.total_seconds())} for this task: at most half the "
        f"{format_duration(min(gaps).total_seconds())} between its fires, so runs cannot overlap"
    )


def jitter_fraction(task_id: str) -> float:
    """A stable value in [0, 1) from the task id; 0 for ids that are not hex."""
    # int() alone would also take "-1234567", "+1234567" or "1_234567" (a negative
    # fraction would move fires early), so require plain hex digits.
    head = task_id[:8]
    if not head or any(c not in _HEX_DIGITS for c in head):
        return 0.0
    return int(head, 16) / 2**32


def planned_time(
    policy: JitterPolicy,
    task_id: str,
    scheduled: datetime,
    *,
    recurring: bool,
    following: datetime | None,
    created_at: datetime,
    zone: ZoneInfo,
) -> datetime:
    """When a fire scheduled for ``scheduled`` is planned to happen under ``policy``.

    ``following`` is the next scheduled time after ``scheduled`` (the period of a
    recurring task); None when there is none.
    """
    if policy.kind == "none":
        return scheduled
    frac = jitter_fraction(task_id)
    if recurring:
        if following is None:
            return scheduled
        # In UTC: within one zone, aware arithmetic is wall-clock arithmetic and drops the fold, so in
        # the repeated hour of a fall-back a period came out negative and a delay an hour early.
        period = following.astimezone(UTC) - scheduled.astimezone(UTC)
        return _shifted(scheduled, recurring_delay(policy, frac, period))
    if policy.kind == "claude":
        local = scheduled.astimezone(zone)
        if local.minute % CLAUDE_ONESHOT_MINUTE_MOD == 0 and local.second == 0:
            return max(_shifted(scheduled, -_scaled_ms(CLAUDE_ONESHOT_LEAD, frac)), created_at)
        return scheduled
    return _shifted(scheduled, _scaled_ms(policy.cap, frac))


def recurring_delay(policy: JitterPolicy, frac: float, period: timedelta) -> timedelta:
    """How late ``policy`` moves a recurring fire whose next fire is ``period`` later, for a task whose
    :func:`jitter_fraction` is ``frac`` (``planned_time``'s own rule; a timeline applies it to a week of
    fires without a datetime each)."""
    if policy.kind == "none":
        return timedelta(0)
    if policy.kind == "claude":
        return min(_scaled_ms(period, frac * CLAUDE_RECURRING_FRACTION), CLAUDE_RECURRING_CAP)
    return _scaled_ms(min(policy.cap, period / 2), frac)


def _shifted(at: datetime, delta: timedelta) -> datetime:
    """``at + delta`` in real time (through UTC), in ``at``'s zone."""
    return (at.astimezone(UTC) + delta).astimezone(at.tzinfo)


def _scaled_ms(delta: timedelta, factor: float) -> timedelta:
    """``delta * factor`` truncated to whole milliseconds. Computed in float milliseconds:
    ``timedelta * float`` rounds to the microsecond, which can round a fraction just
    under 1 up to the full bound (every minute * 0.09999... gave exactly 6 s)."""
    return timedelta(milliseconds=math.floor(delta / timedelta(milliseconds=1) * factor))
