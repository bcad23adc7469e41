"""The background task registry: start, follow up, wait for, cancel and recover background work.

How a task runs:

* ``start`` checks the request (depth, parent, permissions, the adapter's
  command line) before anything exists, so a refusal is a clean KairosError and
  leaves no record. Then the record is written durably as ``running`` (and
  ``queued``) and a turn is launched.
* A turn waits for a concurrency slot (:class:`~kairosd.registry.slots.Slots`),
  is written durably as started, then runs its process in its own group with
  ``KAIROS_TASK_ID``, ``KAIROS_TASK_DEPTH``, ``KAIROS_SESSION`` and
  ``KAIROS_SPAWNED=1``. Each output line goes to the task log and out as a
  ``task_notification``; what the adapter makes of it updates the progress
  (``task_progress``). The outcome ends the turn: ``idle`` for an agent that can
  resume (a ``send`` resumes the same agent session and takes a slot again),
  else ``completed`` or ``failed``.
* Waiting on a descendant lends the slot (the starvation rule): while a task
  whose turn holds a slot waits (:meth:`Registry.wait` with ``waiter``, the
  caller's ``KAIROS_TASK_ID``) on one of its own descendants, it is idle, so
  that descendant may run on its slot even when the cap is reached; the turns
  actually working never outnumber ``max_concurrent``, and parents waiting on
  children can never hold every slot while the children queue. The loan ends
  with the descendant's turn (the slot goes back) or with the wait (a timeout:
  the descendant keeps running and counts on its own, above the cap if need be,
  and nothing new starts until the count is under it). ``status`` reports the
  slots lent out. See :mod:`~kairosd.registry.slots`.
* ``cancel`` reaches every descendant: each running group gets SIGTERM, then
  SIGKILL after the grace; queued and idle ones just end ``cancelled``.
* At start-up (:meth:`Registry.recover`) a record still ``running`` belonged to
  a daemon that died: it becomes ``interrupted``, its leftover process group
  (if that very process still exists) is stopped, and it is never re-run.
* Detached work (:meth:`Registry.record_external`): a process its owner starts
  itself in a new session, meant to outlive kairosd (memory consolidation). The
  registry records it, cancels it on request, and leaves it alone on shutdown
  and at start-up; the owner reports its pid and its end.

Every change is a ``task_updated`` event carrying only the changed fields
(``task_started`` carries the whole record). Times come from the injected clock.
This module holds the state and the order of things; the rules it applies are in
:mod:`~kairosd.registry.rules` (validation, depth, permissions, turn outcomes),
:mod:`~kairosd.registry.recovery` and :mod:`~kairosd.registry.follow`.

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from kairosd.agents.base import AgentAdapter, Command, TurnRequest
from kairosd.clock import Clock
from kairosd.errors import ConflictError, KairosError, NotFoundError, UnavailableError, UsageError
from kairosd.events import EventBus
from kairosd.registry import recovery, rules, tasklog
from kairosd.registry.follow import Followers
from kairosd.registry.limits import Limits
from kairosd.registry.model import (
    MAX_LINE_CHARS,
    MAX_RESPONSE_CHARS,
    MAX_TURNS_KEPT,
    PermissionSet,
    ProgressInfo,
    TaskRecord,
    TaskStatus,
    Turn,
    clip,
    new_record_id,
    view,
)
from kairosd.registry.persist import RecordStore
from kairosd.registry.rules import AGENT_KINDS, AdapterFor, AgentPolicy, PolicyFor, StartSpec
from kairosd.registry.runner import ProcessResult, ProcessRun, ProcessSpec
from kairosd.registry.slots import Slots

log = logging.getLogger(__name__)

# Re-exported: callers build a StartSpec and an AgentPolicy next to the Registry.
__all__ = ["AdapterFor", "AgentPolicy", "PolicyFor", "Registry", "StartSpec"]


@dataclass
class _Live:
    """A task with a turn in flight (queued or running)."""

    command: Command
    adapter: AgentAdapter | None
    handle: asyncio.Task[None] | None = None
    process: ProcessRun | None = None
    cancel_requested: bool = False
    stopping: bool = False
    log_fd: int | None = None
    seq: int = 0
    tool_calls: int = 0  # this turn's
    session_seen: str | None = None  # a session id an output line announced


class Registry:
    def __init__(
        self,
        store: RecordStore,
        logs_dir: Path,
        clock: Clock,
        events: EventBus,
        adapter_for: AdapterFor,
        limits: Limits | None = None,
        environ: Mapping[str, str] | None = None,
        policy_for: PolicyFor | None = None,
    ) -> None:
        self._store = store
        self._logs_dir = logs_dir
        self._clock = clock
        self._events = events
        self._adapter_for = adapter_for
        self._policy_for = policy_for
        self.limits = limits or Limits()
        self._environ = None if environ is None else dict(environ)
        self.slots = Slots(self.limits.max_concurrent)
        self._records: dict[str, TaskRecord] = {}
        self._live: dict[str, _Live] = {}
        self._cancelling: set[str] = set()
        self._followers = Followers()
        self._changed = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()
        self._turns: set[asyncio.Task[None]] = set()  # turn coroutines, until their end is recorded
        self._closing = False

    # ---- reading -----------------------------------------------------------

    def get(self, task_id: str) -> TaskRecord:
        record = self._records.get(task_id)
        if record is None:
            raise NotFoundError(f"no background task {task_id!r} (see: kairos task list)")
        return record

    def list_tasks(self, status: TaskStatus | None = None) -> list[TaskRecord]:
        """Newest first."""
        records = [r for r in self._records.values() if status is None or r.status is status]
        return sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)

    def find_by_run(self, run_id: str) -> TaskRecord | None:
        """The record a scheduled run started (its idempotency key), if any."""
        return next((r for r in self._records.values() if r.run_id == run_id), None)

    def children(self, task_id: str) -> list[TaskRecord]:
        return [r for r in self._records.values() if r.parent_id == task_id]

    def status(self) -> dict[str, Any]:
        counts = {s.value: 0 for s in TaskStatus}
        for record in self._records.values():
            counts[record.status.value] += 1
        return {
            "tasks": counts,
            "slots": {
                "limit": self.slots.limit,
                "in_use": self.slots.in_use,
                "waiting": self.slots.waiting,
                "lent": self.slots.lent,  # held by tasks waiting on a descendant that runs on them
            },
            "max_depth": self.limits.max_depth,
        }

    def log_path(self, task_id: str) -> Path:
        return Path(self.get(task_id).log_path)

    # ---- starting ------------------------------------------------------------

    async def start(self, spec: StartSpec) -> TaskRecord:
        """Create a task and launch its first turn; refusals raise before anything is recorded."""
        if self._closing:
            raise UnavailableError("kairosd is shutting down; no new tasks")
        kind = spec.kind
        prompt = rules.check_prompt(spec.prompt, required=kind in AGENT_KINDS)
        cwd = rules.check_cwd(spec.cwd)
        adapter: AgentAdapter | None = None
        policy = AgentPolicy()
        if kind in AGENT_KINDS:
            if not spec.agent:
                raise UsageError("an agent task needs an agent name (e.g. --agent claude)")
            policy = await self._policy(spec.agent, cwd)  # raises for an unknown name, listing the known ones
            adapter = self._adapter_for(policy.cli or spec.agent)
        # After the await above: a parent cancelled, or a shutdown begun, meanwhile is seen here.
        if self._closing:
            raise UnavailableError("kairosd is shutting down; no new tasks")
        parent = self._parent(spec)
        depth = rules.depth_for(spec, parent, self.limits.max_depth)
        timeout = spec.timeout_s if spec.timeout_s is not None else policy.timeout_s
        timeout_s = rules.check_timeout(timeout, self.limits.turn_timeout_s)
        permissions = rules.effective_permissions(spec.permissions, [policy.ceiling, policy.restrictions], parent)
        model = spec.model or policy.model
        record_id = new_record_id()
        if adapter is not None:
            request = TurnRequest(
                prompt=prompt,
                cwd=cwd,
                model=model,
                permissions=permissions,
                agent_definition=policy.agent_definition,
            )
            command = adapter.command(request)  # may refuse what the CLI cannot do
            argv = None
        else:
            if not spec.argv or not all(isinstance(a, str) and a for a in spec.argv):
                raise UsageError("a shell task needs a command: a non-empty list of non-empty strings")
            argv = list(spec.argv)
            command = Command(argv=argv, stdin=prompt)
        now = self._clock.now()
        record = TaskRecord(
            id=record_id,
            kind=kind,
            parent_id=parent.id if parent is not None else None,
            depth=depth,
            agent=spec.agent if kind in AGENT_KINDS else None,
            cli=(policy.cli or spec.agent) if kind in AGENT_KINDS else None,
            argv=argv,
            prompt=prompt,
            cwd=cwd,
            session=spec.session,
            model=model,
            mode=spec.mode,
            multi_turn=spec.multi_turn,
            status=TaskStatus.RUNNING,
            queued=True,
            permissions=PermissionSet.of(permissions),
            timeout_s=timeout_s,
            turns=[Turn(number=1, prompt=prompt, queued_at=now)],
            log_path=str(self._logs_dir / f"{record_id}.log"),
            scheduled_task_id=spec.scheduled_task_id,
            run_id=spec.run_id,
            created_at=now,
            updated_at=now,
        )
        await self._create(record)
        log.info("task %s started: %s %s, depth %d", record_id, kind.value, spec.agent or argv, depth)
        self._launch(record_id, command, adapter)
        return self._records[record_id]

    async def _create(self, record: TaskRecord) -> None:
        """Write a new record durably and announce it; a record that cannot be written never existed."""
        self._records[record.id] = record
        try:
            await self._save(record.id)
        except OSError as exc:
            del self._records[record.id]
            raise KairosError(f"cannot record the task: {exc.strerror or exc}") from exc
        self._events.publish("task_started", task_id=record.id, session=record.session, task=view(record))

    async def _policy(self, name: str, cwd: str | None) -> AgentPolicy:
        if self._policy_for is None:
            return AgentPolicy()
        # In a thread: resolving a name may search the project's and the user's agent folders.
        return await asyncio.to_thread(self._policy_for, name, cwd)

    def _parent(self, spec: StartSpec) -> TaskRecord | None:
        """The parent record, if the starter is a task this registry knows; refused if it is ending."""
        parent = self._records.get(spec.parent_id) if spec.parent_id else None
        if parent is not None:
            if parent.terminal:
                raise ConflictError(f"parent task {parent.id} is {parent.status.value}; it cannot start children")
            if parent.id in self._cancelling:
                raise ConflictError(f"parent task {parent.id} is being cancelled; it cannot start children")
        return parent

    # ---- detached processes ----------------------------------------------------

    async def record_external(self, spec: StartSpec) -> TaskRecord:
        """Record work whose process the caller starts itself, detached (it outlives kairosd).

        The record is written durably as ``running`` with ``detached`` set before the process
        exists (as :meth:`start` does), so a crash between the two leaves a record that says so.
        The caller then starts the process with its output going to ``log_path``, reports its pid
        (:meth:`attach_process`) and finally its end (:meth:`finish_external`). kairosd never
        stops such a process on shutdown and :meth:`recover` leaves it running; :meth:`cancel`
        still ends its group. No slot is taken: detached work is not a turn of this registry.
        """
        if self._closing:
            raise UnavailableError("kairosd is shutting down; no new tasks")
        prompt = rules.check_prompt(spec.prompt, required=False)
        cwd = rules.check_cwd(spec.cwd)
        timeout_s = rules.check_timeout(spec.timeout_s, self.limits.turn_timeout_s)
        record_id = new_record_id()
        now = self._clock.now()
        record = TaskRecord(
            id=record_id,
            kind=spec.kind,
            agent=spec.agent,
            cli=spec.agent,
            argv=list(spec.argv) if spec.argv else None,
            prompt=prompt,
            cwd=cwd,
            session=spec.session,
            model=spec.model,
            mode=spec.mode,
            multi_turn=False,
            status=TaskStatus.RUNNING,
            queued=False,
            timeout_s=timeout_s,
            turns=[Turn(number=1, prompt=prompt, queued_at=now, started_at=now)],
            log_path=str(self._logs_dir / f"{record_id}.log"),
            detached=True,
            created_at=now,
            updated_at=now,
        )
        await self._create(record)
        log.info("task %s recorded: %s, detached", record_id, spec.kind.value)
        return record

    async def attach_process(self, task_id: str, pid: int) -> TaskRecord:
        """The detached process of ``task_id`` runs as ``pid`` (it leads its own group)."""
        started: float | None = None
        with contextlib.suppress(psutil.Error):
            started = psutil.Process(pid).create_time()
        return await self._update(task_id, pid=pid, pid_started=started)

    async def finish_external(
        self,
        task_id: str,
        *,
        ok: bool,
        error: str | None = None,
        response: str | None = None,
        exit_code: int | None = None,
    ) -> TaskRecord:
        """End a detached task: ``completed`` if ``ok``, else ``failed``. A task already ended
        (cancelled meanwhile) is left as it is and returned."""
        record = self.get(task_id)
        if record.terminal or record.status is not TaskStatus.RUNNING:
            return record
        now = self._clock.now()
        fields: dict[str, Any] = {"finished_at": now, "ok": ok, "error": error, "exit_code": exit_code}
        fields["response"] = clip(response, MAX_RESPONSE_CHARS)
        turns = [*record.turns[:-1], record.turns[-1].model_copy(update=fields)] if record.turns else []
        return await self._update(
            task_id,
            status=TaskStatus.COMPLETED if ok else TaskStatus.FAILED,
            turns=turns,
            error=error,
            exit_code=exit_code,
            pid=None,
            pid_started=None,
            finished_at=now,
        )

    # ---- follow-ups, closing ------------------------------------------------

    async def send(self, task_id: str, message: str) -> TaskRecord:
        """Resume an idle (or interrupted) agent task's session with a follow-up prompt."""
        if self._closing:
            raise UnavailableError("kairosd is shutting down; no new turns")
        record = self.get(task_id)
        message = rules.check_prompt(message, required=True)
        if record.kind not in AGENT_KINDS:
            raise ConflictError(f"task {task_id} is a {record.kind.value} task; only agent tasks take follow-ups")
        if record.terminal:
            raise ConflictError(f"task {task_id} is {record.status.value}; a follow-up needs an idle task")
        if record.status is TaskStatus.RUNNING:
            raise ConflictError(
                f"task {task_id} is still running turn {record.turns[-1].number}; "
                f"wait for it first (kairos task wait {task_id})"
            )
        assert record.agent is not None
        policy = await self._policy(record.agent, record.cwd)
        if self._records[task_id].status is TaskStatus.RUNNING or self._records[task_id].terminal:
            # Another send (or a cancel) won the race during the await above.
            raise ConflictError(f"task {task_id} is {self._records[task_id].status.value} now; not sending")
        adapter = self._adapter_for(record.cli or policy.cli or record.agent)
        if not adapter.supports_resume:
            raise ConflictError(f"agent {record.agent} cannot resume a session; start a new task instead")
        if not record.agent_session_id:
            raise ConflictError(f"task {task_id} has no agent session id to resume; start a new task instead")
        request = TurnRequest(
            prompt=message,
            cwd=record.cwd,
            model=record.model,
            resume_session=record.agent_session_id,
            permissions=record.permissions.to_permissions(),
            agent_definition=policy.agent_definition,
        )
        command = adapter.command(request)
        number = (record.turns[-1].number if record.turns else 0) + 1
        turns = [*record.turns, Turn(number=number, prompt=message, queued_at=self._clock.now())][-MAX_TURNS_KEPT:]
        await self._update(
            task_id, status=TaskStatus.RUNNING, queued=True, turns=turns, error=None, exit_code=None, finished_at=None
        )
        self._launch(task_id, command, adapter)
        return self._records[task_id]

    async def close(self, task_id: str) -> TaskRecord:
        """End an idle multi-turn task: it is ``completed`` and takes no more follow-ups."""
        record = self.get(task_id)
        if record.status is not TaskStatus.IDLE:
            raise ConflictError(f"task {task_id} is {record.status.value}; only an idle task can be closed")
        return await self._update(task_id, status=TaskStatus.COMPLETED, finished_at=self._clock.now())

    # ---- cancelling ------------------------------------------------------------

    async def cancel(self, task_id: str) -> list[TaskRecord]:
        """Cancel the task and every descendant still going; returns those it cancelled (the task first)."""
        record = self.get(task_id)
        if record.terminal:
            raise ConflictError(f"task {task_id} is already {record.status.value}; there is nothing to cancel")
        targets = [task_id, *self._descendants(task_id)]
        self._cancelling.update(targets)
        try:
            await asyncio.gather(*(self._cancel_one(t) for t in targets))
        finally:
            self._cancelling.difference_update(targets)
        log.info("cancelled task %s and %d descendant(s)", task_id, len(targets) - 1)
        return [self._records[t] for t in targets]

    def _descendants(self, task_id: str) -> list[str]:
        found: list[str] = []
        frontier = [task_id]
        while frontier:
            parent = frontier.pop()
            for child in self.children(parent):
                if child.id not in found and child.id != task_id:
                    found.append(child.id)
                    frontier.append(child.id)
        return [t for t in found if not self._records[t].terminal]

    async def _cancel_one(self, task_id: str) -> None:
        live = self._live.get(task_id)
        if live is None:
            record = self._records[task_id]
            if record.detached and record.status is TaskStatus.RUNNING:
                # Not our turn, but still ours to stop: the same checks as a leftover (pid and start time).
                await recovery.stop_leftover(record, self.limits.kill_grace_s)
            if not self._records[task_id].terminal:
                await self._update(task_id, status=TaskStatus.CANCELLED, finished_at=self._clock.now())
            return
        live.cancel_requested = True
        await self._halt(live)
        if not self._records[task_id].terminal and task_id not in self._live:
            # The turn ended on its own just as the cancel came; the task still ends cancelled.
            await self._update(task_id, status=TaskStatus.CANCELLED, finished_at=self._clock.now())

    async def _halt(self, live: _Live) -> None:
        """Stop a turn in flight (its group: TERM, grace, KILL) and wait until it has recorded its end."""
        if live.process is not None:
            await live.process.stop()
        elif live.handle is not None:
            live.handle.cancel()  # still waiting for a slot
        if live.handle is not None:
            await asyncio.wait({live.handle})

    # ---- waiting ------------------------------------------------------------------

    async def wait(
        self,
        task_id: str,
        timeout: float | None,  # noqa: ASYNC109 - a bound on a long-poll, returned as "timed out"
        since_turn: int | None = None,
        waiter: str | None = None,
    ) -> tuple[TaskRecord, bool]:
        """Block until the task settles; (record, timed_out).

        Settled: terminal or interrupted; without ``since_turn``, no longer running; with it, a turn
        numbered above ``since_turn`` has finished. ``waiter`` is the task asking (its
        ``KAIROS_TASK_ID``), if any: when ``task_id`` is its descendant, its slot is lent to
        ``task_id`` for as long as this wait lasts. Any other waiter is ignored.
        """
        record = self.get(task_id)
        lending = waiter is not None and self._is_ancestor(waiter, task_id) and self.slots.offer(waiter, task_id)
        try:
            return await self._wait(task_id, record, timeout, since_turn)
        finally:
            if lending:
                assert waiter is not None
                self.slots.withdraw(waiter, task_id)

    def _is_ancestor(self, ancestor: str, task_id: str) -> bool:
        record = self._records.get(task_id)
        for _ in range(self.limits.max_depth + 1):  # a parent chain is never longer than that
            if record is None or record.parent_id is None:
                return False
            if record.parent_id == ancestor:
                return True
            record = self._records.get(record.parent_id)
        return False

    async def _wait(
        self,
        task_id: str,
        record: TaskRecord,
        timeout: float | None,  # noqa: ASYNC109 - see wait()
        since_turn: int | None,
    ) -> tuple[TaskRecord, bool]:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not rules.settled(record, since_turn):
            if self._closing:
                return record, True
            changed = self._changed
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return record, True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()
            record = self.get(task_id)
        return record, False

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # ---- logs ------------------------------------------------------------------------

    def follow(self, task_id: str) -> AsyncIterator[dict[str, Any]]:
        """The task's log lines (``{"seq", "line"}``), then new ones live, until it stops running;
        last comes ``{"end": true, "status": ...}``. NotFoundError at once for an unknown task."""
        path = self.log_path(task_id)
        return self._followers.follow(
            task_id,
            path,
            running=lambda: self._records[task_id].status is TaskStatus.RUNNING,
            status=lambda: self._records[task_id].status.value,
        )

    # ---- one turn --------------------------------------------------------------------

    def _launch(self, task_id: str, command: Command, adapter: AgentAdapter | None) -> None:
        if self._records[task_id].status is not TaskStatus.RUNNING:
            return  # cancelled (with an ancestor) while its start or follow-up was being written
        if self._closing:
            # stop() began while the start was being written: it will not run, and says so.
            error = "kairosd stopped before it started; it was not run"
            self._apply(task_id, {"status": TaskStatus.INTERRUPTED, "queued": False, "error": error})
            self._soon(self._save(task_id))
            return
        live = _Live(command, adapter)
        self._live[task_id] = live
        live.handle = asyncio.create_task(self._turn(task_id, live), name=f"kairos-task-{task_id}")
        self._turns.add(live.handle)
        live.handle.add_done_callback(self._turns.discard)
        self._notify()

    async def _turn(self, task_id: str, live: _Live) -> None:
        try:
            await self.slots.acquire(task_id)
        except asyncio.CancelledError:
            # Only the registry cancels a turn, and only while it waits for a slot (cancel or stop).
            outcome = rules.cut_short(cancelled=live.cancel_requested, when="while it waited for a slot")
            await self._end(task_id, live, outcome, holding_slot=False)
            return
        record = self._records[task_id]
        # No await between taking the slot and setting the process, so cancel() always finds one of the two.
        live.process = ProcessRun(
            self._process_spec(record, live.command),
            functools.partial(self._on_line, task_id, live),
            kill_grace_s=self.limits.kill_grace_s,
            on_spawn=functools.partial(self._on_spawn, task_id),
        )
        ended = False
        try:
            try:
                result = await self._run_process(task_id, live)
                outcome = self._outcome(task_id, live, result)
            except Exception:
                log.exception("task %s: the turn failed inside kairosd", task_id)
                outcome = {"ok": False, "status": TaskStatus.FAILED, "error": "internal error (see the kairosd log)"}
            ended = True
            await self._end(task_id, live, outcome, holding_slot=True)
        finally:
            if not ended:  # cancelled from outside the registry (event loop teardown)
                self._let_go(task_id, live, holding_slot=True)
                self._notify()

    async def _run_process(self, task_id: str, live: _Live) -> ProcessResult:
        assert live.process is not None
        if live.cancel_requested or live.stopping:
            await live.process.stop()  # cancelled between queue and slot: run() returns at once
        record = self._records[task_id]
        path = Path(record.log_path)
        live.seq = await asyncio.to_thread(tasklog.count_lines, path)
        try:
            live.log_fd = tasklog.open_log(path)
        except OSError as exc:
            log.warning("task %s: cannot open its log %s: %s", task_id, path, exc)
        turn = record.turns[-1]
        started = self._clock.now()
        self._log_line(task_id, live, "kairos", f"--- kairos: turn {turn.number} started {started.isoformat()} ---")
        turns = [*record.turns[:-1], turn.model_copy(update={"started_at": started})]
        # Durable before the process exists: a crash from here on leaves a record that says "running".
        await self._update(task_id, queued=False, turns=turns)
        return await live.process.run()

    def _process_spec(self, record: TaskRecord, command: Command) -> ProcessSpec:
        env = dict(os.environ if self._environ is None else self._environ)
        env.update(command.env)
        env.update(
            {
                "KAIROS_TASK_ID": record.id,
                "KAIROS_TASK_DEPTH": str(record.depth),
                "KAIROS_SESSION": record.session or "default",
                # Lets kairos hooks in the command tell a process started by kairos from a user's own.
                "KAIROS_SPAWNED": "1",
            }
        )
        return ProcessSpec(command.argv, env, record.cwd, command.stdin, record.timeout_s)

    def _on_spawn(self, task_id: str, pid: int) -> None:
        started: float | None = None
        with contextlib.suppress(psutil.Error):
            started = psutil.Process(pid).create_time()
        self._apply(task_id, {"pid": pid, "pid_started": started})
        self._soon(self._save(task_id))

    def _on_line(self, task_id: str, live: _Live, stream: str, line: str) -> None:
        self._log_line(task_id, live, stream, line)
        record = self._records[task_id]
        progress = record.progress
        parsed = None
        if stream == "stdout" and live.adapter is not None:
            try:
                parsed = live.adapter.progress(line)
            except Exception:
                log.exception("task %s: the %s adapter failed on an output line", task_id, record.agent)
        if parsed is not None:
            if parsed.tool_call:
                live.tool_calls += 1
            if parsed.session_id:
                live.session_seen = parsed.session_id
            shown = parsed.text or progress.last_line
            updated = ProgressInfo(
                tool_calls=progress.tool_calls + (1 if parsed.tool_call else 0),
                intent=clip(parsed.intent, MAX_LINE_CHARS) if parsed.intent else progress.intent,
                last_line=clip(shown, MAX_LINE_CHARS),
            )
        elif stream == "stdout" and live.adapter is None:
            updated = progress.model_copy(update={"last_line": clip(line, MAX_LINE_CHARS)})
        else:
            return
        if updated != progress:
            # In memory only: progress is saved with the turn's end, not on every line.
            self._records[task_id] = record.model_copy(update={"progress": updated})
            extra = {"tool": parsed.tool_call} if parsed is not None and parsed.tool_call else {}
            self._events.publish(
                "task_progress", task_id=task_id, session=record.session, **updated.model_dump(mode="json"), **extra
            )

    def _log_line(self, task_id: str, live: _Live, stream: str, line: str) -> None:
        if live.log_fd is not None:
            try:
                tasklog.append_line(live.log_fd, line)
            except OSError as exc:
                log.warning("task %s: cannot write its log (%s); not logging this turn further", task_id, exc)
                os.close(live.log_fd)
                live.log_fd = None
        item = {"seq": live.seq, "stream": stream, "line": line}
        live.seq += 1
        session = self._records[task_id].session
        self._events.publish("task_notification", task_id=task_id, session=session, **item)
        self._followers.tell(task_id, item)

    def _outcome(self, task_id: str, live: _Live, result: ProcessResult) -> dict[str, Any]:
        """How the turn ended: turn fields and the task's new status."""
        if live.cancel_requested or live.stopping:
            cut = rules.cut_short(cancelled=live.cancel_requested, when="while it ran")
            return cut | {"exit_code": result.exit_code}
        return rules.turn_outcome(
            self._records[task_id], result, live.adapter, tool_calls=live.tool_calls, session_seen=live.session_seen
        )

    async def _end(self, task_id: str, live: _Live, outcome: dict[str, Any], *, holding_slot: bool) -> None:
        """Record the end of the current turn and the task's new status; let go of the turn."""
        changes = rules.end_changes(self._records[task_id], outcome, self._clock.now(), live.tool_calls)
        number, status = changes["turns"][-1].number, changes["status"]
        self._log_line(task_id, live, "kairos", f"--- kairos: turn {number} ended: {rules.summary(outcome)} ---")
        try:
            # In memory, the slot and the live entry go in one step (no await in between), so whoever
            # a wait() wakes sees the turn fully over: no slot held, a send() may start the next turn.
            self._apply(task_id, changes, notify=False)
        finally:
            self._let_go(task_id, live, holding_slot=holding_slot)
        log.info("task %s: turn %d ended, %s", task_id, number, status.value)
        try:
            await self._save(task_id)
        except OSError:
            log.exception("task %s: cannot record the end of its turn", task_id)
        finally:
            self._notify()  # waiters wake once the end is durable (or could not be made so)

    def _let_go(self, task_id: str, live: _Live, *, holding_slot: bool) -> None:
        """The turn is over: close its log, free its slot, forget it, end log followers."""
        if live.log_fd is not None:
            os.close(live.log_fd)
            live.log_fd = None
        if holding_slot:
            self.slots.release(task_id)
        if self._live.get(task_id) is live:
            del self._live[task_id]
        self._followers.tell(task_id, None)

    # ---- recording -----------------------------------------------------------------------

    def _apply(self, task_id: str, changes: dict[str, Any], *, notify: bool = True) -> TaskRecord:
        """Change the record in memory and publish the changed fields (a patch); wake waiters if ``notify``."""
        old = self._records[task_id]
        new = old.model_copy(update={**changes, "updated_at": self._clock.now()})
        self._records[task_id] = new
        changed = {k for k in changes if getattr(old, k) != getattr(new, k)}
        if changed:
            patch: dict[str, Any] = new.model_dump(mode="json", include=(changed - {"turns"}) | {"updated_at"})
            if "turns" in changed:
                # The latest turn, not the whole history: events stay small.
                patch["turn"] = new.turns[-1].model_dump(mode="json")
                patch["turns_done"] = new.turns_done
                patch["response"] = new.response
            self._events.publish("task_updated", **{"task_id": task_id, "session": new.session, **patch})
            if notify:
                self._notify()
        return new

    async def _update(self, task_id: str, **changes: Any) -> TaskRecord:
        """:meth:`_apply`, then write the record durably."""
        record = self._apply(task_id, changes)
        await self._save(task_id)
        return record

    async def _save(self, task_id: str) -> None:
        # One writer at a time, always the latest state: two writes of one record never land out of order.
        async with self._write_lock:
            record = self._records.get(task_id)
            if record is None:
                return
            write = asyncio.ensure_future(asyncio.to_thread(self._store.save, record))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                await write  # keep the lock until the file is written, then give up
                raise

    def _soon(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(self._quietly(coro))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _quietly(self, coro: Any) -> None:
        try:
            await coro
        except Exception:
            log.exception("writing a task record failed")

    # ---- start-up and shutdown -------------------------------------------------------------

    async def recover(self) -> list[TaskRecord]:
        """Load the records; those left ``running`` by a dead daemon become ``interrupted``.

        Their process groups, if those very processes still run (pid and start time match), are
        stopped: the work is reported, never silently continued or re-run. Returns them.
        """
        records = await asyncio.to_thread(self._store.load_all)
        self._records = {r.id: r for r in records}
        interrupted: list[TaskRecord] = []
        for record in records:
            if record.status is not TaskStatus.RUNNING or record.detached:
                continue  # a detached process outlives kairosd on purpose; its owner settles the record
            await recovery.stop_leftover(record, self.limits.kill_grace_s)
            updated = await self._update(record.id, **recovery.interrupted_changes(record, self._clock.now()))
            log.warning(
                "task %s (%s) was running when kairosd stopped: now interrupted, not re-run (see: kairos task show %s)",
                record.id,
                record.agent or (record.argv or ["?"])[0],
                record.id,
            )
            interrupted.append(updated)
        await self._prune()
        return interrupted

    async def _prune(self) -> None:
        excess = recovery.excess_finished(list(self._records.values()), self.limits.keep_finished)
        for record in excess:
            del self._records[record.id]
            await asyncio.to_thread(recovery.remove_record, self._store, record)
        if excess:
            log.info("pruned %d finished task record(s) beyond the %d kept", len(excess), self.limits.keep_finished)

    async def stop(self) -> None:
        """At daemon shutdown: turns in flight are stopped (TERM, grace, KILL) and become ``interrupted``."""
        self._closing = True
        lives = list(self._live.values())
        if lives:
            log.info("stopping %d background task(s) in flight", len(lives))
        for live in lives:
            live.stopping = True
        await asyncio.gather(*(self._halt(live) for live in lives))
        if self._turns:  # turns that ended just before: let them record it
            await asyncio.gather(*self._turns, return_exceptions=True)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        self._notify()
