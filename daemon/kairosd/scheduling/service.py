"""The daemon's use-cases: add, edit, list, show, remove, pause, resume, run, history,
missed, inbox, import, status. The HTTP API and the tests call these methods.

Every change is durable before a method returns (``TaskBook.commit``), and
every method takes and returns plain JSON-able data or raises a KairosError.

Must not import the server or the CLI.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import operator
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ValidationError

from kairosd import __version__
from kairosd.api.http_types import compact_json
from kairosd.api.requests import parse_body, validation_message
from kairosd.core import bounds
from kairosd.core.clock import Clock
from kairosd.core.errors import InvalidTimeError, NotFoundError, StoreError, UsageError
from kairosd.core.events import EventBus
from kairosd.core.models import (
    Overlap,
    SessionTarget,
    Task,
    default_catch_up,
    new_task,
    new_task_id,
)
from kairosd.core.plan import Fire, scheduled_after, upcoming
from kairosd.core.records import Outcome, Run
from kairosd.core.schedule.durations import every_to_cron
from kairosd.core.schedule.exact import resolve_at, resolve_at_noted, resolve_in
from kairosd.core.schedule.explain import explain
from kairosd.core.schedule.jitter import capped_jitter_note
from kairosd.delivery.base import SKIP_LATER_CHECKS
from kairosd.scheduling import timeline
from kairosd.scheduling.firing import PAUSED_WHEN_DUE, FireBounds
from kairosd.scheduling.kept import KEEP_TASKS
from kairosd.scheduling.requests import AddRequest, EditRequest
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.summaries import Summaries, summary_document
from kairosd.scheduling.viewtails import ViewTails
from kairosd.scheduling.viewtails import rfc3339 as _rfc3339
from kairosd.store.inbox import InboxStore

MAX_TASKS = 100_000
MISSED_CLEARED_AT = "missed_cleared_at"  # a store field: `kairos missed --clear` hides catch-up runs before it
JITTER_SAMPLE = 25  # fires looked at for the shortest period that caps a max:DUR jitter


def _refuse_contradictions(req: AddRequest, recurring: bool) -> None:
    """Options that cannot all hold: one of them would be dropped without a word (issue 24, item 4)."""
    days = req.expires_after_days
    if days is not None and not recurring:
        raise UsageError("expires_after_days is for recurring tasks; a one-shot is removed once it fires")
    if days is not None and req.permanent:
        raise UsageError(f"expires_after_days {days} and permanent contradict each other: give one of them")


_NEVER = datetime.max.replace(tzinfo=UTC)  # sorts a task with no fire after all others (they come last anyway)


def _store_error(path: object, exc: OSError) -> StoreError:
    """A state file that cannot be read or written, as the API reports it (code ``store``)."""
    where = exc.filename or path
    return StoreError(f"cannot use {where}: {exc.strerror or exc}; nothing was changed")


class Service:
    def __init__(
        self,
        scheduler: Scheduler,
        inbox: InboxStore,
        clock: Clock,
        events: EventBus,
        default_tz: str,
        info: dict[str, Any] | None = None,
        extra_status: dict[str, Callable[[], Any]] | None = None,
        remove_logs: Callable[[str], None] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.remove_logs = remove_logs  # deletes a removed task's run logs (blocking)
        self.book = scheduler.book
        self.inbox = inbox
        self.clock = clock
        self.events = events
        self.default_tz = default_tz
        self.info = info or {}
        self.extra_status = extra_status or {}  # e.g. {"background": registry.status}
        self.started_at = clock.now()
        self.new_id: Callable[[], str] = new_task_id  # replaced by tests that force a collision

    # ---- views ----------------------------------------------------------

    def view(self, task: Task, count: int = 3) -> dict[str, Any]:
        now = self.clock.now()
        planned = self.scheduler.planned(task.id)
        if task.paused:
            fires = []
        elif count == 1 and planned is not None and planned.planned_for > now:
            fires = [planned]  # the scheduler already knows it: listing 10,000 tasks stays cheap
        else:
            fires = upcoming(task, now, count, after=task.last_scheduled_for)
        return self._view(task, fires, self.scheduler.is_running(task.id))

    def _view(self, task: Task, fires: list[Fire], running: bool) -> dict[str, Any]:
        return {**self._dump(task), **self._view_tail(task, fires, running)}

    def _view_tail(self, task: Task, fires: list[Fire], running: bool) -> dict[str, Any]:
        """What a view adds to the task's own fields."""
        next_fires = [
            {"scheduled_for": _rfc3339(f.scheduled_for), "planned_for": _rfc3339(f.planned_for)} for f in fires
        ]
        return {
            "status": "paused" if task.paused else ("scheduled" if fires else "done"),
            "schedule": task.cron or (_rfc3339(task.at.astimezone(task.zone)) if task.at else None),
            "explanation": explain(task.cron) if task.cron else "once, at the exact time",
            "next_fires": next_fires,
            "planned_for": next_fires[0]["planned_for"] if fires else None,
            "running": running,
        }

    def _dump(self, task: Task) -> dict[str, Any]:
        return task.model_dump(mode="json")

    def listing(self, summary: bool = False, now: datetime | None = None) -> list[tuple[Any, Task, Fire | None, bool]]:
        """What ``GET /tasks`` lists, in its order: (sort key, task, the fire it shows, whether it runs).

        Sorted by the instant of that fire (not by ISO text: the same instant in other offsets sorts
        differently as text), tasks with none last. A full view of a task whose planned fire is due
        (or unknown) asks the clock for its next one, as :meth:`view` does; a summary shows the plan.
        """
        now = self.clock.now() if now is None else now  # one instant for the whole list
        planned_of, running_of = self.scheduler.planned, self.scheduler.is_running
        rows = []
        # A row per task, and no cycles among them: the collector would walk the rows made so far each
        # time they grew by a quarter (0.4 of 0.9 s at 300,000 tasks). It is on again before anything else runs.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for task in self.book:
                fire = None if task.paused else planned_of(task.id)
                if not summary and not task.paused and (fire is None or fire.planned_for <= now):
                    fires = upcoming(task, now, 1, after=task.last_scheduled_for)
                    fire = fires[0] if fires else None
                # Aware datetimes compare as instants, whatever their offsets.
                key = (fire is None, _NEVER if fire is None else fire.planned_for, task.id)
                rows.append((key, task, fire, running_of(task.id)))
        finally:
            if collecting:
                gc.enable()
        rows.sort(key=operator.itemgetter(0))
        return rows

    def listing_state(self, summary: bool, now: datetime) -> list[object] | None:
        """What :meth:`listing` at ``now`` shows, flat in the book's order: each task, the fire it shows and
        whether it runs (:mod:`kairosd.scheduling.kept`). None when the listing is not to be kept: past
        ``KEEP_TASKS`` tasks, or when a full view would ask the clock for a due task's next fire."""
        if len(self.book) > KEEP_TASKS:
            return None
        planned_of, running_of = self.scheduler.planned, self.scheduler.is_running
        state: list[object] = []
        add = state.append
        for task in self.book:
            fire = planned_of(task.id)
            if not summary and not task.paused and (fire is None or fire.planned_for <= now):
                return None  # as listing() does: its view shows a fire made afresh
            add(task)
            add(fire)
            add(running_of(task.id))
        return state

    def list_tasks(self, summary: bool = False) -> list[dict[str, Any]]:
        """The listed views as documents (``GET /tasks`` sends :meth:`listed_json` instead)."""
        make = summary_document if summary else (lambda t, f, r: self._view(t, [] if f is None else [f], r))
        return [make(task, fire, running) for _, task, fire, running in self.listing(summary)]

    def listed_json(self, task: Task, fire: Fire | None, running: bool, summary: bool) -> bytes:
        """One row of :meth:`listing` as the compact JSON of its view (what ``compact_json`` gives)."""
        return self.listed_piece([(None, task, fire, running)], summary)

    def listed_piece(self, rows: list[tuple[Any, Task, Fire | None, bool]], summary: bool) -> bytes:
        """Rows of :meth:`listing` as the compact JSON of their views, comma-separated (a piece of the list).

        A full view is the store's own JSON of the task (:meth:`TaskBook.encoded`, kept by the store
        for its writes anyway) with the view's fields after it, which one :class:`ViewTails` per piece
        makes: the rows are in fire order, so tasks that share a fire (and mostly a schedule) are
        neighbours, and each distinct one is encoded once per piece. Nothing is kept per view: a
        task that changed is a new object with a new store entry, and its view fields are made afresh.
        One loop per piece, not one call per view: at 100,000 tasks the calls were a second of
        ``kairos list --json``.
        """
        if summary:
            summarise = Summaries().text  # summary_document's JSON, written out (kairosd.scheduling.summaries)
            return ",".join([summarise(task, fire, running) for _, task, fire, running in rows]).encode()
        tail = ViewTails(explain).tail
        encoded = self.book.encoded
        out = []
        for _, task, fire, running in rows:
            text = encoded(task)
            if task.meta or task.model_extra or not text.isascii():
                # The store's JSON and json.dumps agree on ASCII strings, not on every float in meta or on
                # non-ASCII text (escaped here); an unknown field could also be named like a view's key.
                out.append(compact_json(self._view(task, [] if fire is None else [fire], running)).decode())
            else:
                out.append(text[:-1] + tail(task, fire, running))
        return ",".join(out).encode()

    # ---- tasks ----------------------------------------------------------

    def _zone(self, name: Any) -> str:
        if name is not None and not isinstance(name, str):
            raise UsageError("tz must be a string (an IANA zone name such as Europe/Berlin)")
        zone = name or self.default_tz
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # OSError: ZoneInfo opens a file named after the zone (a 300-character name is ENAMETOOLONG).
            shown = zone if len(zone) <= 80 else zone[:80] + "..."
            hint = bounds.zone_hint(shown) or " (use an IANA name such as Europe/Berlin)"
            raise InvalidTimeError(f"unknown time zone {shown!r}{hint}") from None
        return zone

    async def add(self, body: AddRequest | Mapping[str, Any]) -> dict[str, Any]:
        req = body if isinstance(body, AddRequest) else parse_body(AddRequest, body)
        if len(self.book) >= MAX_TASKS:
            raise UsageError(f"too many tasks (the limit is {MAX_TASKS}); remove some first")
        kinds = req.schedule_kinds()
        if len(kinds) != 1:
            raise UsageError("give exactly one schedule: a cron expression, --every, --in or --at")
        tz = self._zone(req.tz)
        now = self.clock.now()
        note = None
        cron: str | None = None
        at: datetime | None = None
        recurring = not req.once
        if req.cron:
            cron = req.cron
        elif req.every:
            interval = every_to_cron(req.every)
            cron, note = interval.cron, interval.note
        elif req.in_:
            at, recurring = resolve_in(req.in_, now), False
        else:
            assert req.at is not None
            (at, note), recurring = resolve_at_noted(req.at, now, ZoneInfo(tz)), False
        check_catch_up(req.catch_up, recurring)
        _refuse_contradictions(req, recurring)
        fields: dict[str, Any] = {"permanent": req.permanent, "meta": req.meta}
        for key in ("name", "jitter", "overlap"):
            if getattr(req, key) is not None:
                fields[key] = getattr(req, key)
        if req.target is not None:
            skip = SKIP_LATER_CHECKS.set(not req.check_target)
            try:
                await self.scheduler.check_target(req.target)
            finally:
                SKIP_LATER_CHECKS.reset(skip)
            fields["target"] = req.target
        try:
            task = new_task(
                prompt=req.prompt,
                created_at=now,
                tz=tz,
                cron=cron,
                at=at,
                recurring=recurring,
                created_by=req.created_by,
                task_id=self._unused_id(),
                catch_up=req.catch_up,
                expires_after_days=req.expiry,
                **fields,
            )
        except ValidationError as exc:
            raise UsageError(validation_message(exc)) from None
        except ValueError as exc:
            if isinstance(exc, UsageError):
                raise
            raise UsageError(str(exc)) from None
        if task.cron is not None and not task.recurring and self.scheduler.next_fire(task) is None:
            raise UsageError(f"{task.cron!r} has no fire time left")
        self.book.put(task)
        await self.book.commit()
        self.scheduler.schedule(task)
        doc = self.view(task)
        doc["note"] = "; ".join(n for n in (note, self._jitter_note(task, now)) if n) or None
        self.events.publish("task_added", task_id=task.id, task=doc)
        return doc

    async def edit(self, task_id: str, body: EditRequest | Mapping[str, Any]) -> dict[str, Any]:
        """Change a task in place: schedule, prompt, target, name, jitter, catch-up, overlap or zone.

        The id stays, and so do its runs in history. The new task is validated as an added one is
        (the same model, the same checks), and replaces the old one in one commit, or not at all.
        A new schedule starts now: slots of the old schedule that passed are not missed ones.
        """
        req = body if isinstance(body, EditRequest) else parse_body(EditRequest, body)
        task = self.book.get(self.book.resolve(task_id))
        kinds = req.schedule_kinds()
        if len(kinds) > 1:
            raise UsageError("give at most one schedule: a cron expression, --every, --in or --at")
        if req.once is not None and req.cron is None:
            raise UsageError("--once goes with a new cron expression")
        fields = {k for k in req.model_fields_set if getattr(req, k) is not None}
        if not fields:
            raise UsageError("nothing to change: give a schedule, prompt, target, name, jitter, catch-up, ...")
        now = self.clock.now()
        update: dict[str, Any] = {}
        note = None
        if "tz" in fields:
            update["tz"] = self._zone(req.tz)
        tz = update.get("tz", task.tz)
        if req.cron:
            update.update(cron=req.cron, at=None, recurring=not (req.once if req.once is not None else False))
        elif req.every:
            interval = every_to_cron(req.every)
            update.update(cron=interval.cron, at=None, recurring=True)
            note = interval.note
        elif req.in_:
            update.update(cron=None, at=resolve_in(req.in_, now), recurring=False)
        elif req.at:
            update.update(cron=None, at=resolve_at(req.at, now, ZoneInfo(tz)), recurring=False)
        if kinds or "tz" in fields or "jitter" in fields:
            # Fires are counted from the new schedule on; what the old one had due is not missed.
            update["last_scheduled_for"] = now
        for key in ("prompt", "name", "jitter", "catch_up", "overlap"):
            if key in fields:
                update[key] = getattr(req, key)
        if "target" in fields:
            assert req.target is not None
            await self.scheduler.check_target(req.target)
            update["target"] = req.target
        if kinds and "catch_up" not in fields and update["recurring"] != task.recurring:
            update["catch_up"] = default_catch_up(update["recurring"])  # the kind of task changed
        try:
            new = Task.model_validate({**task.model_dump(), **update})
        except ValidationError as exc:
            raise UsageError(validation_message(exc)) from None
        check_catch_up(new.catch_up, new.recurring)
        if new.cron is not None and not new.recurring and self.scheduler.next_fire(new) is None:
            raise UsageError(f"{new.cron!r} has no fire time left")
        self.book.put(new)
        await self.book.commit()
        self.scheduler.schedule(new)
        changed = sorted({"schedule" if k in ("cron", "at", "recurring", "last_scheduled_for") else k for k in update})
        self.events.publish("task_changed", task_id=new.id, changed=changed)
        doc = self.view(new)
        doc["note"] = note
        doc["changed"] = changed
        return doc

    def _jitter_note(self, task: Task, now: datetime) -> str | None:
        """Say when ``max:DUR`` jitter is cut to half the period (a */5 task cannot move 1h)."""
        if not task.recurring or not task.jitter.startswith("max:"):
            return None
        times = [f.scheduled_for for f in upcoming(task, now, JITTER_SAMPLE)]
        return capped_jitter_note(task.jitter, [b - a for a, b in itertools.pairwise(times)])

    def _unused_id(self) -> str:
        """A fresh id no task holds: ids are 8 hex digits (as Claude Code's), so two can collide.

        A collision would silently replace the older task; at 10,000 tasks it is
        one add in 430,000, so it must be checked, not assumed away.
        """
        while True:
            task_id = self.new_id()
            if task_id not in self.book:
                return task_id

    def get(self, task_id: str) -> dict[str, Any]:
        return self.view(self.book.get(self.book.resolve(task_id)), 5)

    async def remove(self, task_ids: list[str]) -> list[str]:
        task_ids = [self.book.resolve(task_id) for task_id in task_ids]
        for task_id in task_ids:
            self.book.get(task_id)  # all or nothing: fail before removing any
        for task_id in task_ids:
            self.book.remove(task_id)
            self.scheduler.unschedule(task_id)
        await self.book.commit()
        for task_id in task_ids:
            self.events.publish("task_removed", task_id=task_id, reason="removed")
        if self.remove_logs is not None:
            remove = self.remove_logs
            # Its run history stays (it outlives tasks), but `rm` means the output goes too.
            await asyncio.to_thread(lambda: [remove(task_id) for task_id in task_ids])
        return task_ids

    async def set_paused(self, task_id: str, paused: bool) -> dict[str, Any]:
        task_id = self.book.resolve(task_id)
        task = self.book.get(task_id)
        if task.paused == paused:
            doc = self.view(task)
            doc["unchanged"] = True  # already in that state: a note, not an error (as cancel and rm say)
            return doc
        update: dict[str, Any] = {"paused": paused}
        overdue = None
        if not paused:
            update["paused_reason"] = None
            overdue = self._overdue_one_shot(task)
            if overdue is None:
                # Slots of a recurring task that passed while paused are not missed: the user paused them.
                update["last_scheduled_for"] = max(self.clock.now(), task.last_scheduled_for or task.created_at)
        task = task.model_copy(update=update)
        self.book.put(task)
        await self.book.commit()
        self.events.publish("task_changed", task_id=task_id, paused=paused)
        if overdue is None:
            self.scheduler.schedule(task)
            return self.view(task)
        # A one-shot's only slot passed while it was paused: it follows its catch-up policy, as after a
        # restart (fired late, or recorded as missed). Moving its anchor past the slot instead made it
        # "done" without ever running, and without a word in history or missed (issue 24).
        await self.scheduler.admit([task], PAUSED_WHEN_DUE)
        doc = self.view(self.book.find(task_id) or task)
        doc["caught_up"] = self._caught_up(task_id, overdue)
        if self.book.find(task_id) is None:
            doc["status"], doc["next_fires"], doc["planned_for"] = "done", [], None
        return doc

    def _overdue_one_shot(self, task: Task) -> datetime | None:
        """The slot of a one-shot that came due while it was paused and was never handled (else None)."""
        if task.recurring:
            return None
        slot = next(iter(scheduled_after(task, task.last_scheduled_for or task.created_at)), None)
        return slot if slot is not None and slot <= self.clock.now() else None

    def _caught_up(self, task_id: str, slot: datetime) -> dict[str, Any]:
        """What the catch-up policy did with ``slot`` on resume: the run that records it."""
        for run in self.scheduler.ledger.list(task_id, 5):
            if run.scheduled_for == slot and not run.manual:
                outcome = run.outcome.value if run.outcome is not None else None  # None: under way
                action = "missed" if outcome == "missed" else "fired"
                return {"action": action, "scheduled_for": slot.isoformat(), "run_id": run.run_id,
                        "outcome": outcome, "reason": run.reason}  # fmt: skip
        return {"action": "pending", "scheduled_for": slot.isoformat(), "run_id": None, "outcome": None, "reason": None}

    async def run_now(self, task_id: str) -> dict[str, Any]:
        run = await self.scheduler.run_now(self.book.resolve(task_id))
        return run.model_dump(mode="json")

    # ---- ledgers --------------------------------------------------------

    def history(self, task_id: str | None, limit: int) -> list[dict[str, Any]]:
        if task_id is not None:
            try:
                task_id = self.book.resolve(task_id)
            except NotFoundError:
                if not self.scheduler.ledger.list(task_id, 1):
                    raise
                # A removed task's whole id: its runs are still listed.
        runs = [r.model_dump(mode="json") for r in self.scheduler.ledger.list(task_id, limit)]
        if task_id is not None and not runs and self.book.find(task_id) is None:
            # As show, rm, pause, resume and run answer an unknown id (a removed task's runs are still listed).
            self.book.get(task_id)
        return runs

    def missed(self) -> list[dict[str, Any]]:
        """Fires that did not happen on time and what kairos did about them, newest first: the missed
        ledger's records (not fired), and the catch-up runs (fired late) since the last ``--clear``."""
        records = [m.model_dump(mode="json") for m in self.scheduler.missed.list()]
        late = [self._caught_up_record(r) for r in self.scheduler.ledger.caught_up(self._missed_cleared_at())]
        if not late:
            return records
        return sorted(records + late, key=lambda r: datetime.fromisoformat(r["detected_at"]), reverse=True)

    def timeline(
        self,
        start: datetime | None,
        end: datetime | None,
        ids: list[str] | None = None,
        target: str | None = None,
        project: str | None = None,
        name: str | None = None,
        cap: int = timeline.DEFAULT_CAP,
        span: timedelta = timeline.DEFAULT_SPAN,
        bins: int | None = None,
    ) -> dict[str, Any]:
        """Planned fires, runs and missed fires of the matching tasks over [start, end]; see
        :mod:`kairosd.scheduling.timeline`. A missing end is ``span`` after the start, a missing start
        ``span`` before the end; with neither, the window is ``span`` either side of now."""
        now = self.clock.now()
        if start is None:
            start = now - span if end is None else end - span
            end = end or now + span
        elif end is None:
            end = start + span
        if end <= start:
            raise UsageError(f"the window must end after it starts ({start.isoformat()} .. {end.isoformat()})")
        if end - start > timeline.MAX_WINDOW:
            raise UsageError(f"a timeline window is at most {timeline.MAX_WINDOW.days} days")
        wanted = None if ids is None else {self.book.get(self.book.resolve(i)).id for i in ids}  # unknown: not_found
        tasks = [t for t in self.book if timeline.matches(t, wanted, target, project, name)]
        filtered = wanted is not None or target is not None or project is not None or name is not None
        chosen = [t.id for t in tasks] if filtered else None
        runs = self.scheduler.ledger.between(start - timeline.RUN_SLACK, end, chosen)
        runs = [r for r in runs if start <= timeline.run_time(r) <= end]
        keep = None if chosen is None else set(chosen)
        missed = [m for m in self.scheduler.missed.list() if keep is None or m.task_id in keep]
        return timeline.build(tasks, runs, missed, now, start, end, cap, self.started_at, bins)

    def _missed_cleared_at(self) -> datetime | None:
        value = self.book.get_field(MISSED_CLEARED_AT)
        try:
            return datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            return None

    def _caught_up_record(self, run: Run) -> dict[str, Any]:
        """A catch-up run as ``kairos missed`` lists it: a missed fire, and that it was fired late."""
        task = self.book.find(run.task_id)
        when = run.dispatched_at or run.planned_for
        if run.outcome is Outcome.SKIPPED:
            action = "caught up: skipped"
        elif run.outcome is Outcome.QUEUED:
            action = "caught up: queued"
        else:
            action = "caught up: fired late"
        return {
            "id": run.run_id,
            "task_id": run.task_id,
            "task_name": run.task_name,
            "prompt": task.prompt if task is not None else "",
            "schedule": (task.cron or (task.at.isoformat() if task.at else "")) if task is not None else "",
            "scheduled_for": run.scheduled_for.isoformat(),
            "first_scheduled_for": None,
            "count": 1,
            "detected_at": when.isoformat(),
            "reason": f"missed its time; fired {run.late_by_s:.0f}s late by its catch-up policy",
            "action": action,
            "run_id": run.run_id,
        }

    async def clear_missed(self) -> int:
        try:
            cleared = self.scheduler.missed.clear()
        except OSError as exc:
            raise _store_error(self.scheduler.missed.path, exc) from exc
        late = len(self.scheduler.ledger.caught_up(self._missed_cleared_at()))
        if late:
            # The runs stay in history; `kairos missed` lists only those after this.
            self.book.set_field(MISSED_CLEARED_AT, self.clock.now().isoformat())
            await self.book.commit()
        return cleared + late

    def inbox_items(self, session: str | None, include_acked: bool) -> list[dict[str, Any]]:
        try:
            return [i.model_dump(mode="json") for i in self.inbox.list(session, include_acked)]
        except OSError as exc:
            raise _store_error(self.inbox.folder, exc) from exc

    def ack(self, session: str | None, ids: list[str] | None) -> list[str]:
        try:
            return self.inbox.ack(session, ids)
        except OSError as exc:
            raise _store_error(self.inbox.folder, exc) from exc

    async def import_claude(
        self, data: str, tz: str | None, dry_run: bool = False, project: str | None = None
    ) -> dict[str, Any]:
        """Import Claude Code's tasks (see :mod:`kairosd.scheduling.claude_import`); ``dry_run`` changes nothing.

        With ``project`` the tasks go to a live session in that folder (the inbox when none is live).
        """
        # On first use: only `kairos import` needs the importer and Claude's file format.
        from kairosd.scheduling.claude_import import commit_import, plan_import

        config = self.scheduler.config
        limits = FireBounds(config.catch_up_grace, config.catch_up_max, config.queue_limit)
        try:
            target = None if project is None else SessionTarget(project=project)
        except ValidationError as exc:
            raise UsageError(validation_message(exc)) from None
        plan = plan_import(self.book, data, self._zone(tz), self.clock.now(), limits, target)
        if not dry_run and plan.added:
            await commit_import(self.book, self.scheduler, plan)
            for task in plan.added:
                self.events.publish("task_added", task_id=task.id)
        views = [self.view(self.book.find(t.id) or t) for t in plan.added]
        return plan.report(views, dry_run)

    def status(self) -> dict[str, Any]:
        now = self.clock.now()
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": self.started_at.isoformat(),
            "uptime_s": round((now - self.started_at).total_seconds(), 3),
            "default_tz": self.default_tz,
            **self.info,
            **self.scheduler.status(),
            "overlap_default": Overlap.SKIP.value,
            **{name: get() for name, get in self.extra_status.items()},
        }


def check_catch_up(policy: Any, recurring: bool) -> None:
    """Refuse ``surface`` on a recurring task: it means "tell me and drop the task", which only a one-shot
    can do (a recurring task's next fire is still ahead). It used to be accepted and act as ``skip``."""
    if recurring and policy is not None and str(getattr(policy, "value", policy)) == "surface":
        raise UsageError(
            "--catch-up surface is for one-shots (record the missed fire and drop the task); "
            "a recurring task takes skip, once (the default) or all"
        )
