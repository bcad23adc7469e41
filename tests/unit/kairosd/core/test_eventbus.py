"""The event bus: what it costs when nobody listens, and that a listener still gets every event."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from kairosd.core.events import EventBus

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def test_an_event_nobody_listens_to_is_not_made() -> None:
    """A herd of 10,000 fires publishes 20,000 events, mostly to nobody: without a subscriber publish
    builds nothing (not even the time); with one, the subscriber gets every event, stamped."""
    reads: list[datetime] = []

    def now() -> datetime:
        reads.append(T0)
        return T0

    async def main() -> None:
        bus = EventBus(now)
        for n in range(3):
            bus.publish("run_started", run_id=f"r{n}")
        assert reads == []
        subscription = bus.subscribe()
        bus.publish("run_finished", run_id="r1", outcome="delivered")
        event = await asyncio.wait_for(subscription.__anext__(), 5)
        assert event == {"type": "run_finished", "at": T0.isoformat(), "run_id": "r1", "outcome": "delivered"}
        assert len(reads) == 1
        await subscription.aclose()

    asyncio.run(main())
