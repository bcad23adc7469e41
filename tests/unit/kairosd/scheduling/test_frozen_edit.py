"""Issue 25: an edit through the API makes a new task object, and what is kept by the object shows it.

The store keeps each task's JSON by the task object (:meth:`JsonStore.fragment`, used by listings
and writes) and the task book tells changed tasks by identity; the loader shares parts among
tasks. All of it holds only because a task is never changed in place. Here a JSON store (the
daemon's), its cache filled by a first listing, then ``PATCH`` and ``pause`` through the API's
router: each answer, the next listing and the store file show the new values, and the task
object the old listing saw is still the old task.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from scheduler_support import T0, task

from kairosd.api.http_types import JsonPieces, compact_json
from kairosd.api.server import Request, Response
from kairosd.core.events import EventBus
from kairosd.scheduling.api import Api
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.service import Service
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.inbox import InboxStore
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState, read_folded
from kairosd.testing import FakeClock, FakeDelivery


async def _call(api: Api, method: str, path: str, body: Any = None) -> Any:
    answer = await api.handle(Request(method, path, {}, body, 0))
    if isinstance(answer, JsonPieces):
        return json.loads(b"".join(answer.pieces))
    assert isinstance(answer, Response), answer
    assert answer.status == 200, answer.body
    return json.loads(compact_json(answer.body))  # as a client reads it


def test_an_edit_through_the_api_is_a_new_object_and_every_cache_shows_it(tmp_path: Path) -> None:
    async def main() -> None:
        clock = FakeClock(T0)
        daily, other = task("0 9 * * *", task_id="0000aaaa", meta={"k": 1}), task("0 9 * * *", task_id="0000bbbb")
        store = JsonStore(tmp_path / "scheduled_tasks.json", clock)
        store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[daily, other]))
        book = TaskBook(store, store.load())
        ledger, missed = RunLedger(tmp_path / "runs.jsonl", clock), MissedLedger(tmp_path / "missed.jsonl", clock)
        ledger.load(), missed.load()
        events = EventBus(clock.now)
        sched = Scheduler(book, ledger, missed, {"inbox": FakeDelivery("inbox", clock=clock)}, clock, events,
                          SchedulerConfig())  # fmt: skip
        await sched.start()
        api = Api(Service(sched, InboxStore(tmp_path / "inbox", clock), clock, events, "UTC"), lambda: None)

        listed = await _call(api, "GET", "/v1/tasks")  # fills the store's JSON per task object
        assert [t["prompt"] for t in listed["tasks"]] == ["check the PRs", "check the PRs"]
        before = book.get(daily.id)
        json_before = store.fragment(before)

        doc = await _call(api, "PATCH", f"/v1/tasks/{daily.id}", {"prompt": "edited", "cron": "30 8 * * *"})
        assert (doc["task"]["prompt"], doc["task"]["cron"]) == ("edited", "30 8 * * *")
        after = book.get(daily.id)
        assert after is not before
        assert (before.prompt, before.cron, store.fragment(before)) == ("check the PRs", "0 9 * * *", json_before)
        assert json.loads(store.fragment(after))["prompt"] == "edited"
        assert after.meta == {"k": 1}  # kept through the edit, and still read-only
        listed = {t["id"]: t for t in (await _call(api, "GET", "/v1/tasks"))["tasks"]}
        assert (listed[daily.id]["prompt"], listed[daily.id]["cron"]) == ("edited", "30 8 * * *")
        assert listed[other.id]["prompt"] == "check the PRs"

        await _call(api, "POST", f"/v1/tasks/{daily.id}/pause")
        paused = book.get(daily.id)
        assert paused is not after
        assert (paused.paused, after.paused) == (True, False)
        listed = {t["id"]: t for t in (await _call(api, "GET", "/v1/tasks"))["tasks"]}
        assert (listed[daily.id]["status"], listed[daily.id]["paused"], listed[other.id]["status"]) == (
            "paused", True, "scheduled",
        )  # fmt: skip
        await book.commit()
        on_disk = {t.id: t for t in read_folded(store.path).tasks}
        assert (on_disk[daily.id].prompt, on_disk[daily.id].paused, on_disk[other.id].paused) == ("edited", True, False)
        await sched.shutdown(1)

    asyncio.run(main())
