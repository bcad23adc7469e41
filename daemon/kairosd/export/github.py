"""A task as a GitHub Actions workflow with ``on.schedule``.

The schedule is the task's cron in standard form with an IANA ``timezone``
key (GitHub's schedule takes one; without it UTC). The job checks out the
repository, installs the agent CLI from npm, and runs the agent's argv with the
prompt piped to its stdin from an environment variable; API keys come from
the repository's secrets. ``workflow_dispatch`` is added so the job can also
be started by hand (as ``kairos run``).

What GitHub cannot do is refused: one-shots, jitter, intervals under 5
minutes, custom agent CLIs (no known way to install them on a runner), shell
targets. What it does differently is converted with a warning: it delays
scheduled runs at busy times and can drop them, it has no catch-up, its
``concurrency`` lets one run wait (never skip, never queue ten), the working
directory is the checkout.

GitHub evaluates ``${{ ... }}`` in ``run`` and ``env`` values; the task's own
text is written with every ``${{`` as ``${{ '${{' }}``, which evaluates back to
``${{``.

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import posixpath
import shlex
from datetime import datetime
from typing import Any

from kairosd.core.models import CatchUp, Overlap
from kairosd.export.common import (
    Job,
    Options,
    Refused,
    Rendered,
    common_warnings,
    cron_of,
    describe,
    dst_cases,
    min_gap_minutes,
    refuse_target,
    split_env,
    unit_name,
    yaml_text,
)
from kairosd.export.crontext import standard_cron

MIN_INTERVAL_MINUTES = 5
NPM_PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "copilot": "@github/copilot",
    "opencode": "opencode-ai",
}
_PROMPT_VAR = "KAIROS_PROMPT"


def render(job: Job, options: Options, now: datetime) -> Rendered:
    task = job.task
    refuse_target(task, "github-actions")
    if task.cron is None or not task.recurring:
        raise Refused(f"task {task.id}: a one-shot (--in, --at, --once) cannot be a scheduled workflow, which repeats")
    if task.jitter != "none":
        raise Refused(f"task {task.id}: jitter {task.jitter} has no GitHub Actions equivalent (remove it to export)")
    if job.cli not in NPM_PACKAGES:
        raise Refused(f"task {task.id}: kairos does not know how to install the agent {job.cli!r} on a runner")
    expr = cron_of(task)
    gap = min_gap_minutes(expr)
    if gap < MIN_INTERVAL_MINUTES:
        raise Refused(
            f"task {task.id}: {task.cron!r} fires {gap} minute(s) apart; GitHub runs a schedule at most every "
            f"{MIN_INTERVAL_MINUTES} minutes"
        )
    out = Rendered(task.id)
    out.warnings += common_warnings(task)
    out.warnings.append("GitHub starts scheduled runs late at busy times and may drop some")
    if task.catch_up is not CatchUp.SKIP:
        out.warnings.append(f"catch-up {task.catch_up.value}: GitHub does not run fires it missed")
    if task.overlap is Overlap.SKIP:
        out.warnings.append("overlap skip: a fire while a run goes on waits for it (at most one waits) instead")
    else:
        out.warnings.append("overlap queue: at most one fire waits for a running one (kairos queues up to 10)")
    if job.cwd:
        out.warnings.append(f"the agent runs in the repository checkout, not in {job.cwd}")
    for case in dst_cases(expr, task.zone, now):
        what = "does not exist" if case.kind == "gap" else "happens twice"
        out.warnings.append(
            f"DST: on {case.date} {', '.join(case.times)} {what} in {task.tz}; kairos follows Debian cron there, "
            "GitHub its own rule (a skipped time moves to the next valid one)"
        )
    workflow = {
        "name": f"kairos {task.id}: {escape(describe(task))}",
        "on": {
            "schedule": [{"cron": standard_cron(expr, task.id, "GitHub Actions"), "timezone": task.tz}],
            "workflow_dispatch": {},
        },
        "permissions": {"contents": "read"},
        "concurrency": {"group": unit_name(task), "cancel-in-progress": False},
        "jobs": {"run": _job(job, options, out.warnings)},
    }
    out.files = [(f"{unit_name(task)}.yml", yaml_text(workflow))]
    return out


def _job(job: Job, options: Options, warnings: list[str]) -> dict[str, Any]:
    assert job.cli is not None
    argv = list(job.argv)
    if posixpath.basename(argv[0]) != job.cli:
        warnings.append(f"the runner runs {job.cli!r} from npm ({NPM_PACKAGES[job.cli]}), not {argv[0]!r}")
    argv[0] = job.cli
    plain, secret = split_env(job, options)
    env: dict[str, str] = {name: escape(value) for name, value in plain}
    command = " ".join(shlex.quote(arg) for arg in argv)
    if job.stdin is not None:
        env[_PROMPT_VAR] = escape(job.stdin)
        command = f'printf %s "${_PROMPT_VAR}" | {command}'
    for name in secret:
        env[name] = "${{ secrets." + name + " }}"
    result: dict[str, Any] = {"runs-on": "ubuntu-latest"}
    if job.timeout_s is not None:
        minutes = int(-(-job.timeout_s // 60))
        if minutes * 60 != job.timeout_s:
            warnings.append(f"the timeout rounds up from {job.timeout_s:g} s to {minutes} min")
        result["timeout-minutes"] = minutes
    result["steps"] = [
        {"uses": "actions/checkout@v4"},
        {"uses": "actions/setup-node@v4", "with": {"node-version": "22"}},
        {"name": f"install {job.cli}", "run": f"npm install -g {NPM_PACKAGES[job.cli]}"},
        {"name": f"kairos task {job.task.id}", "env": env, "run": escape(command)},
    ]
    return result


def escape(text: str) -> str:
    """Text GitHub reads back unchanged: ``${{`` would start an expression."""
    return text.replace("${{", "${{ '${{' }}")
