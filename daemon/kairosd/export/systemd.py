"""A task as a systemd user ``.timer`` and ``.service`` pair.

The cron expression becomes ``OnCalendar=`` lines in the task's zone (systemd
252 takes an IANA zone after the time). cron's day rule: when either day field
starts with ``*`` both must match, which is systemd's own AND of weekday and
date; when both are restricted a day matches either, so that is two lines,
one per field. ``AccuracySec=1s``: systemd's default of a minute would move
fires by up to a minute. A one-shot is one ``OnCalendar=`` line at its exact
UTC instant.

systemd follows wall time through DST changes like Debian cron, with two
differences (measured with ``systemd-analyze`` 252): a fixed-time job whose
time is skipped by a spring-forward change does not fire that day (kairos
fires it right after the jump), and a wildcard job fires only once in a
repeated hour (kairos fires both passes). Each such date within two years is
named in a warning.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

from kairosd.core.models import CatchUp, Overlap, Task
from kairosd.core.schedule.cron import CronExpr
from kairosd.core.schedule.durations import format_duration
from kairosd.core.schedule.fires import iter_fires
from kairosd.core.schedule.jitter import CLAUDE_RECURRING_CAP, CLAUDE_RECURRING_FRACTION, parse_jitter
from kairosd.export.common import (
    Job,
    Options,
    Refused,
    Rendered,
    common_warnings,
    cron_of,
    describe,
    dst_cases,
    first_one_shot_fire,
    refuse_target,
    runs,
    split_env,
    steady_step,
    unit_name,
)

_WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
SECRETS_FILE = "%h/.config/kairos/export.env"
# How many fires are looked at to find the shortest period (for jitter bounds).
_PERIOD_SAMPLE = 400


def render(job: Job, options: Options, now: datetime) -> Rendered:
    task = job.task
    refuse_target(task, "systemd")
    out = Rendered(task.id)
    out.warnings += common_warnings(task)
    timer = _timer(task, now, out.warnings)
    service = _service(job, options, out.warnings)
    out.files = [(f"{unit_name(task)}.timer", timer), (f"{unit_name(task)}.service", service)]
    return out


def on_calendar(expr: CronExpr, tz: str) -> list[str]:
    """The ``OnCalendar=`` values that fire exactly when ``expr`` matches (DST aside), in zone ``tz``."""
    time = f"{_values(expr.hours, 0, 23)}:{_values(expr.minutes, 0, 59)}:00"
    months = _values(expr.months, 1, 12)
    all_doms = len(expr.doms) == 31
    all_dows = len(expr.dows) == 7
    doms = "*" if all_doms else _values(expr.doms, 1, 31)
    if expr.day_and or all_doms or all_dows:
        # AND (or one field matches every day, where AND and OR agree).
        weekday = "" if all_dows else ",".join(_WEEKDAYS[d] for d in expr.dows) + " "
        return [f"{weekday}*-{months}-{doms} {time} {tz}"]
    weekdays = ",".join(_WEEKDAYS[d] for d in expr.dows)
    return [f"{weekdays} *-{months}-* {time} {tz}", f"*-{months}-{doms} {time} {tz}"]


def _values(values: tuple[int, ...], low: int, high: int) -> str:
    """A set of values in systemd's syntax: ``*``, ``A/STEP``, or a list of values and ``A..B`` ranges."""
    if len(values) == high - low + 1:
        return "*"
    step = steady_step(values, high)
    if step is not None:
        return f"{values[0]:02d}/{step}"
    return ",".join(
        f"{a:02d}..{b:02d}" if b - a >= 2 else ",".join(f"{v:02d}" for v in range(a, b + 1)) for a, b in runs(values)
    )


def _timer(task: Task, now: datetime, warnings: list[str]) -> str:
    lines = ["[Unit]", f"Description=kairos task {task.id}: {_escape_specifiers(describe(task))}", "", "[Timer]"]
    if task.cron is not None and task.recurring:
        expr = cron_of(task)
        lines += [f"OnCalendar={value}" for value in on_calendar(expr, task.tz)]
        warnings += _dst_warnings(expr, task, now)
    else:
        when = first_one_shot_fire(task, now).astimezone(UTC)
        stamp = when.strftime("%Y-%m-%d %H:%M:%S") + (f".{when.microsecond:06d}" if when.microsecond else "")
        lines.append(f"OnCalendar={stamp} UTC")
    lines.append("AccuracySec=1s")
    lines += _catch_up(task, warnings)
    lines += _jitter(task, now, warnings)
    lines += [f"Unit={unit_name(task)}.service", "", "[Install]", "WantedBy=timers.target", ""]
    return "\n".join(lines)


def _catch_up(task: Task, warnings: list[str]) -> list[str]:
    policy = task.catch_up
    if policy is CatchUp.SKIP:
        return []
    if policy is CatchUp.SURFACE:
        warnings.append("catch-up surface: a missed fire is not run, but systemd lists it nowhere (no kairos missed)")
        return []
    if policy is CatchUp.ALL:
        warnings.append("catch-up all becomes Persistent=true: systemd runs one catch-up for any number of misses")
    elif task.recurring:
        warnings.append("catch-up once: systemd catches up a miss of any age; kairos only within 7 days")
    return ["Persistent=true"]


def _jitter(task: Task, now: datetime, warnings: list[str]) -> list[str]:
    policy = parse_jitter(task.jitter)
    if policy.kind == "none":
        return []
    if not task.recurring:
        if policy.kind == "claude":
            raise Refused(f"task {task.id}: jitter 'claude' fires a one-shot up to 90 s early; systemd only delays")
        bound = policy.cap
    else:
        gaps = _periods(task, now)
        shortest = min(gaps)
        if policy.kind == "claude":
            bound = min(shortest * CLAUDE_RECURRING_FRACTION, CLAUDE_RECURRING_CAP)
            varies = bound < CLAUDE_RECURRING_CAP and len(set(gaps)) > 1
        else:
            bound = min(policy.cap, shortest / 2)
            varies = bound < policy.cap and len(set(gaps)) > 1
        if varies:
            warnings.append(
                f"jitter {policy.spec}: kairos scales the delay with the gap to the next fire; "
                f"systemd uses one bound, the shortest gap's ({format_duration(bound.total_seconds())})"
            )
    seconds = max(1, int(bound.total_seconds()))
    warnings.append(
        f"jitter {policy.spec}: the delay is fixed per timer as in kairos, up to {format_duration(seconds)}, "
        "but systemd draws it from the machine id and unit name, so its value differs from kairos'"
    )
    return [f"RandomizedDelaySec={seconds}", "FixedRandomDelay=true"]


def _periods(task: Task, now: datetime) -> list[timedelta]:
    fires = iter_fires(cron_of(task), now, task.zone)
    previous = next(fires, None)
    gaps: list[timedelta] = []
    for fire in fires:
        if previous is None or len(gaps) >= _PERIOD_SAMPLE:
            break
        gaps.append(fire - previous)
        previous = fire
    if not gaps:
        raise Refused(f"task {task.id}: its schedule has too few fires to bound its jitter")
    return gaps


def _dst_warnings(expr: CronExpr, task: Task, now: datetime) -> list[str]:
    warnings = []
    for case in dst_cases(expr, task.zone, now):
        times = ", ".join(case.times)
        if not case.regular:
            # Measured with systemd 252 (glibc's mktime decides where a skipped time goes): around such
            # a gap it skips fires or finds no next elapse at all ("Resource deadlock avoided").
            raise Refused(
                f"task {task.id}: on {case.date} {task.tz} skips from {case.begins} to {case.jump_to}; "
                f"systemd 252 miscomputes timers with times in such a gap ({times})"
            )
        if case.kind == "gap" and expr.fixed_time:
            warnings.append(
                f"DST: on {case.date} {times} does not exist in {task.tz}; kairos fires at {case.jump_to}, "
                "systemd does not fire that day"
            )
        elif case.kind == "fold" and not expr.fixed_time:
            warnings.append(
                f"DST: on {case.date} {times} happens twice in {task.tz}; kairos fires both times, "
                "systemd only the first"
            )
    return warnings


def _service(job: Job, options: Options, warnings: list[str]) -> str:
    task = job.task
    lines = ["[Unit]", f"Description=kairos task {task.id}: {_escape_specifiers(describe(task))}", ""]
    lines += ["[Service]", "Type=oneshot"]
    if job.cwd:
        if any(ord(ch) < 32 for ch in job.cwd) or job.cwd != job.cwd.strip():
            raise Refused(f"task {task.id}: its working directory {job.cwd!r} cannot be written into a unit")
        lines.append(f"WorkingDirectory={_escape_specifiers(job.cwd)}")
    # On this machine the agent CLI finds its own login; API keys are asked for only where kairosd has
    # them in its environment (the Job says so) or the user names them.
    plain, secret = split_env(job, options)
    for name, value in plain:
        lines.append(f"Environment={quote(f'{name}={value}', dollar=False)}")
    if secret:
        lines.append(f"EnvironmentFile=-{SECRETS_FILE}")
        warnings.append(f"{', '.join(secret)}: not written into the unit; the service reads {SECRETS_FILE}")
    if job.stdin is not None:
        lines.append("StandardInput=data")
        data = job.stdin.encode("utf-8")
        # Each line is decoded on its own and appended: chunks of 57 bytes are whole base64 lines.
        lines += [f"StandardInputData={base64.b64encode(data[i : i + 57]).decode()}" for i in range(0, len(data), 57)]
    lines.append("ExecStart=" + " ".join(quote(arg) for arg in job.argv))
    if job.timeout_s is not None:
        lines.append(f"TimeoutStartSec={_seconds(job.timeout_s)}")
    else:
        lines.append("TimeoutStartSec=infinity")
    if task.overlap is Overlap.QUEUE:
        warnings.append("overlap queue becomes skip: systemd does not start a unit that is still running")
    lines.append("")
    return "\n".join(lines)


def _seconds(value: float) -> str:
    if value == int(value):
        return str(int(value))
    return f"{round(value * 1000)}ms"


def quote(text: str, *, dollar: bool = True) -> str:
    """One word in systemd's unit syntax, read back exactly: C escapes inside double quotes,
    ``%`` doubled (specifiers) and, in command lines, ``$`` doubled (variable expansion)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        elif ch == "%":
            out.append("%%")
        elif ch == "$" and dollar:
            out.append("$$")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _escape_specifiers(text: str) -> str:
    return text.replace("%", "%%")
