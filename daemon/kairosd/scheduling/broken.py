"""One task that kairos cannot plan, fire or expire: paused with the reason, so every other task goes on.

A stored task can hold values that are valid one by one and still break a
computation later in its life (a jitter or expiry past year 9999, say). The
scheduler calls :func:`set_aside` when planning, deciding or moving one task
raises: the task is paused with ``paused_reason`` in its record, a failed run
in the run ledger says why, and the loop carries on with the other tasks.
``kairos resume`` clears the reason (it is paused again if it still breaks).

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from kairosd.core.events import EventBus
from kairosd.core.models import Task
from kairosd.core.records import Outcome, Run
from kairosd.scheduling.firing import Decision, Due
from kairosd.scheduling.ledger import RunLedger
from kairosd.scheduling.taskbook import TaskBook

log = logging.getLogger("kairosd.scheduling.scheduler")

# The longest exception text kept in a reason (a reason is shown in listings).
MAX_DETAIL = 200


def reason_for(stage: str, exc: BaseException) -> str:
    """Why the task was paused, for its record and the run ledger."""
    detail = str(exc).strip().replace("\n", " ")[:MAX_DETAIL] or "no detail"
    return (
        f"kairos could not {stage} this task ({type(exc).__name__}: {detail}); it was paused so that the other "
        "tasks keep firing. Fix it (or remove it and add it again), then 'kairos resume' it"
    )


def set_aside(
    book: TaskBook,
    ledger: RunLedger,
    events: EventBus,
    now: Callable[[], datetime],
    task_id: str,
    stage: str,
    exc: BaseException,
    scheduled_for: datetime | None = None,
) -> Task | None:
    """Pause ``task_id`` because ``stage`` ("plan", "fire", "expire", ...) raised ``exc``; the paused task.

    ``scheduled_for`` is the slot being handled, if any: the task's anchor moves
    past it, so a resumed task never handles that slot twice. Never raises (the
    caller is the scheduler loop): a run ledger that cannot be written is logged.
    """
    task = book.find(task_id)
    if task is None:
        return None
    reason = reason_for(stage, exc)
    log.error("task %s: %s", task_id, reason, exc_info=exc)
    update: dict[str, object] = {"paused": True, "paused_reason": reason}
    anchor = task.last_scheduled_for or task.created_at
    if scheduled_for is not None and scheduled_for > anchor:
        update["last_scheduled_for"] = scheduled_for
    paused = task.model_copy(update=update)
    book.put(paused)
    when = now()
    # Without a slot, the run stands at the task's anchor: replaying the ledger at start-up moves nothing.
    slot = scheduled_for or paused.last_scheduled_for or paused.created_at
    run = Run(
        task_id=task.id,
        task_name=task.name,
        scheduled_for=slot,
        planned_for=slot,
        finished_at=when,
        outcome=Outcome.FAILED,
        reason=reason,
        target=task.target.model_dump(mode="json"),
    )
    try:
        ledger.record(run)
    except Exception as write_error:
        log.error("cannot record in the run ledger why task %s was paused: %s", task_id, write_error)
    events.publish("task_changed", task_id=task_id, paused=True, paused_reason=reason)
    return paused


# set_aside as the scheduler binds it: (task id, stage, exception, slot being handled or None).
SetAside = Callable[[str, str, BaseException, datetime | None], None]


def each_due(tasks: Iterable[Task], due_of: Callable[[Task], Due], on_error: SetAside) -> list[Due]:
    """``due_of(task)`` for each unpaused task with fires due; a task for which it raises goes to ``on_error``."""
    due = []
    for task in tasks:
        if task.paused:
            continue
        try:
            item = due_of(task)
        except Exception as exc:
            on_error(task.id, "plan", exc, None)
            continue
        if item.count:
            due.append(item)
    return due


def decide_each(due: list[Due], decide: Callable[[list[Due]], Decision], on_error: SetAside) -> Decision:
    """``decide(due)``; if that raises, one decision per task, merged, the tasks that raise to ``on_error``.

    Deciding tasks one by one gives the same result as together: a task's fires
    depend only on its own state and on what already runs.
    """
    try:
        return decide(due)
    except Exception:
        log.debug("a pass's decision failed; deciding task by task", exc_info=True)
    merged = Decision()
    for item in due:
        try:
            one = decide([item])
        except Exception as exc:
            on_error(item.task.id, "fire", exc, item.newest[-1].scheduled_for)
            continue
        merged.runs += one.runs
        merged.missed += one.missed
        merged.start += one.start
        merged.queue += one.queue
        merged.advances += one.advances
        merged.lines.update(one.lines)
    return merged
