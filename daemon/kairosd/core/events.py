"""The daemon's event stream: task, run, missed, expiry and inbox events, fanned out.

Publishing never blocks the scheduler: each subscriber has a bounded queue,
and a subscriber that falls behind gets one ``overflow`` event and loses the
rest until it catches up (a slow ``kairos watch`` must not stall firing).

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
        event = {"type": kind, "at": self._now().isoformat(), **data}
        for sub in list(self._subscribers):
            sub.offer(event)

    def subscribe(
        self, types: frozenset[str] | None = None, session: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Events from now on, optionally only some types or one session's."""
        sub = _Subscriber(types, session)
        self._subscribers.add(sub)
        return self._iterate(sub)

    async def _iterate(self, sub: _Subscriber) -> AsyncIterator[dict[str, Any]]:
        try:
            while not self._closed:
                event = await sub.queue.get()
                if event is None:
                    return
                yield event
        finally:
            self._subscribers.discard(sub)

    def close(self) -> None:
        self._closed = True
        for sub in list(self._subscribers):
            sub.end()


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
