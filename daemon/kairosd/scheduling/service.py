"""The daemon's use-cases: add, list, show, remove, pause, resume, run, history,
missed, inbox, import, status. The HTTP API and the tests call these methods.

Every change is durable before a method returns (``TaskBook.commit``), and
every method takes and returns plain JSON-able data or raises a KairosError.

Must not import the server or the CLI.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ValidationError

from kairosd import __version__
from kairosd.api.requests import parse_body, validation_message
from kairosd.core import bounds
from kairosd.core.clock import Clock
from kairosd.core.errors import InvalidTimeError, StoreError, UsageError
from kairosd.core.events import EventBus
from kairosd.core.models import (
    AgentTarget,
    Overlap,
    SessionTarget,
    ShellTarget,
    Task,
    WebhookTarget,
    new_task,
    new_task_id,
)
from kairosd.core.plan import Fire, upcoming
from kairosd.core.schedule.durations import every_to_cron
from kairosd.core.schedule.exact import resolve_at_noted, resolve_in
from kairosd.core.schedule.explain import explain
from kairosd.core.schedule.jitter import capped_jitter_note
from kairosd.delivery.base import SKIP_LATER_CHECKS
from kairosd.scheduling import timeline
from kairosd.scheduling.firing import FireBounds
from kairosd.scheduling.requests import AddRequest
from kairosd.scheduling.scheduler import Scheduler
from kairosd.store.inbox import InboxStore

MAX_TASKS = 100_000
JITTER_SAMPLE = 25  # fires looked at for the shortest period that caps a max:DUR jitter


def _refuse_contradictions(req: AddRequest, recurring: bool) -> None:
    """Options that cannot all hold: one of them would be dropped without a word (issue 24, item 4)."""
    days = req.expires_after_days
    if days is not None and not recurring:
        raise UsageError("expires_after_days is for recurring tasks; a one-shot is removed once it fires")
    if days is not None and req.permanent:
        raise UsageError(f"expires_after_days {days} and permanent contradict each other: give one of them")


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
        self._dumps: dict[str, tuple[Task, dict[str, Any]]] = {}
        self._summaries: dict[str, tuple[Task, Fire | None, dict[str, Any]]] = {}
        self._views: dict[str, tuple[Task, Fire | None, dict[str, Any]]] = {}
        # The last list of each kind (summary or not): its views in book order, and sorted.
        self._listed: dict[bool, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
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
        doc = dict(self._dump(task))
        doc["status"] = "paused" if task.paused else ("scheduled" if fires else "done")
        doc["schedule"] = task.cron or (task.at.astimezone(task.zone).isoformat() if task.at else None)
        doc["explanation"] = explain(task.cron) if task.cron else "once, at the exact time"
        doc["next_fires"] = [
            {"scheduled_for": f.scheduled_for.isoformat(), "planned_for": f.planned_for.isoformat()} for f in fires
        ]
        doc["planned_for"] = doc["next_fires"][0]["planned_for"] if fires else None
        doc["running"] = running
        return doc

    def listed_view(self, task: Task, now: datetime) -> dict[str, Any]:
        """``view(task, 1)``, as ``GET /tasks`` lists it: cached, since building 10,000 views is most of the call.

        The view then depends only on the task object, its planned fire and whether it
        runs, so a cached one is good while those three are the same (a task paused
        or resumed is a new object; a re-planned fire with other times is another Fire, and Fires are
        frozen, so the same Fire object always holds the same times). A fire that is
        already due makes ``view`` ask the clock instead; those are never cached.
        """
        planned = None if task.paused else self.scheduler.planned(task.id)
        if not task.paused and (planned is None or planned.planned_for <= now):
            return self.view(task, 1)
        running = self.scheduler.is_running(task.id)
        cached = self._views.get(task.id)
        if cached is not None and cached[0] is task and cached[1] is planned and cached[2]["running"] == running:
            return cached[2]
        doc = self._view(task, [] if planned is None else [planned], running)
        self._views[task.id] = (task, planned, doc)
        if len(self._views) > 2 * len(self.book) + 1000:
            self._views = {k: v for k, v in self._views.items() if k in self.book}
        return doc

    def _dump(self, task: Task) -> dict[str, Any]:
        # Tasks are replaced, never changed in place, so a dump stays good for as
        # long as the same object is in the book (serialising is most of a list).
        cached = self._dumps.get(task.id)
        if cached is None or cached[0] is not task:
            cached = (task, task.model_dump(mode="json"))
            self._dumps[task.id] = cached
            if len(self._dumps) > 2 * len(self.book) + 1000:
                self._dumps = {k: v for k, v in self._dumps.items() if k in self.book}
        return cached[1]

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

    def summary(self, task: Task) -> dict[str, Any]:
        """The few fields a table shows; cheap enough to list 10,000 tasks on every call."""
        planned = None if task.paused else self.scheduler.planned(task.id)
        running = self.scheduler.is_running(task.id)
        cached = self._summaries.get(task.id)
        if cached is not None and cached[0] is task and cached[1] is planned and cached[2]["running"] == running:
            return cached[2]
        doc = self._summary(task, planned, running)
        self._summaries[task.id] = (task, planned, doc)
        if len(self._summaries) > 2 * len(self.book) + 1000:
            self._summaries = {k: v for k, v in self._summaries.items() if k in self.book}
        return doc

    def _summary(self, task: Task, planned: Fire | None, running: bool) -> dict[str, Any]:
        return {
            "id": task.id,
            "name": task.name,
            "prompt": task.prompt[:200],
            "cron": task.cron,
            "at": task.at.isoformat() if task.at else None,
            "recurring": task.recurring,
            "tz": task.tz,
            "target": _summary_target(task),
            "status": "paused" if task.paused else ("scheduled" if planned else "done"),
            "paused_reason": task.paused_reason,
            "planned_for": planned.planned_for.isoformat() if planned else None,
            "running": running,
        }

    def list_tasks(self, summary: bool = False) -> list[dict[str, Any]]:
        if summary:
            views = [self.summary(t) for t in self.book]
        else:
            now = self.clock.now()  # one instant for the whole list
            views = [self.listed_view(t, now) for t in self.book]
        last = self._listed.get(summary)
        if last is not None and len(last[0]) == len(views) and all(map(operator.is_, views, last[0])):
            # The same view objects as last time, so the same order: sorting 2,000 took ~2 ms of a
            # `kairos list --json` that bench/bench_cli.py wants within 3x a bare interpreter.
            return list(last[1])
        # By instant, not by ISO text: the same instant in other offsets sorts differently as text.
        ordered = sorted(views, key=_by_planned_instant)
        self._listed[summary] = (views, ordered)
        return list(ordered)

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
        if task.paused != paused:
            update: dict[str, Any] = {"paused": paused}
            if not paused:
                update["paused_reason"] = None
                # Slots that passed while paused are not missed: the user paused them.
                update["last_scheduled_for"] = max(self.clock.now(), task.last_scheduled_for or task.created_at)
            task = task.model_copy(update=update)
            self.book.put(task)
            await self.book.commit()
            self.scheduler.schedule(task)
            self.events.publish("task_changed", task_id=task_id, paused=paused)
        return self.view(task)

    async def run_now(self, task_id: str) -> dict[str, Any]:
        run = await self.scheduler.run_now(self.book.resolve(task_id))
        return run.model_dump(mode="json")

    # ---- ledgers --------------------------------------------------------

    def history(self, task_id: str | None, limit: int) -> list[dict[str, Any]]:
        if task_id is not None:
            task_id = self.book.resolve(task_id)
        runs = [r.model_dump(mode="json") for r in self.scheduler.ledger.list(task_id, limit)]
        if task_id is not None and not runs and self.book.find(task_id) is None:
            # As show, rm, pause, resume and run answer an unknown id (a removed task's runs are still listed).
            self.book.get(task_id)
        return runs

    def missed(self) -> list[dict[str, Any]]:
        return [m.model_dump(mode="json") for m in self.scheduler.missed.list()]

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

    def clear_missed(self) -> int:
        try:
            return self.scheduler.missed.clear()
        except OSError as exc:
            raise _store_error(self.scheduler.missed.path, exc) from exc

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


def _by_planned_instant(view: dict[str, Any]) -> tuple[bool, float, str]:
    planned = view["planned_for"]
    return (planned is None, datetime.fromisoformat(planned).timestamp() if planned else 0.0, view["id"])


def _summary_target(task: Task) -> dict[str, Any]:
    target = task.target
    if isinstance(target, ShellTarget):
        return {"kind": "shell", "argv": target.argv[:1]}
    if isinstance(target, AgentTarget):
        return {"kind": "agent", "agent": target.agent}
    if isinstance(target, WebhookTarget):
        return {"kind": "webhook", "url": target.url}
    if isinstance(target, SessionTarget):
        return target.model_dump(mode="json", include={"kind", "session_id", "project", "user", "agent"})
    return {"kind": target.kind, "session": getattr(target, "session", None)}
