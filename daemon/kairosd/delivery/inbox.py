"""The inbox target: a fired prompt becomes an item in a session's durable inbox.

``delivered`` means the item is fsynced in the session's log (see
:mod:`kairosd.store.inbox`); an agent picks it up later, through a hook or the CLI.
The item's id is the run id, so a retried delivery of the same run is
confirmed again without a second item, and ``on_item`` (the event fan-out) fires
only for the first.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import ValidationError

from kairosd.core.clock import Clock
from kairosd.core.errors import UsageError
from kairosd.core.models import InboxTarget
from kairosd.core.records import InboxItem, Prototype
from kairosd.delivery.base import Handoff, Result
from kairosd.store.inbox import InboxStore

__all__ = ["InboxDelivery"]

log = logging.getLogger(__name__)

DEFAULT_SESSION = "default"


# The fields an item has of its handoff, all text; the others it shares with the items of its batch, session
# and fire (the session, the delivery time, the slot, how late, whether it catches up).
_OWN = ("id", "task_id", "task_name", "prompt")


def _utc(value: object) -> bool:
    """Whether ``value`` is a time as validation makes it: a datetime in UTC."""
    return value.__class__ is datetime and value.tzinfo is UTC


# One prototype per session and fire in a batch, by the session, the slot's and the lateness' objects (the
# runs of one fire share them) and catch_up; the slot and lateness are kept with it, so their ids stay theirs.
_Prototypes = dict[tuple[str, int, int, bool], tuple[Prototype[InboxItem], datetime, float]]


def _item(
    handoff: Handoff, session: str, started: datetime, prototypes: _Prototypes | None
) -> tuple[InboxItem, bytes | None]:
    """The item of ``handoff`` and its line (None: encoded when written). Made from a prototype without
    validation when every value already is what validation would make of it (the dispatcher's handoffs are
    of validated runs and tasks: a herd's 10,000 items after a long stop were each validated again on the
    event loop), with its line from the prototype's; validated otherwise (ValidationError when it is not
    valid)."""
    name, when, late, catch_up = handoff.task_name, handoff.scheduled_for, handoff.late_by_s, handoff.catch_up
    if (
        prototypes is not None
        and handoff.run_id.__class__ is str
        and handoff.task_id.__class__ is str
        and (name is None or name.__class__ is str)
        and handoff.prompt.__class__ is str
        and _utc(when)
        and late.__class__ is float
        and catch_up.__class__ is bool
    ):
        key = (session, id(when), id(late), catch_up)
        known = prototypes.get(key)
        if known is None:
            shared = {"session": session, "delivered_at": started, "scheduled_for": when, "late_by_s": late}
            known = prototypes[key] = (Prototype(InboxItem, _OWN, catch_up=catch_up, **shared), when, late)
        return known[0].made(id=handoff.run_id, task_id=handoff.task_id, task_name=name, prompt=handoff.prompt)
    item = InboxItem(
        id=handoff.run_id,
        session=session,
        task_id=handoff.task_id,
        task_name=name,
        prompt=handoff.prompt,
        scheduled_for=when,
        delivered_at=started,
        late_by_s=late,
        catch_up=catch_up,
    )
    return item, None


class InboxDelivery:
    """Delivers handoffs whose target is ``{"kind": "inbox", "session": S}`` to ``store``."""

    kind = "inbox"

    def __init__(
        self,
        store: InboxStore,
        clock: Clock,
        on_item: Callable[[InboxItem], None] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_item = on_item

    async def deliver(self, handoff: Handoff) -> Result:
        return (await self.deliver_many([handoff]))[0]

    async def deliver_many(self, handoffs: list[Handoff]) -> list[Result]:
        """Write the items of ``handoffs`` with one fsync per session (a group commit), then confirm each.

        A put under way is not abandoned when the caller is cancelled (kairosd
        stopping): the write finishes in its thread whatever happens, so this
        waits for it and reports what it did. An item on disk is ``delivered``,
        never recorded as failed.
        """
        started = self._clock.now()
        results: list[Result | None] = [None] * len(handoffs)
        groups: dict[str, list[tuple[int, InboxItem, bytes | None]]] = {}  # session -> (index, item, line), in order
        # The items of a session and fire share their prototype (see _item).
        prototypes: _Prototypes | None = {} if _utc(started) else None
        for index, handoff in enumerate(handoffs):
            session = handoff.target.session if isinstance(handoff.target, InboxTarget) else DEFAULT_SESSION
            try:
                item, line = _item(handoff, session, started, prototypes if session.__class__ is str else None)
            except ValidationError as exc:
                results[index] = self._failed(started, f"cannot build an inbox item: {exc.errors()[0]['msg']}")
                continue
            groups.setdefault(session, []).append((index, item, line))
        # fsync takes milliseconds to seconds; the event loop must not wait on it.
        writing = asyncio.ensure_future(asyncio.to_thread(self._write, groups))
        try:
            written = await asyncio.shield(writing)
        except asyncio.CancelledError:
            written = await writing  # already under way: its truth is what gets recorded
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
        finished = self._clock.now()
        # One result for every item delivered (a Result is frozen): the dispatcher settles the runs of one
        # result object alike, and 10,000 results cost 30 ms.
        delivered = Result("delivered", started_at=started, finished_at=finished)
        told: set[str] = set()
        for session, entries in groups.items():
            outcome = written[session]
            for index, item, _ in entries:
                if isinstance(outcome, str):
                    results[index] = self._failed(started, outcome)
                    continue
                if outcome[item.id] and item.id not in told and self._on_item is not None:
                    told.add(item.id)
                    try:
                        self._on_item(item)
                    except Exception:
                        # The item is durably delivered; a failing listener must not turn that into a failure.
                        log.exception("inbox listener failed for run %s", item.id)
                results[index] = delivered
        return [result for result in results if result is not None]

    def _write(self, groups: dict[str, list[tuple[int, InboxItem, bytes | None]]]) -> dict[str, dict[str, bool] | str]:
        """Per session, which items were new (all durable), or why that session's write failed."""
        written: dict[str, dict[str, bool] | str] = {}
        for session, entries in groups.items():
            items = [item for _, item, _ in entries]
            try:
                # Made above, read only from here on; their lines are the prototypes' where they had them.
                fresh = self._store.put_many(items, handed_over=True, lines=[line for _, _, line in entries])
            except UsageError as exc:  # an unusable session name
                written[session] = str(exc)
            except OSError as exc:
                written[session] = f"could not write the inbox of session {session!r}: {exc}"
            else:
                # A repeated run id within the batch is confirmed too, and told to the listener once.
                new: dict[str, bool] = {}
                for item, is_new in zip(items, fresh, strict=True):
                    new[item.id] = new.get(item.id, False) or is_new
                written[session] = new
            # One session's failure leaves the others written: each is answered for on its own.
        return written

    async def close(self) -> None:
        """Nothing to stop: a put is short, and the scheduler awaits it before shutting down."""

    def _failed(self, started: datetime, reason: str) -> Result:
        log.warning("inbox delivery failed: %s", reason)  # the run ledger records it too; this is for the log
        return Result("failed", started_at=started, finished_at=self._clock.now(), reason=reason)
