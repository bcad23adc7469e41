"""The concurrency cap of the registry: at most ``limit`` turns hold a slot; the rest wait in FIFO order.

Like :class:`asyncio.Semaphore`, but it hands a released slot straight to the
oldest waiter (no barging), knows who holds what (each holder is a task id),
and keeps the accounting tests and ``status`` report: ``in_use``, ``waiting``,
``lent`` and ``peak`` (the most slots ever held at once).

Loans, so that waiting on a descendant cannot starve it. A task that holds a
slot and is blocked waiting on one of its own descendants does no work, yet its
slot counts against the cap: when every slot is held that way, the descendants
queue forever. So while such a wait lasts, the holder *offers* its slot to the
task it waits on (:meth:`Slots.offer`; the caller checks the family tie). That
task, if it waits for a slot, starts at once on the loan, ahead of the queue and
even at the cap, because its lender is idle: the turns actually working never
outnumber the slots. A borrower that waits on its own descendant lends the slot
on, so a chain of waits (as long as the depth limit allows) always reaches a
turn that runs. A loan ends:

* with the borrower's turn: the slot goes back to its lender, not to the queue;
* with the lender's wait (:meth:`Slots.withdraw`: a timeout, a client that went
  away) while the borrower still runs: the lender works again and the borrower,
  which cannot be paused, keeps a slot of its own, counted in ``in_use`` even
  above the limit; no turn takes a slot until ``in_use`` is below it again;
* with the lender's turn (its process ended while it waited): the borrower keeps
  the slot, and the lender's offers lapse.

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
        self.in_use = 0  # slots held, a lent one once; above the limit only after a loan ended early
        self.peak = 0
        self._queue: deque[tuple[str, asyncio.Future[None]]] = deque()
        self._holders: dict[str, str | None] = {}  # holder -> its lender, or None for a slot of its own
        self._offers: list[tuple[str, str]] = []  # (lender, borrower), one per wait in progress
        self._lent: dict[str, str] = {}  # lender -> the borrower running on its slot now

    @property
    def waiting(self) -> int:
        return sum(1 for _, f in self._queue if not f.done())

    @property
    def lent(self) -> int:
        """Slots whose holder is blocked on a descendant that runs on them now."""
        return len(self._lent)

    def holds(self, key: str) -> bool:
        return key in self._holders

    async def acquire(self, key: str) -> None:
        """Wait for a slot (of its own, or on loan) for ``key``, which must not hold one already."""
        if key in self._holders:
            raise RuntimeError(f"{key} already holds a slot")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((key, future))
        self._match()
        try:
            await future  # already done when a slot or a loan was free: no suspension then
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                # The slot was handed over just as we gave up: pass it on, or it is lost.
                self.release(key)
            else:
                self._queue = deque((k, f) for k, f in self._queue if f is not future)
            raise

    def release(self, key: str) -> None:
        """``key``'s turn is over: a borrowed slot goes back to its lender, its own to the next in line."""
        lender = self._holders.pop(key)
        self._offers = [(a, b) for a, b in self._offers if a != key]  # its waits lapse with its turn
        borrower = self._lent.pop(key, None)
        if borrower is not None:
            # It lent the slot out and ended first: its borrower keeps the slot, from where it came.
            self._holders[borrower] = lender
            if lender is not None:
                self._lent[lender] = borrower
        elif lender is not None:
            del self._lent[lender]
        else:
            self.in_use -= 1
        self._match()

    def offer(self, lender: str, borrower: str) -> bool:
        """``lender`` is blocked waiting on ``borrower``: lend it the slot. False if ``lender`` holds none."""
        if lender not in self._holders or lender == borrower:
            return False
        self._offers.append((lender, borrower))
        self._match()
        return True

    def withdraw(self, lender: str, borrower: str) -> None:
        """The wait behind one :meth:`offer` is over; the lender's loan ends with its last wait."""
        if (lender, borrower) not in self._offers:
            return  # the lender's turn ended meanwhile, and its offers with it
        self._offers.remove((lender, borrower))
        if lender in self._lent and not any(a == lender for a, _ in self._offers):
            # The lender works again; the one on its slot cannot be paused, so it now counts on its own.
            self._holders[self._lent.pop(lender)] = None
            self._count_one()
        self._match()

    def _match(self) -> None:
        """Hand out what is free: loans to the borrowers they were offered to, then slots in FIFO order."""
        for key, future in list(self._queue):
            lender = self._free_lender(key)
            if lender is not None and not future.done():
                self._lent[lender] = key
                self._grant(key, future, lender)
        while self.in_use < self.limit:
            head = next(((k, f) for k, f in self._queue if not f.done()), None)
            if head is None:
                break
            self._count_one()
            self._grant(*head, None)

    def _free_lender(self, borrower: str) -> str | None:
        for lender, wanted in self._offers:
            if wanted == borrower and lender in self._holders and lender not in self._lent:
                return lender
        return None

    def _grant(self, key: str, future: asyncio.Future[None], lender: str | None) -> None:
        self._queue = deque((k, f) for k, f in self._queue if f is not future and not f.done())
        self._holders[key] = lender
        future.set_result(None)

    def _count_one(self) -> None:
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)
