"""The background job registry: start, follow up, wait for, cancel and recover background work.

How a task runs:

* ``start`` checks the request (depth, parent, permissions, the adapter's
  command line) before anything exists, so a refusal is a clean KairosError and
  leaves no record. Then the record is written durably as ``running`` (and
  ``queued``) and a turn is launched.
* A turn waits for a concurrency slot (:class:`~kairosd.jobs.slots.Slots`),
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
  slots lent out. See :mod:`~kairosd.jobs.slots`.
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
This module holds the use-cases and the order of things; the parts it drives are
:mod:`~kairosd.jobs.book` (the records, their durable writes, waiting),
:mod:`~kairosd.jobs.turns` (a turn, from its slot to its recorded end),
:mod:`~kairosd.jobs.cancel` (cancelling a tree) and
:mod:`~kairosd.jobs.detached`; the rules it applies are in
:mod:`~kairosd.jobs.rules` (validation, depth, permissions, turn outcomes),
:mod:`~kairosd.jobs.recovery` and :mod:`~kairosd.jobs.follow`.

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from kairosd.agents.base import AgentAdapter, Command, TurnRequest
from kairosd.core.clock import Clock
from kairosd.core.errors import ConflictError, UnavailableError, UsageError
from kairosd.core.events import EventBus
from kairosd.core.ids import resolve_prefix
from kairosd.jobs import detached, recovery, rules
from kairosd.jobs.book import Book
from kairosd.jobs.cancel import CancelReport, Cancels
from kairosd.jobs.follow import Followers
from kairosd.jobs.limits import RegistryLimits
from kairosd.jobs.model import (
    MAX_TURNS_KEPT,
    JobRecord,
    JobStatus,
    PermissionSet,
    Turn,
    new_record_id,
)
from kairosd.jobs.persist import RecordStore
from kairosd.jobs.rules import AGENT_KINDS, AdapterFor, AgentPolicy, PolicyFor, StartSpec
from kairosd.jobs.slots import Slots
from kairosd.jobs.turns import Turns

log = logging.getLogger(__name__)

# Re-exported: callers build a StartSpec and an AgentPolicy next to the Registry.
__all__ = ["AdapterFor", "AgentPolicy", "PolicyFor", "Registry", "StartSpec"]


class Registry:
    def __init__(
        self,
        store: RecordStore,
        logs_dir: Path,
        clock: Clock,
        events: EventBus,
        adapter_for: AdapterFor,
        limits: RegistryLimits | None = None,
        environ: Mapping[str, str] | None = None,
        policy_for: PolicyFor | None = None,
    ) -> None:
        self._store = store
        self._logs_dir = logs_dir
        self._clock = clock
        self._adapter_for = adapter_for
        self._policy_for = policy_for
        self.limits = limits or RegistryLimits()
        self.slots = Slots(self.limits.max_concurrent)
        self._book = Book(store, clock, events)
        self._followers = Followers()
        environ_copy = None if environ is None else dict(environ)
        self._environ = environ_copy  # what agents run with (None: kairosd's own)
        self._turns = Turns(self._book, self.slots, self.limits, self._followers, environ_copy)
        self._cancels = Cancels(self._book, self._turns, self.limits.kill_grace_s)
        self._pruning = False

    # ---- reading -----------------------------------------------------------

    def get(self, task_id: str) -> JobRecord:
        return self._book.get(self.resolve(task_id))

    def resolve(self, task_id: str) -> str:
        """The whole id of the background job ``task_id`` names (a git-style prefix, any case)."""
        return resolve_prefix(task_id, self._book.records, "background job", " (see: kairos task list)")

    def list_tasks(self, status: JobStatus | None = None) -> list[JobRecord]:
        """Newest first."""
        records = [r for r in self._book.records.values() if status is None or r.status is status]
        return sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)

    def find_by_run(self, run_id: str) -> JobRecord | None:
        """The record a scheduled run started (its idempotency key), if any."""
        return next((r for r in self._book.records.values() if r.run_id == run_id), None)

    def children(self, task_id: str) -> list[JobRecord]:
        return self._book.children(task_id)

    def status(self) -> dict[str, Any]:
        counts = {s.value: 0 for s in JobStatus}
        for record in self._book.records.values():
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

    async def start(self, spec: StartSpec) -> JobRecord:
        """Create a task and launch its first turn; refusals raise before anything is recorded."""
        if self._book.closing:
            raise UnavailableError("kairosd is shutting down; no new tasks")
        kind = spec.kind
        prompt = rules.check_prompt(spec.prompt, required=kind in AGENT_KINDS)
        cwd = rules.check_cwd(spec.cwd)
        adapter: AgentAdapter | None = None
        policy = AgentPolicy()
        if kind in AGENT_KINDS:
            if not spec.agent:
                raise UsageError("an agent job needs an agent name (e.g. --agent claude)")
            policy = await self._policy(spec.agent, cwd)  # raises for an unknown name, listing the known ones
            adapter = self._adapter_for(policy.cli or spec.agent)
            rules.check_binary(policy.cli or spec.agent, adapter, self._environ)
        # After the await above: a parent cancelled, or a shutdown begun, meanwhile is seen here.
        if self._book.closing:
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
        record = JobRecord(
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
            status=JobStatus.RUNNING,
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
        await self._book.create(record)
        log.info("task %s started: %s %s, depth %d", record_id, kind.value, spec.agent or argv, depth)
        self._turns.launch(record_id, command, adapter)
        self._maybe_prune()
        return self._book.records[record_id]

    async def check_agent(self, name: str, cwd: str | None) -> None:
        """Raise unless ``name`` could run now: a known agent (or definition), its CLI found, ``cwd`` a folder."""
        rules.check_cwd(cwd)
        policy = await self._policy(name, cwd)  # raises for an unknown name, listing the known ones
        rules.check_binary(policy.cli or name, self._adapter_for(policy.cli or name), self._environ)

    async def _policy(self, name: str, cwd: str | None) -> AgentPolicy:
        if self._policy_for is None:
            return AgentPolicy()
        # In a thread: resolving a name may search the project's and the user's agent folders.
        return await asyncio.to_thread(self._policy_for, name, cwd)

    def _parent(self, spec: StartSpec) -> JobRecord | None:
        """The parent record, if the starter is a task this registry knows; refused if it is ending."""
        parent = self._book.records.get(spec.parent_id) if spec.parent_id else None
        if parent is not None:
            if parent.terminal:
                raise ConflictError(f"parent task {parent.id} is {parent.status.value}; it cannot start children")
            if self._cancels.pending(parent.id):
                raise ConflictError(f"parent task {parent.id} is being cancelled; it cannot start children")
        return parent

    # ---- detached processes ----------------------------------------------------

    async def record_external(self, spec: StartSpec) -> JobRecord:
        """Record work whose process the caller starts itself, detached (it outlives kairosd).

        The record is written durably as ``running`` with ``detached`` set before the process
        exists (as :meth:`start` does), so a crash between the two leaves a record that says so.
        The caller then starts the process with its output going to ``log_path``, reports its pid
        (:meth:`attach_process`) and finally its end (:meth:`finish_external`). kairosd never
        stops such a process on shutdown and :meth:`recover` leaves it running; :meth:`cancel`
        still ends its group. No slot is taken: detached work is not a turn of this registry.
        """
        return await detached.record(self._book, spec, self._logs_dir, self.limits.turn_timeout_s)

    async def attach_process(self, task_id: str, pid: int) -> JobRecord:
        """The detached process of ``task_id`` runs as ``pid`` (it leads its own group)."""
        return await detached.attach(self._book, task_id, pid)

    async def finish_external(
        self,
        task_id: str,
        *,
        ok: bool,
        error: str | None = None,
        response: str | None = None,
        exit_code: int | None = None,
    ) -> JobRecord:
        """End a detached task: ``completed`` if ``ok``, else ``failed``. A task already ended
        (cancelled meanwhile) is left as it is and returned."""
        return await detached.finish(self._book, task_id, ok=ok, error=error, response=response, exit_code=exit_code)

    # ---- follow-ups, closing ------------------------------------------------

    async def send(self, task_id: str, message: str) -> JobRecord:
        """Resume an idle (or interrupted) agent job's session with a follow-up prompt."""
        if self._book.closing:
            raise UnavailableError("kairosd is shutting down; no new turns")
        record = self.get(task_id)
        message = rules.check_prompt(message, required=True)
        if record.kind not in AGENT_KINDS:
            raise ConflictError(f"job {task_id} is a {record.kind.value} job; only agent jobs take follow-ups")
        if record.terminal:
            raise ConflictError(f"task {task_id} is {record.status.value}; a follow-up needs an idle task")
        if record.status is JobStatus.RUNNING:
            raise ConflictError(
                f"task {task_id} is still running turn {record.turns[-1].number}; "
                f"wait for it first (kairos task wait {task_id})"
            )
        assert record.agent is not None
        policy = await self._policy(record.agent, record.cwd)
        if self._book.records[task_id].status is JobStatus.RUNNING or self._book.records[task_id].terminal:
            # Another send (or a cancel) won the race during the await above.
            raise ConflictError(f"task {task_id} is {self._book.records[task_id].status.value} now; not sending")
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
            task_id, status=JobStatus.RUNNING, queued=True, turns=turns, error=None, exit_code=None, finished_at=None
        )
        self._turns.launch(task_id, command, adapter)
        return self._book.records[task_id]

    async def close(self, task_id: str) -> JobRecord:
        """End an idle multi-turn task: it is ``completed`` and takes no more follow-ups."""
        record = self.get(task_id)
        if record.status is not JobStatus.IDLE:
            raise ConflictError(f"task {task_id} is {record.status.value}; only an idle task can be closed")
        return await self._update(task_id, status=JobStatus.COMPLETED, finished_at=self._clock.now())

    # ---- cancelling ------------------------------------------------------------

    async def cancel(self, task_id: str) -> list[JobRecord]:
        """Cancel the task and every descendant still going; returns those it cancelled (the task first)."""
        return (await self._cancels.cancel(task_id)).cancelled

    async def cancel_report(self, task_id: str) -> CancelReport:
        """:meth:`cancel`, also saying which tasks ignored SIGTERM and were killed after the grace."""
        return await self._cancels.cancel(task_id)

    # ---- waiting ------------------------------------------------------------------

    async def wait(
        self,
        task_id: str,
        timeout: float | None,  # noqa: ASYNC109 - a bound on a long-poll, returned as "timed out"
        since_turn: int | None = None,
        waiter: str | None = None,
    ) -> tuple[JobRecord, bool]:
        """Block until the task settles; (record, timed_out).

        Settled: terminal or interrupted; without ``since_turn``, no longer running; with it, a turn
        numbered above ``since_turn`` has finished. ``waiter`` is the task asking (its
        ``KAIROS_TASK_ID``), if any: when ``task_id`` is its descendant, its slot is lent to
        ``task_id`` for as long as this wait lasts. Any other waiter is ignored.
        """
        record = self.get(task_id)
        lending = (
            waiter is not None
            and self._book.is_ancestor(waiter, task_id, self.limits.max_depth)
            and self.slots.offer(waiter, task_id)
        )
        try:
            return await self._book.wait_settled(task_id, record, timeout, since_turn)
        finally:
            if lending:
                assert waiter is not None
                self.slots.withdraw(waiter, task_id)

    # ---- logs ------------------------------------------------------------------------

    def follow(self, task_id: str) -> AsyncIterator[dict[str, Any]]:
        """The task's log lines (``{"seq", "line"}``), then new ones live, until it stops running;
        last comes ``{"end": true, "status": ...}``. NotFoundError at once for an unknown task."""
        path = self.log_path(task_id)
        return self._followers.follow(
            task_id,
            path,
            running=lambda: self._book.records[task_id].status is JobStatus.RUNNING,
            status=lambda: self._book.records[task_id].status.value,
        )

    # ---- recording -----------------------------------------------------------------------

    async def _update(self, task_id: str, **changes: Any) -> JobRecord:
        """Change the record, publish the change and write it durably (:meth:`Book.update`)."""
        return await self._book.update(task_id, **changes)

    # ---- start-up and shutdown -------------------------------------------------------------

    async def recover(self) -> list[JobRecord]:
        """Load the records; those left ``running`` by a dead daemon become ``interrupted``.

        Their process groups, if those very processes still run (pid and start time match), are
        stopped: the work is reported, never silently continued or re-run. Returns them.
        """
        records = await asyncio.to_thread(self._store.load_all)
        self._book.records = {r.id: r for r in records}
        interrupted: list[JobRecord] = []
        for record in records:
            if record.status is not JobStatus.RUNNING or record.detached:
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

    def _maybe_prune(self) -> None:
        """While kairosd runs too: past ``keep_finished`` (plus a tenth, so it is not done at every
        start), the oldest finished records go, with their logs, in the background."""
        keep = self.limits.keep_finished
        if self._pruning or sum(r.terminal for r in self._book.records.values()) <= keep + keep // 10:
            return
        self._pruning = True
        self._book.soon(self._prune())

    async def _prune(self) -> None:
        self._pruning = True
        try:
            excess = recovery.excess_finished(list(self._book.records.values()), self.limits.keep_finished)
            for record in excess:
                if self._book.records.pop(record.id, None) is not None:
                    await asyncio.to_thread(recovery.remove_record, self._store, record)
        finally:
            self._pruning = False
        if excess:
            log.info("pruned %d finished task record(s) beyond the %d kept", len(excess), self.limits.keep_finished)

    async def stop(self) -> None:
        """At daemon shutdown: turns in flight are stopped (TERM, grace, KILL) and become ``interrupted``."""
        self._book.closing = True
        await self._turns.stop()
        await self._book.drain()
        self._book.notify()
