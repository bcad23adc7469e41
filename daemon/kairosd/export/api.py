"""``POST /v1/export``: tasks rendered for systemd, Kubernetes or GitHub Actions (``kairos export``).

Body :class:`kairosd.export.requests.ExportRequest`: ``{"to": ENGINE, "ids": [...] | "all": true,
"image": IMAGE, "secret_name": NAME, "secret_env": [VAR, ...]}``. Answer ``{"engine", "exports":
[{task_id, files: [{name, text}], warnings}], "refused": [{task_id, reason}]}``: one task that
cannot be expressed does not stop the others. An unknown id fails the whole request (404).

Each task's command is built as a fire would build it: an agent target through the
registry's rules (the CLI's ceiling narrowed by a named definition, the definition's model
and instructions, the configured timeout) and the agent adapter's own headless argv; a
shell target's argv as it is. The pure renderers in :mod:`kairosd.export` do the rest.

Must not import the scheduler, the store or the server's internals (its types only where
the route is built).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kairosd.agents.base import TurnRequest
from kairosd.api.requests import parse_body
from kairosd.api.router import typed
from kairosd.core.errors import KairosError, NotFoundError, UsageError
from kairosd.core.ids import resolve_prefix
from kairosd.core.models import AgentTarget, ShellTarget, Task
from kairosd.core.wire.export import ExportDoc
from kairosd.export import Job, Options, Refused, render
from kairosd.export.common import API_KEY_ENV
from kairosd.export.requests import ExportRequest
from kairosd.jobs.rules import AdapterFor, PolicyFor, check_timeout, effective_permissions

if TYPE_CHECKING:
    import re

    from kairosd.api.router import RouteHandler
    from kairosd.api.server import Request, Response


class Exporter:
    """Builds each task's :class:`Job` from the daemon's config and renders it."""

    def __init__(
        self,
        tasks: Callable[[], Iterable[Task]],
        adapter_for: AdapterFor,
        policy_for: PolicyFor,
        default_timeout_s: float,
        now: Callable[[], datetime],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._tasks = tasks
        self._adapter_for = adapter_for
        self._policy_for = policy_for
        self._default_timeout_s = default_timeout_s
        self._now = now
        self._environ = os.environ if environ is None else environ

    def snapshot(self) -> list[Task]:
        """The tasks as they are now (taken on the event loop, which is the one that changes them)."""
        return list(self._tasks())

    def export(self, request: ExportRequest, tasks: list[Task] | None = None) -> dict[str, Any]:
        engine = request.to
        options = Options(image=request.image, secret_name=request.secret_name, secret_env=tuple(request.secret_env))
        chosen = self._chosen(request, self.snapshot() if tasks is None else tasks)
        now = self._now()
        exports, refused = [], []
        for task in chosen:
            try:
                job = self.job(task)
                extra: list[str] = []
                if engine == "systemd":
                    job, extra = self._for_systemd(job)
                rendered = render(job, engine, options, now)
                rendered.warnings += extra
                exports.append(rendered.as_dict())
            except KairosError as exc:
                refused.append({"task_id": task.id, "reason": exc.message if isinstance(exc, Refused) else str(exc)})
        return {"engine": engine, "exports": exports, "refused": refused}

    def _chosen(self, request: ExportRequest, snapshot: list[Task]) -> list[Task]:
        tasks = {task.id: task for task in snapshot}
        if request.all:
            return sorted(tasks.values(), key=lambda t: t.id)
        ids = request.ids
        if not ids:
            raise UsageError('give {"ids": ["..."]} or {"all": true}')
        chosen: list[str] = []
        missing: list[str] = []
        for given in ids:
            try:
                chosen.append(resolve_prefix(given, tasks, "task"))
            except NotFoundError:
                missing.append(given)
        if missing:
            raise NotFoundError(f"no task starts with {', '.join(map(repr, missing))} (see 'kairos list')")
        return [tasks[i] for i in dict.fromkeys(chosen)]

    def job(self, task: Task) -> Job:
        """The command a fire of ``task`` would run (targets without one get a job the renderers refuse)."""
        target = task.target
        if isinstance(target, ShellTarget):
            env = {
                "KAIROS_PROMPT": task.prompt,
                "KAIROS_TASK_ID": task.id,
                "KAIROS_SESSION": str(getattr(target, "session", None) or "default"),
                "KAIROS_SPAWNED": "1",
            }
            return Job(
                task, tuple(target.argv), task.prompt, tuple(env.items()), target.cwd, target.timeout_s, cli=None
            )
        if not isinstance(target, AgentTarget):
            return Job(task, ("true",))
        policy = self._policy_for(target.agent, target.cwd)
        cli = policy.cli or target.agent
        adapter = self._adapter_for(cli)
        permissions = effective_permissions(None, [policy.ceiling, policy.restrictions], None)
        request = TurnRequest(
            prompt=task.prompt,
            cwd=target.cwd,
            model=target.model or policy.model,
            permissions=permissions,
            agent_definition=policy.agent_definition,
        )
        command = adapter.command(request)  # refuses what the CLI cannot do, as a fire would
        timeout = target.timeout_s if target.timeout_s is not None else policy.timeout_s
        env = {**command.env, "KAIROS_TASK_ID": task.id, "KAIROS_SPAWNED": "1"}
        return Job(
            task,
            tuple(command.argv),
            command.stdin,
            tuple(env.items()),
            target.cwd,
            check_timeout(timeout, self._default_timeout_s),
            cli=cli,
            secret_env=API_KEY_ENV.get(cli, ()),
        )

    def _for_systemd(self, job: Job) -> tuple[Job, list[str]]:
        """The unit runs on this machine: the binary kairosd would find, with kairosd's PATH.
        A user manager's own search path is not kairosd's (``~/.local/bin`` is not on it)."""
        path = self._environ.get("PATH", "")
        warnings: list[str] = []
        argv = list(job.argv)
        if not os.path.isabs(argv[0]):
            found = shutil.which(argv[0], path=path)
            if found:
                argv[0] = found
            else:
                warnings.append(f"{argv[0]!r} is not on kairosd's PATH; systemd will look for it in its own")
        env = dict(job.env)
        env.setdefault("PATH", path)
        # The CLI on this machine has its own login; an API key counts only if kairosd runs with one.
        secret = tuple(name for name in job.secret_env if self._environ.get(name))
        return Job(
            job.task, tuple(argv), job.stdin, tuple(env.items()), job.cwd, job.timeout_s, job.cli, secret
        ), warnings


def export_routes(exporter: Exporter) -> list[tuple[str, dict[str, RouteHandler]]]:
    """``POST /v1/export`` for :meth:`kairosd.api.router.Router.add_routes`."""

    @typed(ExportRequest)
    async def post(req: Request, m: re.Match[str]) -> Response:
        from kairosd.api.server import Response

        request = parse_body(ExportRequest, req.body)
        # In a thread: resolving agent definitions reads the project's and the user's agent folders.
        exported = await asyncio.to_thread(exporter.export, request, exporter.snapshot())
        return Response(200, ExportDoc.model_validate(exported))

    return [("export", {"POST": post})]
