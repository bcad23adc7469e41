"""The daemon side of consolidation: requests and their gates, detached runs, board operations.

A request (``POST /v1/consolidate``, from the SessionEnd hook or ``kairos consolidate``) goes
through the gates of :mod:`.gates` in order. The first that stops it is recorded with its reason
(``<state dir>/consolidation/requests.jsonl``, the ``consolidation_skipped`` event and the
answer). One that passes them all starts a run:

1. a registry record of kind ``consolidation`` (:meth:`Registry.record_external`: ``running``,
   ``detached``) is written first, so a crash from here on leaves a trace;
2. the request file ``<state dir>/consolidation/runs/<task id>.request.json`` is written;
3. the worker starts detached (:mod:`.spawn`: it forks away from kairosd and leads its own
   session) with its output in the task's log, and its pid and start time go into the record.

Completion: kairosd waits for the worker's exit (a pidfd; no polling) and then reads
``<task id>.result.json``, which the worker writes atomically as its last act. The record ends
``completed`` or ``failed`` (with the worker's error, or "ended without a result"). After a
kairosd restart, :meth:`Consolidation.start` finds the records still ``running``: a result file
settles one at once; a live worker (same pid and start time) is waited for again; anything else
failed. A worker that outlives its bound (the agent timeout plus the offline run) is stopped.

One run per project at a time (the lock gate): a request for a project whose run is going on is
coalesced into it, not run twice. If it brings another session's transcript, it is kept as the
project's one pending follow-up (a newer one replaces it), started when the run ends; it already
passed the other gates. Pending follow-ups live in memory only.

Board operations (``kairos board ...``) are :mod:`.board_ops`'; :class:`Consolidation` hands
them on, so the routes and the composition root see one object.

Must not import the daemon, the scheduler or the server's internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kairosd.atomic import write_atomic
from kairosd.clock import Clock
from kairosd.config import ConsolidationConfig
from kairosd.consolidation import gates, spawn
from kairosd.consolidation.board import BoardStore, project_root
from kairosd.consolidation.board_ops import BoardOperations
from kairosd.consolidation.request import MAX_TEXT_FIELD, ConsolidationRequest, parse_request
from kairosd.consolidation.transcripts import AGENT_FORMATS, count_human_turns
from kairosd.errors import NotFoundError, UnavailableError
from kairosd.events import EventBus
from kairosd.jsonlog import JsonLog
from kairosd.paths import Paths
from kairosd.registry.model import TaskKind, TaskRecord, TaskStatus, view
from kairosd.registry.registry import Registry, StartSpec

__all__ = [
    "COALESCED",
    "FAILED",
    "MAX_TEXT_FIELD",
    "SKIPPED",
    "STARTED",
    "Consolidation",
    "ConsolidationRequest",
    "parse_request",
]

log = logging.getLogger(__name__)

OFFLINE_BOUND_S = 900.0  # a worker's offline part may take this long before kairosd stops it
RECENT_KEPT = 100
DECISIONS_KEEP = 2000
SKIPPED, STARTED, COALESCED, FAILED = "skipped", "started", "coalesced", "failed"


def _project_of(cwd: str) -> tuple[str, bool]:
    project = project_root(cwd)
    return project, os.path.isdir(project)


@dataclass
class _Run:
    task_id: str
    project: str
    transcript: str | None
    watcher: asyncio.Task[None] | None = None
    followers: list[str] = field(default_factory=list)  # sessions coalesced into this run


class Consolidation:
    def __init__(
        self,
        *,
        paths: Paths,
        clock: Clock,
        events: EventBus,
        registry: Registry,
        config: ConsolidationConfig,
        environ: Mapping[str, str],
        zone: str = "UTC",
        python: str | None = None,
    ) -> None:
        self.paths = paths
        self.clock = clock
        self.events = events
        self.registry = registry
        self.config = config
        self.environ = dict(environ)
        self.zone = zone
        self.python = python
        self.boards = BoardStore(paths.data_dir / "boards", clock.now)
        self.board_ops = BoardOperations(self.boards, clock.now, events)
        self.runs_dir = paths.state_dir / "consolidation" / "runs"
        self.decisions = JsonLog(paths.state_dir / "consolidation" / "requests.jsonl")
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_KEPT)
        self.running: dict[str, _Run] = {}  # project -> its run
        self.pending: dict[str, ConsolidationRequest] = {}  # project -> the follow-up to start after
        self._project_locks: dict[str, asyncio.Lock] = {}
        self._closing = False

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Settle or re-adopt the runs a previous kairosd left running. Call after the registry recovered."""
        for record in self.registry.list_tasks(TaskStatus.RUNNING):
            if record.kind is not TaskKind.CONSOLIDATION or not record.detached:
                continue
            result = await asyncio.to_thread(self._read_result, record.id)
            project = record.cwd or ""
            if result is None and record.pid is None:
                # kairosd stopped between starting the worker and recording its pid: its pid file says.
                pid = await asyncio.to_thread(self._read_pid, record.id)
                if pid is not None:
                    record = await self.registry.attach_process(record.id, pid)
            if result is not None:
                await self._settle(record.id, project, result)
            elif spawn.same_process(record.pid, record.pid_started):
                log.info("consolidation %s of %s is still running (pid %s)", record.id, project, record.pid)
                run = _Run(record.id, project, None)
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

    async def stop(self) -> None:
        """At kairosd's shutdown: stop watching. The workers go on; the next start settles them."""
        self._closing = True
        watchers = [r.watcher for r in self.running.values() if r.watcher is not None]
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)

    # ---- requests --------------------------------------------------------------------------------

    async def request(self, body: Any) -> dict[str, Any]:
        """Decide on one request (the gates in order); start, coalesce or skip it. The decision."""
        if self._closing:
            raise UnavailableError("kairosd is shutting down; not consolidating now")
        req = parse_request(body)
        reason = gates.check_enabled(self.config.enabled, self.environ, req.consolidate_env)
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "enabled", reason)
        reason = gates.check_not_spawned(req.spawned, self._own_task(req.session_id))
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "not_spawned", reason)
        count, cwd_seen, problem = await self._count_turns(req)
        reason = gates.check_user_turns(count, self.config.min_user_turns, problem)
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "user_turns", reason)
        cwd = req.cwd or cwd_seen
        if cwd is None:
            return await self._decide(req, None, SKIPPED, "user_turns", "no cwd given and the transcript names none")
        project, exists = await asyncio.to_thread(_project_of, cwd)
        if not exists:
            why = f"the project folder does not exist: {project}"
            return await self._decide(req, project, SKIPPED, "user_turns", why)
        lock = self._project_locks.setdefault(project, asyncio.Lock())
        async with lock:  # the interval and lock gates, and the start, happen as one step per project
            minutes = self.config.min_interval_minutes
            reason = gates.check_interval(self._last_start(project), self.clock.now(), minutes)
            if reason is not None:
                return await self._decide(req, project, SKIPPED, "interval", reason)
            return await self._start_or_coalesce(req, project)

    async def _start_or_coalesce(self, req: ConsolidationRequest, project: str) -> dict[str, Any]:
        run = self.running.get(project)
        if run is not None:
            run.followers.append(req.session_id)
            detail = f"a run for this project is going on ({run.task_id}); coalesced into it"
            if req.transcript_path and req.transcript_path != run.transcript:
                self.pending[project] = req
                detail += "; this session's transcript follows when it ends"
            return await self._decide(req, project, COALESCED, "lock", detail, run.task_id)
        try:
            record = await self._launch(req, project)
        except OSError as exc:
            return await self._decide(req, project, FAILED, None, f"cannot start the worker: {exc.strerror or exc}")
        return await self._decide(req, project, STARTED, None, f"consolidation started ({self.config.mode})", record.id)

    async def _launch(self, req: ConsolidationRequest, project: str) -> TaskRecord:
        mode = self.config.mode
        bound = OFFLINE_BOUND_S + (self.config.agent_timeout if mode == "agent" else 0.0)
        spec = StartSpec(
            kind=TaskKind.CONSOLIDATION,
            prompt=f"consolidate {req.agent} session {req.session_id} into the context board ({mode})",
            agent="rem-agent" if mode == "agent" else "offline",  # what runs it (shown by kairos task list)
            cwd=project,
            session=req.session_id,
            timeout_s=bound,
        )
        record = await self.registry.record_external(spec)
        run = _Run(record.id, project, req.transcript_path)
        self.running[project] = run  # before any await: a request coming meanwhile is coalesced
        try:
            request_path = await asyncio.to_thread(self._write_request, record, req, project)
            env = {
                **self.environ,
                "KAIROS_SPAWNED": "1",
                "KAIROS_TASK_ID": record.id,
                "KAIROS_TASK_DEPTH": "0",
                "KAIROS_SESSION": req.session_id,
            }
            argv = spawn.scoped(spawn.worker_argv(request_path, self.python), f"kairos-{record.id}", env)
            pid = await asyncio.to_thread(
                spawn.spawn_detached,
                argv,
                env=env,
                cwd=project,
                log_path=Path(record.log_path),
                pid_path=self._pid_path(record.id),
            )
        except OSError as exc:
            del self.running[project]
            await self.registry.finish_external(record.id, ok=False, error=f"cannot start: {exc.strerror or exc}")
            raise
        record = await self.registry.attach_process(record.id, pid)
        log.info("consolidation %s of %s started: pid %d, %s mode", record.id, project, pid, mode)
        run.watcher = asyncio.ensure_future(self._watch(run, pid, record.pid_started))
        return record

    async def _watch(self, run: _Run, pid: int, started: float | None) -> None:
        record = self.registry.get(run.task_id)
        elapsed = (self.clock.now() - record.created_at).total_seconds()
        remaining = max(1.0, record.timeout_s - elapsed)
        ended = await spawn.wait_exit(pid, started=started, timeout=remaining)
        if not ended:
            log.warning("consolidation %s ran past %gs; stopping it", run.task_id, record.timeout_s)
            await self.registry.cancel(run.task_id)  # TERM, grace, KILL on its group (pid checked)
        result = await asyncio.to_thread(self._read_result, run.task_id)
        if result is None:
            why = "ran past its bound and was stopped" if not ended else "ended without a result (see its log)"
            result = {"ok": False, "error": f"the consolidation worker {why}"}
        await self._settle(run.task_id, run.project, result)

    async def _settle(self, task_id: str, project: str, result: dict[str, Any]) -> None:
        ok = bool(result.get("ok"))
        merge = result.get("merge") or {}
        summary = (
            f"{len(merge.get('added', []))} added, {len(merge.get('seen', []))} seen again, "
            f"{len(merge.get('pruned', []))} pruned ({result.get('mode', '?')} mode"
            + (f"; agent mode failed: {result['fallback']}" if result.get("fallback") else "")
            + ")"
        )
        run = self.running.get(project)
        if run is not None and run.task_id == task_id:
            del self.running[project]  # first: whoever the record's end wakes sees the project free
        await self.registry.finish_external(
            task_id, ok=ok, error=None if ok else str(result.get("error") or "failed"), response=summary if ok else None
        )
        self.events.publish(
            "consolidation_finished",
            run=task_id,
            project=project,
            ok=ok,
            error=result.get("error"),
            added=len(merge.get("added", [])),
            seen=len(merge.get("seen", [])),
            pruned=len(merge.get("pruned", [])),
        )
        if ok and (merge.get("added") or merge.get("pruned") or merge.get("seen")):
            self.events.publish("board_changed", project=project, run=task_id, by="kairos")
        follow_up = self.pending.pop(project, None)
        if follow_up is not None and not self._closing:
            lock = self._project_locks.setdefault(project, asyncio.Lock())
            async with lock:
                # It passed gates 1 to 4 when it came; only the lock kept it waiting.
                await self._start_or_coalesce(follow_up, project)

    async def _decide(
        self,
        req: ConsolidationRequest,
        project: str | None,
        outcome: str,
        gate: str | None,
        detail: str,
        run: str | None = None,
    ) -> dict[str, Any]:
        decision = {
            "at": self.clock.now().isoformat(),
            "outcome": outcome,
            "gate": gate,
            "reason": detail,
            "agent": req.agent,
            "session_id": req.session_id,
            "project": project,
            "transcript_path": req.transcript_path,
            "end_reason": req.reason,
            "run": run,
        }
        self.recent.append(decision)
        try:
            await asyncio.to_thread(self._log_decision, decision)
        except OSError as exc:
            log.warning("cannot record the consolidation decision: %s", exc)
        self.events.publish(f"consolidation_{outcome}", **{k: v for k, v in decision.items() if k != "at"})
        if outcome == SKIPPED:
            log.info("consolidation of %s session %s skipped (%s): %s", req.agent, req.session_id, gate, detail)
        answer: dict[str, Any] = {"status": outcome, "gate": gate, "reason": detail, "project": project}
        if run is not None:
            answer["run"] = view(self.registry.get(run), turns=False)
        return answer

    def _log_decision(self, decision: dict[str, Any]) -> None:
        self.decisions.append([decision])
        if self.decisions.lines > DECISIONS_KEEP * 2:
            self.decisions.rewrite(self.decisions.read()[-DECISIONS_KEEP:])

    async def _count_turns(self, req: ConsolidationRequest) -> tuple[int, str | None, str | None]:
        """(human turns, up to the minimum; the cwd the transcript names; a problem reading it)."""
        path = req.transcript_path
        if path is None:
            return 0, None, "no transcript (transcript_path not given)"
        hint = AGENT_FORMATS.get(req.agent)
        try:
            count, stats = await asyncio.to_thread(count_human_turns, path, hint, self.config.min_user_turns)
        except FileNotFoundError:
            return 0, None, f"transcript not found: {path}"
        except IsADirectoryError:
            return 0, None, f"the transcript is a folder: {path}"
        except OSError as exc:
            return 0, None, f"cannot read the transcript {path}: {exc.strerror or exc}"
        return count, stats.cwd, None

    def _own_task(self, session_id: str) -> str | None:
        """The registry task whose agent session this is (kairos' own run), if any."""
        for record in self.registry.list_tasks():
            if record.agent_session_id == session_id:
                return record.id
        return None

    def _last_start(self, project: str) -> datetime | None:
        starts = [
            r.created_at for r in self.registry.list_tasks() if r.kind is TaskKind.CONSOLIDATION and r.cwd == project
        ]
        return max(starts, default=None)

    # ---- files -------------------------------------------------------------------------------

    def _request_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.request.json"

    def _result_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.result.json"

    def _pid_path(self, task_id: str) -> Path:
        return self.runs_dir / f"{task_id}.pid"

    def _write_request(self, record: TaskRecord, req: ConsolidationRequest, project: str) -> Path:
        # Imported here: the worker module brings the extractor's patterns, which kairosd itself never runs.
        from kairosd.consolidation.worker import REQUEST_VERSION

        self.runs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        paths = self.paths
        doc = {
            "version": REQUEST_VERSION,
            "run": record.id,
            "project": project,
            "transcript": req.transcript_path,
            "agent": req.agent,
            "session_id": req.session_id,
            "mode": self.config.mode,
            "agent_timeout_s": self.config.agent_timeout,
            "zone": self.zone,
            "requested_at": record.created_at.isoformat(),
            "boards_dir": str(self.boards.folder),
            "result_path": str(self._result_path(record.id)),
            "pid_path": str(self._pid_path(record.id)),
            "config_dir": str(paths.config_dir),
            "state_dir": str(paths.state_dir),
            "data_dir": str(paths.data_dir),
            "runtime_dir": str(paths.runtime_dir),
        }
        path = self._request_path(record.id)
        write_atomic(path, json.dumps(doc, indent=1).encode("utf-8"), mode=0o600)
        return path

    def _read_pid(self, task_id: str) -> int | None:
        try:
            return int(self._pid_path(task_id).read_text().strip())
        except (OSError, ValueError):
            return None

    def _read_result(self, task_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._result_path(task_id).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return {"ok": False, "error": f"the worker's result is unreadable: {exc}"}
        return data if isinstance(data, dict) else {"ok": False, "error": "the worker's result is not an object"}

    def _remove_stale_files(self) -> None:
        """Request and result files of runs the registry no longer keeps."""
        known = {r.id for r in self.registry.list_tasks()}
        with contextlib.suppress(FileNotFoundError):
            for path in self.runs_dir.iterdir():
                if path.name.split(".", 1)[0] not in known:
                    with contextlib.suppress(OSError):
                        path.unlink()

    # ---- reading runs and status -----------------------------------------------------------------

    async def run_info(self, task_id: str) -> dict[str, Any]:
        record = self.registry.get(task_id)
        if record.kind is not TaskKind.CONSOLIDATION:
            raise NotFoundError(f"task {task_id} is not a consolidation run (see: kairos task show {task_id})")
        result = await asyncio.to_thread(self._read_result, task_id)
        return {"task": view(record), "result": result}

    def status(self) -> dict[str, Any]:
        config = self.config
        return {
            "enabled": config.enabled and not gates.switched_off(self.environ.get(gates.ENV_SWITCH)),
            "mode": config.mode,
            "min_interval_minutes": config.min_interval_minutes,
            "min_user_turns": config.min_user_turns,
            "running": {project: run.task_id for project, run in self.running.items()},
            "pending": {project: req.session_id for project, req in self.pending.items()},
            "recent": list(self.recent)[-20:],
        }

    # ---- the board: see .board_ops -------------------------------------------------------------

    def project_for(self, cwd: Any) -> str:
        return self.board_ops.project_for(cwd)

    async def board(self, cwd: Any) -> dict[str, Any]:
        return await self.board_ops.board(cwd)

    async def add_entry(self, cwd: Any, text: Any, kind: Any) -> dict[str, Any]:
        return await self.board_ops.add_entry(cwd, text, kind)

    async def remove_entry(self, cwd: Any, entry_id: str) -> dict[str, Any]:
        return await self.board_ops.remove_entry(cwd, entry_id)

    async def prune(self, cwd: Any) -> dict[str, Any]:
        return await self.board_ops.prune(cwd)

    async def history(self, cwd: Any, limit: int) -> dict[str, Any]:
        return await self.board_ops.history(cwd, limit)

    def board_context(self, cwd: str | None) -> str | None:
        """The board of the project ``cwd`` is in, rendered for a starting session; None if empty. Never raises."""
        return self.board_ops.board_context(cwd)
