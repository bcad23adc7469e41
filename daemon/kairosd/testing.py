"""Fakes for tests: a clock you move by hand, in-memory adapters, and a bounded wait for another process.

Shipped in the package (like ``structlog.testing``) so every test suite, and
users embedding kairos, can swap the real adapters for these.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeVar

from kairosd.core.clock import Clock
from kairosd.delivery.base import Handoff, Result
from kairosd.store.store import StoreState

_T = TypeVar("_T")


def wait_for(
    condition: Callable[[], _T], what: str = "a condition", timeout: float = 20.0, *, poll: float = 0.01
) -> _T:
    """Call ``condition`` every ``poll`` seconds until it returns something truthy, and return that.

    For a test or a benchmark that waits on another process or thread (a fake clock cannot move
    those): no blind sleep, and after ``timeout`` seconds an AssertionError that names ``what``.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(poll)


class FakeClock:
    """A clock that only moves when told to. ``jump`` moves wall time alone,
    as a suspend or an NTP step would; ``advance`` moves both clocks."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime(2026, 1, 1, tzinfo=UTC)).astimezone(UTC)
        self._mono = 1000.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward; use jump() for a wall-clock step")
        self._now += timedelta(seconds=seconds)
        self._mono += seconds

    def jump(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        self._now = when.astimezone(UTC)


class InMemoryStore:
    """A :class:`kairosd.store.store.Store` in memory. States are copied in and out, so a
    caller that changes a loaded state without saving it changes nothing, as with the real
    file; ``saves`` counts :meth:`save` calls.

    The tasks themselves are shared, not copied: a task is frozen, with a read-only ``meta``
    (:class:`kairosd.core.models.Task`), so nothing can change one in place; the real store
    shares parts of loaded tasks too. Deep-copying them made a state of 10,000 tasks cost
    about a quarter of a second per load or save.
    """

    def __init__(self, state: StoreState | None = None) -> None:
        self._state = _copied(state or StoreState.empty())
        self.saves = 0

    def load(self) -> StoreState:
        return _copied(self._state)

    def save(self, state: StoreState) -> None:
        self._state = _copied(state)
        self.saves += 1


def _copied(state: StoreState) -> StoreState:
    """``state`` deep-copied, except that the copy's new list holds the same (frozen) tasks."""
    copy = state.model_copy(update={"tasks": []}).model_copy(deep=True)
    copy.tasks = list(state.tasks)
    return copy


class FakeDelivery:
    """A :class:`kairosd.delivery.base.Delivery` that records handoffs instead of delivering them.

    ``calls`` holds every handoff handed over; ``handoffs`` only the first of each run id
    (what a real target would have shown). ``outcome`` and ``reason`` set what the
    next deliveries return, and ``error`` makes them raise instead; change them
    between calls. With ``gate`` set, a delivery waits for that event before it
    answers, so tests can hold runs in flight (``in_flight`` names them) and
    exercise overlap. A repeat of a run id returns the first delivery's result,
    waiting for it if it is still in flight, as the protocol's idempotency asks;
    a delivery that raised or was cancelled is forgotten, so a retry tries again.
    ``clock`` (optional) stamps ``started_at`` and ``finished_at``.
    """

    def __init__(
        self,
        kind: str = "inbox",
        outcome: Literal["delivered", "failed"] = "delivered",
        *,
        reason: str | None = None,
        error: Exception | None = None,
        gate: asyncio.Event | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.kind = kind
        self.outcome: Literal["delivered", "failed"] = outcome
        self.reason = reason
        self.error = error
        self.gate = gate
        self.clock = clock
        self.calls: list[Handoff] = []
        self.handoffs: list[Handoff] = []
        self.in_flight: set[str] = set()
        self.closed = False
        self._results: dict[str, asyncio.Future[Result]] = {}

    async def deliver(self, handoff: Handoff) -> Result:
        self.calls.append(handoff)
        earlier = self._results.get(handoff.run_id)
        if earlier is not None:
            # shield: a cancelled retry must not cancel the first delivery it is waiting on.
            return await asyncio.shield(earlier)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._results[handoff.run_id] = future
        self.handoffs.append(handoff)
        self.in_flight.add(handoff.run_id)
        started = self.clock.now() if self.clock is not None else None
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.error is not None:
                raise self.error
            failed = self.outcome == "failed"
            result = Result(
                self.outcome,
                started_at=started,
                finished_at=self.clock.now() if self.clock is not None else None,
                reason=(self.reason or "failed by FakeDelivery") if failed else self.reason,
            )
        except BaseException as exc:
            del self._results[handoff.run_id]
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # marks it retrieved: no "never retrieved" noise without waiters
            raise
        finally:
            self.in_flight.discard(handoff.run_id)
        future.set_result(result)
        return result

    async def close(self) -> None:
        self.closed = True
