"""Delivery into live agent sessions: pending items, hook claims and acks, fallbacks, waiters, expiry.

How a fire reaches a session:

* :meth:`SessionHub.deliver` (the ``session`` target) resolves the task's target
  to a live session. Found: the prompt becomes a pending item of that session,
  written durably, and the run is reported ``pending`` (the scheduler records it
  ``queued``, "waiting for claude session X's next turn", and frees its slot).
  Not found: the target's fallback applies at once (``inbox``, ``headless`` or
  ``drop``).
* A hook of that session claims items (:meth:`SessionHub.hook`), writes them
  into the agent, then acknowledges them (:meth:`SessionHub.ack`); only then is
  the run settled ``delivered`` in the run ledger, with a ``run_finished`` event.
* A session that ends (SessionEnd) or expires hands its items on: a project- or
  user-scoped item moves to another live session that matches its target;
  anything else takes its task's fallback. ``drop`` settles the run ``skipped``.
* The Claude ``asyncRewake`` waiter long-polls :meth:`SessionHub.next_item`; the
  newest waiter of a session supersedes older ones, and each item goes to one
  claimant only.

Overlap: a pending item holds no concurrency slot and does not keep its task
"running". The task's overlap policy applies to its pending items instead: with
``skip`` a fire while an earlier run of the task still waits for a session is
skipped; with ``queue`` at most ``queue_limit`` wait.

At a turn boundary (Stop) the hub hands out at most one item, and none when the
agent says the turn already continues because of a Stop hook
(``stop_hook_active``) or when this session's hook has blocked
:func:`chain_limit` Stops in a row (a guard for agents whose flag is unreliable,
under each agent's own cap on consecutive blocks).

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from kairosd.clock import Clock
from kairosd.delivery.base import Delivery, Job, Result
from kairosd.errors import NotFoundError, UsageError
from kairosd.events import EventBus
from kairosd.ledger import RunLedger
from kairosd.models import SessionTarget
from kairosd.records import Outcome, Run
from kairosd.reminder import reminder_text
from kairosd.sessions import MAX_AGENT_CHARS, MAX_ID_CHARS, MAX_PATH_CHARS, LiveSession, PendingItem, SessionStore

__all__ = ["AGENT_BLOCK_CAPS", "MAX_CHAIN", "MAX_CONTEXT_ITEMS", "SessionHub", "chain_limit"]

log = logging.getLogger(__name__)

ContextBoard = Callable[[LiveSession], Awaitable[str | None]]
ConsolidationHandler = Callable[[dict[str, Any]], Awaitable[None]]

DEFAULT_INBOX_SESSION = "default"
EVENTS = ("start", "prompt", "stop", "end")
# Items a SessionStart or UserPromptSubmit hook adds as context at once; the rest come next time.
MAX_CONTEXT_ITEMS = 5
# Consecutive Stop blocks an agent allows before it overrides its hooks and ends the turn anyway:
# Claude Code 8 (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, 0 turns the guard off), Copilot CLI 8. Codex and
# Gemini CLI document no cap (a hook that keeps blocking loops forever), so ours is the only guard.
AGENT_BLOCK_CAPS: dict[str, int | None] = {"claude": 8, "copilot": 8, "codex": None, "gemini": None}
# Our own ceiling on Stops in a row that we block, kept under every agent's cap with room for
# other hooks' blocks.
MAX_CHAIN = 3
# An in_turn flag older than this is stale: an interrupted turn fires no Stop hook.
TURN_GRACE = timedelta(minutes=2)
# Last-active touches reach the file this long after they happen at most (one write per burst).
TOUCH_SAVE_DELAY_S = 2.0
SWEEP_MAX_S = 60.0
STOP_GRACE_S = 5.0
# After a SessionEnd, how long a project- or user-scoped item waits for a successor session before its
# fallback: /clear and --resume end a session and start the next one a moment later.
SUCCESSOR_GRACE_S = 10.0


def chain_limit(agent: str, reported_cap: int | None = None) -> int:
    """How many Stops in a row this session's hook may block: under the agent's cap, at most MAX_CHAIN."""
    cap = reported_cap if reported_cap is not None else AGENT_BLOCK_CAPS.get(agent)
    if cap is None or cap <= 0:  # no cap, or the agent's guard turned off: ours is all there is
        return MAX_CHAIN
    return max(1, min(MAX_CHAIN, cap - 1))


def describe(session: LiveSession) -> str:
    return f"{session.agent} session {session.session_id}"


def waiting_reason(session: LiveSession) -> str:
    return f"waiting for {describe(session)}'s next turn"


def _text(body: Mapping[str, Any], key: str, limit: int, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        if required:
            raise UsageError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string")
    if len(value) > limit:
        raise UsageError(f"{key} is longer than {limit} characters")
    return value


def _fire_fields(fire: Job | PendingItem) -> dict[str, Any]:
    """What a job, its pending item and its run all say about the fire: carried from one to the next."""
    return {
        "run_id": fire.run_id,
        "task_id": fire.task_id,
        "task_name": fire.task_name,
        "scheduled_for": fire.scheduled_for,
        "planned_for": fire.planned_for,
        "late_by_s": fire.late_by_s,
        "catch_up": fire.catch_up,
        "target": dict(fire.target),
    }


def check_session_id(session_id: str) -> str:
    if not session_id or len(session_id) > MAX_ID_CHARS:
        raise UsageError(f"a session id must be 1 to {MAX_ID_CHARS} characters")
    return session_id


class SessionHub:
    """The sessions' use-cases; the API, the ``session`` delivery target and the tests call these."""

    def __init__(
        self,
        store: SessionStore,
        ledger: RunLedger,
        events: EventBus,
        clock: Clock,
        deliveries: Mapping[str, Delivery],
        *,
        zone: str = "UTC",
        queue_limit: int = 10,
        context_board: ContextBoard | None = None,
        on_consolidate: ConsolidationHandler | None = None,
    ) -> None:
        self.store = store
        self.ledger = ledger
        self.events = events
        self.clock = clock
        # Looked up when a fallback runs, not now: the composition root may add "agent" later.
        self._deliveries = deliveries
        self.zone = zone
        self.queue_limit = queue_limit
        # Hook point for the consolidation issue: the project's context board for a starting session.
        self.context_board_for = context_board
        # Hook point for the consolidation issue: what to do with a POST /v1/consolidate.
        self.on_consolidate = on_consolidate
        self.consolidations: list[dict[str, Any]] = []  # the latest requests, for status and tests
        self._changed = asyncio.Event()
        self._waiters: dict[tuple[str, str], object] = {}
        self._stopping = False
        self._save_lock = asyncio.Lock()
        self._save_timer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.successor_grace_s = SUCCESSOR_GRACE_S

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the sessions, reconcile them with the run ledger, expire the stale ones.

        Call after the run ledger is loaded and before the scheduler starts (catch-up fires
        may target sessions).
        """
        await asyncio.to_thread(self.store.load)
        held = {item.run_id for session in self.store for item in session.items}
        settled = set()
        for run_id in held:
            try:
                run = self.ledger.get(run_id)
            except NotFoundError:
                continue
            if not (run.outcome is Outcome.QUEUED and run.awaiting):
                settled.add(run_id)  # the ledger has its outcome: kairosd died before the file was rewritten
        if settled:
            self.store.drop(settled)
        for run in self.ledger.awaiting("session"):
            if run.run_id not in held:
                reason = "the pending session item was lost (sessions.json was missing or unreadable at start)"
                await self._record(run, Result("failed", reason=reason))
        await self.sweep()
        await self._save_now()
        log.info("sessions: %d known, %d pending item(s)", len(self.store), len(held) - len(settled))

    def close_waiters(self) -> None:
        """Release every long-polling waiter now (kairosd is stopping: the server must not wait on them)."""
        self._stopping = True
        self._notify()

    async def stop(self) -> None:
        """Release waiters, let fallbacks in flight finish (bounded), write the sessions."""
        self.close_waiters()
        if self._save_timer is not None:
            self._save_timer.cancel()
        if self._background:
            _, late = await asyncio.wait(self._background, timeout=STOP_GRACE_S)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=STOP_GRACE_S)
        await self._save_now()

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _notify(self) -> None:
        # Broadcast: every waiter holds the event it saw before checking; a fresh one for the next change.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _save_now(self) -> None:
        if self._save_timer is not None and self._save_timer is not asyncio.current_task():
            self._save_timer.cancel()
            self._save_timer = None
        async with self._save_lock:
            await asyncio.to_thread(self.store.save)

    async def _save_quietly(self) -> None:
        try:
            await self._save_now()
        except OSError as exc:
            log.warning("cannot write %s: %s (retried with the next change)", self.store.path, exc)

    def _save_soon(self) -> None:
        """Write within TOUCH_SAVE_DELAY_S: a touch on every turn must not cost an fsync each."""
        if self._save_timer is not None and not self._save_timer.done():
            return

        async def later() -> None:
            await asyncio.sleep(TOUCH_SAVE_DELAY_S)
            await self._save_quietly()

        self._save_timer = asyncio.ensure_future(later())

    # ---- the session target -----------------------------------------------------------------

    async def deliver(self, job: Job) -> Result:
        """The ``session`` delivery target: queue the prompt for its live session, or take the fallback now."""
        started = self.clock.now()
        try:
            target = SessionTarget.model_validate(job.target)
        except ValidationError as exc:
            return Result("failed", started, self.clock.now(), reason=f"bad session target: {exc.errors()[0]['msg']}")
        held = self.store.item(job.run_id)
        if held is not None:  # a repeated delivery of the same run: it is already waiting
            return Result("pending", started, reason=waiting_reason(held[0]))
        others = self.store.items_of_task(job.task_id)
        if others:
            session, first = others[0]
            if job.overlap != "queue":
                why = f"run {first.run_id} of this task is still {waiting_reason(session)} (overlap=skip)"
                return Result("skipped", started, self.clock.now(), reason=why)
            if len(others) >= self.queue_limit:
                why = f"{len(others)} runs of this task already wait for a session (overlap=queue keeps at most that)"
                return Result("skipped", started, self.clock.now(), reason=why)
        live = self.store.resolve(target, started)
        if live is None:
            why = f"no live session matches {target.scope}" + (f" (agent {target.agent})" if target.agent else "")
            return await self._fallback(
                job,
                target.fallback,
                why,
                inbox_session=target.session_id or DEFAULT_INBOX_SESSION,
                agent=target.agent,
                cwd=target.project,
            )
        item = PendingItem(**_fire_fields(job), prompt=job.prompt, dispatched_at=started, queued_at=started)
        self.store.add(live, item)
        try:
            await self._save_now()  # pending means durable, like the inbox's fsync
        except OSError as exc:
            self.store.drop({job.run_id})
            why = f"could not record the pending item in {self.store.path}: {exc.strerror or exc}"
            return Result("failed", started, self.clock.now(), reason=why)
        self._notify()
        return Result("pending", started, reason=waiting_reason(live))

    async def _fallback(
        self,
        job: Job,
        fallback: str,
        why: str,
        *,
        inbox_session: str,
        agent: str | None,
        cwd: str | None,
    ) -> Result:
        """Deliver ``job`` as its target's fallback says; the result's reason starts with ``why``."""
        if fallback == "drop":
            return Result("skipped", self.clock.now(), self.clock.now(), reason=f"{why}; dropped (fallback=drop)")
        if fallback == "headless":
            headless = self._deliveries.get("agent")
            if headless is None:
                why += "; fallback=headless needs the background task registry, which this kairosd lacks"
            elif not agent:
                why += "; fallback=headless needs an agent, and neither the target nor a session names one"
            else:
                target: dict[str, Any] = {"kind": "agent", "agent": agent}
                if cwd:
                    target["cwd"] = cwd
                result = await headless.deliver(dataclasses.replace(job, target=target))
                return dataclasses.replace(result, reason=f"{why}; ran headless (fallback=headless): {result.reason}")
            fallback = "inbox"
        inbox = self._deliveries.get("inbox")
        if inbox is None:
            return Result("failed", self.clock.now(), self.clock.now(), reason=f"{why}; no inbox to fall back to")
        result = await inbox.deliver(dataclasses.replace(job, target={"kind": "inbox", "session": inbox_session}))
        if result.outcome == "delivered":
            where = f"delivered to inbox {inbox_session!r} (fallback={fallback})"
            return dataclasses.replace(result, reason=f"{why}; {where}")
        return dataclasses.replace(result, reason=f"{why}; the inbox fallback failed: {result.reason}")

    # ---- settling runs ------------------------------------------------------------------------

    async def _settle(self, item: PendingItem, result: Result) -> None:
        try:
            run = self.ledger.get(item.run_id)
        except NotFoundError:
            # Evicted or never recorded (it should not be: held runs are kept); rebuild it from the item.
            run = Run(**_fire_fields(item), dispatched_at=item.dispatched_at, manual=item.manual)
        await self._record(run, result)

    async def _record(self, run: Run, result: Result) -> None:
        """Write ``run``'s final outcome (once) and announce it; a held run's second outcome is ignored."""
        if run.outcome is not None and not (run.outcome is Outcome.QUEUED and run.awaiting):
            return
        now = self.clock.now()
        queued = result.outcome == "pending"
        done = run.model_copy(
            update={
                "outcome": Outcome.QUEUED if queued else Outcome(result.outcome),
                "finished_at": None if queued else (result.finished_at or now),
                "started_at": run.started_at or result.started_at,
                "reason": result.reason,
                "awaiting": run.awaiting if queued else None,
                "output_path": result.output_path or run.output_path,
                "exit_code": result.exit_code if result.exit_code is not None else run.exit_code,
            }
        )
        try:
            await asyncio.to_thread(self.ledger.record, done)
        except OSError as exc:
            # The run stays queued in the ledger; the next start marks it lost (its item is gone).
            log.error("cannot record the outcome of run %s (%s): %s", run.run_id, done.outcome, exc)
            return
        if not queued:
            self.events.publish(
                "run_finished",
                run_id=run.run_id,
                task_id=run.task_id,
                outcome=done.outcome,
                reason=done.reason,
                exit_code=done.exit_code,
            )

    # ---- sessions ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """For ``kairos status``: live sessions, items waiting for them, waiters polling."""
        live = self.store.live(self.clock.now())
        return {
            "live": len(live),
            "pending": sum(len(s.items) for s in self.store),
            "waiters": len(self._waiters),
            "ttl_s": self.store.ttl.total_seconds(),
        }

    def sessions(self) -> list[dict[str, Any]]:
        """Live sessions, most recently active first."""
        return [s.view(self.store.ttl) for s in self.store.live(self.clock.now())]

    async def register(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Register (or refresh) a session: ``{agent, session_id, cwd?, transcript_path?}``."""
        agent = _text(body, "agent", MAX_AGENT_CHARS, required=True)
        session_id = check_session_id(_text(body, "session_id", MAX_ID_CHARS, required=True) or "")
        assert agent is not None
        session = self._touch(agent, session_id, body)
        session.in_turn, session.consecutive_blocks = False, 0
        await self._save_quietly()
        return session.view(self.store.ttl)

    def _touch(self, agent: str, session_id: str, body: Mapping[str, Any]) -> LiveSession:
        cwd = _text(body, "cwd", MAX_PATH_CHARS)
        if cwd is not None and not cwd.startswith("/"):
            cwd = None  # a project scope is matched against absolute paths only
        transcript = _text(body, "transcript_path", MAX_PATH_CHARS)
        session, created = self.store.touch(agent, session_id, self.clock.now(), cwd=cwd, transcript_path=transcript)
        if created:
            self.events.publish("session_started", agent=agent, session_id=session_id, cwd=session.cwd)
            self._notify()
        return session

    async def hook(self, session_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One hook call: touch (or register) the session and claim what this event may deliver.

        The answer carries ``claim`` and ``text`` when there is something to write into the agent;
        the hook acknowledges the claim once it has written it.
        """
        check_session_id(session_id)
        agent = _text(body, "agent", MAX_AGENT_CHARS, required=True)
        assert agent is not None
        event = body.get("event")
        if event not in EVENTS:
            raise UsageError(f"event must be one of {', '.join(EVENTS)}")
        if event == "end":
            return await self.end(session_id, body)
        deliver = body.get("deliver", True) is not False
        session = self._touch(agent, session_id, body)
        now = self.clock.now()
        limit, guard = 0, None
        if event in ("start", "prompt"):
            session.in_turn, session.consecutive_blocks = event == "prompt", 0
            limit = MAX_CONTEXT_ITEMS if deliver else 0
        else:
            cap = body.get("block_cap")
            allowed = chain_limit(agent, cap if isinstance(cap, int) and not isinstance(cap, bool) else None)
            if body.get("stop_hook_active") is True:
                guard = "stop_hook_active: this turn already continues because a Stop hook blocked"
            elif session.consecutive_blocks >= allowed:
                guard = f"{session.consecutive_blocks} Stops in a row were blocked (the limit for {agent} is {allowed})"
            else:
                limit = 1 if deliver else 0
        claim, items = self.store.claim(session, now, limit) if limit else (None, [])
        if event == "stop":
            # Blocking continues the turn; not blocking ends it, so the chain starts over.
            session.consecutive_blocks = session.consecutive_blocks + 1 if items else 0
            session.in_turn = bool(items)
        self._save_soon()
        context = None
        if event == "start" and self.context_board_for is not None:
            try:
                context = await self.context_board_for(session)
            except Exception:  # the board is an extra; a broken one must not cost the session its items
                log.exception("the context board for %s failed", describe(session))
        return {
            "session": session.view(self.store.ttl),
            "claim": claim,
            "items": [self._item_view(i) for i in items],
            "text": "\n\n".join(self.text_for(i) for i in items) or None,
            "context": context,
            "guard": guard,
        }

    def text_for(self, item: PendingItem) -> str:
        return reminder_text(
            task_id=item.task_id,
            task_name=item.task_name,
            prompt=item.prompt,
            scheduled_for=item.scheduled_for,
            zone=self.zone,
            late_by_s=item.late_by_s,
            catch_up=item.catch_up,
        )

    @staticmethod
    def _item_view(item: PendingItem) -> dict[str, Any]:
        return {
            "run_id": item.run_id,
            "task_id": item.task_id,
            "task_name": item.task_name,
            "scheduled_for": item.scheduled_for.isoformat(),
            "queued_at": item.queued_at.isoformat(),
        }

    async def ack(self, session_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The hook wrote these claimed items into the agent: settle their runs ``delivered``."""
        check_session_id(session_id)
        agent = _text(body, "agent", MAX_AGENT_CHARS, required=True)
        claim = _text(body, "claim", 100, required=True)
        run_ids = body.get("run_ids")
        if not isinstance(run_ids, list) or not all(isinstance(r, str) for r in run_ids):
            raise UsageError('run_ids must be a list of run ids, e.g. {"run_ids": ["r3c1f0e2a9b44"]}')
        via = _text(body, "via", 100) or "hook"
        assert agent is not None
        assert claim is not None
        session = self.store.get((agent, session_id))
        if session is None:
            return {"acked": []}  # it ended meanwhile; its items went to their fallbacks
        taken = self.store.take(session, claim, set(run_ids))
        for item in taken:
            why = f"delivered into {describe(session)} by its {via}"
            await self._settle(item, Result("delivered", item.dispatched_at, self.clock.now(), reason=why))
        if taken:
            await self._save_quietly()
            self._notify()
        return {"acked": [item.run_id for item in taken]}

    async def end(self, session_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Deregister a session (SessionEnd); its pending items move on or take their fallback."""
        check_session_id(session_id)
        agent = _text(body, "agent", MAX_AGENT_CHARS, required=True)
        reason = _text(body, "reason", 200) or "session ended"
        assert agent is not None
        session = self.store.remove((agent, session_id))
        if session is None:
            return {"ended": False, "pending": 0, "cwd": None, "transcript_path": None}
        self._notify()
        self.events.publish("session_ended", agent=agent, session_id=session_id, reason=reason)
        count = len(session.items)
        # In the background: the SessionEnd hook has 1.5 s in all, and a fallback may take longer.
        why = f"{describe(session)} ended ({reason}) before its next turn"
        self._spawn(self._retire(session, why, successor_grace_s=self.successor_grace_s))
        # What the session last told us: a SessionEnd payload may lack the transcript (Copilot's does).
        return {"ended": True, "pending": count, "cwd": session.cwd, "transcript_path": session.transcript_path}

    async def sweep(self) -> list[str]:
        """Expire sessions not seen for the ttl; their items move on or take their fallback."""
        now = self.clock.now()
        gone = []
        for stale in self.store.expired(now):
            if self.store.remove(stale.key) is None:
                continue
            hours = self.store.ttl.total_seconds() / 3600
            self.events.publish("session_ended", agent=stale.agent, session_id=stale.session_id, reason="expired")
            log.info("%s expired (not seen for %g h)", describe(stale), hours)
            await self._retire(stale, f"{describe(stale)} expired (not seen for {hours:g} h) before its next turn")
            gone.append(stale.session_id)
        if gone:
            self._notify()
        return gone

    async def _retire(self, session: LiveSession, why: str, successor_grace_s: float = 0.0) -> None:
        deadline = asyncio.get_running_loop().time() + successor_grace_s
        for item in session.items:
            item.claim = item.claimed_until = None
            try:
                await self._rehome(session, item, why, deadline)
            except asyncio.CancelledError:
                stopped = f"{why}; kairosd stopped before its fallback finished"
                await self._settle(item, Result("failed", reason=stopped))
                raise
            except Exception as exc:  # one item's trouble must not strand the others
                log.exception("the fallback of run %s failed", item.run_id)
                await self._settle(item, Result("failed", reason=f"{why}; its fallback failed: {exc}"))
        await self._save_quietly()

    async def _rehome(self, old: LiveSession, item: PendingItem, why: str, deadline: float) -> None:
        """Move ``item`` to another live session its target matches (waiting for one until ``deadline``,
        on the loop's clock), else apply its fallback."""
        try:
            target = SessionTarget.model_validate(item.target)
        except ValidationError as exc:
            await self._settle(item, Result("failed", reason=f"{why}; bad session target: {exc.errors()[0]['msg']}"))
            return
        loop = asyncio.get_running_loop()
        while target.session_id is None:
            # A project or user scope means any matching session: another may be live, or about to be.
            changed = self._changed
            other = self.store.resolve(target, self.clock.now(), exclude=old.key)
            if other is not None:
                self.store.add(other, item)
                self._notify()
                await self._settle(item, Result("pending", reason=f"{why}; now {waiting_reason(other)}"))
                return
            remaining = deadline - loop.time()
            if remaining <= 0 or self._stopping:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)
        result = await self._fallback(
            self._job(item),
            target.fallback,
            why,
            inbox_session=old.session_id,
            agent=target.agent or old.agent,
            cwd=old.cwd,
        )
        await self._settle(item, result)

    @staticmethod
    def _job(item: PendingItem) -> Job:
        return Job(**_fire_fields(item), prompt=item.prompt)

    async def sweep_forever(self) -> None:
        """Expire stale sessions every so often (a tenth of the ttl, at most a minute); runs until cancelled."""
        interval = min(SWEEP_MAX_S, self.store.ttl.total_seconds() / 10)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # a bad sweep must not end the sweeping
                log.exception("expiring sessions failed")

    # ---- the asyncRewake waiter ---------------------------------------------------------------

    async def next_item(
        self,
        session_id: str,
        agent: str | None,
        wait_s: float,
        *,
        cwd: str | None = None,
        transcript_path: str | None = None,
    ) -> dict[str, Any]:
        """Long-poll until an item for this session can be handed out, the session ends, a newer waiter
        of the same session arrives, kairosd stops, or ``wait_s`` seconds pass (then ``item`` is None).

        An unknown session of a named agent is registered first: the waiter that SessionStart arms
        runs alongside the SessionStart hook and may ask before that hook registered the session.
        """
        check_session_id(session_id)
        found = self.store.find(session_id, agent)
        if not found and agent:
            found = [self._touch(agent, session_id, {"cwd": cwd, "transcript_path": transcript_path})]
            self._save_soon()
        if not found:
            raise NotFoundError(f"no live session {session_id!r}" + (f" of {agent}" if agent else ""))
        key = found[0].key
        token = object()
        self._waiters[key] = token
        self._notify()  # the previous waiter of this session steps aside
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, wait_s)
        try:
            while True:
                changed = self._changed
                if self._stopping:
                    return {"item": None, "why": "kairosd is stopping"}
                if self._waiters.get(key) is not token:
                    return {"item": None, "why": "a newer waiter took over"}
                session = self.store.get(key)
                if session is None:
                    return {"item": None, "why": "the session ended"}
                now = self.clock.now()
                wait = deadline - loop.time()
                if wait <= 0:
                    return {"item": None, "why": "timeout"}
                since = now - session.last_active
                if session.in_turn and since < TURN_GRACE:
                    # Mid-turn the Stop hook delivers at the turn's end; look again once the flag goes stale.
                    wait = min(wait, max(0.05, (TURN_GRACE - since).total_seconds()))
                else:
                    claim, items = self.store.claim(session, now, 1)
                    if items:
                        item = items[0]
                        return {"item": self._item_view(item), "claim": claim, "text": self.text_for(item)}
                    leases = [i.claimed_until for i in session.items if i.claimed_until is not None]
                    if leases:  # a claim that lapses makes its item available again
                        wait = min(wait, max(0.05, (min(leases) - now).total_seconds()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), wait)
        finally:
            if self._waiters.get(key) is token:
                del self._waiters[key]

    # ---- consolidation ------------------------------------------------------------------------

    async def consolidate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Accept a SessionEnd's hand-over for memory consolidation (the consolidation issue acts on it)."""
        request: dict[str, Any] = {
            "agent": _text(body, "agent", MAX_AGENT_CHARS, required=True),
            "session_id": check_session_id(_text(body, "session_id", MAX_ID_CHARS, required=True) or ""),
            "transcript_path": _text(body, "transcript_path", MAX_PATH_CHARS),
            "cwd": _text(body, "cwd", MAX_PATH_CHARS),
            "reason": _text(body, "reason", 200),
            "received_at": self.clock.now().isoformat(),
        }
        # Passed on for consolidation's gates: the session was started by kairos (KAIROS_SPAWNED=1), and
        # the caller's KAIROS_CONSOLIDATE switch.
        if body.get("spawned") is True:
            request["spawned"] = True
        switch = _text(body, "consolidate", 20)
        if switch is not None:
            request["consolidate"] = switch
        log.info(
            "consolidation requested for %s session %s (%s)", request["agent"], request["session_id"], request["reason"]
        )
        self.consolidations = [*self.consolidations[-99:], request]
        self.events.publish("consolidation_requested", **request)
        if self.on_consolidate is not None:
            self._spawn(self.on_consolidate(request))
        return {"accepted": True}
