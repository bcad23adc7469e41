"""What every export engine shares: the job to render, refusals, and the schedule facts engines differ on.

A :class:`Job` is a task plus the exact command kairos would run for it (the
agent adapter's headless argv, or a shell target's argv), with its stdin,
environment, working directory and timeout. Each engine module turns a job
into files and warnings, or raises :class:`Refused` naming what it cannot
express. Warnings name every difference between the exported job and what
kairos itself would do; nothing changes silently.

Pure: no files, no processes, no clock (``now`` is an argument). Must not
import the store, the server, the registry or the config module.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from kairosd.core.errors import UsageError
from kairosd.core.models import Task
from kairosd.core.schedule.cron import CronExpr, parse_cron

ENGINES = ("systemd", "kubernetes", "github-actions")
# How far ahead DST transitions are looked for, to name the dates where an engine and kairos differ.
DST_HORIZON = timedelta(days=366 * 2)
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
# The variables each built-in CLI reads its API key from, for engines that hold secrets.
API_KEY_ENV = {
    "claude": ("ANTHROPIC_API_KEY",),
    "codex": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "copilot": ("COPILOT_GITHUB_TOKEN",),
    "opencode": ("ANTHROPIC_API_KEY",),
}


class Refused(UsageError):
    """The task cannot be expressed exactly on the engine (and no named conversion exists)."""


@dataclass(frozen=True)
class Job:
    """One task and the command that runs it, as kairos would run it at a fire."""

    task: Task
    argv: tuple[str, ...]
    stdin: str | None = None  # text on the process' stdin (the prompt, for most agent CLIs)
    env: tuple[tuple[str, str], ...] = ()  # added to the environment (the config's, kairos' markers)
    cwd: str | None = None
    timeout_s: float | None = None
    cli: str | None = None  # the agent CLI that runs (None: a shell target)
    secret_env: tuple[str, ...] = ()  # variables whose values the engine must supply from its secrets


@dataclass(frozen=True)
class Options:
    """What the user chose for the export (engine-specific ones are ignored elsewhere)."""

    image: str | None = None  # kubernetes: the container image holding the agent CLI
    secret_name: str = "kairos-agent"  # noqa: S105 - kubernetes: the name of the Secret holding the API keys
    secret_env: tuple[str, ...] = ()  # extra variables to take from the engine's secrets


@dataclass
class Rendered:
    task_id: str
    files: list[tuple[str, str]] = field(default_factory=list)  # (file name, text)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "task_id": self.task_id,
            "files": [{"name": name, "text": text} for name, text in self.files],
            "warnings": list(self.warnings),
        }


def unit_name(task: Task) -> str:
    return f"kairos-{task.id}"


def describe(task: Task) -> str:
    """A one-line title: the task's name, else the start of its prompt."""
    text = (task.name or task.prompt).strip().splitlines()
    first = text[0] if text else task.id
    return first if len(first) <= 60 else first[:59] + "…"


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def split_env(job: Job, options: Options) -> tuple[list[tuple[str, str]], list[str]]:
    """The job's environment as (plain variables, names to take from secrets), secrets never inlined."""
    secret = list(dict.fromkeys([*job.secret_env, *options.secret_env]))
    plain: list[tuple[str, str]] = []
    for name, value in job.env:
        if is_secret_name(name):
            if name not in secret:
                secret.append(name)
        elif name not in secret:
            plain.append((name, value))
    return plain, secret


def cron_of(task: Task) -> CronExpr:
    assert task.cron is not None
    return parse_cron(task.cron)


def first_one_shot_fire(task: Task, now: datetime) -> datetime:
    """The one instant a one-shot task fires at (``at``, or the first match of its cron)."""
    from kairosd.core.schedule.fires import next_fire

    if task.at is not None:
        when = task.at
    else:
        after = max(task.created_at, task.last_scheduled_for or task.created_at)
        found = next_fire(cron_of(task), after, task.zone)
        if found is None:
            raise Refused(f"task {task.id}: its cron expression has no next fire")
        when = found.astimezone(UTC)
    if when <= now:
        raise Refused(f"task {task.id}: its one fire time {when.isoformat()} has passed")
    return when


def steady_step(values: tuple[int, ...], high: int) -> int | None:
    """The step of three or more evenly spaced values that run out at ``high`` (``*/N`` or ``A-high/N``
    in cron), else None. ``values`` are sorted, as a parsed cron field's are."""
    if len(values) <= 2:
        return None
    step = values[1] - values[0]
    if all(b - a == step for a, b in itertools.pairwise(values)) and values[-1] + step > high:
        return step
    return None


def runs(values: tuple[int, ...]) -> list[tuple[int, int]]:
    """The runs of consecutive values, each as (first, last): ``(1, 2, 3, 7)`` is ``[(1, 3), (7, 7)]``."""
    found: list[tuple[int, int]] = []
    start = prev = values[0]
    for value in values[1:]:
        if value != prev + 1:
            found.append((start, prev))
            start = value
        prev = value
    found.append((start, prev))
    return found


def min_gap_minutes(expr: CronExpr) -> int:
    """The shortest time between two fires, in minutes (within the day; DST aside)."""
    minutes = expr.minutes
    gaps = [b - a for a, b in itertools.pairwise(minutes)]
    hours = set(expr.hours)
    wrap = 60 - minutes[-1] + minutes[0]
    if any((h + 1) % 24 in hours for h in hours):  # consecutive hours: the last minute runs into the next hour's first
        gaps.append(wrap)
    elif len(minutes) == 1:
        gaps.append(60 * _min_hour_gap(expr.hours))
    return min(gaps) if gaps else 60 * _min_hour_gap(expr.hours)


def _min_hour_gap(hours: tuple[int, ...]) -> int:
    if len(hours) == 1:
        return 24
    gaps = [b - a for a, b in itertools.pairwise(hours)]
    gaps.append(24 - hours[-1] + hours[0])
    return min(gaps)


@dataclass(frozen=True)
class DstCase:
    """A DST transition where the task's wall times are skipped (``gap``) or repeated (``fold``)."""

    kind: str  # "gap" | "fold"
    date: str  # the local date, YYYY-MM-DD
    times: tuple[str, ...]  # the task's wall times (HH:MM) inside the skipped or repeated span
    jump_to: str  # the first wall time after a gap (HH:MM), or where a fold starts again
    begins: str  # where the skipped or repeated span begins (HH:MM)
    # A gap that starts on a whole hour after midnight and ends on a whole hour or within its first
    # hour (02:00 -> 03:00 in Europe/Berlin, 02:00 -> 02:30 in Australia/Lord_Howe); not Chatham's
    # 02:45 -> 03:45 nor Santiago's 00:00 -> 01:00.
    regular: bool = True


def dst_cases(expr: CronExpr, zone: ZoneInfo, now: datetime, horizon: timedelta = DST_HORIZON) -> list[DstCase]:
    """Every transition of ``zone`` within ``horizon`` after ``now`` at which ``expr`` has a wall time
    that does not exist or exists twice. Engines handle those times by their own rules."""
    cases: list[DstCase] = []
    for instant, before, after in _transitions(zone, now, now + horizon):
        start = (instant + min(before, after)).replace(tzinfo=None)
        span = abs(after - before)
        times = [t.strftime("%H:%M") for t in _minutes(start, start + span) if _matches(expr, t)]
        if times:
            kind = "gap" if after > before else "fold"
            jump = (instant + after).replace(tzinfo=None) if kind == "gap" else start
            regular = kind == "fold" or (
                start.minute == 0 and start.hour >= 1 and (jump.minute == 0 or jump.hour == start.hour)
            )
            date = start.strftime("%Y-%m-%d")
            cases.append(DstCase(kind, date, tuple(times), jump.strftime("%H:%M"), start.strftime("%H:%M"), regular))
    return cases


def _minutes(start: datetime, end: datetime) -> list[datetime]:
    return [start + timedelta(minutes=i) for i in range(int((end - start) / timedelta(minutes=1)))]


def _matches(expr: CronExpr, wall: datetime) -> bool:
    return (
        wall.minute in expr.minutes
        and wall.hour in expr.hours
        and wall.month in expr.months
        and wall.day in expr.days_in(wall.year, wall.month)
    )


def _transitions(zone: ZoneInfo, start: datetime, end: datetime) -> list[tuple[datetime, timedelta, timedelta]]:
    """(UTC instant, offset before, offset after) of each offset change of ``zone`` in [start, end)."""
    step = timedelta(hours=6)
    found: list[tuple[datetime, timedelta, timedelta]] = []
    cur = start.astimezone(UTC)
    offset = _offset(zone, cur)
    while cur < end:
        nxt = cur + step
        new = _offset(zone, nxt)
        if new != offset:
            lo, hi = cur, nxt  # offset(lo) == offset, offset(hi) != offset
            while hi - lo > timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if _offset(zone, mid) == offset:
                    lo = mid
                else:
                    hi = mid
            instant = hi.replace(microsecond=0)
            found.append((instant, offset, new))
            offset = new
        cur = nxt
    return found


def _offset(zone: ZoneInfo, instant: datetime) -> timedelta:
    value = instant.astimezone(zone).utcoffset()
    assert value is not None
    return value


def common_warnings(task: Task) -> list[str]:
    """Differences every engine shares: a paused task, an expiring task."""
    notes = []
    if task.paused:
        notes.append("the task is paused in kairos; the exported job is active")
    if task.expires:
        notes.append(f"the task expires in kairos after {task.expires_after_days} days; the exported job does not")
    return notes


def refuse_target(task: Task, engine: str) -> None:
    """Refuse the targets no engine can run: they deliver into kairos itself or need its secrets."""
    kind = task.target.kind
    if kind == "inbox":
        raise Refused(f"task {task.id}: an inbox target delivers into kairos' own inbox; no {engine} job can")
    if kind == "session":
        raise Refused(f"task {task.id}: a live-session target needs kairos' hooks in a running agent session")
    if kind == "webhook":
        raise Refused(
            f"task {task.id}: a webhook target is signed with the key in kairos' config; "
            f"{engine} would have to hold that key (export refuses rather than post unsigned)"
        )
    if kind == "shell" and engine != "systemd":
        raise Refused(
            f"task {task.id}: a shell target runs a command of this machine; only a systemd export runs it "
            f"here ({engine} runs an agent CLI elsewhere)"
        )


def yaml_text(document: dict[str, Any]) -> str:
    """A manifest or workflow as YAML, keys in the order written. PyYAML quotes every string that
    YAML would read as something else (``on``, ``yes``, ``3``), so it reads back exactly."""
    import yaml  # only when a Kubernetes or GitHub export is rendered

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)
