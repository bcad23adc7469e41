"""The daemon's event stream: task, run, missed, expiry and inbox events, fanned out.

Publishing never blocks the scheduler: each subscriber has a bounded queue,
and a subscriber that falls behind gets one ``overflow`` event and loses the
rest until it catches up (a slow ``kairos watch`` must not stall firing).

A subscription counts from :meth:`EventBus.subscribe` on (so nothing published
in between is lost) until it ends, is closed (``aclose``, even before the first
event: the server closes a stream it refuses at its limit) or is garbage collected.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000


class EventBus:
    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now
        self._subscribers: set[_Subscriber] = set()
        self._closed = False

    def publish(self, kind: str, **data: Any) -> None:
        if not self._subscribers:
            return  # nobody listens (mostly): a 10k herd publishes 20,000 events
        event = {"type": kind, "at": self._now().isoformat(), **data}
        for sub in list(self._subscribers):
            sub.offer(event)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def subscribe(self, types: frozenset[str] | None = None, session: str | None = None) -> Subscription:
        """Events from now on, optionally only some types or one session's."""
        sub = _Subscriber(types, session)
        self._subscribers.add(sub)
        return Subscription(self, sub)

    def _release(self, sub: _Subscriber) -> None:
        self._subscribers.discard(sub)

    def close(self) -> None:
        self._closed = True
        for sub in list(self._subscribers):
            sub.end()


class Subscription(AsyncIterator[dict[str, Any]]):
    """The events of one subscriber; ``aclose`` (or the end) releases it."""

    def __init__(self, bus: EventBus, sub: _Subscriber) -> None:
        self._bus: EventBus | None = bus
        self._sub = sub

    async def __anext__(self) -> dict[str, Any]:
        bus = self._bus
        if bus is None or bus._closed:
            self._release()
            raise StopAsyncIteration
        try:
            event = await self._sub.queue.get()
        except BaseException:  # cancelled: the consumer is going away
            self._release()
            raise
        if event is None:
            self._release()
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        self._release()

    def _release(self) -> None:
        bus, self._bus = self._bus, None
        if bus is not None:
            bus._release(self._sub)

    def __del__(self) -> None:
        # A consumer that drops the iterator without closing it (``async for`` does not) frees it too.
        self._release()


class _Subscriber:
    def __init__(self, types: frozenset[str] | None, session: str | None) -> None:
        self.types = types
        self.session = session
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUE_SIZE + 2)
        self.overflowed = False

    def offer(self, event: dict[str, Any]) -> None:
        if self.types is not None and event["type"] not in self.types:
            return
        if self.session is not None and event.get("session") not in (None, self.session):
            return
        if self.queue.qsize() >= QUEUE_SIZE:
            if not self.overflowed:
                self.overflowed = True
                self.queue.put_nowait({"type": "overflow", "at": event["at"], "dropped_from": event["type"]})
            return
        self.overflowed = False
        self.queue.put_nowait(event)

    def end(self) -> None:
        # Room is always left for the end marker (the queue holds QUEUE_SIZE + 2).
        self.queue.put_nowait(None)
