"""A task as a Kubernetes ``batch/v1`` CronJob.

``schedule`` is the task's cron in standard form with ``timeZone`` its zone;
``concurrencyPolicy: Forbid`` is kairos' overlap ``skip``; ``startingDeadlineSeconds``
carries the catch-up policy (``once``: 7 days, kairos' window; the controller
starts only the most recent missed run; ``skip``: 60 s, so a run that cannot
start within a minute is dropped); a paused task is ``suspend: true``. One
container runs the agent's argv in the image the user names; the prompt is
an environment variable piped to the agent's stdin; API keys come from a
Secret (``secretKeyRef``), never from the manifest. ``backoffLimit: 0``: kairos
does not retry a failed run either.

Kubernetes expands ``$(VAR)`` in commands and environment values, so every
``$(`` of the task's own text is written as ``$$(`` (read back as ``$(``).

Pure: must not import anything that does I/O.
"""

from __future__ import annotations

import posixpath
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
    refuse_target,
    split_env,
    unit_name,
    yaml_text,
)
from kairosd.export.crontext import standard_cron

CATCH_UP_WINDOW_S = 7 * 86400  # kairos' catch-up window for "once"
SKIP_DEADLINE_S = 60
_PROMPT_VAR = "KAIROS_PROMPT"


def render(job: Job, options: Options, now: datetime) -> Rendered:
    task = job.task
    refuse_target(task, "kubernetes")
    if not options.image:
        raise Refused("a kubernetes export needs --image: the container image that holds the agent CLI")
    if task.cron is None or not task.recurring:
        raise Refused(f"task {task.id}: a one-shot (--in, --at, --once) cannot be a CronJob, which repeats")
    if task.jitter != "none":
        raise Refused(f"task {task.id}: jitter {task.jitter} has no CronJob equivalent (remove it to export)")
    out = Rendered(task.id)
    out.warnings += [w for w in common_warnings(task) if "paused" not in w]  # a paused task is suspend: true
    expr = cron_of(task)
    spec: dict[str, Any] = {
        "schedule": standard_cron(expr, task.id, "kubernetes"),
        "timeZone": task.tz,
        "concurrencyPolicy": "Forbid",
    }
    if task.overlap is Overlap.QUEUE:
        out.warnings.append("overlap queue becomes Forbid: a fire while a run goes on is skipped, not queued")
    if task.catch_up is CatchUp.SKIP:
        spec["startingDeadlineSeconds"] = SKIP_DEADLINE_S
    else:
        spec["startingDeadlineSeconds"] = CATCH_UP_WINDOW_S
        if task.catch_up is not CatchUp.ONCE:
            out.warnings.append(
                f"catch-up {task.catch_up.value} becomes once: the controller starts only the most recent missed run"
            )
    if task.paused:
        spec["suspend"] = True
    for case in dst_cases(expr, task.zone, now):
        what = "does not exist" if case.kind == "gap" else "happens twice"
        out.warnings.append(
            f"DST: on {case.date} {', '.join(case.times)} {what} in {task.tz}; kairos follows Debian cron there, "
            "the CronJob controller its own rule"
        )
    spec["jobTemplate"] = {"spec": _job_spec(job, options, out.warnings)}
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": unit_name(task),
            "labels": {"app.kubernetes.io/managed-by": "kairos-export", "kairos/task-id": task.id},
            "annotations": {"kairos/description": describe(task)},
        },
        "spec": spec,
    }
    out.files = [(f"{unit_name(task)}.yaml", yaml_text(manifest))]
    return out


def _job_spec(job: Job, options: Options, warnings: list[str]) -> dict[str, Any]:
    argv = list(job.argv)
    if posixpath.isabs(argv[0]):
        warnings.append(f"the agent runs as {posixpath.basename(argv[0])!r} from the image's PATH, not {argv[0]!r}")
        argv[0] = posixpath.basename(argv[0])
    plain, secret = split_env(job, options)
    env: list[dict[str, Any]] = [{"name": name, "value": escape(value)} for name, value in plain]
    if job.stdin is not None:
        env.append({"name": _PROMPT_VAR, "value": escape(job.stdin)})
        command = ["sh", "-c", f'printf %s "${_PROMPT_VAR}" | "$@"', "kairos-export", *map(escape, argv)]
    else:
        command = [escape(arg) for arg in argv]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": options.secret_name, "key": name}}} for name in secret
    ]
    container: dict[str, Any] = {"name": "agent", "image": options.image, "command": command}
    if job.cwd:
        container["workingDir"] = job.cwd
        warnings.append(f"the container runs in {job.cwd}: the image or a mounted volume must hold the project there")
    container["env"] = env
    spec: dict[str, Any] = {"backoffLimit": 0}
    if job.timeout_s is not None:
        seconds = int(-(-job.timeout_s // 1))
        if seconds != job.timeout_s:
            warnings.append(f"the timeout rounds up from {job.timeout_s} s to {seconds} s")
        spec["activeDeadlineSeconds"] = seconds
    spec["template"] = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    return spec


def escape(text: str) -> str:
    """Text Kubernetes reads back unchanged: ``$(`` would start a variable reference."""
    return text.replace("$(", "$$(")
