"""The scheduler's decisions (kairosd.scheduling.firing) as plain function calls on a fixed ``now``.

No loop, no ledgers, no clock: each test builds tasks, lists their due slots
and checks the Decision value: which runs start, queue or are skipped, which
fires are recorded as missed and why, where each anchor moves.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kairosd.core.models import CatchUp, CreatedBy, Overlap, Task, new_task
from kairosd.core.plan import Fire, fire_for, scheduled_after
from kairosd.core.records import Outcome
from kairosd.core.schedule.jitter import parse_jitter
from kairosd.scheduling import firing
from kairosd.scheduling.firing import (
    NOT_RUNNING,
    TOO_BUSY,
    Decision,
    Due,
    FireBounds,
    InFlight,
    advanced,
    clock_jump_reason,
    decide,
    due_slots,
    due_slots_at,
    fire_now,
)

NOW = datetime(2026, 3, 5, 10, 30, tzinfo=UTC)
THREE_DAYS_AGO = datetime(2026, 3, 2, 10, tzinfo=UTC)  # last handled slot of the hourly tasks below
LIMITS = FireBounds(grace=timedelta(days=7), catch_up_max=10, queue_limit=10)


def task(cron: str | None = None, **kw: Any) -> Task:
    kw.setdefault("created_at", datetime(2026, 2, 1, tzinfo=UTC))
    kw.setdefault("tz", "UTC")
    kw.setdefault("prompt", "check the PRs")
    return new_task(cron=cron, **kw)


def hourly(catch_up: CatchUp, **kw: Any) -> Task:
    return task("0 * * * *", catch_up=catch_up, **kw).model_copy(update={"last_scheduled_for": THREE_DAYS_AGO})


def one_pass(
    t: Task,
    reason: str | None = NOT_RUNNING,
    *,
    now: datetime = NOW,
    limits: FireBounds = LIMITS,
    in_flight: InFlight | None = None,
) -> Decision:
    anchor = t.last_scheduled_for or t.created_at
    return decide([due_slots(t, anchor, now, limits.grace)], now, reason, limits, in_flight or InFlight())


def hours(fires: list[Any]) -> list[tuple[int, int]]:
    return [(f.scheduled_for.day, f.scheduled_for.hour) for f in fires]


# ---- due slots ------------------------------------------------------------


def test_due_slots_count_the_fires_after_the_anchor_and_keep_the_first_and_the_newest():
    due = due_slots(hourly(CatchUp.ONCE), THREE_DAYS_AGO, NOW, LIMITS.grace)
    assert due.count == 72
    assert due.first == Fire(datetime(2026, 3, 2, 11, tzinfo=UTC), datetime(2026, 3, 2, 11, tzinfo=UTC))
    assert hours(due.newest) == [(5, 9), (5, 10)]  # catch_up=once needs the latest and the one before it
    assert due.behind is False
    everything = due_slots(hourly(CatchUp.ALL), THREE_DAYS_AGO, NOW, LIMITS.grace, catch_up_max=4)
    assert hours(everything.newest) == [(5, h) for h in range(6, 11)]  # catch_up=all: catch_up_max + 1


def test_due_slots_at_one_now_are_due_slots_and_shared_by_tasks_of_one_schedule_anchor_and_policy():
    """A pass asks for the due fires of every task at one ``now`` (``due_slots_at``): each answer is what
    ``due_slots`` gives, field by field; recurring cron tasks without jitter with the same schedule, zone,
    anchor and catch-up policy share theirs (one answer of a few for 10,000 tasks), and no other task does:
    another anchor, zone, schedule or policy (catch_up=all keeps more fires), a jittered task, a one-shot."""
    long_ago = NOW - timedelta(days=30)
    tasks = [
        hourly(CatchUp.ONCE),
        hourly(CatchUp.SKIP),
        hourly(CatchUp.ONCE),
        hourly(CatchUp.ALL),
        hourly(CatchUp.ONCE, tz="Europe/Paris"),
        hourly(CatchUp.ONCE, jitter="max:5m"),
        task("30 * * * *", catch_up=CatchUp.ONCE).model_copy(update={"last_scheduled_for": THREE_DAYS_AGO}),
        hourly(CatchUp.ONCE).model_copy(update={"last_scheduled_for": long_ago}),
        task(at=NOW - timedelta(hours=1), recurring=False),
    ]
    of = due_slots_at(NOW, LIMITS.grace, 3)
    fields = ("task", "count", "first", "newest", "behind")
    items = []
    for t in tasks:
        anchor = t.last_scheduled_for or t.created_at
        item, alone = of(t, anchor), due_slots(t, anchor, NOW, LIMITS.grace, 3)
        assert [getattr(item, name) for name in fields] == [getattr(alone, name) for name in fields]
        items.append(item)
    assert items[2].newest is items[0].newest
    assert items[2].first is items[0].first
    assert items[1].newest is items[0].newest  # once and skip keep the same newest fires
    others = [items[0], *items[3:]]
    assert len({id(item.newest) for item in others}) == len(others)
    assert items[7].behind
    assert items[7].count == 30 * 24


def test_due_slots_say_when_the_anchor_is_older_than_the_window_and_still_count_every_fire():
    due = due_slots(hourly(CatchUp.ALL), THREE_DAYS_AGO, NOW, timedelta(days=1))
    assert due.behind is True
    assert due.count == 72
    assert due.first is not None
    assert due.first.scheduled_for == datetime(2026, 3, 2, 11, tzinfo=UTC)


def monthly(catch_up: CatchUp, anchor: datetime) -> Task:
    return task("0 9 1 * *", catch_up=catch_up).model_copy(update={"last_scheduled_for": anchor})


@pytest.mark.parametrize("catch_up", list(CatchUp))
def test_a_task_with_no_slot_inside_the_window_records_the_older_miss_and_moves_on(catch_up: CatchUp):
    """Monthly, last handled Jan 1, now Feb 20 (window 7 days): Feb 1 was missed and is not in the
    window. Before, nothing was due inside it, so the anchor never moved and the task never fired again."""
    now = datetime(2026, 2, 20, 12, tzinfo=UTC)
    t = monthly(catch_up, datetime(2026, 1, 1, 9, tzinfo=UTC))
    due = due_slots(t, datetime(2026, 1, 1, 9, tzinfo=UTC), now, LIMITS.grace)
    assert [f.scheduled_for for f in due.newest] == [datetime(2026, 2, 1, 9, tzinfo=UTC)]
    assert (due.count, due.behind) == (1, True)
    decision = one_pass(t, now=now)
    assert decision.start == []
    (missed,) = decision.missed
    assert (missed.scheduled_for, missed.count) == (datetime(2026, 2, 1, 9, tzinfo=UTC), 1)
    assert {a.fire.scheduled_for for a in decision.advances} == {datetime(2026, 2, 1, 9, tzinfo=UTC)}
    moved, removed = advanced(t, decision.advances[-1].fire, now, fired=False)
    assert removed is None
    assert due_slots(moved, datetime(2026, 2, 1, 9, tzinfo=UTC), now, LIMITS.grace).count == 0  # next: Mar 1


def test_the_older_miss_of_a_task_with_a_slot_inside_the_window_is_recorded_and_the_slot_fires():
    t = monthly(CatchUp.ONCE, datetime(2026, 1, 1, 9, tzinfo=UTC))
    decision = one_pass(t)  # now Mar 5: Feb 1 before the window, Mar 1 inside it
    assert [run.scheduled_for for _, run in decision.start] == [datetime(2026, 3, 1, 9, tzinfo=UTC)]
    (missed,) = decision.missed
    assert missed.scheduled_for == datetime(2026, 2, 1, 9, tzinfo=UTC)


def test_catch_up_all_records_the_misses_older_than_the_window_even_when_it_fires_every_one_inside():
    """Daily, down 30 days, catch_up=all with room for 10: the 7 fires inside the window go out, and the
    older misses are recorded (before, they vanished without a trace)."""
    t = task("0 9 * * *", catch_up=CatchUp.ALL).model_copy(
        update={"last_scheduled_for": datetime(2026, 2, 3, 9, tzinfo=UTC)}
    )
    decision = one_pass(t)
    assert len(decision.start) + len(decision.queue) == 7
    (missed,) = decision.missed
    assert missed.scheduled_for == datetime(2026, 2, 26, 9, tzinfo=UTC)  # the newest before the window
    assert (missed.first_scheduled_for, missed.count) == (datetime(2026, 2, 4, 9, tzinfo=UTC), 23)


def test_a_task_far_behind_without_a_reason_follows_catch_up_rather_than_firing_weeks_late():
    """An imported task (anchor: its creation weeks ago) seen by a pass with no missed reason:
    its old fire is recorded as missed, not sent as if the loop were merely late."""
    t = monthly(CatchUp.ONCE, datetime(2026, 1, 1, 9, tzinfo=UTC))
    decision = one_pass(t, reason=None, now=datetime(2026, 2, 20, 12, tzinfo=UTC))
    assert decision.start == []
    (missed,) = decision.missed
    assert missed.reason.startswith(firing.BEHIND)


def test_a_future_slot_is_not_due():
    t = task(at=NOW + timedelta(seconds=1))
    assert due_slots(t, t.created_at, NOW, LIMITS.grace).count == 0


def test_a_claude_one_shot_is_due_up_to_its_lead_before_the_slot():
    # Task id ffffffff: nearly the full 90 s lead, so 11:00 is planned just before 10:58:31.
    t = task("0 11 5 3 *", recurring=False, jitter="claude", task_id="ffffffff")
    slot = datetime(2026, 3, 5, 11, tzinfo=UTC)
    assert due_slots(t, t.created_at, slot - timedelta(seconds=91), LIMITS.grace).count == 0
    due = due_slots(t, t.created_at, slot - timedelta(seconds=89), LIMITS.grace)
    assert [f.scheduled_for for f in due.newest] == [slot]


# ---- catch-up of recurring tasks ------------------------------------------


def test_catch_up_skip_records_every_miss_and_fires_nothing():
    d = one_pass(hourly(CatchUp.SKIP))
    assert d.start == []
    assert d.queue == []
    (missed,) = d.missed
    assert (missed.count, missed.action, missed.reason) == (72, "recorded", NOT_RUNNING)
    assert missed.first_scheduled_for == datetime(2026, 3, 2, 11, tzinfo=UTC)
    assert missed.scheduled_for == datetime(2026, 3, 5, 10, tzinfo=UTC)
    (run,) = d.runs
    assert run.outcome is Outcome.MISSED
    assert run.reason == "kairosd was not running (72 fires recorded)"
    assert run.late_by_s == 1800
    assert {(a.fire.scheduled_for, a.fired) for a in d.advances} == {(datetime(2026, 3, 5, 10, tzinfo=UTC), False)}


def test_catch_up_once_fires_the_latest_miss_and_records_the_rest():
    d = one_pass(hourly(CatchUp.ONCE))
    ((_, run),) = d.start
    assert run.scheduled_for == datetime(2026, 3, 5, 10, tzinfo=UTC)
    assert (run.catch_up, run.outcome, run.late_by_s, run.dispatched_at) == (True, None, 1800, NOW)
    (missed,) = d.missed
    assert (missed.count, missed.scheduled_for) == (71, datetime(2026, 3, 5, 9, tzinfo=UTC))
    assert [r.outcome for r in d.runs] == [Outcome.MISSED, None]
    assert [(a.fire.scheduled_for.hour, a.fired) for a in d.advances] == [(9, False), (10, True)]


def test_catch_up_once_counts_the_misses_within_the_grace_window():
    limits = FireBounds(grace=timedelta(hours=2, minutes=40), catch_up_max=10, queue_limit=10)
    d = one_pass(hourly(CatchUp.ONCE), limits=limits)
    assert hours([r for _, r in d.start]) == [(5, 10)]
    (missed,) = d.missed
    # Every miss is counted, inside the window or before it.
    assert (missed.count, missed.first_scheduled_for) == (71, datetime(2026, 3, 2, 11, tzinfo=UTC))
    assert missed.reason == NOT_RUNNING


def test_a_year_old_anchor_reports_every_miss_of_the_year():
    """Issue #15 item 8: an old import's record said count 1008 over its first slots after creation.
    Issue 27: the count is now the year's, counted rather than listed."""
    created = NOW - timedelta(days=365)
    task = new_task(prompt="p", cron="*/10 * * * *", tz="UTC", created_at=created, created_by=CreatedBy.IMPORT)
    limits = FireBounds(grace=timedelta(days=7), catch_up_max=10, queue_limit=10)
    due = due_slots(task, created, NOW, limits.grace)
    d = decide([due], NOW, NOT_RUNNING, limits, InFlight())
    ((_, run),) = d.start
    (missed,) = d.missed
    assert missed.first_scheduled_for == created + timedelta(minutes=10)
    assert missed.scheduled_for == run.scheduled_for - timedelta(minutes=10)
    assert missed.count == 365 * 24 * 6 - 1  # every slot of the year but the one fired


def test_catch_up_all_fires_at_most_catch_up_max_one_after_another():
    d = one_pass(hourly(CatchUp.ALL), limits=FireBounds(grace=timedelta(days=7), catch_up_max=4, queue_limit=10))
    # The oldest of the four starts; the others wait behind it (never a burst).
    assert hours([r for _, r in d.start]) == [(5, 7)]
    assert hours([r for _, r in d.queue]) == [(5, 8), (5, 9), (5, 10)]
    assert all(r.catch_up and r.outcome is Outcome.QUEUED for _, r in d.queue)
    (missed,) = d.missed
    assert missed.count == 68
    assert missed.scheduled_for == datetime(2026, 3, 5, 6, tzinfo=UTC)


def test_catch_up_all_fires_only_the_misses_within_the_grace_window():
    limits = FireBounds(grace=timedelta(hours=2, minutes=40), catch_up_max=10, queue_limit=10)
    d = one_pass(hourly(CatchUp.ALL), limits=limits)
    assert hours([r for _, r in d.start] + [r for _, r in d.queue]) == [(5, 8), (5, 9), (5, 10)]


def test_catch_up_all_records_the_misses_beyond_catch_up_max():
    limits = FireBounds(grace=timedelta(days=7), catch_up_max=3, queue_limit=10)
    d = one_pass(hourly(CatchUp.ALL), now=datetime(2026, 3, 2, 15, 30, tzinfo=UTC), limits=limits)
    assert hours([r for _, r in d.start] + [r for _, r in d.queue]) == [(2, 13), (2, 14), (2, 15)]
    (missed,) = d.missed
    assert (missed.count, missed.scheduled_for.hour, missed.first_scheduled_for) == (
        2,
        12,
        datetime(2026, 3, 2, 11, tzinfo=UTC),
    )


def test_catch_up_never_fires_a_slot_planned_before_the_grace_window():
    # due_slots does not list such slots for a recurring task; decide holds the rule on its own too.
    t = hourly(CatchUp.ALL)
    slots = [Fire(NOW - timedelta(hours=h), NOW - timedelta(hours=h)) for h in (5, 4, 3, 2, 1)]
    limits = FireBounds(grace=timedelta(hours=2), catch_up_max=10, queue_limit=10)
    d = decide([Due.of(t, slots)], NOW, NOT_RUNNING, limits, InFlight())
    assert [r.scheduled_for for _, r in d.start + d.queue] == [NOW - timedelta(hours=2), NOW - timedelta(hours=1)]
    assert d.missed[0].count == 3
    once = hourly(CatchUp.ONCE)
    d = decide([Due.of(once, slots[:3])], NOW, NOT_RUNNING, limits, InFlight())
    assert d.start == []
    assert d.missed[0].count == 3
    d = decide([Due.of(once, slots[:4])], NOW, NOT_RUNNING, limits, InFlight())  # latest: on the edge
    assert [r.scheduled_for for _, r in d.start] == [NOW - timedelta(hours=2)]


def test_catch_up_surface_on_a_recurring_task_surfaces_every_miss():
    d = one_pass(hourly(CatchUp.SURFACE))
    assert d.start == []
    (missed,) = d.missed
    assert (missed.count, missed.action) == (72, "surfaced")
    assert d.runs[0].reason == "kairosd was not running (72 fires surfaced)"


def test_a_clock_jump_reason_is_carried_into_the_records():
    reason = clock_jump_reason(3599.6)
    assert reason == "the clock jumped forward 3600s (machine asleep or clock changed)"
    d = one_pass(hourly(CatchUp.SKIP), reason)
    assert d.missed[0].reason == reason
    assert d.runs[0].reason == reason + " (72 fires recorded)"


# ---- one-shots --------------------------------------------------------------


@pytest.mark.parametrize(
    ("catch_up", "action"), [(CatchUp.SURFACE, "surfaced"), (CatchUp.SKIP, "recorded")], ids=["surface", "skip"]
)
def test_a_missed_one_shot_is_recorded_not_fired(catch_up: CatchUp, action: str):
    t = task(at=NOW - timedelta(hours=1), catch_up=catch_up)
    d = one_pass(t)
    assert d.start == []
    (missed,) = d.missed
    assert (missed.count, missed.action, missed.schedule) == (1, action, t.at.isoformat())  # type: ignore[union-attr]
    assert d.runs[0].reason == f"kairosd was not running (1 fire {action})"
    # The anchor moves past it, so the task is done (advanced() then removes it).
    assert [(a.fire.scheduled_for, a.fired) for a in d.advances] == [(NOW - timedelta(hours=1), False)]


def test_a_missed_one_shot_with_catch_up_once_fires_within_the_grace_window():
    d = one_pass(task(at=NOW - timedelta(hours=1), catch_up=CatchUp.ONCE))
    ((_, run),) = d.start
    assert (run.catch_up, run.late_by_s) == (True, 3600)
    assert d.missed == []


def test_a_missed_one_shot_older_than_the_grace_window_is_recorded():
    d = one_pass(task(at=NOW - timedelta(days=8), catch_up=CatchUp.ONCE))
    assert d.start == []
    (missed,) = d.missed
    assert (missed.action, missed.reason) == ("recorded", NOT_RUNNING)  # one-shots are never "behind"


def _cases() -> list[tuple[str, Task, str | None, datetime]]:
    cases = []
    for policy in CatchUp:
        name = policy.value
        cases += [
            (f"one-shot-{name}", task(at=NOW - timedelta(hours=1), catch_up=policy), NOT_RUNNING, NOW),
            (f"old-one-shot-{name}", task(at=NOW - timedelta(days=9), catch_up=policy), NOT_RUNNING, NOW),
            (f"hourly-{name}", hourly(policy), NOT_RUNNING, NOW),
            (f"hourly-jump-{name}", hourly(policy), clock_jump_reason(3600), NOW),
            (f"hourly-late-{name}", hourly(policy), None, NOW),
            (f"monthly-{name}", monthly(policy, datetime(2026, 1, 1, 9, tzinfo=UTC)), None, NOW),
        ]
    return cases


@pytest.mark.parametrize(("t", "reason", "now"), [c[1:] for c in _cases()], ids=[c[0] for c in _cases()])
def test_each_handled_slot_moves_the_anchor_once_and_the_last_move_is_the_newest_slot(
    t: Task, reason: str | None, now: datetime
):
    """No slot is advanced past twice (a missed one used to be, by _catch_up and _record_missed both)."""
    d = one_pass(t, reason, now=now)
    moves = [(a.task.id, a.fire.scheduled_for) for a in d.advances]
    assert moves
    assert len(moves) == len(set(moves))
    newest = max(r.scheduled_for for r in d.runs)
    assert d.advances[-1].fire.scheduled_for == newest


# ---- a late loop ------------------------------------------------------------


def test_a_late_loop_fires_the_latest_slot_and_records_the_others_as_too_busy():
    t = task("*/5 * * * *").model_copy(update={"last_scheduled_for": datetime(2026, 3, 5, 10, 10, tzinfo=UTC)})
    d = one_pass(t, None)
    ((_, run),) = d.start
    assert (run.scheduled_for.minute, run.catch_up) == (30, False)
    (missed,) = d.missed
    assert (missed.count, missed.reason, missed.action) == (3, TOO_BUSY, "recorded")
    assert d.runs[0].reason == "kairosd was too busy to fire on time (3 fires recorded)"


def test_a_late_loop_ignores_catch_up_policy():
    d = one_pass(hourly(CatchUp.SKIP), None)
    assert len(d.start) == 1
    assert d.missed[0].count == 71


def test_paused_tasks_and_tasks_with_nothing_due_are_left_alone():
    paused = hourly(CatchUp.ALL).model_copy(update={"paused": True})
    idle = task("0 12 * * *").model_copy(update={"last_scheduled_for": datetime(2026, 3, 4, 12, tzinfo=UTC)})
    due = [due_slots(t, t.last_scheduled_for or t.created_at, NOW, LIMITS.grace) for t in (paused, idle)]
    assert decide(due, NOW, NOT_RUNNING, LIMITS, InFlight()) == Decision()


# ---- overlap ----------------------------------------------------------------


def minutely(overlap: Overlap) -> Task:
    return task("* * * * *", overlap=overlap).model_copy(update={"last_scheduled_for": NOW - timedelta(minutes=1)})


def test_overlap_skip_skips_a_fire_while_the_previous_run_goes():
    t = minutely(Overlap.SKIP)
    d = one_pass(t, None, in_flight=InFlight(running={t.id: "r123"}))
    assert d.start == []
    assert d.queue == []
    (run,) = d.runs
    assert (run.outcome, run.finished_at) == (Outcome.SKIPPED, NOW)
    assert run.reason == "the previous run (r123) was still going (overlap=skip)"
    # The slot is handled all the same: it is not tried again.
    assert [(a.fire.scheduled_for, a.fired) for a in d.advances] == [(NOW, True)]


def test_overlap_skip_does_not_apply_to_other_tasks():
    t = minutely(Overlap.SKIP)
    d = one_pass(t, None, in_flight=InFlight(running={"another": "r123"}))
    assert len(d.start) == 1


def test_a_task_started_earlier_in_the_same_pass_counts_as_running():
    t = minutely(Overlap.SKIP)
    due = due_slots(t, NOW - timedelta(minutes=1), NOW, LIMITS.grace)
    d = decide([due, due], NOW, None, LIMITS, InFlight())
    assert len(d.start) == 1
    assert d.runs[1].reason == "the previous run (starting) was still going (overlap=skip)"


def test_overlap_queue_queues_a_fire_behind_the_running_one():
    t = minutely(Overlap.QUEUE)
    d = one_pass(t, None, in_flight=InFlight(running={t.id: "r123"}, queued={t.id: 9}))
    ((_, run),) = d.queue
    assert (run.outcome, run.reason) == (Outcome.QUEUED, "waiting for the previous run of this task")
    assert d.start == []


def test_overlap_queue_skips_a_fire_once_the_queue_is_full():
    t = minutely(Overlap.QUEUE)
    d = one_pass(t, None, in_flight=InFlight(running={t.id: "r123"}, queued={t.id: 10}))
    assert d.queue == []
    (run,) = d.runs
    assert (run.outcome, run.reason) == (Outcome.SKIPPED, "10 runs already queued behind the running one")


def test_catch_up_fires_count_against_the_queue_limit():
    d = one_pass(hourly(CatchUp.ALL), limits=FireBounds(grace=timedelta(days=7), catch_up_max=5, queue_limit=2))
    assert len(d.start) == 1
    assert len(d.queue) == 2
    skipped = [r for r in d.runs if r.outcome is Outcome.SKIPPED]
    assert [r.reason for r in skipped] == ["2 runs already queued behind the running one"] * 2


def test_catch_up_fires_of_an_overlap_skip_task_queue_rather_than_skip_each_other():
    d = one_pass(hourly(CatchUp.ALL, overlap=Overlap.SKIP), limits=FireBounds(timedelta(days=7), 3, 10))
    assert len(d.start) == 1
    assert len(d.queue) == 2


def test_a_catch_up_fire_of_a_busy_overlap_skip_task_is_skipped():
    t = hourly(CatchUp.ONCE, overlap=Overlap.SKIP)
    d = one_pass(t, in_flight=InFlight(running={t.id: "r9"}))
    assert [r.outcome for r in d.runs] == [Outcome.MISSED, Outcome.SKIPPED]


# ---- manual fires -----------------------------------------------------------


def test_fire_now_starts_a_manual_run_and_leaves_the_anchor():
    t = task("0 12 * * *")
    d, run = fire_now(t, NOW, LIMITS, InFlight())
    assert d.start == [(t, run)]
    assert (run.manual, run.catch_up, run.scheduled_for, run.planned_for, run.late_by_s) == (True, False, NOW, NOW, 0)
    assert d.advances == []


def test_fire_now_follows_the_overlap_rule():
    t = task("0 12 * * *")
    d, run = fire_now(t, NOW, LIMITS, InFlight(running={t.id: "r1"}))
    assert run.outcome is Outcome.SKIPPED
    assert d.runs == [run]


# ---- after a fire -----------------------------------------------------------


def test_advanced_moves_the_anchor_and_stamps_only_real_fires():
    t = hourly(CatchUp.ONCE)
    fire = Fire(datetime(2026, 3, 5, 10, tzinfo=UTC), datetime(2026, 3, 5, 10, tzinfo=UTC))
    kept, removal = advanced(t, fire, NOW, fired=True)
    assert (kept.last_scheduled_for, kept.last_fired_at, removal) == (fire.scheduled_for, NOW, None)
    missed, removal = advanced(t, fire, NOW, fired=False)
    assert (missed.last_fired_at, removal) == (None, None)


def test_advanced_removes_a_handled_one_shot_fired_or_not():
    t = task(at=NOW)
    assert advanced(t, Fire(NOW, NOW), NOW, fired=True)[1] == "one-shot done"
    assert advanced(t, Fire(NOW, NOW), NOW, fired=False)[1] == "one-shot done"


def test_advanced_expires_a_task_at_its_first_fire_past_the_expiry():
    t = task("0 11 * * *", created_by=CreatedBy.MCP, created_at=datetime(2026, 3, 1, 12, tzinfo=UTC))
    assert t.expires_after_days == 7
    before = datetime(2026, 3, 8, 11, tzinfo=UTC)
    after = datetime(2026, 3, 9, 11, tzinfo=UTC)
    assert advanced(t, Fire(before, before), before, fired=True)[1] is None
    assert advanced(t, Fire(after, after), after, fired=False)[1] is None  # a miss does not expire it
    assert advanced(t, Fire(after, after), after, fired=True)[1] == "expired"
    assert advanced(t.model_copy(update={"permanent": True}), Fire(after, after), after, fired=True)[1] is None


# ---- the summary against the full list --------------------------------------


def listed(t: Task, anchor: datetime, now: datetime) -> list[Fire]:
    """Every due fire of ``t``, one by one: what due_slots summarises."""
    out = []
    for scheduled in scheduled_after(t, anchor):
        fire = fire_for(t, scheduled)
        if scheduled > now or fire.planned_for > now:
            break
        out.append(fire)
    return out


@pytest.mark.parametrize("jitter", ["none", "claude", "max:20m", "max:1d"])
@pytest.mark.parametrize("cron", ["*/5 * * * *", "0 * * * *", "*/7 9-17 * * 1-5"])
@pytest.mark.parametrize("back", [timedelta(minutes=3), timedelta(hours=5), timedelta(days=3)])
def test_the_summary_has_the_count_first_and_newest_of_the_full_list(jitter: str, cron: str, back: timedelta):
    """A fire whose slot has passed but whose jittered time has not is not due, summary or not. (Slots
    older than the most jitter can delay are due whatever it is; their planned time is taken as the
    slot, as before, so only the slots are compared for them.)"""
    for task_id in ("00000000", "80000000", "ffffffff"):
        t = task(cron, jitter=jitter, task_id=task_id, catch_up=CatchUp.ALL)
        anchor = NOW - back
        full = listed(t, anchor, NOW)
        due = due_slots(t, anchor, NOW, LIMITS.grace, catch_up_max=4)
        assert due.count == len(full)
        assert [f.scheduled_for for f in [due.first] if f] == [f.scheduled_for for f in full[:1]]
        assert [f.scheduled_for for f in due.newest] == [f.scheduled_for for f in full[-5:]]
        reach = NOW - parse_jitter(jitter).max_delay - timedelta(seconds=1)
        assert [f for f in due.newest if f.scheduled_for > reach] == [f for f in full[-5:] if f.scheduled_for > reach]


def test_the_records_of_a_pass_are_the_ones_validation_makes_in_any_zone():
    """The records a decision makes skip validation (a catch-up pass makes 30,000 of them): every time
    they hold is in UTC anyway, as the models' validators keep it, for a task in any zone, and each
    record equals the one validation makes of it."""
    from zoneinfo import ZoneInfo

    from kairosd.core.records import MissedRecord, Run

    paris = ZoneInfo("Europe/Paris")
    t = task("0 * * * *", tz="Europe/Paris", catch_up=CatchUp.ONCE).model_copy(
        update={"last_scheduled_for": THREE_DAYS_AGO}
    )
    now = NOW.astimezone(paris)
    d = decide([due_slots(t, THREE_DAYS_AGO, now, LIMITS.grace)], now, NOT_RUNNING, LIMITS, InFlight())
    assert [r.outcome for r in d.runs] == [Outcome.MISSED, None]
    assert len(d.missed) == 1
    for run in d.runs:
        times = [run.scheduled_for, run.planned_for, run.dispatched_at or run.finished_at]
        assert all(when is not None and when.tzinfo is UTC for when in times)
        assert Run.model_validate(run.model_dump()) == run
        assert run.model_dump(mode="json")["scheduled_for"].endswith("Z")
    (missed,) = d.missed
    assert {missed.scheduled_for.tzinfo, missed.first_scheduled_for.tzinfo, missed.detected_at.tzinfo} == {UTC}
    assert MissedRecord.model_validate(missed.model_dump()) == missed


def test_the_runs_of_tasks_that_share_a_target_share_its_json():
    """Tasks loaded from the store share their target objects; the runs of a pass share the target's
    JSON (one dict, read only) rather than a dump each: 20,000 dicts in a catch-up of 10,000 tasks.
    Tasks with equal targets of their own (added since the start) share it too."""
    from kairosd.core.models import InboxTarget, ShellTarget

    shared = InboxTarget(session="main")
    tasks = [hourly(CatchUp.ONCE, target=shared), hourly(CatchUp.ONCE, target=shared)]
    tasks.append(hourly(CatchUp.ONCE, target=ShellTarget(argv=["true"])))
    tasks.append(hourly(CatchUp.ONCE, target=InboxTarget(session="main")))  # equal, not the same object
    items = [due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks]
    d = decide(items, NOW, NOT_RUNNING, LIMITS, InFlight())
    by_task = {t.id: [r.target for r in d.runs if r.task_id == t.id] for t in tasks}
    assert all(len(targets) == 2 for targets in by_task.values())
    main_targets = by_task[tasks[0].id] + by_task[tasks[1].id] + by_task[tasks[3].id]
    assert all(target is main_targets[0] for target in main_targets)
    assert main_targets[0] == shared.model_dump(mode="json")
    assert by_task[tasks[2].id][0] == tasks[2].target.model_dump(mode="json")
    assert by_task[tasks[2].id][0] is not main_targets[0]


def test_tasks_decided_together_get_the_records_each_gets_alone():
    """A pass lays out what the records of tasks with the same fires, target and reason share once (their
    prototype): each task's records are still its own (its id, name, prompt, schedule), and equal, but
    for their ids, to the records of the same task decided alone."""
    from kairosd.core.models import InboxTarget

    shared = InboxTarget(session="main")
    tasks = [
        hourly(catch_up, target=shared, name=f"n{i}", prompt=f"p{i} \u2603")
        for i, catch_up in enumerate([CatchUp.ONCE, CatchUp.SKIP, CatchUp.ONCE, CatchUp.ALL])
    ]
    tasks.append(task("30 * * * *", catch_up=CatchUp.ONCE, target=shared, name="other schedule"))
    tasks.append(hourly(CatchUp.ONCE, name="own target"))
    items = [due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks]
    together = decide(items, NOW, NOT_RUNNING, LIMITS, InFlight())

    def without_ids(records: list[Any], task_id: str) -> list[dict[str, Any]]:
        return [r.model_dump(exclude={"id", "run_id"}) for r in records if r.task_id == task_id]

    for t, item in zip(tasks, items, strict=True):
        alone = decide([item], NOW, NOT_RUNNING, LIMITS, InFlight())
        assert without_ids(together.runs, t.id) == without_ids(alone.runs, t.id) != []
        assert without_ids(together.missed, t.id) == without_ids(alone.missed, t.id)
        assert {(r.task_name, r.prompt, r.schedule) for r in together.missed if r.task_id == t.id} <= {
            (t.name, t.prompt, t.cron)
        }
    assert len({r.run_id for r in together.runs}) == len(together.runs)
    assert len({r.id for r in together.missed}) == len(together.missed) == len(tasks)


def _as_written(d: Decision) -> list[Any]:
    """What a decision writes and does, in order, with each run's random id replaced by its place: the
    records, their lines (as the ledgers get them), the runs started and the anchor moves."""
    import json

    ids = {run.run_id: f"run-{i}" for i, run in enumerate(d.runs)}
    lines = [json.loads(d.line(r)) for r in [*d.missed, *d.runs]]
    for line in lines:
        line["run_id"] = ids.get(line.get("run_id"), line.get("run_id"))
    runs = [{**r.model_dump(), "run_id": ids[r.run_id]} for r in d.runs]
    return [
        [m.model_dump() for m in d.missed], runs, lines,
        [(t.id, ids[r.run_id]) for t, r in d.start], [(t.id, ids[r.run_id]) for t, r in d.queue],
        [(a.task.id, a.fire, a.when, a.fired) for a in d.advances], sorted(d.started),
    ]  # fmt: skip


@pytest.mark.parametrize("reason", [NOT_RUNNING, None])
def test_a_planned_catch_up_decides_what_the_task_by_task_one_decides(monkeypatch, reason):
    """The catch-up of many tasks that share their due fires (every task after a long stop) is planned
    once per group and made per task from the plan (``_catch_up_planned``): the records, their lines, the
    starts and the anchor moves are those the task-by-task catch-up (``_catch_up``) makes, for every
    policy, texts a line cannot hold as they are (a DEL), a task already running, a jittered task, a
    task behind the catch-up window and one whose newest fire is older than it."""
    texts = ["plain", "caf\u00e9 \u2603", 'quote " back \\ slash', "del \x7f", "100% %s", "line\nbreak"]
    tasks = []
    for i, policy in enumerate([CatchUp.ONCE, CatchUp.SKIP, CatchUp.ALL] * 4):
        text = texts[i % len(texts)]
        name = text if i % 2 else None
        tasks.append(hourly(policy, task_id=f"{0x10000000 + i:08x}", prompt=f"{text} {i}", name=name))
    tasks.append(hourly(CatchUp.ONCE, task_id="20000000", jitter="max:5m"))
    tasks.append(task("*/30 * * * *", catch_up=CatchUp.ONCE, task_id="20000001").model_copy(
        update={"last_scheduled_for": NOW - timedelta(days=30)}))  # fmt: skip
    tasks.append(task("0 9 1 1 *", catch_up=CatchUp.ONCE, task_id="20000002").model_copy(
        update={"last_scheduled_for": datetime(2025, 1, 1, 9, tzinfo=UTC)}))  # fmt: skip
    running = InFlight(running={tasks[0].id: "r-running"})
    limits = FireBounds(grace=timedelta(days=7), catch_up_max=3, queue_limit=10)

    def decided() -> Decision:
        due = [due_slots(t, t.last_scheduled_for or t.created_at, NOW, limits.grace, 3) for t in tasks]
        return decide(due, NOW, reason, limits, running)

    planned = decided()
    monkeypatch.setattr(firing, "_catch_up_planned", lambda *args: False)
    one_by_one = decided()
    assert _as_written(planned) == _as_written(one_by_one)
    assert len(planned.start) >= 5  # the cases above did catch up
    assert len(planned.missed) >= 10


@pytest.mark.parametrize("reason", [NOT_RUNNING, "50% %s %% %d of it"])
@pytest.mark.parametrize("policy", [CatchUp.ONCE, CatchUp.SKIP])
def test_a_run_of_tasks_sharing_a_plan_is_made_in_one_loop_as_task_by_task(monkeypatch, policy, reason):
    """Consecutive tasks of one plan (every task of a 10k pass) are gathered and their records made in one
    loop from the prototypes' laid-out parts (``_Plan.make``). What they write and do, in order, is what the
    task-by-task catch-up writes and does, field by field and line by line: with tasks of that plan cut by
    one whose prompt a line cannot hold (a DEL: decided by _catch_up between two runs of the plan), one of
    another target, one running, the same task twice in the pass, and escaped names and prompts; and a
    reason with ``%`` in it (the lines are the prototypes' pieces joined, no ``%``-template)."""
    from kairosd.core.models import InboxTarget

    shared, other = InboxTarget(session="main"), InboxTarget(session="other")
    texts = ["plain", "caf\u00e9 \u2603", 'quote " back \\ slash', "100% %s", "line\nbreak", "tab\there"]
    tasks = [
        hourly(policy, target=shared, task_id=f"{0x30000000 + i:08x}", prompt=f"{texts[i % 6]} {i}",
               name=None if i % 3 else texts[i % 6])
        for i in range(40)
    ]  # fmt: skip
    tasks[17] = hourly(policy, target=shared, task_id="3000ff17", prompt="del \x7f")
    tasks[25] = hourly(policy, target=other, task_id="3000ff25")
    tasks.append(tasks[5])  # the same task again, later in the same pass
    running = InFlight(running={tasks[30].id: "r-running"})

    def decided() -> Decision:
        due = [due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks]
        return decide(due, NOW, reason, LIMITS, running)

    made: list[int] = []
    laid_out = firing._Plan._make_laid_out

    def counting(plan: Any, batch: list[Any], decision: Decision) -> None:
        made.append(len(batch))
        laid_out(plan, batch, decision)

    monkeypatch.setattr(firing._Plan, "_make_laid_out", counting)
    planned = decided()
    assert max(made) >= 10  # runs of tasks were made in one loop
    monkeypatch.setattr(firing, "_catch_up_planned", lambda *args: None)
    one_by_one = decided()
    assert _as_written(planned) == _as_written(one_by_one)
    assert len(planned.missed) == len(tasks)
    if policy is CatchUp.ONCE:
        assert sum(1 for _, run in planned.start) == len(tasks) - 2  # the running task and the repeat do not start
    for record in planned.missed:
        assert record.model_dump() == type(record).model_validate_json(planned.line(record)).model_dump()
    for run in planned.runs:
        assert run.model_dump() == type(run).model_validate_json(planned.line(run)).model_dump()


@pytest.mark.parametrize("policy", [CatchUp.ONCE, CatchUp.SKIP])
def test_a_task_of_the_group_before_takes_its_plan_without_asking_for_one(monkeypatch, policy):
    """After a long stop most tasks of a pass share the plan of the task before them: decide takes it for
    each without a call of ``_catch_up_planned`` (one a group, not one a task: 10,000 calls a pass), and asks
    again for a task that differs (another target, one running) and for the one after another target. What is written
    stays what the task-by-task catch-up writes (see the tests above)."""
    from kairosd.core.models import InboxTarget

    shared, other = InboxTarget(session="main"), InboxTarget(session="other")
    tasks = [hourly(policy, target=shared, task_id=f"{0x50000000 + i:08x}") for i in range(30)]
    tasks[10] = hourly(policy, target=other, task_id="5000ff10")
    running = InFlight(running={tasks[20].id: "r-running"})
    asked: list[str] = []
    planned = firing._catch_up_planned

    def counting(item: Any, *args: Any) -> Any:
        asked.append(item.task.id)
        return planned(item, *args)

    monkeypatch.setattr(firing, "_catch_up_planned", counting)
    due = [due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks]
    d = decide(due, NOW, NOT_RUNNING, LIMITS, running)
    assert asked == [tasks[i].id for i in (0, 10, 11, 20)]
    assert len(d.missed) == len(tasks)
    assert len(d.start) == (len(tasks) - 1 if policy is CatchUp.ONCE else 0)  # the running task does not start


def test_a_decisions_lines_of_its_records_are_their_lines_in_order_and_json_line_of_any_other(monkeypatch):
    """The ledgers get a chunk's lines in one list (``Decision.lines_of``): each record's line, the one its
    prototype made (nothing encoded again), in the records' order; a record the decision did not make is
    encoded as ``json_line`` encodes it."""
    from kairosd.core.records import json_line

    tasks = [hourly(policy, task_id=f"{0x40000000 + i:08x}") for i, policy in enumerate([CatchUp.ONCE] * 5)]
    d = decide([due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks], NOW, NOT_RUNNING, LIMITS, InFlight())
    stranger = one_pass(hourly(CatchUp.SKIP, task_id="4000ffff")).runs[0]
    expected = [d.line(r) for r in d.runs] + [json_line(stranger)]
    encoded: list[Any] = []
    monkeypatch.setattr(firing, "json_line", lambda record: encoded.append(record) or json_line(record))
    assert d.lines_of([*d.runs, stranger]) == expected
    assert encoded == [stranger]
    assert [json.loads(line)["run_id"] for line in d.lines_of(d.runs)] == [r.run_id for r in d.runs]
    assert d.lines_of(d.missed) == [d.line(m) for m in d.missed]


def test_missed_ids_of_a_first_slot_are_missed_id_and_run_ids_drawn_together_are_run_ids():
    """A plan encodes its first missed slot once (``missed_ids``) and draws its runs' ids at once
    (``new_run_ids``): the ids missed records have always had (a record written by an older kairosd is
    replaced when its pass is decided again), and run ids of new_run_id's form, all distinct."""
    import hashlib
    import re
    from zoneinfo import ZoneInfo

    from kairosd.core.records import missed_id, missed_ids, new_run_ids

    first = datetime(2026, 3, 2, 11, tzinfo=UTC)
    of = missed_ids(first.astimezone(ZoneInfo("Europe/Paris")))
    for task_id in ["10000000", "caf\u00e9", "a\0b"]:
        key = f"{task_id}\0{first.isoformat()}".encode()
        assert of(task_id) == missed_id(task_id, first) == "m" + hashlib.blake2b(key, digest_size=6).hexdigest()
    ids = new_run_ids(600)
    assert len(ids) == len(set(ids)) == 600
    assert all(re.fullmatch(r"r[0-9a-f]{12}", run_id) for run_id in ids)


@pytest.mark.parametrize("policy", [CatchUp.ONCE, CatchUp.SKIP])
def test_the_chunks_of_a_pass_share_their_plans_and_decide_what_each_decides_alone(monkeypatch, policy):
    """A pass decides its tasks a chunk at a time; each chunk's decision shares the plans, prototypes and
    targets of the one before (``shared``): the groups are planned and laid out once per pass. What each
    chunk writes and does is what it writes and does decided on its own."""
    from kairosd.core.models import InboxTarget

    target = InboxTarget(session="main")
    tasks = [
        hourly(policy, target=target, task_id=f"{0x40000000 + i:08x}", prompt=f"p{i}", name=f"n{i}" if i % 2 else None)
        for i in range(30)
    ]
    tasks[12] = hourly(policy, target=InboxTarget(session="other"), task_id="4000ff12")
    due = [due_slots(t, THREE_DAYS_AGO, NOW, LIMITS.grace) for t in tasks]
    planned: list[Any] = []
    plan_catch_up = firing._plan_catch_up

    def counting(*args: Any) -> Any:
        planned.append(args[0].task.id)
        return plan_catch_up(*args)

    monkeypatch.setattr(firing, "_plan_catch_up", counting)
    first = decide(due[:10], NOW, NOT_RUNNING, LIMITS, InFlight())
    second = decide(due[10:20], NOW, NOT_RUNNING, LIMITS, InFlight(), shared=first)
    third = decide(due[20:], NOW, NOT_RUNNING, LIMITS, InFlight(), shared=second)
    assert planned == [tasks[0].id, tasks[12].id]  # one plan per group for the whole pass
    assert third.plans is first.plans
    for chunk, decision in [(due[10:20], second), (due[20:], third)]:
        alone = decide(chunk, NOW, NOT_RUNNING, LIMITS, InFlight())
        assert _as_written(decision) == _as_written(alone)
        assert not set(map(id, decision.runs)) & set(map(id, first.runs))
