"""The app's inbox target tells listeners of each new item, and dumps nothing when nobody listens."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kairosd.app.wiring import build_app
from kairosd.config import Config
from kairosd.core.models import InboxTarget
from kairosd.core.records import InboxItem
from kairosd.delivery.base import Handoff
from kairosd.system.paths import Paths
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def _handoff(run_id: str) -> Handoff:
    return Handoff(run_id=run_id, task_id="t1", task_name=None, prompt="check the build",
                   target=InboxTarget(session="main"), scheduled_for=T0, planned_for=T0)  # fmt: skip


def test_inbox_items_are_dumped_for_listeners_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A herd's 10,000 items after a long stop were each dumped to JSON for an event nobody heard."""
    paths = Paths(tmp_path / "state", tmp_path / "run", tmp_path / "data", tmp_path / "config")
    app = build_app(Config(), paths=paths, clock=FakeClock(T0), environ={"TZ": "UTC"})
    dumps: list[str] = []
    dump = InboxItem.model_dump

    def counting(self: InboxItem, **kw: Any) -> dict[str, Any]:
        dumps.append(self.id)
        return dump(self, **kw)

    monkeypatch.setattr(InboxItem, "model_dump", counting)
    inbox = app.scheduler.deliveries["inbox"]

    async def main() -> list[dict[str, Any]]:
        assert (await inbox.deliver(_handoff("r1"))).outcome == "delivered"
        assert dumps == []  # nobody listens
        subscription = app.events.subscribe(frozenset({"inbox_item"}))
        assert (await inbox.deliver(_handoff("r2"))).outcome == "delivered"
        event = await asyncio.wait_for(anext(subscription), 5)
        await subscription.aclose()
        return [event]

    [event] = asyncio.run(main())
    assert dumps == ["r2"]
    assert event["session"] == "main"
    assert event["item"]["id"] == "r2"
    assert event["item"]["prompt"] == "check the build"
