"""Fakes for tests: a clock you move by hand, and in-memory adapters.

Shipped in the package (like ``structlog.testing``) so every test suite, and
users embedding kairos, can swap the real adapters for these.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kairosd.store import StoreState


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
    """A :class:`kairosd.store.Store` in memory. States are deep-copied in and out,
    so a caller that mutates a loaded state without saving it changes nothing, as
    with the real file; ``saves`` counts :meth:`save` calls."""

    def __init__(self, state: StoreState | None = None) -> None:
        self._state = (state or StoreState.empty()).model_copy(deep=True)
        self.saves = 0

    def load(self) -> StoreState:
        return self._state.model_copy(deep=True)

    def save(self, state: StoreState) -> None:
        self._state = state.model_copy(deep=True)
        self.saves += 1
