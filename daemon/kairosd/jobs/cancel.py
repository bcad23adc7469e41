"""Cancelling a task tree: the task and every descendant still going, all at once.

A turn in flight is stopped (its group: SIGTERM, then SIGKILL after the grace)
and records its own end; a queued or idle task just ends ``cancelled``; a
detached process (not a turn of the registry, but still its to stop) has its
group stopped with the same checks as a leftover at start-up. While a cancel
runs, its tasks cannot start children (:meth:`Cancels.pending`). The report
says which tasks had to be killed with SIGKILL after the grace, so a caller can
tell the user why the cancel took that long.

Must not import the registry's use-cases (:mod:`~kairosd.jobs.registry`),
the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kairosd.core.errors import ConflictError
from kairosd.jobs import recovery
from kairosd.jobs.book import Book
from kairosd.jobs.model import JobRecord, JobStatus
from kairosd.jobs.turns import Turns

# Named as before the registry was split into modules, so its log lines read as they did.
log = logging.getLogger("kairosd.jobs.registry")


@dataclass(frozen=True)
class CancelReport:
    cancelled: list[JobRecord]  # the task first, then its descendants that were still going
    killed: list[str]  # ids whose processes ignored SIGTERM for the whole grace and got SIGKILL


class Cancels:
    def __init__(self, book: Book, turns: Turns, kill_grace_s: float) -> None:
        self._book = book
        self._turns = turns
        self._kill_grace_s = kill_grace_s
        self._pending: set[str] = set()

    def pending(self, task_id: str) -> bool:
        """Whether a cancel reaching ``task_id`` is under way."""
        return task_id in self._pending

    async def cancel(self, task_id: str) -> CancelReport:
        """Cancel the task and every descendant still going: those it cancelled (the task first),
        and which of them had to be killed with SIGKILL.

        A task already cancelled answers with nothing cancelled (an empty report), not an error: as pausing a
        paused task, asking for the state it is in is done already. A task that completed or failed is a
        conflict: cancelling cannot make it cancelled.
        """
        record = self._book.get(task_id)
        if record.status is JobStatus.CANCELLED:
            return CancelReport([], [])
        if record.terminal:
            raise ConflictError(f"task {task_id} is already {record.status.value}; there is nothing to cancel")
        targets = [task_id, *self._descendants(task_id)]
        self._pending.update(targets)
        try:
            killed = await asyncio.gather(*(self._cancel_one(t) for t in targets))
        finally:
            self._pending.difference_update(targets)
        log.info("cancelled task %s and %d descendant(s)", task_id, len(targets) - 1)
        return CancelReport(
            [self._book.records[t] for t in targets], [t for t, k in zip(targets, killed, strict=True) if k]
        )

    def _descendants(self, task_id: str) -> list[str]:
        found: list[str] = []
        frontier = [task_id]
        while frontier:
            parent = frontier.pop()
            for child in self._book.children(parent):
                if child.id not in found and child.id != task_id:
                    found.append(child.id)
                    frontier.append(child.id)
        return [t for t in found if not self._book.records[t].terminal]

    async def _cancel_one(self, task_id: str) -> bool:
        """Cancel one task; whether its processes had to be killed with SIGKILL."""
        book = self._book
        killed = await self._turns.cancel(task_id)
        if killed is None:  # no turn in flight
            record = book.records[task_id]
            if record.detached and record.status is JobStatus.RUNNING:
                # Not our turn, but still ours to stop: the same checks as a leftover (pid and start time).
                killed = await recovery.stop_leftover(record, self._kill_grace_s)
            if not book.records[task_id].terminal:
                await book.update(task_id, status=JobStatus.CANCELLED, finished_at=book.clock.now())
            return bool(killed)
        if not book.records[task_id].terminal and not self._turns.in_flight(task_id):
            # The turn ended on its own just as the cancel came; the task still ends cancelled.
            await book.update(task_id, status=JobStatus.CANCELLED, finished_at=book.clock.now())
        return killed
