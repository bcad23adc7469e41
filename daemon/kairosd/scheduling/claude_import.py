"""``kairos import``: Claude Code's tasks into the task book, once, under the restart's catch-up rules.

:func:`plan_import` reads the file (only Claude's fields, see
:mod:`kairosd.store.claude_compat`) and decides, without changing anything, what
would be created, skipped, rejected and dropped, and what each new task does
at once (a fire due before the import follows the task's catch-up policy, as
after a restart: a one-shot whose time passed is surfaced as missed, never
delivered; a recurring task fires its latest slot within the catch-up window
once, marked catch-up). ``--dry-run`` shows that plan. :func:`commit_import`
carries it out: the tasks and the record of their import are written in one
store save, then the scheduler admits them (:meth:`Scheduler.admit`, the
path every task takes at start-up).

Imports are remembered in the store (``imported_claude_tasks``: Claude id and
creation time, the newest :data:`MAX_REMEMBERED`), so importing the same file
again never delivers a task twice, even once a one-shot has fired and is gone.

Must not import the server or the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kairosd.core.lifecheck import future_problem, life_problem
from kairosd.core.models import SessionTarget, Task
from kairosd.scheduling.firing import IMPORTED, FireBounds, InFlight, decide, due_slots
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.claude_compat import read_claude_tasks

IMPORTED_KEY = "imported_claude_tasks"
MAX_REMEMBERED = 10_000


def import_key(task: Task) -> str:
    """What identifies one Claude task across imports: its id and its creation time."""
    return f"{task.id}@{task.created_at.isoformat()}"


def _remembered(book: TaskBook) -> dict[str, str]:
    value = book.get_field(IMPORTED_KEY)
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


@dataclass
class ImportPlan:
    """What an import creates, skips, rejects and drops; ``on_import`` says what each new task does at once."""

    now: datetime
    added: list[Task] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    on_import: dict[str, str] = field(default_factory=dict)

    def report(self, views: list[dict[str, Any]], dry_run: bool) -> dict[str, Any]:
        """The answer of ``POST /v1/import``: ``views`` are the added tasks as the API shows tasks."""
        imported = [{**view, "on_import": self.on_import.get(str(view.get("id")), "")} for view in views]
        return {
            "dry_run": dry_run,
            "imported": imported,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "dropped": [{"id": task_id, "keys": keys} for task_id, keys in self.dropped.items()],
        }


def plan_import(
    book: TaskBook, data: str, zone: str, now: datetime, limits: FireBounds, target: SessionTarget | None = None
) -> ImportPlan:
    """Decide the import of ``data`` (a Claude ``scheduled_tasks.json``) without changing anything.

    ``target``: a live-session target for every task instead of the inbox (``kairos import --project``).
    Raises :class:`~kairosd.core.errors.UsageError` when the document is not Claude's shape.
    """
    result = read_claude_tasks(data, zone)
    plan = ImportPlan(now, rejected=[r.as_json() for r in result.rejected])
    remembered = _remembered(book)
    for task in result.tasks:
        if target is not None:
            task = task.model_copy(update={"target": target})
        when = remembered.get(import_key(task))
        if when is not None:
            reason = f"imported before (at {when}); kairos imports a task once, so it never fires twice"
            plan.skipped.append({"id": task.id, "reason": reason})
        elif task.id in book:
            plan.skipped.append({"id": task.id, "reason": "a task with this id already exists"})
        elif (problem := life_problem(task) or future_problem(task, now)) is not None:
            plan.rejected.append({"index": None, "id": task.id, "reason": problem})
        else:
            plan.added.append(task)
            if task.id in result.dropped:
                plan.dropped[task.id] = result.dropped[task.id]
            plan.on_import[task.id] = _on_import(task, now, limits)
    for task_id, keys in result.dropped.items():
        # Reported for skipped tasks too: the file still has keys that kairos does not read.
        plan.dropped.setdefault(task_id, keys)
    return plan


def _on_import(task: Task, now: datetime, limits: FireBounds) -> str:
    """What the task does at import: nothing due, a catch-up fire, or misses recorded or surfaced."""
    try:
        due = due_slots(task, task.last_scheduled_for or task.created_at, now, limits.grace, limits.catch_up_max)
        if not due.count:
            return "nothing due yet"
        decision = decide([due], now, IMPORTED, limits, InFlight())
    except Exception as exc:  # the scheduler sets such a task aside; say so now
        return f"cannot be planned ({type(exc).__name__}: {exc}); it will be paused"
    parts = []
    for record in decision.missed:
        parts.append(f"{record.count} missed fire(s) {record.action}, not delivered")
    fired = [run for _, run in decision.start + decision.queue]
    if fired:
        late = fired[-1].late_by_s
        # Read by a person (kairos import prints it): the slot as the CLI shows every time, to the second.
        slot = fired[-1].scheduled_for.isoformat(sep=" ", timespec="seconds")
        parts.append(f"fires its {slot} slot now (catch-up, {late:.0f}s late)")
    return "; ".join(parts) or "nothing due yet"


async def commit_import(book: TaskBook, scheduler: Scheduler, plan: ImportPlan) -> None:
    """Store the planned tasks and the record of their import (one save), then plan them as at a start."""
    remembered = _remembered(book)
    stamp = plan.now.isoformat()
    for task in plan.added:
        book.put(task)
        remembered[import_key(task)] = stamp
    if len(remembered) > MAX_REMEMBERED:
        remembered = dict(list(remembered.items())[-MAX_REMEMBERED:])
    book.set_field(IMPORTED_KEY, remembered)
    await book.commit()
    await scheduler.admit(plan.added, IMPORTED)
