"""The concurrency cap of the registry: at most ``limit`` turns hold a slot; the rest wait in FIFO order.

Like :class:`asyncio.Semaphore`, but it hands a released slot straight to the
oldest waiter (no barging) and keeps the accounting tests and ``status``
report: ``in_use``, ``waiting`` and ``peak`` (the most slots ever held at once).

Must not import anything from kairosd.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a concurrency limit must be at least 1")
        self.limit = limit
        self.in_use = 0
        self.peak = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self) -> None:
        if self.in_use < self.limit and not self._waiters:
            self._take()
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                # The slot was handed over just as we gave up: pass it on, or it is lost.
                self.release()
            elif future in self._waiters:
                self._waiters.remove(future)
            raise

    def release(self) -> None:
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)  # the slot changes hands; in_use stays the same
                return
        self.in_use -= 1

    def _take(self) -> None:
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)
