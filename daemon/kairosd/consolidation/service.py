"""The daemon side of consolidation: requests and their gates, and what follows a run.

A request (``POST /v1/consolidate``, from the SessionEnd hook or ``kairos consolidate``) goes
through the gates of :mod:`.gates` in order. The first that stops it is recorded with its reason
(``<state dir>/consolidation/requests.jsonl``, the ``consolidation_skipped`` event and the
answer). One that passes them all starts a run (:mod:`.runs`: the registry record, the detached
worker, waiting for it and settling it, re-adopting it after a kairosd restart). A worker that
outlives its bound (the agent timeout plus the offline run) is stopped.

One run per project at a time (the lock gate): a request for a project whose run is going on is
coalesced into it, not run twice. If it brings another session's transcript, it is kept as the
project's one pending follow-up (a newer one replaces it), started when the run ends; it already
passed the other gates. Pending follow-ups live in memory only.

A session's end may be reported more than once (Gemini CLI fires SessionEnd three times per
``/quit``): a request that brings the same session's transcript, unchanged since this kairosd
started a run of it, is that run again; it is answered ``skipped`` at the lock gate, never run twice.

Board operations (``kairos board ...``) are :mod:`.board.ops`'; :class:`Consolidation` hands
them on, so the routes and the composition root see one object.

Must not import the daemon, the scheduler or the server's internals, nor the worker module (see
:mod:`.runs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kairosd.consolidation import gates
from kairosd.consolidation.request import ConsolidationRequest
from kairosd.consolidation.runs import ConsolidationDeps, Run, RunTracker
from kairosd.core.errors import UnavailableError
from kairosd.jobs.model import JobKind, view
from kairosd.store.jsonlog import JsonLog

if TYPE_CHECKING:
    from kairosd.consolidation.board.ops import BoardOperations
    from kairosd.consolidation.board.store import BoardStore

__all__ = [
    "COALESCED",
    "DECISIONS_KEEP",
    "FAILED",
    "OFFLINE_BOUND_S",
    "RECENT_KEPT",
    "SKIPPED",
    "STARTED",
    "Consolidation",
    "ConsolidationRequest",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# A worker's offline part may take this long before kairosd stops it. Read at each launch, here
# rather than in .runs, so that patching it on this module (as the tests do) still takes effect.
OFFLINE_BOUND_S = 900.0
RECENT_KEPT = 100
# Projects whose last run is remembered (to skip a repeated end): a client can name any folder.
LAST_RUNS_KEPT = 1024
DECISIONS_KEEP = 2000
SKIPPED, STARTED, COALESCED, FAILED = "skipped", "started", "coalesced", "failed"


def _project_of(cwd: str) -> tuple[str, bool]:
    from kairosd.consolidation.board.store import project_root

    project = project_root(cwd)
    return project, os.path.isdir(project)


def _fingerprint(path: str | None) -> tuple[int, ...] | None:
    """A transcript's size and modification time; None if it cannot be read. A SQLite transcript
    (opencode's database) takes new turns into its ``-wal`` file first: that file's count too."""
    try:
        info = os.stat(path) if path else None
    except OSError:
        return None
    if info is None:
        return None
    try:
        wal = os.stat(f"{path}-wal")
    except OSError:
        return (info.st_size, info.st_mtime_ns)
    return (info.st_size, info.st_mtime_ns, wal.st_size, wal.st_mtime_ns)


# Transcripts are read for the turn gate on threads of their own, never the default pool that does
# every store save, ledger append and inbox put: a slow disk or a huge file delays only other
# transcript reads. At most READS_IN_FLIGHT reads go on at once (more are refused, not queued), each
# is given READ_TIMEOUT_S, and their threads never hold up kairosd's exit.
READS_IN_FLIGHT = 8
READ_TIMEOUT_S = 30.0
# The gate needs only the first few turns; past this many bytes it stops reading (a session that
# has not reached the minimum by then is judged on what was read).
GATE_READ_BYTES = 64 << 20

LATE_TRANSCRIPT_AGENTS = frozenset({"copilot"})
LATE_TRANSCRIPT_S = 10.0
LATE_TRANSCRIPT_POLL_S = 0.25


class Consolidation:
    def __init__(self, deps: ConsolidationDeps) -> None:
        self.deps = replace(deps, environ=dict(deps.environ))  # a snapshot, shared with the run tracker
        # The board store and its operations are built on first use (boards, board_ops below).
        self.runs = RunTracker(self.deps, boards_dir=deps.paths.data_dir / "boards", on_settled=self._follow_up)
        self.runs_dir = self.runs.runs_dir
        # How long to wait for a transcript an agent writes only after its SessionEnd hook (Copilot).
        self.late_transcript_s = LATE_TRANSCRIPT_S
        self.decisions = JsonLog(deps.paths.state_dir / "consolidation" / "requests.jsonl")
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_KEPT)
        self.running: dict[str, Run] = self.runs.running  # project -> its run (the same dict)
        self.pending: dict[str, ConsolidationRequest] = {}  # project -> the follow-up to start after
        # project -> its lock and how many hold or wait for it; dropped when none do (any folder can be named)
        self._project_locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        # project -> (session, transcript, its size and mtime) of the last run started: a repeat is not rerun.
        # The least recently started go first past LAST_RUNS_KEPT (the interval gate still holds for them).
        self._last_run_of: OrderedDict[str, tuple[str, str | None, tuple[int, ...] | None]] = OrderedDict()
        self._closing = False
        self._reads = _ReadPool(READS_IN_FLIGHT)

    # ---- lifecycle ---------------------------------------------------------------------------

    # The board and transcript code is imported on first use (a request, a board command, a
    # SessionStart): kairosd's start does not need it (about 10 ms of imports; BENCHMARKS.md, Session 5).
    @cached_property
    def boards(self) -> BoardStore:
        from kairosd.consolidation.board.store import BoardStore

        return BoardStore(self.runs.boards_dir, self.deps.clock.now)

    @cached_property
    def board_ops(self) -> BoardOperations:
        from kairosd.consolidation.board.ops import BoardOperations

        return BoardOperations(self.boards, self.deps.clock.now, self.deps.events)

    async def start(self) -> None:
        """Settle or re-adopt the runs a previous kairosd left running. Call after the registry recovered."""
        await self.runs.readopt()

    async def stop(self) -> None:
        """At kairosd's shutdown: stop watching. The workers go on; the next start settles them."""
        self._closing = True
        self._reads.shutdown()
        await self.runs.stop_watching()

    # ---- requests --------------------------------------------------------------------------------

    async def request(self, req: ConsolidationRequest) -> dict[str, Any]:
        """Decide on one request (the gates in order); start, coalesce or skip it. The decision."""
        if self._closing:
            raise UnavailableError("kairosd is shutting down; not consolidating now")
        reason = gates.check_enabled(self.deps.config.enabled, self.deps.config.switched_off, req.consolidate)
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "enabled", reason)
        reason = gates.check_not_spawned(req.spawned, self._own_task(req.session_id))
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "not_spawned", reason)
        count, cwd_seen, problem = await self._count_turns(req)
        if problem is not None:
            # Named for what stopped it: a missing transcript is not "too few turns" (issue 24, item 14).
            return await self._decide(req, None, SKIPPED, "transcript", problem)
        reason = gates.check_user_turns(count, self.deps.config.min_user_turns)
        if reason is not None:
            return await self._decide(req, None, SKIPPED, "user_turns", reason)
        cwd = req.cwd or cwd_seen
        if cwd is None:
            return await self._decide(req, None, SKIPPED, "project", "no cwd given and the transcript names none")
        project, exists = await asyncio.to_thread(_project_of, cwd)
        if not exists:
            why = f"the project folder does not exist: {project}"
            return await self._decide(req, project, SKIPPED, "project", why)
        async with self._project_lock(project):  # the interval and lock gates, and the start, as one step
            minutes = self.deps.config.min_interval_minutes
            reason = gates.check_interval(self._last_start(project), self.deps.clock.now(), minutes)
            # The interval keeps hooks from consolidating a project at every session end; a person
            # asking by hand has decided it is worth a run now. A run going on still coalesces.
            if reason is not None and not req.force:
                return await self._decide(req, project, SKIPPED, "interval", reason)
            return await self._start_or_coalesce(req, project)

    async def _start_or_coalesce(self, req: ConsolidationRequest, project: str) -> dict[str, Any]:
        run = self.running.get(project)
        if run is not None:
            run.followers.append(req.session_id)
            detail = f"a run for this project is going on ({run.task_id}); coalesced into it"
            # Another transcript, or another session in the same one (opencode keeps all in one database).
            if req.transcript_path and (req.transcript_path != run.transcript or req.session_id != run.session):
                self.pending[project] = req
                detail += "; this session's transcript follows when it ends"
            return await self._decide(req, project, COALESCED, "lock", detail, run.task_id)
        seen = (req.session_id, req.transcript_path, await asyncio.to_thread(_fingerprint, req.transcript_path))
        if seen[2] is not None and self._last_run_of.get(project) == seen:
            why = "this session's transcript was consolidated already and has not changed since (a repeated end)"
            return await self._decide(req, project, SKIPPED, "lock", why)
        mode = self.deps.config.mode
        bound = OFFLINE_BOUND_S + (self.deps.config.agent_timeout if mode != "offline" else 0.0)
        try:
            record = await self.runs.launch(req, project, bound)
        except OSError as exc:
            return await self._decide(req, project, FAILED, None, f"cannot start the worker: {exc.strerror or exc}")
        self._last_run_of[project] = seen
        self._last_run_of.move_to_end(project)
        while len(self._last_run_of) > LAST_RUNS_KEPT:
            self._last_run_of.popitem(last=False)
        started = f"consolidation started ({self.deps.config.mode})"
        return await self._decide(req, project, STARTED, None, started, record.id)

    @contextlib.asynccontextmanager
    async def _project_lock(self, project: str) -> AsyncIterator[None]:
        """Hold ``project``'s lock; the entry goes when nobody holds or waits for it."""
        lock, users = self._project_locks.setdefault(project, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._project_locks[project]

    @property
    def project_locks(self) -> int:
        """Project locks held or waited for now."""
        return len(self._project_locks)

    async def _follow_up(self, project: str) -> None:
        """A run of ``project`` was settled: start its pending follow-up, if any."""
        follow_up = self.pending.pop(project, None)
        if follow_up is not None and not self._closing:
            async with self._project_lock(project):
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
            "at": self.deps.clock.now().isoformat(),
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
        # Published before the file write yields: a fast run must not be reported finished before started.
        self.deps.events.publish(f"consolidation_{outcome}", **{k: v for k, v in decision.items() if k != "at"})
        try:
            await asyncio.to_thread(self._log_decision, decision)
        except OSError as exc:
            log.warning("cannot record the consolidation decision: %s", exc)
        if outcome == SKIPPED:
            log.info("consolidation of %s session %s skipped (%s): %s", req.agent, req.session_id, gate, detail)
        answer: dict[str, Any] = {"status": outcome, "gate": gate, "reason": detail, "project": project}
        if run is not None:
            answer["run"] = view(self.deps.registry.get(run), turns=False)
        return answer

    def _log_decision(self, decision: dict[str, Any]) -> None:
        self.decisions.append([decision])
        if self.decisions.lines > DECISIONS_KEEP * 2:
            self.decisions.rewrite(self.decisions.read()[-DECISIONS_KEEP:])

    async def _count_turns(self, req: ConsolidationRequest) -> tuple[int, str | None, str | None]:
        """(human turns, up to the minimum; the cwd the transcript names; a problem reading it).

        An agent that writes its transcript after its SessionEnd hook (Copilot CLI writes
        ``events.jsonl`` then) is given ``late_transcript_s`` for the file to appear and
        reach the minimum, polled, before the gate decides: otherwise its sessions are
        read one turn short, or not at all the first time.
        """
        count, cwd, problem = await self._count_once(req)
        if req.agent not in LATE_TRANSCRIPT_AGENTS:
            return count, cwd, problem
        waited = 0.0
        while (problem is not None or count < self.deps.config.min_user_turns) and waited < self.late_transcript_s:
            await asyncio.sleep(LATE_TRANSCRIPT_POLL_S)
            waited += LATE_TRANSCRIPT_POLL_S
            count, cwd, problem = await self._count_once(req)
        return count, cwd, problem

    async def _count_once(self, req: ConsolidationRequest) -> tuple[int, str | None, str | None]:
        path = req.transcript_path
        if path is None:
            return 0, None, "no transcript (transcript_path not given)"
        from kairosd.consolidation.transcripts.read import AGENT_FORMATS, count_human_turns

        hint = AGENT_FORMATS.get(req.agent)
        stop_at = self.deps.config.min_user_turns
        try:
            count, stats = await self._reads.run(
                count_human_turns, path, hint, stop_at, GATE_READ_BYTES, req.session_id
            )
        except FileNotFoundError:
            return 0, None, f"transcript not found: {path}"
        except IsADirectoryError:
            return 0, None, f"the transcript is a folder: {path}"
        except TimeoutError:
            return 0, None, f"reading the transcript {path} took over {READ_TIMEOUT_S:g}s; not consolidated"
        except OSError as exc:
            return 0, None, f"cannot read the transcript {path}: {exc.strerror or exc}"
        return count, stats.cwd, None

    def _own_task(self, session_id: str) -> str | None:
        """The registry task whose agent session this is (kairos' own run), if any."""
        for record in self.deps.registry.list_tasks():
            if record.agent_session_id == session_id:
                return record.id
        return None

    def _last_start(self, project: str) -> datetime | None:
        records = self.deps.registry.list_tasks()
        starts = [r.created_at for r in records if r.kind is JobKind.CONSOLIDATION and r.cwd == project]
        return max(starts, default=None)

    # ---- reading runs and status -----------------------------------------------------------------

    async def run_info(self, task_id: str) -> dict[str, Any]:
        return await self.runs.run_info(task_id)

    def _result_path(self, task_id: str) -> Path:
        return self.runs.result_path(task_id)

    def status(self) -> dict[str, Any]:
        config = self.deps.config
        return {
            "enabled": config.enabled and not gates.switched_off(self.deps.environ.get(gates.ENV_SWITCH)),
            "mode": config.mode,
            "min_interval_minutes": config.min_interval_minutes,
            "min_user_turns": config.min_user_turns,
            "running": {project: run.task_id for project, run in self.running.items()},
            "pending": {project: req.session_id for project, req in self.pending.items()},
            "recent": list(self.recent)[-20:],
        }

    # ---- the board: see .board.ops --------------------------------------------------------------

    def project_for(self, cwd: str | None) -> str:
        return self.board_ops.project_for(cwd)

    async def board(self, cwd: str | None) -> dict[str, Any]:
        return await self.board_ops.board(cwd)

    async def add_entry(self, cwd: str | None, text: str, kind: str | None) -> dict[str, Any]:
        return await self.board_ops.add_entry(cwd, text, kind)

    async def remove_entry(self, cwd: str | None, entry_id: str) -> dict[str, Any]:
        return await self.board_ops.remove_entry(cwd, entry_id)

    async def prune(self, cwd: str | None) -> dict[str, Any]:
        return await self.board_ops.prune(cwd)

    async def history(self, cwd: str | None, limit: int) -> dict[str, Any]:
        return await self.board_ops.history(cwd, limit)

    def board_context(self, cwd: str | None) -> str | None:
        """The board of the project ``cwd`` is in, rendered for a starting session; None if empty. Never raises."""
        return self.board_ops.board_context(cwd)


class _ReadPool:
    """Reads of named files, each on a daemon thread of its own, with a bound on how many and how long.

    Daemon threads, not an executor: an executor's threads are joined at interpreter exit, so one
    read stuck in the kernel (a dead network mount) would hold kairosd's exit.
    """

    def __init__(self, in_flight: int) -> None:
        self._in_flight = in_flight
        self._busy = 0
        self._closed = False

    async def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise UnavailableError("kairosd is shutting down; not reading transcripts now")
        if self._busy >= self._in_flight:
            raise UnavailableError(
                f"{self._in_flight} transcript reads are going on already; try again when they are done"
            )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()

        def settle(result: _T | None, error: BaseException | None) -> None:
            self._busy -= 1
            if future.done():
                return  # timed out or cancelled: nobody waits for it any more
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)  # type: ignore[arg-type]

        def work() -> None:
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the waiting request, never lost in the thread
                with contextlib.suppress(RuntimeError):  # the loop is closed: kairosd has stopped
                    loop.call_soon_threadsafe(settle, None, exc)
                return
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result, None)

        self._busy += 1
        threading.Thread(target=work, name="kairos-transcript-read", daemon=True).start()
        return await asyncio.wait_for(future, READ_TIMEOUT_S)

    def shutdown(self) -> None:
        """Take no more reads; one still going on is abandoned, not waited for."""
        self._closed = True
