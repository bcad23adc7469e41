"""What to do with fires that are due: start, queue or skip them, or record them as missed.

The scheduler's decisions, kept apart from its loop so they can be checked as
plain function calls. :func:`due_slots` summarises the fires of a task that are
due at ``now`` (how many, the first, the newest few: never a list as long as the
absence); :func:`decide` turns the due fires of one pass into a
:class:`Decision` (the runs to record, the misses to report, the deliveries to
start or queue, the anchors to move); :func:`fire_now` does the same for a
manual ``kairos run``; :func:`advanced` says what becomes of a task once one of
its fires is handled; :func:`stopped_unstarted` what becomes of the runs that had
not started when kairosd stopped. :mod:`kairosd.scheduling.scheduler` records a decision in the run
ledger, then delivers it.

The rules decided here:

* Fires missed while kairosd was not running, or across a forward clock jump,
  follow the task's catch-up policy: ``skip`` records them all; ``once`` fires
  the latest, ``all`` the latest ``catch_up_max`` (one after another), in both
  cases only if planned within the grace window; a one-shot fires if its
  policy allows and it is within the window, else it is recorded (``surface``:
  surfaced to the user). Every missed fire is counted, older than the window
  or not, in one record per task and pass: the count, the first and the last.
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

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from kairosd.core.models import CatchUp, Overlap, Task, moved_with
from kairosd.core.plan import Fire, fire_for, scheduled_after
from kairosd.core.records import (
    MissedRecord,
    Outcome,
    Prototype,
    Run,
    json_line,
    missed_id,
    missed_ids,
    new_run_id,
    new_run_ids,
    own_text,
    record_of,
)
from kairosd.core.schedule.counting import count_fires, last_fires
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import next_fire
from kairosd.core.schedule.jitter import CLAUDE_ONESHOT_LEAD, parse_jitter

# Why fires were missed (the start of MissedRecord.reason and of the missed run's reason).
NOT_RUNNING = "kairosd was not running"
IMPORTED = "the fire was due before the task was imported"
TOO_BUSY = "kairosd was too busy to fire on time"
BEHIND = "the fires were older than the catch-up window"
PAUSED_WHEN_DUE = "the task was paused when it was due"
STOPPED = "kairosd stopped before delivering them"


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
    # Per task id, the runs this decision starts and queues. The overlap rule asks for every fire;
    # scanning start and queue instead made a pass over 10,000 catch-up fires quadratic (27 s).
    started: set[str] = field(default_factory=set, repr=False, compare=False)
    queued: Counter[str] = field(default_factory=Counter, repr=False, compare=False)
    # Each target's JSON, by the target object: tasks share their target objects (the store loads one
    # per inbox session), so do their runs' (read only, as copies of a run already share it).
    targets: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict, repr=False, compare=False)
    # That JSON by its text: tasks added since the start each have a target object of their own.
    equal_targets: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    # The prototypes of its records (see records.Prototype), by what their records share: the fires (shared
    # by tasks with the same schedule and anchor), ``now``, the target, the counts and reasons. Objects are
    # keyed by id() and kept in the value, so no other object can take their id meanwhile.
    prototypes: dict[tuple[Any, ...], tuple[Any, ...]] = field(default_factory=dict, repr=False, compare=False)
    # The JSON lines its prototypes made of its records, by the record's id() (records are kept in runs and
    # missed): see line().
    lines: dict[int, bytes] = field(default_factory=dict, repr=False, compare=False)
    # The catch-up plans of its groups of tasks (see _catch_up_planned), by what the group shares.
    plans: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False, compare=False)
    # The last plan _catch_up_planned gave, and what its task had that the plan's key is made of (the objects
    # themselves): the next task with the same has the same plan.
    last_plan: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    def sharing(self) -> Decision:
        """A new decision for the same ``now`` (the next chunk of a pass) that shares this one's targets,
        prototypes and plans: they are laid out once per pass, not once per chunk. Its records are its own."""
        return Decision(
            targets=self.targets, equal_targets=self.equal_targets, prototypes=self.prototypes, plans=self.plans
        )

    def line(self, record: Run | MissedRecord) -> bytes:
        """``record``'s line for its ledger (:func:`~kairosd.core.records.json_line`'s bytes): the one its
        prototype made, else encoded now. Its records are handed over: nothing changes them after."""
        return self.lines_of((record,))[0]

    def lines_of(self, records: Sequence[Run | MissedRecord]) -> list[bytes]:
        """:meth:`line` of each of ``records``, in one loop (a pass hands its ledgers 1,000-2,000 a chunk)."""
        known = self.lines.get
        return [known(id(record)) or json_line(record) for record in records]

    def target_json(self, task: Task) -> dict[str, Any]:
        """``task``'s target as JSON: one dict for every equal target (read only), so that the tasks of equal
        targets, not only of one target object, share their records' prototypes."""
        target = task.target
        known = self.targets.get(id(target))
        if known is None or known[0] is not target:
            dumped = target.model_dump(mode="json")
            # repr: the same text for the same JSON in the same order (a target's fields have theirs).
            equal = self.equal_targets.setdefault(repr(dumped), dumped)
            known = self.targets[id(target)] = (target, equal)
        return known[1]


def records_lines(records: Sequence[Run | MissedRecord]) -> list[bytes]:
    """:func:`~kairosd.core.records.json_line` of each of ``records`` (records no decision made)."""
    return [json_line(record) for record in records]


@dataclass(slots=True)
class Due:
    """What of ``task`` is due now, summarised: never a list as long as the absence.

    ``count`` fires are due; ``first`` is the oldest and ``newest`` the latest few,
    oldest first (enough for the catch-up policy: see :func:`keep_for`). ``behind``
    says the task's last handled slot is older than the catch-up window, so its
    fires follow the catch-up policy even when the loop was not late.

    Not changed once made (it is not frozen: a frozen dataclass's ``__init__`` cost a microsecond a
    task); ``newest`` is shared by the tasks with the same schedule and last slot.
    """

    task: Task
    count: int
    first: Fire | None
    newest: Sequence[Fire]
    behind: bool = False

    @classmethod
    def of(cls, task: Task, slots: list[Fire], behind: bool = False) -> Due:
        """The summary of a full list of due fires, oldest first."""
        return cls(task, len(slots), slots[0] if slots else None, slots[-NEWEST_MAX:], behind)

    def before(self, fire: Fire) -> Fire:
        """The due fire just before ``fire`` (one of :attr:`newest`, not the first of them)."""
        index = self.newest.index(fire)
        if index == 0:
            raise ValueError("the fire before the oldest of the newest due fires is not known")
        return self.newest[index - 1]


# Due.newest holds at most this many fires (a bound on catch_up_max + 1 as well).
NEWEST_MAX = 101


def keep_for(task: Task, catch_up_max: int) -> int:
    """How many of the newest due fires the decision can need: those ``catch_up=all`` fires, plus the
    newest one left missed (for its record); the latest and the one before it otherwise."""
    return min(NEWEST_MAX, catch_up_max + 1) if task.catch_up is CatchUp.ALL else 2


def lookahead(task: Task) -> timedelta:
    # Claude-style one-shots may fire up to 90 s before their slot.
    return CLAUDE_ONESHOT_LEAD if task.jitter == "claude" and not task.recurring else timedelta(0)


def due_slots(task: Task, anchor: datetime, now: datetime, grace: timedelta, catch_up_max: int = 10) -> Due:
    """The fires of ``task`` after ``anchor`` (its last handled slot) planned at or before ``now``.

    Bounded work however long ago the anchor is: the slots up to ``now`` are
    counted (:func:`count_fires`) and only the first and the newest few computed
    (:func:`last_fires`); jitter is applied to those of them within its reach of
    ``now`` (the planned time of older ones is taken as their slot).
    """
    keep = keep_for(task, catch_up_max)
    behind = task.recurring and anchor < now - grace
    if not task.recurring or task.cron is None:
        return Due.of(task, _one_shot_due(task, anchor, now), behind)
    jitter = parse_jitter(task.jitter)
    if jitter.kind == "none":
        # Planned is scheduled: everything due depends on the schedule alone (and is shared, see _due_before).
        count, first, shared = _due_before(task.cron, task.tz, anchor, now, keep)
        return Due(task, count, first, shared, behind)
    # A recurring fire's jitter is less than its period (at most a tenth, or a half: see planned_time),
    # so of the slots up to now only the newest can still be held back by it; the others are due.
    count, first, shared = _due_before(task.cron, task.tz, anchor, now, keep + 1)
    reach = now - jitter.max_delay - timedelta(seconds=1)  # slots older than this are due whatever the jitter
    newest = [f if f.scheduled_for < reach else fire_for(task, f.scheduled_for) for f in shared]
    if newest and newest[-1].planned_for > now:
        newest.pop()
        count -= 1
    if first is not None and first.scheduled_for >= reach:
        first = fire_for(task, first.scheduled_for)
    return Due(task, count, first if count else None, newest[-keep:], behind)


def due_slots_at(now: datetime, grace: timedelta, catch_up_max: int = 10) -> Callable[[Task, datetime], Due]:
    """:func:`due_slots` at ``now`` as a function of a task and its anchor, for the many tasks of a pass: a
    recurring cron task without jitter has what every such task of its schedule, zone, anchor and catch-up
    policy has, worked out once (10,000 tasks of a few schedules back from a long stop)."""
    known: dict[tuple[str, str, datetime, bool], tuple[int, Fire | None, Sequence[Fire], bool]] = {}
    # The last task's key and answer: the next task (most of a pass) has the same schedule and zone (the store
    # shares their texts) and an equal anchor, and takes the answer without a key made or looked up.
    last: list[Any] = [None, None, None, None, None]

    def of(task: Task, anchor: datetime) -> Due:
        fields = task.__dict__  # one read through pydantic's __getattr__ hook rather than one a field
        cron, tz = fields["cron"], fields["tz"]
        if fields["jitter"] != "none" or cron is None or not fields["recurring"]:
            return due_slots(task, anchor, now, grace, catch_up_max)
        every = fields["catch_up"] is CatchUp.ALL
        if last[0] is cron and last[1] is tz and last[2] == anchor and last[3] is every:
            count, first, newest, behind = last[4]
            return Due(task, count, first, newest, behind)
        key = (cron, tz, anchor, every)  # all due_slots reads of such a task
        shared = known.get(key)
        if shared is None:
            item = due_slots(task, anchor, now, grace, catch_up_max)
            shared = known[key] = (item.count, item.first, item.newest, item.behind)
        else:
            item = Due(task, *shared)
        last[:] = (cron, tz, anchor, every, shared)
        return item

    return of


@lru_cache(maxsize=256)
def _due_before(
    cron: str, tz: str, anchor: datetime, edge: datetime, keep: int
) -> tuple[int, Fire | None, tuple[Fire, ...]]:
    """The fires of ``cron`` in ``tz`` in ``(anchor, edge]``: how many, the first, the newest ``keep``.

    Remembered: tasks with the same schedule and the same last slot (most of
    10,000 tasks back from a long stop) share one answer in a pass.
    """
    expr, zone = parse_cron(cron), ZoneInfo(tz)
    count = count_fires(expr, anchor, edge, zone)
    if not count:
        return 0, None, ()
    first = next_fire(expr, anchor, zone)
    newest = tuple(Fire(s, s) for s in last_fires(expr, anchor, edge, zone, keep))
    return count, None if first is None else Fire(first, first), newest


def _one_shot_due(task: Task, anchor: datetime, now: datetime) -> list[Fire]:
    """A one-shot's fire, if it is due (at most one)."""
    for scheduled in scheduled_after(task, anchor):
        if scheduled > now + lookahead(task):
            break
        fire = fire_for(task, scheduled)
        if fire.planned_for <= now:
            return [fire]
        break
    return []


def decide(
    due: Iterable[Due],
    now: datetime,
    missed_reason: str | None,
    limits: FireBounds,
    in_flight: InFlight,
    pending: Mapping[str, str] | None = None,
    shared: Decision | None = None,
) -> Decision:
    """Decide one pass over the due fires of several tasks.

    ``missed_reason`` is set when the fires were missed for a reason the user
    should know (kairosd was down, the clock jumped): they then follow each
    task's catch-up policy. Without it the loop was merely late, and only each
    task's latest fire goes out. ``pending`` (task id -> reason) keeps such a
    reason for a task whose earlier pass could not be recorded: the same fires
    are decided again, and they were no less missed. Paused tasks and tasks
    with nothing due are left alone. ``shared``: a decision of the same pass (the same ``now``) whose
    targets, prototypes and plans this one shares (see :meth:`Decision.sharing`).
    """
    decision = Decision() if shared is None else shared.sharing()
    plans: dict[tuple[Any, ...], _Plan] = decision.plans
    # Consecutive tasks of one plan, made together (see _Plan.make) before anything else is decided.
    batch: list[_Texts] = []
    batch_plan: _Plan | None = None
    batch_ids: set[str] = set()
    reasons = (pending or {}).get
    running, started = in_flight.running, decision.started
    for item in due:
        task = item.task
        fields = task.__dict__  # one read through pydantic's __getattr__ hook rather than one a field
        if fields["paused"] or not item.count:
            continue
        task_id = fields["id"]
        if task_id in batch_ids:  # the same task twice: its first fires must be decided (started) first
            _made(batch_plan, batch, batch_ids, decision)
            batch_plan = None
        reason = missed_reason or reasons(task_id)
        if (
            (reason is not None or item.behind)
            and fields["recurring"]
            and task_id not in running
            and task_id not in started
        ):
            # The group of the task before (most tasks of a pass after a long stop): _catch_up_planned's
            # answer without its other checks (its plan's tasks are recurring cron tasks, once or skip).
            plan = _plan_before(decision, item, fields["catch_up"], fields["target"], reason or BEHIND)
            texts = None if plan is None else _texts_of(plan, task)
            if texts is not None:
                if plan is not batch_plan:
                    _made(batch_plan, batch, batch_ids, decision)
                    batch_plan = plan
                batch.append(texts)
                batch_ids.add(task_id)
                continue
        if reason is not None or item.behind:
            planned = _catch_up_planned(item, now, reason or BEHIND, limits, in_flight, decision, plans)
            if planned:
                plan, texts = planned
                if plan is not batch_plan:
                    _made(batch_plan, batch, batch_ids, decision)
                    batch_plan = plan
                batch.append(texts)
                batch_ids.add(task.id)
                continue
            _made(batch_plan, batch, batch_ids, decision)
            batch_plan = None
            _catch_up(item, now, reason or BEHIND, limits, in_flight, decision)
        else:
            _made(batch_plan, batch, batch_ids, decision)
            batch_plan = None
            latest = item.newest[-1]
            if item.count > 1:
                _record_missed(item, item.count - 1, item.before(latest), now, TOO_BUSY, "recorded", decision)
            _fire(task, latest, now, limits, in_flight, decision, catch_up=False)
    _made(batch_plan, batch, batch_ids, decision)
    return decision


def _made(plan: _Plan | None, batch: list[_Texts], ids: set[str], decision: Decision) -> None:
    """Make the records of the tasks gathered for ``plan`` (see decide), and empty ``batch`` and ``ids``."""
    if plan is not None and batch:
        plan.make(batch, decision)
    batch.clear()
    ids.clear()


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
    updated = moved_with(task, updates)  # two of Task's fields: nothing to check
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
        if not item.task.paused and item.count:
            _record_missed(item, item.count, item.newest[-1], now, reason, "recorded", decision)
    return decision


def _catch_up(
    item: Due, now: datetime, reason: str, limits: FireBounds, in_flight: InFlight, decision: Decision
) -> None:
    task, newest = item.task, item.newest
    grace_start = now - limits.grace
    policy = task.catch_up
    if not task.recurring:
        if policy in (CatchUp.SURFACE, CatchUp.SKIP) or newest[-1].planned_for < grace_start:
            action = "surfaced" if policy is CatchUp.SURFACE else "recorded"
            _record_missed(item, item.count, newest[-1], now, reason, action, decision)  # moves the anchor
        else:
            _fire(task, newest[-1], now, limits, in_flight, decision, catch_up=True)
        return
    to_fire: list[Fire] = []
    if policy is CatchUp.ONCE:
        to_fire = [f for f in newest[-1:] if f.planned_for >= grace_start]
    elif policy is CatchUp.ALL:
        # Due.newest holds one more than the fires that may go out, for the record of the missed ones.
        most = min(limits.catch_up_max, NEWEST_MAX - 1)
        to_fire = [f for f in newest[-most:] if f.planned_for >= grace_start]
    missed = item.count - len(to_fire)  # all of them when nothing fires
    if missed:
        action = {CatchUp.SURFACE: "surfaced", CatchUp.SKIP: "recorded"}.get(policy, "recorded")
        latest = item.before(to_fire[0]) if to_fire else newest[-1]
        _record_missed(item, missed, latest, now, reason, action, decision)
    if not to_fire:
        return  # every slot was missed: _record_missed moved the anchor past the last one
    for index, fire in enumerate(to_fire):
        # Catch-up fires of one task go one after another, never as a burst.
        _fire(task, fire, now, limits, in_flight, decision, catch_up=True, serial=index > 0)


class _Plan:
    """The catch-up of the recurring tasks with the same due fires (``newest``, the same tuple), policy,
    target and reason (see :func:`_catch_up_planned`): what :func:`_catch_up` would make of each, worked
    out once. ``missed`` and ``missed_run``: the prototypes of the missed record and run, ``latest`` the
    newest missed fire and ``first`` the oldest (None: nothing missed); ``fired`` the prototype of the run
    that catches up and ``fire`` its fire (None: nothing fires).

    :meth:`make` makes the records of a run of its tasks (consecutive in the pass): once its prototypes
    are laid out (at their second record), in one loop where each record is a copy of its prototype's
    layout with the task's own values and its line one ``%`` of the task's texts.
    """

    __slots__ = (
        "fire", "fired", "first", "latest", "missed", "missed_id", "missed_run", "moved_fired", "moved_missed",
        "newest", "schedules",
    )  # fmt: skip

    def __init__(
        self,
        newest: Sequence[Fire],
        missed: Prototype[MissedRecord] | None,
        missed_run: Prototype[Run] | None,
        latest: Fire | None,
        first: Fire | None,
        fired: Prototype[Run] | None,
        fire: Fire | None,
        now: datetime,
    ) -> None:
        self.newest, self.missed, self.missed_run, self.latest, self.first = newest, missed, missed_run, latest, first
        self.fired, self.fire = fired, fire
        self.missed_id = missed_ids(first.scheduled_for) if first is not None else None
        # An advance is (task, fire, when, fired): the last three shared by the plan's tasks.
        self.moved_missed = (latest, now, False) if latest is not None and missed is not None else None
        self.moved_fired = (fire, now, True) if fire is not None and fired is not None else None
        self.schedules: dict[str, str | None] = {}  # own_text of each cron text its tasks have

    def texts(self, task: Task, task_id: str, name: str, fields: dict[str, Any]) -> _Texts | None:
        """The texts of ``task``'s own values in its lines (``task_id`` and ``name`` given, the
        :func:`own_text` of its id and name; ``fields`` its dict); None when its prompt or schedule cannot
        be in a line."""
        if self.moved_missed is None:
            return task, task_id, name, "", ""  # a run's line has neither
        schedule = fields["cron"]
        assert schedule is not None  # planned tasks are cron tasks
        schedules = self.schedules
        schedule_text = (
            schedules[schedule] if schedule in schedules else schedules.setdefault(schedule, own_text(schedule))
        )
        prompt = own_text(fields["prompt"])
        if prompt is None or schedule_text is None:
            return None
        return task, task_id, name, prompt, schedule_text

    def make(self, batch: list[_Texts], decision: Decision) -> None:
        """The records, lines, advances and starts of the tasks of ``batch`` (each its :meth:`texts`), as
        :func:`_catch_up` makes them, task after task."""
        made = 0
        while made < len(batch) and not self._laid_out():
            self._make_one(*batch[made], decision)  # the first records lay the prototypes out
            made += 1
        if made < len(batch):
            self._make_laid_out(batch[made:] if made else batch, decision)

    def _laid_out(self) -> bool:
        return (
            self.moved_missed is None
            or (self._parts(self.missed) is not None and self._parts(self.missed_run) is not None)
        ) and (self.moved_fired is None or self._parts(self.fired) is not None)

    @staticmethod
    def _parts(prototype: Prototype[Any] | None) -> tuple[type[Any], dict[str, Any], set[str], tuple[str, ...]] | None:
        assert prototype is not None
        return prototype.parts(_MISSED_OWN if prototype._cls is MissedRecord else _RUN_OWN)

    @classmethod
    def _laid(cls, prototype: Prototype[Any] | None) -> tuple[type[Any], dict[str, Any], set[str], tuple[str, ...]]:
        parts = cls._parts(prototype)
        assert parts is not None  # see _laid_out
        head, after_id, *rest = parts[3]
        # The record's id is first, a string of hex digits: its text is the id in quotes, here put around it.
        return parts[0], parts[1], parts[2], (f'{head}"', f'"{after_id}', *rest)

    def _make_one(self, task: Task, task_id: str, name: str, prompt: str, schedule: str, decision: Decision) -> None:
        """One task's records by the prototypes' made_as (before they are laid out)."""
        if self.moved_missed is not None:
            assert self.missed is not None
            assert self.missed_run is not None
            assert self.missed_id is not None
            missed_id = self.missed_id(task.id)
            missed, missed_line = self.missed.made_as(
                _MISSED_OWN, (f'"{missed_id}"', task_id, name, prompt, schedule),
                id=missed_id, task_id=task.id, task_name=task.name, prompt=task.prompt, schedule=task.cron,
            )  # fmt: skip
            run_id = new_run_id()
            run, run_line = self.missed_run.made_as(
                _RUN_OWN, (f'"{run_id}"', task_id, name), run_id=run_id, task_id=task.id, task_name=task.name
            )
            decision.lines[id(missed)], decision.lines[id(run)] = missed_line, run_line
            decision.missed.append(missed)
            decision.runs.append(run)
            decision.advances.append(Advance(task, *self.moved_missed))
        if self.moved_fired is not None:
            assert self.fired is not None
            run_id = new_run_id()
            run, line = self.fired.made_as(
                _RUN_OWN, (f'"{run_id}"', task_id, name), run_id=run_id, task_id=task.id, task_name=task.name
            )
            decision.advances.append(Advance(task, *self.moved_fired))
            decision.lines[id(run)] = line
            decision.runs.append(run)
            decision.start.append((task, run))
            decision.started.add(task.id)

    def _make_laid_out(self, batch: list[_Texts], decision: Decision) -> None:
        """:meth:`_make_one` of each task of ``batch``, from the laid-out prototypes' parts, in one loop."""
        lines, missed_out, runs, advances = decision.lines, decision.missed, decision.runs, decision.advances
        start, started, join = decision.start, decision.started, "".join
        moved_missed, moved_fired = self.moved_missed, self.moved_fired
        ids = iter(new_run_ids(len(batch) * ((moved_missed is not None) + (moved_fired is not None))))
        if moved_missed is not None:
            missed_cls, missed_base, missed_set, (m0, m1, m2, m3, m4, m5) = self._laid(self.missed)
            run_cls, run_base, run_set, (r0, r1, r2, r3) = self._laid(self.missed_run)
            missed_id: Callable[[str], str] = self.missed_id  # type: ignore[assignment]  # set with moved_missed
        if moved_fired is not None:
            fired_cls, fired_base, fired_set, (f0, f1, f2, f3) = self._laid(self.fired)
        # Each line is its prototype's pieces joined with the task's texts (see Prototype.parts).
        for task, task_id, name, prompt, schedule in batch:
            fields = task.__dict__  # one read through pydantic's __getattr__ hook rather than one a field
            own_id, own_name = fields["id"], fields["name"]
            if moved_missed is not None:
                record_id = missed_id(own_id)
                data = missed_base.copy()
                data["id"], data["task_id"], data["task_name"] = record_id, own_id, own_name
                data["prompt"], data["schedule"] = fields["prompt"], fields["cron"]
                missed = record_of(missed_cls, data, missed_set)
                lines[id(missed)] = join((m0, record_id, m1, task_id, m2, name, m3, prompt, m4, schedule, m5)).encode(
                    "ascii"
                )
                run_id = next(ids)
                data = run_base.copy()
                data["run_id"], data["task_id"], data["task_name"] = run_id, own_id, own_name
                run = record_of(run_cls, data, run_set)
                lines[id(run)] = join((r0, run_id, r1, task_id, r2, name, r3)).encode("ascii")
                missed_out.append(missed)
                runs.append(run)
                advances.append(_advance((task, *moved_missed)))
            if moved_fired is not None:
                run_id = next(ids)
                data = fired_base.copy()
                data["run_id"], data["task_id"], data["task_name"] = run_id, own_id, own_name
                run = record_of(fired_cls, data, fired_set)
                advances.append(_advance((task, *moved_fired)))
                lines[id(run)] = join((f0, run_id, f1, task_id, f2, name, f3)).encode("ascii")
                runs.append(run)
                start.append((task, run))
                started.add(own_id)


# A planned task and the texts of its own values in its lines: its id's, name's, prompt's and schedule's.
_Texts = tuple[Task, str, str, str, str]
# An Advance of a tuple of its four values, without NamedTuple's __new__ (a Python function) per task.
_advance: Callable[[tuple[Task, Fire, datetime, bool]], Advance] = functools.partial(tuple.__new__, Advance)

# The own fields of the records a plan makes, in the fields' order (their lines' order: see made_as).
_MISSED_OWN = ("id", "task_id", "task_name", "prompt", "schedule")
_RUN_OWN = ("run_id", "task_id", "task_name")


def _catch_up_planned(
    item: Due,
    now: datetime,
    reason: str,
    limits: FireBounds,
    in_flight: InFlight,
    decision: Decision,
    plans: dict[tuple[Any, ...], _Plan],
) -> tuple[_Plan, _Texts] | None:
    """The plan of :func:`_catch_up` of a recurring task with catch-up ``once`` or ``skip`` and nothing of
    it running (every task after a long stop, most of them sharing their due fires), which its group
    shares, and the task's texts for its lines: :meth:`_Plan.make` makes its records. None: any other
    task, or one whose texts a line cannot hold as they are; :func:`_catch_up` decides it.

    The plan makes the same records, lines, starts and anchor moves as :func:`_catch_up`, in the same order.
    """
    task = item.task
    policy = task.catch_up
    if (
        not task.recurring
        or task.cron is None
        or (policy is not CatchUp.ONCE and policy is not CatchUp.SKIP)
        or task.id in in_flight.running
        or task.id in decision.started
    ):
        return None
    newest, first, count, target = item.newest, item.first, item.count, task.target
    plan = _plan_before(decision, item, policy, target, reason)  # most of a pass: no key made or looked up
    if plan is None:
        key = (id(newest), id(first), count, policy, reason, id(decision.target_json(task)))
        known = plans.get(key)
        if known is None or known.newest is not newest:
            known = plans[key] = _plan_catch_up(item, now, reason, limits, decision)
        plan = known
        decision.last_plan = (newest, first, count, policy, target, reason, plan)
    texts = _texts_of(plan, task)
    return None if texts is None else (plan, texts)


def _plan_before(decision: Decision, item: Due, policy: CatchUp, target: Any, reason: str) -> _Plan | None:
    """The plan of the task decided before ``item``'s when both are of one group (the same due fires and
    count, catch-up policy, target and reason), else None."""
    last = decision.last_plan
    if (
        last is not None
        and last[0] is item.newest
        and last[1] is item.first
        and last[2] == item.count
        and last[3] is policy
        and last[4] is target
        and last[5] == reason
    ):
        plan: _Plan = last[6]
        return plan
    return None


def _texts_of(plan: _Plan, task: Task) -> _Texts | None:
    """``task``'s texts in the lines of ``plan`` (see :meth:`_Plan.texts`); None when a line cannot hold them."""
    fields = task.__dict__  # one read through pydantic's __getattr__ hook rather than one a field
    task_id, name = own_text(fields["id"]), own_text(fields["name"])
    return None if task_id is None or name is None else plan.texts(task, task_id, name, fields)


def _plan_catch_up(item: Due, now: datetime, reason: str, limits: FireBounds, decision: Decision) -> _Plan:
    """What :func:`_catch_up` decides for ``item``'s task (recurring, ``once`` or ``skip``), as a plan."""
    task, newest = item.task, item.newest
    fire = newest[-1] if task.catch_up is CatchUp.ONCE and newest[-1].planned_for >= now - limits.grace else None
    count = item.count - (fire is not None)
    missed = missed_run = latest = first = None
    if count:
        latest = item.before(fire) if fire is not None else newest[-1]
        first = item.first if item.first is not None else latest
        missed, missed_run = _missed_prototypes(first, latest, count, now, reason, "recorded", task, decision)
    fired = None if fire is None else _run_prototype(task, fire, now, True, False, decision)
    return _Plan(newest, missed, missed_run, latest, first, fired, fire, now)


def _record_missed(
    item: Due, count: int, latest: Fire, now: datetime, reason: str, action: str, decision: Decision
) -> None:
    """Record the oldest ``count`` due fires of ``item`` (``latest`` the newest of them) as missed, in one
    summary, and move the anchor past ``latest``.

    The record says how many were missed, the first and the last: however many
    there were, it is one record, and nothing was listed to make it.
    """
    task = item.task
    first = item.first if item.first is not None else latest
    missed_like, run_like = _missed_prototypes(first, latest, count, now, reason, action, task, decision)
    schedule = task.cron or (task.at.isoformat() if task.at else "")
    missed, missed_line = missed_like.made(
        id=missed_id(task.id, first.scheduled_for), task_id=task.id, task_name=task.name, prompt=task.prompt,
        schedule=schedule,
    )  # fmt: skip
    run, run_line = run_like.made(task_id=task.id, task_name=task.name)
    decision.lines[id(missed)], decision.lines[id(run)] = missed_line, run_line
    decision.missed.append(missed)
    decision.runs.append(run)
    decision.advances.append(Advance(task, latest, now, False))


def _missed_prototypes(
    first: Fire, latest: Fire, count: int, now: datetime, reason: str, action: str, task: Task, decision: Decision
) -> tuple[Prototype[MissedRecord], Prototype[Run]]:
    """What the missed record and the missed run of ``task`` share with those of the tasks with the same
    fires, count, target and reason: made once per decision."""
    target = decision.target_json(task)
    key = (id(first), id(latest), id(now), id(target), count, reason, action)
    known = decision.prototypes.get(key)
    if known is None:
        missed = Prototype(
            MissedRecord,
            ("id", "task_id", "task_name", "prompt", "schedule"),
            scheduled_for=_utc(latest.scheduled_for),
            first_scheduled_for=_utc(first.scheduled_for) if count > 1 else None,
            count=count,
            detected_at=_utc(now),
            reason=reason,
            action=action,
        )
        run = Prototype(
            Run,
            ("task_id", "task_name"),
            scheduled_for=_utc(latest.scheduled_for),
            planned_for=_utc(latest.planned_for),
            finished_at=_utc(now),
            outcome=Outcome.MISSED,
            reason=f"{reason} ({count:,} fire{'s' if count != 1 else ''} {action})",
            target=target,
            late_by_s=max(0.0, (now - latest.planned_for).total_seconds()),
        )
        known = decision.prototypes[key] = ((first, latest, now, target), missed, run)
    made: tuple[Prototype[MissedRecord], Prototype[Run]] = known[1:]
    return made


def _utc(when: datetime) -> datetime:
    """``when`` as the records' validators keep it (UTC). Records made here are built without validation
    (:class:`~kairosd.core.records.Prototype`: every value comes from a validated task, a fire or ``now``)."""
    return when if when.tzinfo is UTC else when.astimezone(UTC)


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
    prototype = _run_prototype(task, fire, now, catch_up, manual, decision)
    if not manual:
        decision.advances.append(Advance(task, fire, now, True))
    busy = task.id in in_flight.running or serial or task.id in decision.started
    if not busy:
        run, line = prototype.made(task_id=task.id, task_name=task.name)
        decision.lines[id(run)] = line
        decision.runs.append(run)
        decision.start.append((task, run))
        decision.started.add(task.id)
        return run
    run = prototype.make(task_id=task.id, task_name=task.name)
    if not serial and task.overlap is Overlap.SKIP:
        run.outcome = Outcome.SKIPPED
        run.finished_at = now
        run.reason = f"the previous run ({in_flight.running.get(task.id, 'starting')}) was still going (overlap=skip)"
        decision.runs.append(run)
        return run
    pending = in_flight.queued.get(task.id, 0) + decision.queued[task.id]
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
    decision.queued[task.id] += 1
    return run


def _run_prototype(
    task: Task, fire: Fire, now: datetime, catch_up: bool, manual: bool, decision: Decision
) -> Prototype[Run]:
    """What the run of ``task`` for ``fire`` shares with the runs of the tasks with the same fire and
    target: made once per decision."""
    target = decision.target_json(task)
    key = (id(fire), id(now), id(target), catch_up, manual)
    known = decision.prototypes.get(key)
    if known is None:
        prototype = Prototype(
            Run,
            ("task_id", "task_name"),
            scheduled_for=_utc(fire.scheduled_for),
            planned_for=_utc(fire.planned_for),
            dispatched_at=_utc(now),
            target=target,
            late_by_s=round(max(0.0, (now - fire.planned_for).total_seconds()), 3),
            catch_up=catch_up,
            manual=manual,
        )
        known = decision.prototypes[key] = ((fire, now, target), prototype)
    made: Prototype[Run] = known[1]
    return made


def stopped_unstarted(waiting: Iterable[tuple[Task | None, Run]], now: datetime) -> Decision:
    """The runs that had not started when kairosd stopped (waiting for a delivery slot, or queued
    behind a running one): each is recorded ``missed`` ("interrupted"), and the fires of each task are
    surfaced in one missed record (how many, the first and the last), as any other missed fires.

    They are not waited for: thousands can be waiting after a herd, far more than a stop's grace allows.
    A run whose task is gone is recorded, with no missed record (nothing is left to surface).
    """
    decision = Decision()
    by_task: dict[str, tuple[Task, list[Run]]] = {}
    for task, run in waiting:
        reason = f"interrupted: {STOPPED} (never started; surfaced as missed)"
        decision.runs.append(run.model_copy(update={"outcome": Outcome.MISSED, "finished_at": now, "reason": reason}))
        if task is not None:
            by_task.setdefault(task.id, (task, []))[1].append(run)
    for task, runs in by_task.values():
        slots = sorted(run.scheduled_for for run in runs)
        decision.missed.append(
            MissedRecord(
                id=missed_id(task.id, slots[0]),
                task_id=task.id,
                task_name=task.name,
                prompt=task.prompt,
                schedule=task.cron or (task.at.isoformat() if task.at else ""),
                scheduled_for=slots[-1],
                first_scheduled_for=slots[0] if len(slots) > 1 else None,
                count=len(slots),
                detected_at=now,
                reason=STOPPED,
                action="surfaced",
            )
        )
    return decision
