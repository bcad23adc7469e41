"""``kairos export --to systemd``: the timer fires when kairos fires, as systemd's own tool computes it.

For many expressions (both of cron's day rules, steps, lists, month ends, leap
days) in zones with and without DST (whole-hour, 30-minute and 45-minute
offsets, midnight transitions), ``systemd-analyze calendar --base-time=...
--iterations=N`` on the exported ``OnCalendar=`` lines must give the same fire
instants as ``kairosd.core.schedule``, from an ordinary date and from just before
each spring-forward and fall-back change. Where they differ, the difference
must be exactly a DST case the export warned about (by date), and every
warned date must really differ. ``systemd-analyze verify`` accepts the units.
The tool comes from Debian's systemd package (``.ci/run`` installs it).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sizes_support import full_size
from systemd_support import need, verify

from kairosd.core.models import AgentTarget, CatchUp, InboxTarget, Overlap, ShellTarget, Task, new_task
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires
from kairosd.export import Job, Options, Refused, render
from kairosd.export.common import _transitions
from kairosd.export.systemd import on_calendar, quote

NOW = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
ITERATIONS = 24

EXPRESSIONS = [
    "30 2 * * *",  # fixed time inside Berlin's and New York's spring gap
    "0 2 * * *",
    "59 1 * * *",
    "0 3 * * *",
    "15 1 * * *",  # inside the repeated hour in New York
    "0 0 * * *",  # Santiago's transitions are at midnight
    "*/15 * * * *",  # wildcard: skipped and repeated quarter hours
    "0 * * * *",
    "15 */3 * * *",
    "0 9 * * mon-fri",
    "0,30 8-18 * * 1-5",
    "0 0 13 * 5",  # both day fields restricted: OR (two OnCalendar= lines)
    "0 0 1-7 * 1",
    "5 4 1,15 * sun",
    "0 0 */2 * 1",  # day-of-month starts with '*': AND
    "0 12 * 2 0",
    "0 0 29 2 *",
    "45 23 31 * *",
    "0 0 1 1 *",
    "@weekly",
    "@monthly",
    "0 3 * * 6,0",
    "7 2 * * *",
    "30 2 1-10 3,10 *",
]
ZONES = [
    "UTC",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Pacific/Chatham",  # 45-minute offset
    "America/Santiago",  # midnight transitions
]


def task_for(expr: str, zone: str, **fields) -> Task:
    fields.setdefault("target", AgentTarget(agent="claude"))
    return new_task(prompt="p", created_at=NOW - timedelta(days=1), tz=zone, cron=expr, **fields)


def job_for(task: Task, **fields) -> Job:
    return Job(task, ("/usr/bin/claude", "-p"), stdin=task.prompt, cli="claude", **fields)


def analyze(lines: list[str], base: datetime, iterations: int = ITERATIONS) -> list[list[datetime]]:
    """Each OnCalendar value's next ``iterations`` elapses after ``base``, by systemd-analyze (in UTC)."""
    tool = need("systemd-analyze")
    proc = subprocess.run(
        [tool, "calendar", f"--iterations={iterations}", f"--base-time=@{int(base.timestamp())}", *lines],
        env={**os.environ, "TZ": "UTC", "LC_ALL": "C"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    blocks: list[list[datetime]] = []
    for line in proc.stdout.splitlines():
        if "Normalized form:" in line:
            blocks.append([])
        found = re.search(r"(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", line)
        if found:
            blocks[-1].append(datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC))
    assert len(blocks) == len(lines), proc.stdout
    return blocks


def bases_for(zone: str) -> list[datetime]:
    """An ordinary start, and a start 3 hours before each offset change of the next year.

    Each start is one systemd-analyze call that computes every expression's elapses (forking once per
    elapse for a line with a time zone: most of this module's time). At the small size
    (tests/sizes_support.py) a zone with offset changes starts only before them, and the ordinary start
    is checked in the zones without (UTC, Tokyo, Kolkata); ``.ci/run`` (KAIROS_TEST_SIZE=full) checks
    the ordinary start in every zone too."""
    changes = [instant for instant, _, _ in _transitions(ZoneInfo(zone), NOW, NOW + timedelta(days=366))]
    ordinary = [NOW] if full_size() or not changes else []
    return [*ordinary, *(instant - timedelta(hours=3) for instant in changes)]


def warned_dates(warnings: list[str]) -> set[str]:
    return {m[1] for w in warnings if (m := re.match(r"DST: on (\d{4}-\d\d-\d\d) ", w))}


@pytest.mark.parametrize("zone", ZONES)
def test_timer_fires_when_kairos_fires(zone):
    """Every expression: systemd's elapses equal kairos' fires, except on the DST dates the export names."""
    cases = []  # (expr, lines, warnings, base)
    refused: set[str] = set()
    reasons: set[str] = set()
    for expr in EXPRESSIONS:
        for base in bases_for(zone):
            task = task_for(expr, zone)
            try:
                warnings = render(job_for(task), "systemd", Options(), base).warnings
            except Refused as exc:
                reasons.add(str(exc).split("; ")[-1].split(" (")[0])
                refused.add(expr)
                continue
            cases.append((expr, on_calendar(parse_cron(expr), zone), warnings, base))
    # Only Chatham's gap (02:45 -> 03:45) and Santiago's (00:00 -> 01:00) are not on whole hours after
    # midnight; see the test below.
    assert bool(refused) == (zone in ("Pacific/Chatham", "America/Santiago")), refused
    assert reasons <= {"systemd 252 miscomputes timers with times in such a gap"}
    differing_dates = 0
    # One systemd-analyze call per start time, with every expression's lines.
    for base in bases_for(zone):
        batch = [c for c in cases if c[3] == base]
        flat = [line for c in batch for line in c[1]]
        results = iter(analyze(flat, base))
        for expr, lines, warnings, _ in batch:
            streams = [next(results) for _ in lines]
            systemd = sorted(set().union(*streams))[:ITERATIONS]
            fires = iter_fires(parse_cron(expr), base, ZoneInfo(zone))
            kairos = [f.astimezone(UTC) for f in (next(fires) for _ in range(ITERATIONS))]
            horizon = min(systemd[-1], kairos[-1])
            only_kairos = {f for f in kairos if f <= horizon} - set(systemd)
            only_systemd = {f for f in systemd if f <= horizon} - set(kairos)
            assert not only_systemd, (expr, zone, base, sorted(only_systemd))
            dates = {f.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d") for f in only_kairos}
            # A gap fire at the jump can fall on the next date (Santiago's midnight): allow the day before.
            for date in dates:
                day_before = (datetime.strptime(date, "%Y-%m-%d") - timedelta(days=1)).strftime("%Y-%m-%d")
                assert {date, day_before} & warned_dates(warnings), (expr, zone, sorted(only_kairos), warnings)
            in_window = {
                d for d in warned_dates(warnings) if d <= horizon.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d")
            }
            for date in in_window:  # every warned date inside the compared window really differs
                next_day = (datetime.strptime(date, "%Y-%m-%d") + timedelta(days=1)).strftime("%Y-%m-%d")
                assert {date, next_day} & dates, (expr, zone, date, warnings)
            differing_dates += len(dates)
    if zone in ("UTC", "Asia/Tokyo", "Asia/Kolkata"):
        assert differing_dates == 0
    elif zone not in ("Pacific/Chatham", "America/Santiago"):  # there what reaches a gap is refused
        assert differing_dates > 0  # the DST cases were reached, not skipped over


def test_berlin_spring_forward_is_named_and_measured():
    """The issue's case: 30 2 * * * in Europe/Berlin has no systemd fire on 2027-03-28; kairos fires at 03:00."""
    task = task_for("30 2 * * *", "Europe/Berlin")
    rendered = render(job_for(task), "systemd", Options(), NOW)
    assert any(w.startswith("DST: on 2027-03-28 02:30 does not exist") and "03:00" in w for w in rendered.warnings)
    base = datetime(2027, 3, 27, 12, tzinfo=UTC)
    (systemd,) = analyze(on_calendar(parse_cron("30 2 * * *"), "Europe/Berlin"), base, 2)
    assert systemd == [datetime(2027, 3, 29, 0, 30, tzinfo=UTC), datetime(2027, 3, 30, 0, 30, tzinfo=UTC)]
    fires = iter_fires(parse_cron("30 2 * * *"), base, ZoneInfo("Europe/Berlin"))
    assert next(fires).astimezone(UTC) == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)  # 03:00 CEST


def test_chatham_gap_is_refused_because_systemd_miscomputes_it():
    """Measured with systemd 252: around Chatham's spring gap (02:45 -> 03:45 on 2027-09-26) it skips
    03:45 for a quarter-hourly timer and finds no next elapse at all for ':50'; kairos fires 03:45 and 03:50."""
    tool = need("systemd-analyze")
    base = datetime(2027, 9, 25, 13, 0, tzinfo=UTC)
    (quarterly,) = analyze(on_calendar(parse_cron("*/15 * * * *"), "Pacific/Chatham"), base, 4)
    assert datetime(2027, 9, 25, 14, 0, tzinfo=UTC) not in quarterly  # 03:45 CHADT
    fires = iter_fires(parse_cron("*/15 * * * *"), base, ZoneInfo("Pacific/Chatham"))
    assert datetime(2027, 9, 25, 14, 0, tzinfo=UTC) in [next(fires) for _ in range(4)]
    proc = subprocess.run(
        [tool, "calendar", "--iterations=4", f"--base-time=@{int(base.timestamp())}", "*-*-* *:50:00 Pacific/Chatham"],
        env={**os.environ, "TZ": "UTC"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "Failed to determine next elapse" in proc.stderr
    for expr in ("*/15 * * * *", "50 * * * *"):
        with pytest.raises(Refused, match="2027-09-26 Pacific/Chatham skips from 02:45 to 03:45; systemd 252"):
            render(job_for(task_for(expr, "Pacific/Chatham")), "systemd", Options(), NOW)
    render(job_for(task_for("0 9 * * *", "Pacific/Chatham")), "systemd", Options(), NOW)  # far from the gap


def test_one_shot_is_one_exact_instant():
    at = datetime(2026, 12, 1, 8, 0, 30, 250000, tzinfo=UTC)
    task = new_task(prompt="p", created_at=NOW, tz="Europe/Berlin", at=at, target=AgentTarget(agent="claude"))
    timer = dict(render(job_for(task), "systemd", Options(), NOW).files)[f"kairos-{task.id}.timer"]
    (line,) = [line for line in timer.splitlines() if line.startswith("OnCalendar=")]
    assert line == "OnCalendar=2026-12-01 08:00:30.250000 UTC"
    (elapses,) = analyze([line.removeprefix("OnCalendar=")], NOW, 3)
    assert elapses == [at.replace(microsecond=0)]  # systemd-analyze prints whole seconds; one elapse only


def test_once_cron_is_its_first_match():
    task = new_task(
        prompt="p",
        created_at=NOW,
        tz="Europe/Berlin",
        cron="30 2 * * *",
        recurring=False,
        target=AgentTarget(agent="claude"),
    )
    rendered = render(job_for(task), "systemd", Options(), NOW)
    timer = rendered.files[0][1]
    assert "OnCalendar=2026-11-25 01:30:00 UTC" in timer
    assert "Persistent=true" not in timer
    assert any("catch-up surface" in w for w in rendered.warnings)


def test_catch_up_jitter_and_overlap_map_or_warn():
    task = task_for("0 * * * *", "UTC", jitter="max:10m", overlap=Overlap.QUEUE, catch_up=CatchUp.ALL)
    rendered = render(job_for(task), "systemd", Options(), NOW)
    timer = rendered.files[0][1]
    assert "Persistent=true" in timer
    assert "RandomizedDelaySec=600" in timer
    assert "FixedRandomDelay=true" in timer
    assert any("catch-up all" in w for w in rendered.warnings)
    assert any("overlap queue becomes skip" in w for w in rendered.warnings)
    capped = render(job_for(task_for("*/10 * * * *", "UTC", jitter="max:10m")), "systemd", Options(), NOW)
    assert "RandomizedDelaySec=300" in capped.files[0][1]  # kairos: at most half the period
    claude = render(job_for(task_for("0 9 * * mon-fri", "UTC", jitter="claude")), "systemd", Options(), NOW)
    assert "RandomizedDelaySec=900" in claude.files[0][1]  # 10% of a day, capped at 15 min
    skip = render(job_for(task_for("0 * * * *", "UTC", catch_up=CatchUp.SKIP)), "systemd", Options(), NOW)
    assert "Persistent" not in skip.files[0][1]


def test_claude_jitter_on_a_one_shot_is_refused():
    at = NOW + timedelta(hours=1)
    task = new_task(prompt="p", created_at=NOW, tz="UTC", at=at, jitter="claude", target=AgentTarget(agent="claude"))
    with pytest.raises(Refused, match="early"):
        render(job_for(task), "systemd", Options(), NOW)


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (InboxTarget(), "inbox"),
        ({"kind": "session", "user": True}, "live-session"),
        ({"kind": "webhook", "url": "http://127.0.0.1:9/x"}, "webhook"),
    ],
)
def test_targets_without_a_command_are_refused(target, reason):
    task = task_for("0 9 * * *", "UTC", target=target)
    with pytest.raises(Refused, match=reason):
        render(Job(task, ("true",)), "systemd", Options(), NOW)


def test_units_verify_and_keep_odd_text(tmp_path):
    """Quotes, backslashes, %, $ and newlines survive into a unit systemd-analyze verify accepts."""
    prompt = 'say "hi" \\ 100% $HOME\nsecond line ✓' + " and a longer tail" * 5
    task = new_task(
        prompt=prompt,
        created_at=NOW,
        tz="Europe/Berlin",
        cron="0 0 13 * 5",
        target=ShellTarget(argv=["/bin/cat", "--", "a b", "$x", "50%"], cwd=str(tmp_path)),
        name="odd 100% name",
    )
    job = Job(task, tuple(task.target.argv), stdin=prompt, env=(("KAIROS_PROMPT", prompt),), cwd=str(tmp_path))
    rendered = render(job, "systemd", Options(), NOW)
    units = tmp_path / "units"
    units.mkdir()
    for name, text in rendered.files:
        (units / name).write_text(text)
    service = (units / f"kairos-{task.id}.service").read_text()
    assert 'ExecStart="/bin/cat" "--" "a b" "$$x" "50%%"' in service
    assert 'Environment="KAIROS_PROMPT=say \\"hi\\" \\\\ 100%% $HOME\\nsecond line ✓ and a longer tail' in service
    data = [line.split("=", 1)[1] for line in service.splitlines() if line.startswith("StandardInputData=")]
    assert len(data) > 1  # whole base64 lines, each decoded on its own
    assert b"".join(base64.b64decode(chunk) for chunk in data).decode() == prompt
    timer = (units / f"kairos-{task.id}.timer").read_text()
    assert timer.count("OnCalendar=") == 2  # day of month OR day of week
    verify(units, tmp_path, name="kairos-")


def test_quote_round_trips_through_c_escapes():
    assert quote('a"b\\c\td\x01') == '"a\\"b\\\\c\\td\\x01"'
    assert quote("$A %i") == '"$$A %%i"'
    assert quote("$A", dollar=False) == '"$A"'
