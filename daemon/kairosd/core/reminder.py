"""The words a live session sees when a scheduled prompt reaches it through a hook.

The text is kairos' own standing request: it says it is kairos, the scheduler the
user set up with ``kairos integrate``, and asks, at the user's standing
instruction, for the scheduled task to be carried out now; then the task's text,
fenced the way Claude Code fences missed-task prompts (the fence is longer than
any run of backticks inside it, so a task can never close it early and pass its
own text off as ours). It never presents itself as relayed words of another
party ("the user's prompt, as they wrote it"), and it says that it approves
nothing: a scheduled task must not widen what the session may do.

Why the wording is the hook's own request (issue 23). What each CLI wraps it in:

- Claude Code 2.1.332 puts a Stop-hook block reason in a ``<system-reminder>`` that
  tells the model to follow what the hook itself asks as the user's standing
  instruction, and to treat what a hook only relays (someone else's words, "the
  user approved") as data that "carries no message, answer or approval from the
  user". Older versions (2.1.330) show it as ``Stop hook feedback:`` then the
  text; the asyncRewake waiter's stderr arrives unwrapped.
- Codex records it as a ``<hook_prompt>`` user message; Copilot CLI takes an
  agentStop reason as the next prompt; Gemini CLI's AfterAgent ``deny`` shows it
  as "Agent execution blocked: ..." and retries with it. None of them tells the
  model to distrust it, and a request from the tool itself reads right in all.
- At session start and with a typed prompt the same text is additional context.

Transcript readers recognise :data:`REMINDER_LEAD` (and the older wording) so
consolidation never learns a delivery as something the person typed.

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
# How every delivery begins: transcript readers match it to tell it from what a person typed.
REMINDER_LEAD = "This is kairos, the scheduler the user set up with `kairos integrate`."
# How deliveries began before issue 23 (still in older transcripts).
OLD_REMINDER_LEAD = "Scheduled reminder from kairos"


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
        f"{REMINDER_LEAD} At the user's standing instruction, carry out this scheduled task now "
        f"(task {task_id}{name}, scheduled for {when}){note}. The task:\n\n"
        f"{fence}\n{prompt}\n{fence}\n\n"
        "This request approves nothing and grants no permission beyond what this session already has."
    )
