"""Where a fire for a session goes: into a live session's pending items, on to another session, or
to its target's fallback.

* :meth:`SessionRouter.deliver` (the ``session`` target, through the hub) resolves
  the task's target to a live session. Found: the prompt becomes a pending item of
  that session, written durably, and the run is reported ``pending``. Not found:
  the target's fallback applies at once (``inbox``, ``headless`` or ``drop``).
* A session that ends or expires hands its items on (:meth:`SessionRouter.retire`):
  a project- or user-scoped item moves to another live session that matches its
  target; anything else takes its task's fallback. ``drop`` settles the run
  ``skipped``.

Overlap: a pending item holds no concurrency slot and does not keep its task
"running". The task's overlap policy applies to its pending items instead: with
``skip`` a fire while an earlier run of the task still waits for a session is
skipped; with ``queue`` at most ``queue_limit`` wait.

Must not import the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping

from pydantic import ValidationError

from kairosd.core.models import AgentTarget, InboxTarget, SessionTarget
from kairosd.delivery.base import Delivery, Handoff, Result
from kairosd.sessions.core import SessionCore
from kairosd.sessions.rules import describe, fire_fields, waiting_reason
from kairosd.sessions.store import LiveSession, PendingItem

__all__ = ["DEFAULT_INBOX_SESSION", "SWEEP_MAX_S", "SessionRouter", "Waker"]

# Starts a turn in an idle live session of one agent CLI with the given text as its prompt:
# (session id, text) -> (started, what happened). Codex's is kairosd.agents.codexqueue.CodexQueue.
Waker = Callable[[str, str], Awaitable[tuple[bool, str]]]

# The hub's parts log under the hub's name: operators filter and read the journal by it.
log = logging.getLogger("kairosd.sessions.hub")

DEFAULT_INBOX_SESSION = "default"
SWEEP_MAX_S = 60.0


class SessionRouter:
    """Queues fires on live sessions, re-homes the items of sessions that go, applies fallbacks."""

    def __init__(
        self,
        core: SessionCore,
        deliveries: Mapping[str, Delivery],
        *,
        queue_limit: int,
        wakers: Mapping[str, Waker] | None = None,
        text_for: Callable[[PendingItem], str] | None = None,
    ) -> None:
        self.core = core
        # Idle wake done by kairosd itself at fire time, by agent (Codex: codex queue).
        self.wakers = dict(wakers or {})
        self._text_for = text_for
        self.store = core.store
        self.clock = core.clock
        # Looked up when a fallback runs, not now: the composition root may add "agent" later.
        self._deliveries = deliveries
        self.queue_limit = queue_limit

    # ---- the session target -----------------------------------------------------------------

    async def deliver(self, handoff: Handoff) -> Result:
        """The ``session`` delivery target: queue the prompt for its live session, or take the fallback now."""
        started = self.clock.now()
        target = handoff.target
        if not isinstance(target, SessionTarget):
            return Result("failed", started, self.clock.now(), reason=f"not a session target: {target.kind}")
        held = self.store.item(handoff.run_id)
        if held is not None:  # a repeated delivery of the same run: it is already waiting
            return Result("pending", started, reason=waiting_reason(held[0]))
        others = self.store.items_of_task(handoff.task_id)
        if others:
            session, first = others[0]
            if handoff.overlap != "queue":
                why = f"run {first.run_id} of this task is still {waiting_reason(session)} (overlap=skip)"
                return Result("skipped", started, self.clock.now(), reason=why)
            if len(others) >= self.queue_limit:
                why = f"{len(others)} runs of this task already wait for a session (overlap=queue keeps at most that)"
                return Result("skipped", started, self.clock.now(), reason=why)
        live = self.store.resolve(target, started)
        if live is None:
            why = f"no live session matches {target.scope}" + (f" (agent {target.agent})" if target.agent else "")
            return await self.fallback(
                handoff,
                target.fallback,
                why,
                inbox_session=target.session_id or DEFAULT_INBOX_SESSION,
                agent=target.agent,
                cwd=target.project,
            )
        item = PendingItem(**fire_fields(handoff), prompt=handoff.prompt, dispatched_at=started, queued_at=started)
        self.store.add(live, item)
        try:
            await self.core.save_now()  # pending means durable, like the inbox's fsync
        except OSError as exc:
            self.store.drop({handoff.run_id})
            why = f"could not record the pending item in {self.store.path}: {exc.strerror or exc}"
            return Result("failed", started, self.clock.now(), reason=why)
        waker = self.wakers.get(live.agent)
        if waker is not None and self._text_for is not None and not live.in_turn:
            woken, how = await self._wake(live, item, waker, self._text_for(item))
            if woken is not None:
                return woken
            self.core.notify()
            return Result("pending", started, reason=f"{waiting_reason(live)} ({how})")
        self.core.notify()
        return Result("pending", started, reason=waiting_reason(live))

    async def _wake(self, live: LiveSession, item: PendingItem, waker: Waker, text: str) -> tuple[Result | None, str]:
        """Start a turn in ``live`` (idle) with ``item`` now: its delivered result, or None when the waker
        declined or failed (then the item stays pending for the session's next turn boundary, or its
        fallback when the session ends). The item is held meanwhile, so no hook hands it out too."""
        claim = self.store.hold(item, self.clock.now())
        try:
            started, how = await waker(live.session_id, text)
        except Exception as exc:  # a broken waker must not cost the run: it stays pending
            log.exception("idle wake of %s failed", describe(live))
            started, how = False, f"idle wake failed: {exc}"
        if started and self.store.take(live, claim, {item.run_id}):
            # Taken out before it is recorded: the turn it started must not get it again at its Stop.
            await self.core.save_quietly()
            log.info("run %s: %s %s", item.run_id, describe(live), how)
            why = f"delivered into idle {describe(live)}: kairosd {how}"
            return Result("delivered", item.dispatched_at, self.clock.now(), reason=why), how
        if item.claim == claim:
            item.claim = item.claimed_until = None
        log.info("run %s stays pending for %s: %s", item.run_id, describe(live), how)
        return None, how

    async def fallback(
        self,
        handoff: Handoff,
        fallback: str,
        why: str,
        *,
        inbox_session: str,
        agent: str | None,
        cwd: str | None,
    ) -> Result:
        """Deliver ``handoff`` as its target's fallback says; the result's reason starts with ``why``."""
        if fallback == "drop":
            return Result("skipped", self.clock.now(), self.clock.now(), reason=f"{why}; dropped (fallback=drop)")
        if fallback == "headless":
            headless = self._deliveries.get("agent")
            if headless is None:
                why += "; fallback=headless needs the background job registry, which this kairosd lacks"
            elif not agent:
                why += "; fallback=headless needs an agent, and neither the target nor a session names one"
            else:
                target = AgentTarget(agent=agent, cwd=cwd or None)
                result = await headless.deliver(dataclasses.replace(handoff, target=target))
                return dataclasses.replace(result, reason=f"{why}; ran headless (fallback=headless): {result.reason}")
            fallback = "inbox"
        inbox = self._deliveries.get("inbox")
        if inbox is None:
            return Result("failed", self.clock.now(), self.clock.now(), reason=f"{why}; no inbox to fall back to")
        result = await inbox.deliver(dataclasses.replace(handoff, target=InboxTarget(session=inbox_session)))
        if result.outcome == "delivered":
            where = f"delivered to inbox {inbox_session!r} (fallback={fallback})"
            return dataclasses.replace(result, reason=f"{why}; {where}")
        return dataclasses.replace(result, reason=f"{why}; the inbox fallback failed: {result.reason}")

    # ---- sessions that go -------------------------------------------------------------------

    async def sweep(self) -> list[str]:
        """Expire sessions not seen for the ttl; their items move on or take their fallback."""
        now = self.clock.now()
        gone = []
        for stale in self.store.expired(now):
            if self.store.remove(stale.key) is None:
                continue
            hours = self.store.ttl.total_seconds() / 3600
            self.core.events.publish("session_ended", agent=stale.agent, session_id=stale.session_id, reason="expired")
            log.info("%s expired (not seen for %g h)", describe(stale), hours)
            await self.retire(stale, f"{describe(stale)} expired (not seen for {hours:g} h) before its next turn")
            gone.append(stale.session_id)
        if gone:
            self.core.notify()
        return gone

    async def retire(self, session: LiveSession, why: str, successor_grace_s: float = 0.0) -> None:
        """Hand on the items of a session that is gone: to a successor (waiting up to
        ``successor_grace_s`` for one) or to their fallback."""
        deadline = asyncio.get_running_loop().time() + successor_grace_s
        for item in session.items:
            item.claim = item.claimed_until = None
            try:
                await self._rehome(session, item, why, deadline)
            except asyncio.CancelledError:
                stopped = f"{why}; kairosd stopped before its fallback finished"
                await self.core.settle(item, Result("failed", reason=stopped))
                raise
            except Exception as exc:  # one item's trouble must not strand the others
                log.exception("the fallback of run %s failed", item.run_id)
                await self.core.settle(item, Result("failed", reason=f"{why}; its fallback failed: {exc}"))
        await self.core.save_quietly()

    async def _rehome(self, old: LiveSession, item: PendingItem, why: str, deadline: float) -> None:
        """Move ``item`` to another live session its target matches (waiting for one until ``deadline``,
        on the loop's clock), else apply its fallback."""
        try:
            target = SessionTarget.model_validate(item.target)
        except ValidationError as exc:
            failed = Result("failed", reason=f"{why}; bad session target: {exc.errors()[0]['msg']}")
            await self.core.settle(item, failed)
            return
        loop = asyncio.get_running_loop()
        while target.session_id is None:
            # A project or user scope means any matching session: another may be live, or about to be.
            changed = self.core.changed
            other = self.store.resolve(target, self.clock.now(), exclude=old.key)
            if other is not None:
                self.store.add(other, item)
                self.core.notify()
                await self.core.settle(item, Result("pending", reason=f"{why}; now {waiting_reason(other)}"))
                return
            remaining = deadline - loop.time()
            if remaining <= 0 or self.core.stopping:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)
        result = await self.fallback(
            Handoff(**{**fire_fields(item), "target": target}, prompt=item.prompt),
            target.fallback,
            why,
            inbox_session=old.session_id,
            agent=target.agent or old.agent,
            cwd=old.cwd,
        )
        await self.core.settle(item, result)

    async def sweep_forever(self) -> None:
        """Expire stale sessions every so often (a tenth of the ttl, at most a minute); runs until cancelled."""
        interval = min(SWEEP_MAX_S, self.store.ttl.total_seconds() / 10)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # a bad sweep must not end the sweeping
                log.exception("expiring sessions failed")
