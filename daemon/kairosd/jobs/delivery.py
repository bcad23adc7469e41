"""The ``agent:NAME`` target: a fire starts a headless agent run in the background job registry.

Each fire becomes a registry task of kind ``fire`` (one turn, no follow-ups)
for the scheduled prompt, with the target's agent, cwd, model and timeout. The
run ledger and the registry point at each other: the registry record carries
the scheduled task id and run id, and the run's ``reason`` names the registry
task while its ``output_path`` is that task's log.

**The scheduler waits for the whole agent turn.** ``delivered`` means the
agent turn completed ok, so "delivered only when confirmed" stays true. The
wait is bounded by the turn timeout (the target's ``timeout_s``, else the
registry's default), which the registry enforces by killing the process group;
time spent queued behind the registry's concurrency cap comes on top.

Idempotent per ``run_id``: a repeated delivery of a run finds the registry
record that run started (it is durable, so also after a restart) and reports
on it instead of starting the agent again.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kairosd.core.clock import Clock
from kairosd.core.errors import KairosError, UsageError
from kairosd.core.models import AgentTarget, Target
from kairosd.delivery.base import Handoff, Result
from kairosd.jobs.model import ExecutionMode, JobKind, JobRecord, JobStatus
from kairosd.jobs.registry import Registry, StartSpec

log = logging.getLogger(__name__)


class AgentDelivery:
    kind = "agent"

    def __init__(self, registry: Registry, clock: Clock) -> None:
        self._registry = registry
        self._clock = clock
        self._closed = False

    async def deliver(self, handoff: Handoff) -> Result:
        started_at = self._clock.now()
        record = self._registry.find_by_run(handoff.run_id)
        if record is not None:
            log.info("run %s already started agent job %s; not starting it again", handoff.run_id, record.id)
        else:
            if self._closed:
                return Result("failed", started_at, self._clock.now(), reason="agent delivery is closed (shutdown)")
            try:
                record = await self._registry.start(_spec(handoff))
            except KairosError as exc:
                return Result("failed", started_at, self._clock.now(), reason=f"agent target: {exc.message}")
        record, _ = await self._registry.wait(record.id, None)
        return _result(record, started_at, self._clock.now())

    async def check(self, target: Target) -> None:
        """At add time: the agent must be known, its CLI found on kairosd's PATH, its cwd a folder."""
        if isinstance(target, AgentTarget):
            try:
                await self._registry.check_agent(target.agent, target.cwd)
            except KairosError as exc:
                raise UsageError(f"agent target: {exc.message}") from None

    async def close(self) -> None:
        """No new agent runs; runs in flight end when the registry stops (they become interrupted)."""
        self._closed = True


def _spec(handoff: Handoff) -> StartSpec:
    target = handoff.target
    if not isinstance(target, AgentTarget):
        raise UsageError(f"not an agent target: {target.kind}")
    session = getattr(target, "session", None)  # not a field of the target; kept if a task carries one
    return StartSpec(
        kind=JobKind.FIRE,
        prompt=handoff.prompt,
        agent=target.agent,
        # No folder recorded (older tasks, API clients that leave it out): the user's home, as crontab and
        # systemd user units do; never kairosd's own folder (``/``).
        cwd=target.cwd or os.environ.get("HOME") or os.path.expanduser("~"),
        model=target.model or None,
        session=session if isinstance(session, str) and session else None,
        mode=ExecutionMode.BACKGROUND,
        timeout_s=target.timeout_s,
        multi_turn=False,
        scheduled_task_id=handoff.task_id,
        run_id=handoff.run_id,
    )


def _result(record: JobRecord, started_at: Any, finished_at: Any) -> Result:
    what = f"agent job {record.id}"
    if record.status is JobStatus.COMPLETED:
        return Result(
            "delivered",
            started_at,
            finished_at,
            reason=f"{what} completed",
            output_path=record.log_path,
            exit_code=record.exit_code,
        )
    if record.status is JobStatus.RUNNING:
        why = "kairosd stopped before the agent turn finished"
    else:
        why = record.status.value + (f": {record.error}" if record.error else "")
    reason = f"{what} {why}"
    return Result(
        "failed", started_at, finished_at, reason=reason, output_path=record.log_path, exit_code=record.exit_code
    )
