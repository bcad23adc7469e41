"""What to do with fires that are due: start, queue or skip them, or record them as missed.

The scheduler's decisions, kept apart from its loop so they can be checked as
plain function calls. :func:`due_slots` lists the fires of a task that are due
at ``now``; :func:`decide` turns the due fires of one pass into a
:class:`Decision` (the runs to record, the misses to report, the deliveries to
start or queue, the anchors to move); :func:`fire_now` does the same for a
manual ``kairos run``; :func:`advanced` says what becomes of a task once one of
its fires is handled. :mod:`kairosd.scheduling.scheduler` records a decision in the run
ledger, then delivers it.

The rules decided here:

* Fires missed while kairosd was not running, or across a forward clock jump,
  follow the task's catch-up policy: ``skip`` records them all; ``once`` fires
  the latest, ``all`` the latest ``catch_up_max`` (one after another), in both
  cases only if planned within the grace window; a one-shot fires if its
  policy allows and it is within the window, else it is recorded (``surface``:
  surfaced to the user). Misses older than the window are summarised, not
  listed: the newest of them stands for all (so a task whose fires are rarer
  than the window still moves past them and is planned again).
* A recurring task whose last handled fire is older than the window (an
  imported task, say) follows the same catch-up rules even when the loop was
  not late: a fire weeks old is never sent as if it were merely late.
* Fires missed because the loop was late (too busy) are recorded; only the
  latest fires.
* A fire that comes while the task's previous run is still going is skipped
  (overlap ``skip``) or queued behind it, up to ``queue_limit``.

Pure: no I/O, no asyncio, no clock reads (``now`` is an argument). The only
thing the inputs do not fix is the random id each new run and missed record gets.
Must not import the scheduler, the store, the ledgers, the event bus or delivery targets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from kairosd.core.models import CatchUp, Overlap, Task
from kairosd.core.plan import Fire, fire_for, scheduled_after
from kairosd.core.records import MissedRecord, Outcome, Run
from kairosd.core.schedule.jitter import CLAUDE_ONESHOT_LEAD, parse_jitter

# Enumerating missed slots stops here; older ones are summarised, not listed.
MAX_SLOTS = 20_000

# Why fires were missed (the start of MissedRecord.reason and of the missed run's reason).
NOT_RUNNING = "kairosd was not running"
IMPORTED = "the fire was due before the task was imported"
TOO_BUSY = "kairosd was too busy to fire on time"
BEHIND = "the fires were older than the catch-up window"
# How far before the catch-up window due_slots walks looking for the newest missed fire there.
OLDER_SCAN = 1_000


def clock_jump_reason(drift_s: float) -> str:
    """Why fires were missed when the wall clock ran ``drift_s`` seconds ahead of the monotonic one."""
    return f"the clock jumped forward {drift_s:.0f}s (machine asleep or clock changed)"


@dataclass(frozen=True)
class FireBounds:
    """The bounds the scheduler's configuration puts on catch-up and queueing."""

    grace: timedelta  # missed fires planned longer ago than this are never fired
    catch_up_max: int  # catch_up=all fires at most this many per task
    queue_limit: int  # at most this many runs of one task wait behind its running one


@dataclass(frozen=True)
class InFlight:
    """What runs and waits now, as the overlap rule sees it."""

    running: Mapping[str, str] = field(default_factory=dict)  # task id -> run id
    queued: Mapping[str, int] = field(default_factory=dict)  # task id -> runs waiting behind it


class Advance(NamedTuple):
    """Move ``task``'s anchor past ``fire``; ``fired`` when it was delivered rather than missed."""

    task: Task
    fire: Fire
    when: datetime
    fired: bool


@dataclass
class Decision:
    """What one pass decided. The scheduler records ``runs`` (the commit point),
    then reports ``missed``, applies ``advances`` and starts or queues deliveries."""

    runs: list[Run] = field(default_factory=list)
    missed: list[MissedRecord] = field(default_factory=list)
    start: list[tuple[Task, Run]] = field(default_factory=list)
    queue: list[tuple[Task, Run]] = field(default_factory=list)
    advances: list[Advance] = field(default_factory=list)


@dataclass(frozen=True)
class Due:
    """The fires of ``task`` due now, oldest first; ``truncated`` when older ones were left out."""

    task: Task
    slots: list[Fire]
    truncated: bool


def lookahead(task: Task) -> timedelta:
    # Claude-style one-shots may fire up to 90 s before their slot.
    return CLAUDE_ONESHOT_LEAD if task.jitter == "claude" and not task.recurring else timedelta(0)


def due_slots(task: Task, anchor: datetime, now: datetime, grace: timedelta) -> Due:
    """Fires of ``task`` after ``anchor`` (its last handled slot) planned at or before ``now``.

    A recurring task's slots older than the grace window are not enumerated,
    nor any beyond the newest :data:`MAX_SLOTS`; ``truncated`` then says so.
    The newest slot before the window comes first and stands for those left
    out: without it, a task with no slot inside the window would never move
    its anchor past them (and would never be planned again).
    """
    horizon = now - grace
    truncated = anchor < horizon and task.recurring
    start = horizon if truncated else anchor
    slots: list[Fire] = []
    if truncated:
        older = _newest_up_to(task, anchor, horizon)
        if older is not None:
            slots.append(Fire(older, older))
    # Slots older than any jitter are due whatever it is: skip computing it (planned = scheduled).
    edge = now - parse_jitter(task.jitter).max_delay - timedelta(seconds=1)
    for scheduled in scheduled_after(task, start):
        if scheduled > now + lookahead(task):
            break
        fire = fire_for(task, scheduled) if scheduled >= edge else Fire(scheduled, scheduled)
        if fire.planned_for > now:
            break
        slots.append(fire)
        if len(slots) > MAX_SLOTS:
            slots.pop(0)
            truncated = True
    return Due(task, slots, truncated)


def _newest_up_to(task: Task, anchor: datetime, horizon: datetime) -> datetime | None:
    """The newest slot in (anchor, horizon], or the :data:`OLDER_SCAN`-th when there are more (the next
    pass walks on from there)."""
    newest = None
    for count, scheduled in enumerate(scheduled_after(task, anchor), start=1):
        if scheduled > horizon:
            break
        newest = scheduled
        if count >= OLDER_SCAN:
            break
    return newest


def decide(
    due: Iterable[Due],
    now: datetime,
    missed_reason: str | None,
    limits: FireBounds,
    in_flight: InFlight,
    pending: Mapping[str, str] | None = None,
) -> Decision:
    """Decide one pass over the due fires of several tasks.

    ``missed_reason`` is set when the fires were missed for a reason the user
    should know (kairosd was down, the clock jumped): they then follow each
    task's catch-up policy. Without it the loop was merely late, and only each
    task's latest fire goes out. ``pending`` (task id -> reason) keeps such a
    reason for a task whose earlier pass could not be recorded: the same fires
    are decided again, and they were no less missed. Paused tasks and tasks
    with nothing due are left alone.
    """
    decision = Decision()
    for item in due:
        task, slots = item.task, item.slots
        if task.paused or not slots:
            continue
        reason = missed_reason or (pending or {}).get(task.id)
        if reason is not None or item.truncated:
            _catch_up(item, now, reason or BEHIND, limits, in_flight, decision)
        else:
            if len(slots) > 1:
                _record_missed(task, slots[:-1], item.truncated, now, TOO_BUSY, "recorded", decision)
            _fire(task, slots[-1], now, limits, in_flight, decision, catch_up=False)
    return decision


def fire_now(task: Task, now: datetime, limits: FireBounds, in_flight: InFlight) -> tuple[Decision, Run]:
    """Fire ``task`` at ``now`` by hand: its anchor stays, the overlap rule still applies."""
    decision = Decision()
    run = _fire(task, Fire(now, now), now, limits, in_flight, decision, catch_up=False, manual=True)
    return decision, run


def advanced(task: Task, fire: Fire, when: datetime, fired: bool) -> tuple[Task, str | None]:
    """``task`` with its anchor moved past ``fire``, and why it is to be removed (None: keep it).

    A one-shot is done once handled; an expiring task goes after its first fire
    past its expiry (that fire still happens).
    """
    updates: dict[str, Any] = {"last_scheduled_for": fire.scheduled_for}
    if fired:
        updates["last_fired_at"] = when
    updated = task.model_copy(update=updates)
    expired = fired and updated.expires and when >= updated.created_at + timedelta(days=updated.expires_after_days or 0)
    if expired:
        return updated, "expired"
    if not updated.recurring:
        return updated, "one-shot done"
    return updated, None


def decide_disabled(due: Iterable[Due], now: datetime, reason: str) -> Decision:
    """Firing is disabled (the kill switch): every due slot is recorded as missed, with ``reason``.

    Nothing fires, and nothing is caught up when firing is enabled again: the user
    switched it off. Without this the slots would later pass as "kairosd was not running".
    """
    decision = Decision()
    for item in due:
        if not item.task.paused and item.slots:
            _record_missed(item.task, item.slots, item.truncated, now, reason, "recorded", decision)
    return decision


def _catch_up(
    item: Due, now: datetime, reason: str, limits: FireBounds, in_flight: InFlight, decision: Decision
) -> None:
    task, slots, truncated = item.task, item.slots, item.truncated
    grace_start = now - limits.grace
    policy = task.catch_up
    if not task.recurring:
        if policy in (CatchUp.SURFACE, CatchUp.SKIP) or slots[-1].planned_for < grace_start:
            action = "surfaced" if policy is CatchUp.SURFACE else "recorded"
            _record_missed(task, slots, truncated, now, reason, action, decision, grace_start)  # moves the anchor
        else:
            _fire(task, slots[-1], now, limits, in_flight, decision, catch_up=True)
        return
    to_fire: list[Fire] = []
    if policy is CatchUp.ONCE:
        to_fire = [f for f in slots[-1:] if f.planned_for >= grace_start]
    elif policy is CatchUp.ALL:
        to_fire = [f for f in slots[-limits.catch_up_max :] if f.planned_for >= grace_start]
    missed = slots[: len(slots) - len(to_fire)]  # all of them when nothing fires
    if missed:
        action = {CatchUp.SURFACE: "surfaced", CatchUp.SKIP: "recorded"}.get(policy, "recorded")
        _record_missed(task, missed, truncated, now, reason, action, decision, grace_start)
    if not to_fire:
        return  # every slot was missed: _record_missed moved the anchor past the last one
    for index, fire in enumerate(to_fire):
        # Catch-up fires of one task go one after another, never as a burst.
        _fire(task, fire, now, limits, in_flight, decision, catch_up=True, serial=index > 0)


def _record_missed(
    task: Task,
    slots: list[Fire],
    truncated: bool,
    now: datetime,
    reason: str,
    action: str,
    decision: Decision,
    window_start: datetime | None = None,
) -> None:
    """Record ``slots`` (oldest first) as missed, in one summary, and move the anchor past the latest.

    When older misses were left out (``truncated``), the record describes the
    catch-up window (from ``window_start``): the slots in it, counted, and a note
    that older ones are not. The slot that stood for the older ones (see
    :func:`due_slots`) is not part of that count unless nothing else is left.
    """
    latest = slots[-1]
    counted = slots
    if truncated and window_start is not None:
        counted = [s for s in slots if s.scheduled_for >= window_start] or slots[-1:]
    note = f"; misses before {counted[0].scheduled_for.isoformat()} are not counted" if truncated else ""
    slots = counted
    decision.missed.append(
        MissedRecord(
            task_id=task.id,
            task_name=task.name,
            prompt=task.prompt,
            schedule=task.cron or (task.at.isoformat() if task.at else ""),
            scheduled_for=latest.scheduled_for,
            first_scheduled_for=slots[0].scheduled_for if len(slots) > 1 else None,
            count=len(slots),
            detected_at=now,
            reason=reason + note,
            action=action,
        )
    )
    decision.runs.append(
        Run(
            task_id=task.id,
            task_name=task.name,
            scheduled_for=latest.scheduled_for,
            planned_for=latest.planned_for,
            finished_at=now,
            outcome=Outcome.MISSED,
            reason=f"{reason} ({len(slots)} fire{'s' if len(slots) != 1 else ''} {action})",
            target=task.target.model_dump(mode="json"),
            late_by_s=max(0.0, (now - latest.planned_for).total_seconds()),
        )
    )
    decision.advances.append(Advance(task, latest, now, False))


def _fire(
    task: Task,
    fire: Fire,
    now: datetime,
    limits: FireBounds,
    in_flight: InFlight,
    decision: Decision,
    *,
    catch_up: bool,
    serial: bool = False,
    manual: bool = False,
) -> Run:
    run = Run(
        task_id=task.id,
        task_name=task.name,
        scheduled_for=fire.scheduled_for,
        planned_for=fire.planned_for,
        dispatched_at=now,
        target=task.target.model_dump(mode="json"),
        late_by_s=round(max(0.0, (now - fire.planned_for).total_seconds()), 3),
        catch_up=catch_up,
        manual=manual,
    )
    if not manual:
        decision.advances.append(Advance(task, fire, now, True))
    busy = task.id in in_flight.running or serial or any(t.id == task.id for t, _ in decision.start)
    if busy and not serial and task.overlap is Overlap.SKIP:
        run.outcome = Outcome.SKIPPED
        run.finished_at = now
        run.reason = f"the previous run ({in_flight.running.get(task.id, 'starting')}) was still going (overlap=skip)"
        decision.runs.append(run)
        return run
    if busy:
        pending = in_flight.queued.get(task.id, 0) + sum(1 for t, _ in decision.queue if t.id == task.id)
        if pending >= limits.queue_limit:
            run.outcome = Outcome.SKIPPED
            run.finished_at = now
            run.reason = f"{pending} runs already queued behind the running one"
            decision.runs.append(run)
            return run
        run.outcome = Outcome.QUEUED
        run.reason = "waiting for the previous run of this task"
        decision.runs.append(run)
        decision.queue.append((task, run))
        return run
    decision.runs.append(run)
    decision.start.append((task, run))
    return run
