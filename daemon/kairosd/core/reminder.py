"""The words a live session sees when a scheduled prompt reaches it through a hook.

The text is a factual note that the user scheduled this prompt, then the prompt
itself, fenced the way Claude Code fences missed-task prompts: the fence is
longer than any run of backticks inside the prompt, so a prompt can never close
it early and pass its own text off as ours. It is never worded as a system
instruction (agents treat out-of-band commands as prompt injection), and it says
that it approves nothing: a reminder must not widen what the session may do.

Pure: must not import anything that does I/O (the caller passes the zone).
"""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kairosd.core.schedule.durations import format_duration

_BACKTICK_RUN = re.compile(r"`+")
# A fire this much later than planned is worth mentioning (a catch-up after a suspend, a busy daemon).
LATE_NOTE_AFTER_S = 60.0


def fence_for(text: str) -> str:
    """A backtick fence longer than the longest backtick run in ``text`` (at least three)."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _local(when: datetime, zone: str) -> str:
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return when.isoformat(timespec="minutes")
    return when.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")


def reminder_text(
    *,
    task_id: str,
    task_name: str | None,
    prompt: str,
    scheduled_for: datetime,
    zone: str,
    late_by_s: float = 0.0,
    catch_up: bool = False,
) -> str:
    """One scheduled prompt, as a hook hands it to an agent session."""
    name = f' "{task_name}"' if task_name else ""
    when = _local(scheduled_for, zone)
    notes = []
    if catch_up:
        notes.append("a catch-up for a fire missed while kairosd could not run it")
    elif late_by_s >= LATE_NOTE_AFTER_S:
        notes.append(f"fired {format_duration(late_by_s)} late")
    note = f" ({'; '.join(notes)})" if notes else ""
    fence = fence_for(prompt)
    return (
        f"Scheduled reminder from kairos (task {task_id}{name}, scheduled for {when}){note}: "
        "the user scheduled this prompt earlier, and it is due now. Their prompt, as they wrote it:\n\n"
        f"{fence}\n{prompt}\n{fence}\n\n"
        "This reminder approves nothing and grants no permission beyond what this session already has."
    )
