"""Detached work in the registry: a process its owner starts itself, meant to outlive kairosd.

The registry records it (durably ``running``, before the process exists),
learns its pid and finally its end from the owner, and cancels it on request;
it takes no slot, is left alone at shutdown and at start-up. The contract is on
:meth:`Registry.record_external <kairosd.jobs.registry.Registry.record_external>`.

Must not import the registry's use-cases (:mod:`~kairosd.jobs.registry`),
the scheduler or the server.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from kairosd.core.errors import UnavailableError
from kairosd.jobs import rules
from kairosd.jobs.book import Book
from kairosd.jobs.model import MAX_RESPONSE_CHARS, JobRecord, JobStatus, Turn, clip, new_record_id
from kairosd.jobs.rules import StartSpec

# Named as before the registry was split into modules, so its log lines read as they did.
log = logging.getLogger("kairosd.jobs.registry")


async def record(book: Book, spec: StartSpec, logs_dir: Path, turn_timeout_s: float) -> JobRecord:
    """Write the record of detached work (``running``, ``detached``) and announce it."""
    if book.closing:
        raise UnavailableError("kairosd is shutting down; no new tasks")
    prompt = rules.check_prompt(spec.prompt, required=False)
    cwd = rules.check_cwd(spec.cwd)
    timeout_s = rules.check_timeout(spec.timeout_s, turn_timeout_s)
    record_id = new_record_id()
    now = book.clock.now()
    task = JobRecord(
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
        status=JobStatus.RUNNING,
        queued=False,
        timeout_s=timeout_s,
        turns=[Turn(number=1, prompt=prompt, queued_at=now, started_at=now)],
        log_path=str(logs_dir / f"{record_id}.log"),
        detached=True,
        created_at=now,
        updated_at=now,
    )
    await book.create(task)
    log.info("task %s recorded: %s, detached", record_id, spec.kind.value)
    return task


async def attach(book: Book, task_id: str, pid: int) -> JobRecord:
    """Record the pid (and its start time, to know it again) of the detached process."""
    import psutil  # on use: not needed to start (docs/performance.md)

    started: float | None = None
    with contextlib.suppress(psutil.Error):
        started = psutil.Process(pid).create_time()
    return await book.update(task_id, pid=pid, pid_started=started)


async def finish(
    book: Book,
    task_id: str,
    *,
    ok: bool,
    error: str | None,
    response: str | None,
    exit_code: int | None,
) -> JobRecord:
    """End detached work as the owner reports it; a task already ended is returned as it is."""
    task = book.get(task_id)
    if task.terminal or task.status is not JobStatus.RUNNING:
        return task
    now = book.clock.now()
    fields: dict[str, Any] = {"finished_at": now, "ok": ok, "error": error, "exit_code": exit_code}
    fields["response"] = clip(response, MAX_RESPONSE_CHARS)
    turns = [*task.turns[:-1], task.turns[-1].model_copy(update=fields)] if task.turns else []
    return await book.update(
        task_id,
        status=JobStatus.COMPLETED if ok else JobStatus.FAILED,
        turns=turns,
        error=error,
        exit_code=exit_code,
        pid=None,
        pid_started=None,
        finished_at=now,
    )
