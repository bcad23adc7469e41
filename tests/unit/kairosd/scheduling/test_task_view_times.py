"""Issue 24, item 13: a task's JSON record writes every time in one format (RFC 3339, ``Z`` for UTC)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from scheduler_support import T0, Harness, task

from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore
from kairosd.testing import FakeClock

TIME = re.compile(r'"(\d{4}-\d\d-\d\dT[^"]*)"')


def test_a_utc_task_record_writes_z_only(tmp_path: Path) -> None:
    """created_at (the model's dump) and next_fires/planned_for (the view's) agree: no ``+00:00`` next to ``Z``."""

    async def main() -> None:
        every5 = task("*/5 * * * *")
        h = Harness(tmp_path, [every5], FakeClock(T0))
        await h.start()
        service = Service(h.sched, InboxStore(tmp_path / "inbox", h.clock), h.clock, h.events, "UTC")
        view = service.view(h.book.get(every5.id))
        times = TIME.findall(json.dumps(view))
        assert view["next_fires"]
        assert view["created_at"] in times
        assert all(t.endswith("Z") for t in times), times

    asyncio.run(main())
