"""Consolidation runs as kairosd sees them: start a detached worker, wait for it, settle its record.

Starting a run (:meth:`RunTracker.launch`):

1. a registry record of kind ``consolidation`` (:meth:`Registry.record_external`: ``running``,
   ``detached``) is written first, so a crash from here on leaves a trace;
2. the request file ``<state dir>/consolidation/runs/<task id>.request.json`` is written;
3. the worker starts detached (:mod:`.spawn`: it forks away from kairosd and leads its own
   session) with its output in the task's log, and its pid and start time go into the record.

Completion: kairosd waits for the worker's exit (a pidfd; no polling) and then reads
``<task id>.result.json``, which the worker writes atomically as its last act. The record ends
``completed`` or ``failed`` (with the worker's error, or "ended without a result"). After a
kairosd restart, :meth:`RunTracker.readopt` finds the records still ``running``: a result file
settles one at once; a live worker (same pid and start time) is waited for again; anything else
failed. A worker that outlives its bound is stopped.

Which request may start a run, and what follows one, is :mod:`.service`'s business: it is told
through ``on_settled`` once a run's project is free again.

Must not import the daemon, the scheduler or the server's internals, nor the worker module at
import time (it brings the extractor's patterns, which kairosd itself never runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairosd.config import ConsolidationConfig
from kairosd.consolidation import spawn
from kairosd.consolidation.request import ConsolidationRequest
from kairosd.core.clock import Clock
from kairosd.core.errors import NotFoundError
from kairosd.core.events import EventBus
from kairosd.jobs.model import JobKind, JobRecord, JobStatus, view
from kairosd.jobs.registry import Registry, StartSpec
from kairosd.system.atomic import write_atomic
from kairosd.system.paths import Paths

log = logging.getLogger(__name__)


@dataclass
class Run:
    task_id: str
    project: str
    transcript: str | None
    watcher: asyncio.Task[None] | None = None
    followers: list[str] = field(default_factory=list)  # sessions coalesced into this run
    session: str | None = None  # the session it consolidates (None: re-adopted after a restart)


@dataclass
class ConsolidationDeps:
    """What consolidation takes from the daemon: the service gets it and shares it with its run tracker.
    ``python``: the interpreter for the worker (None: kairosd's own). ``config`` is replaced by a
    reload of config.toml (:mod:`kairosd.app.reload`); both read it at each use, never keep a copy."""

    paths: Paths
    clock: Clock
    events: EventBus
    registry: Registry
    config: ConsolidationConfig
    environ: Mapping[str, str]
    zone: str = "UTC"
    python: str | None = None


class RunTracker:
    def __init__(
        self, deps: ConsolidationDeps, *, boards_dir: Path, on_settled: Callable[[str], Awaitable[None]]
    ) -> None:
        self.deps = deps
        self.boards_dir = boards_dir
        self.on_settled = on_settled  # with the project, once its run is settled and the project free
        self.runs_dir = deps.paths.state_dir / "consolidation" / "runs"
        self.running: dict[str, Run] = {}  # project -> its run

    # ---- lifecycle ---------------------------------------------------------------------------

    async def readopt(self) -> None:
        """Settle or re-adopt the runs a previous kairosd left running. Call after the registry recovered."""
        for record in self.deps.registry.list_tasks(JobStatus.RUNNING):
            if record.kind is not JobKind.CONSOLIDATION or not record.detached:
                continue
            result = await asyncio.to_thread(self.read_result, record.id)
            project = record.cwd or ""
            if result is None and record.pid is None:
                # kairosd stopped between starting the worker and recording its pid: its pid file says.
                pid = await asyncio.to_thread(self._read_pid, record.id)
                if pid is not None:
                    record = await self.deps.registry.attach_process(record.id, pid)
            if result is not None:
                await self._settle(record.id, project, result)
            elif spawn.same_process(record.pid, record.pid_started):
                log.info("consolidation %s of %s is still running (pid %s)", record.id, project, record.pid)
                run = Run(record.id, project, None)
                self.running[project] = run
                run.watcher = asyncio.ensure_future(self._watch(run, record.pid or 0, record.pid_started))
            else:
                error = (
                    "kairosd stopped before the worker started"
                    if record.pid is None
                    else "the consolidation worker ended without a result (see its log)"
                )
                await self._settle(record.id, project, {"ok": False, "error": error})
        await asyncio.to_thread(self._remove_stale_files)

    async def stop_watching(self) -> None:
        """Cancel the watchers. The workers go on; the next :meth:`readopt` settles them."""
        watchers = [r.watcher for r in self.running.values() if r.watcher is not None]
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)

    # ---- one run -------------------------------------------------------------------------------

    async def launch(self, req: ConsolidationRequest, project: str, bound_s: float) -> JobRecord:
        """Record, write the request, start the worker detached and watch it; OSError if it cannot start."""
        mode = self.deps.config.mode
        spec = StartSpec(
            kind=JobKind.CONSOLIDATION,
            prompt=f"consolidate {req.agent} session {req.session_id} into the context board ({mode})",
            # what runs it (shown by kairos task list); in auto mode the worker decides, offline as the fallback
            agent="offline" if mode == "offline" else "rem-agent",
            cwd=project,
            session=req.session_id,
            timeout_s=bound_s,
        )
        record = await self.deps.registry.record_external(spec)
        run = Run(record.id, project, req.transcript_path, session=req.session_id)
        self.running[project] = run  # before any await: a request coming meanwhile is coalesced
        try:
            request_path = await asyncio.to_thread(self._write_request, record, req, project)
            env = {
                **self.deps.environ,
                "KAIROS_SPAWNED": "1",
                "KAIROS_TASK_ID": record.id,
                "KAIROS_TASK_DEPTH": "0",
                "KAIROS_SESSION": req.session_id,
            }
            argv = spawn.scoped(spawn.worker_argv(request_path, self.deps.python), f"kairos-{record.id}", env)
            pid = await asyncio.to_thread(
                spawn.spawn_detached,
                argv,
                env=env,
                cwd=project,
                log_path=Path(record.log_path),
                pid_path=self.pid_path(record.id),
            )
        except OSError as exc:
            del self.running[project]
            await self.deps.registry.finish_external(record.id, ok=False, error=f"cannot start: {exc.strerror or exc}")
            raise
        record = await self.deps.registry.attach_process(record.id, pid)
        log.info("consolidation %s of %s started: pid %d, %s mode", record.id, project, pid, mode)
        run.watcher = asyncio.ensure_future(self._watch(run, pid, record.pid_started))
        return record

    async def _watch(self, run: Run, pid: int, started: float | None) -> None:
        record = self.deps.registry.get(run.task_id)
        elapsed = (self.deps.clock.now() - record.created_at).total_seconds()
        remaining = max(1.0, record.timeout_s - elapsed)
        ended = await spawn.wait_exit(pid, started=started, timeout=remaining)
        if not ended:
            log.warning("consolidation %s ran past %gs; stopping it", run.task_id, record.timeout_s)
            await self.deps.registry.cancel(run.task_id)  # TERM, grace, KILL on its group (pid checked)
        result = await asyncio.to_thread(self.read_result, run.task_id)
        if result is None:
            why = "ran past its bound and was stopped" if not ended else "ended without a result (see its log)"
            result = {"ok": False, "error": f"the consolidation worker {why}"}
        await self._settle(run.task_id, run.project, result)

    async def _settle(self, task_id: str, project: str, result: dict[str, Any]) -> None:
        ok = bool(result.get("ok"))
        merge = result.get("merge") or {}
        summary = (
            f"{len(merge.get('added', []))} added, {len(merge.get('seen', []))} seen again, "
            f"{len(merge.get('superseded', []))} replaced, {len(merge.get('closed', []))} closed, "
            f"{len(merge.get('pruned', []))} pruned{_judged(merge)} ({result.get('mode', '?')} mode"
            + (", cautious reading" if result.get("offline_reading") == "cautious" else "")
            + (f"; agent mode failed: {result['fallback']}" if result.get("fallback") else "")
            + (f"; {result['offline_reading_note']}" if result.get("offline_reading_note") else "")
            + ")"
        )
        run = self.running.get(project)
        if run is not None and run.task_id == task_id:
            del self.running[project]  # first: whoever the record's end wakes sees the project free
        await self.deps.registry.finish_external(
            task_id, ok=ok, error=None if ok else str(result.get("error") or "failed"), response=summary if ok else None
        )
        self.deps.events.publish(
            "consolidation_finished",
            run=task_id,
            project=project,
            ok=ok,
            error=result.get("error"),
            added=len(merge.get("added", [])),
            seen=len(merge.get("seen", [])),
            pruned=len(merge.get("pruned", [])),
            replaced=len(merge.get("superseded", [])),
            closed=len(merge.get("closed", [])),
        )
        if ok and any(merge.get(key) for key in ("added", "pruned", "seen", "superseded", "closed")):
            self.deps.events.publish("board_changed", project=project, run=task_id, by="kairos")
        await self.on_settled(project)

    async def run_info(self, task_id: str) -> dict[str, Any]:
        record = self.deps.registry.get(task_id)
        task_id = record.id  # the whole id, when a prefix was given
        if record.kind is not JobKind.CONSOLIDATION:
            raise NotFoundError(f"task {task_id} is not a consolidation run (see: kairos task show {task_id})")
        result = await asyncio.to_thread(self.read_result, task_id)
        return {"task": view(record), "result": result}

    # ---- files -------------------------------------------------------------------------------

    def request_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.request.json"

    def result_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.result.json"

    def pid_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.pid"

    def _write_request(self, record: JobRecord, req: ConsolidationRequest, project: str) -> Path:
        # Imported here: the worker module brings the extractor's patterns, which kairosd itself never runs.
        from kairosd.consolidation.worker import REQUEST_VERSION

        self.runs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        paths = self.deps.paths
        doc = {
            "version": REQUEST_VERSION,
            "run": record.id,
            "project": project,
            "transcript": req.transcript_path,
            "agent": req.agent,
            "session_id": req.session_id,
            "mode": self.deps.config.mode,
            "agent_timeout_s": self.deps.config.agent_timeout,
            "offline": self.deps.config.offline,
            "zone": self.deps.zone,
            "requested_at": record.created_at.isoformat(),
            "boards_dir": str(self.boards_dir),
            "result_path": str(self.result_path(record.id)),
            "pid_path": str(self.pid_path(record.id)),
            "config_dir": str(paths.config_dir),
            "state_dir": str(paths.state_dir),
            "data_dir": str(paths.data_dir),
            "runtime_dir": str(paths.runtime_dir),
        }
        path = self.request_path(record.id)
        write_atomic(path, json.dumps(doc, indent=1).encode("utf-8"), mode=0o600)
        return path

    def _read_pid(self, task_id: str) -> int | None:
        try:
            return int(self.pid_path(task_id).read_text().strip())
        except (OSError, ValueError):
            return None

    def read_result(self, task_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.result_path(task_id).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return {"ok": False, "error": f"the worker's result is unreadable: {exc}"}
        return data if isinstance(data, dict) else {"ok": False, "error": "the worker's result is not an object"}

    def _remove_stale_files(self) -> None:
        """Request and result files of runs the registry no longer keeps."""
        known = {r.id for r in self.deps.registry.list_tasks()}
        with contextlib.suppress(FileNotFoundError):
            for path in self.runs_dir.iterdir():
                if path.name.split(".", 1)[0] not in known:
                    with contextlib.suppress(OSError):
                        path.unlink()


def _judged(merge: dict[str, Any]) -> str:
    """What a rem-agent said of offline mode's guesses, when it judged any (KEEP and DROP)."""
    confirmed, dropped = len(merge.get("confirmed", [])), len(merge.get("dropped", []))
    if not (confirmed or dropped):
        return ""
    return f", {confirmed} offline guess{'es' if confirmed != 1 else ''} confirmed, {dropped} dropped"
