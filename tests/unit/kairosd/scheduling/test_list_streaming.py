"""``GET /tasks`` streams (issue 28): the answer goes out piece by piece, and what the daemon keeps is bounded.

Before, the whole document was built in memory (and kept, with three more representations of
every view); at 300,000 tasks the CLI timed out waiting for it. Pinned here without timing:
the first views are sent before the last are encoded, the answer is chunked on the wire, a
listing's peak allocation is a fraction of the document, a listing keeps nothing per view, and
explain() keeps 10,000 distinct schedules.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from session_support import T0, Kairosd

import kairosd.scheduling.api as tasks_api
from kairos.client import Client
from kairosd.api.http_types import JsonPieces, Request, compact_json
from kairosd.core.models import Task, new_task
from kairosd.core.schedule import explain as explain_module

N = 1500


@pytest.fixture(name="listed", scope="module")
def _listed() -> list[Task]:
    """The N tasks each test's kairosd starts with: built once (a task is frozen, so kairosds can share them)."""
    created = T0 - timedelta(seconds=1)
    return [
        new_task(
            prompt=f"listed task {i}: summarise the open pull requests of the week",
            created_at=created,
            tz="UTC",
            cron=f"{i % 60} {(i // 60) % 24} 1 7 *",
            task_id=f"{0x10000000 + i:08x}",
        )
        for i in range(N)
    ]


@pytest.fixture(name="kd")
def _kd(tmp_path: Path, listed: list[Task]) -> Iterator[Kairosd]:
    kd = Kairosd(tmp_path).start()
    try:
        assert kd.clock.now() == T0
        kd.load_tasks(listed)
        yield kd
    finally:
        kd.stop()


def _answer(kd: Kairosd, query: dict[str, str]) -> JsonPieces:
    answer = kd.run(kd.api.handle(Request("GET", "/v1/tasks", query, None, 0)))
    assert isinstance(answer, JsonPieces)
    return answer


@pytest.mark.parametrize("query", [{}, {"view": "summary"}])
def test_the_first_views_go_out_before_the_last_are_encoded(
    kd: Kairosd, query: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    encoded: list[str] = []
    make = kd.service.listed_piece

    def counted(rows: list[Any], summary: bool) -> bytes:
        encoded.extend(task.id for _, task, _, _ in rows)
        return make(rows, summary)

    monkeypatch.setattr(kd.service, "listed_piece", counted)
    pieces = iter(_answer(kd, query).pieces)
    first = kd.call(lambda: next(pieces) + next(pieces))
    assert first.startswith(b'{"tasks":[{"id":"')
    assert len(encoded) <= tasks_api.LIST_PIECE < N  # the rest are not encoded yet
    rest = kd.call(lambda: b"".join(pieces))
    assert len(json.loads(first + rest)["tasks"]) == N
    assert len(encoded) == N


def test_the_answer_is_chunked_on_the_wire(kd: Kairosd):
    response = Client(kd.paths.socket)._open("GET", "/tasks", None, None)
    try:
        assert response.chunked
        assert response.headers["content-type"] == "application/json"
        assert "content-length" not in response.headers
        assert len(json.loads(response.read())["tasks"]) == N
    finally:
        response.close()


def test_a_listings_peak_allocation_is_a_fraction_of_the_document(kd: Kairosd, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tasks_api, "LIST_PIECE", 50)
    answer = _answer(kd, {})
    size = len(b"".join(kd.call(lambda: list(answer.pieces))))  # also fills the caches

    def measured() -> tuple[int, int]:
        tracemalloc.start()
        try:
            sent = sum(len(piece) for piece in _pieces_now(kd))
            return sent, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    sent, peak = kd.call(measured)
    assert sent == size
    assert peak < size / 2, (peak, size)  # the whole document was at least `size`, and stayed


def _pieces_now(kd: Kairosd) -> Iterator[bytes]:
    """The pieces of a listing, made on the loop thread (as the server makes them)."""
    rows = kd.service.listing(False)
    return tasks_api.Api._listed(kd.api, rows, False)  # type: ignore[attr-defined]


def test_a_listing_keeps_nothing_per_view(kd: Kairosd):
    """What a full view adds to the task's JSON is made afresh by each listing and kept by none: a
    per-task cache of it was a quarter of RSS after listing 10,000 tasks (bench/bench_scale.py).
    (The store keeps each task's own JSON for its writes; this test's store is in memory and keeps none.)"""
    # The views built whole (as `kairos show` builds one): what they fill (explain()'s cache) is not the listing's.
    size = len(compact_json({"tasks": kd.call(kd.service.list_tasks)}))

    def retained() -> int:
        rows = kd.service.listing(False)  # what to list (made anew each time), then their views, traced
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            sent = sum(len(piece) for piece in tasks_api.Api._listed(kd.api, rows, False))  # type: ignore[attr-defined]
            assert sent == size + 1  # and a newline
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()

    async def on_the_loop() -> int:
        return retained()

    kept = kd.run(on_the_loop(), 120)  # tracing makes it slow on a busy machine
    # A view's fields are ~1/4 of it: a cache of them kept ~size / 2 (their text and entries). What is kept
    # now (up to ~size / 40, depending on what ran before) is allocated inside datetime's isoformat() and
    # utcoffset() (tracemalloc), not held by the listing.
    assert kept < size / 20, (kept, size)
    removed = [f"{0x10000000 + i:08x}" for i in range(0, N, 3)]
    kd.run(kd.service.remove(removed))
    after = _answer(kd, {})
    body = b"".join(kd.call(lambda: list(after.pieces)))
    assert [v["id"] for v in json.loads(body)["tasks"]] == [v["id"] for v in kd.call(kd.service.list_tasks)]
    assert len(json.loads(body)["tasks"]) == N - len(removed)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_rows_are_made_with_the_collector_off_and_its_state_restored(
    kd: Kairosd, monkeypatch: pytest.MonkeyPatch, enabled: bool
):
    """A row per task and no cycles among them: the collector walked the rows made so far each time they
    grew by a quarter (0.4 of 0.9 s at 300,000 tasks). It is as it was once the rows are made."""
    seen: list[bool] = []
    planned = kd.scheduler.planned

    def watched(task_id: str) -> Any:
        seen.append(gc.isenabled())
        return planned(task_id)

    monkeypatch.setattr(kd.scheduler, "planned", watched)

    def rows() -> tuple[int, bool]:
        was = gc.isenabled()
        (gc.enable if enabled else gc.disable)()
        try:
            return len(kd.service.listing(False)), gc.isenabled()
        finally:
            (gc.enable if was else gc.disable)()

    assert kd.call(rows) == (N, enabled)
    assert seen == [False] * N


def test_explain_keeps_ten_thousand_distinct_schedules():
    explain_module._explain_canonical.cache_clear()
    expressions = [f"{m} {h} {d} * *" for d in range(1, 8) for h in range(24) for m in range(60)][:10_000]
    first = [explain_module.explain(e) for e in expressions]
    before = explain_module._explain_canonical.cache_info()
    assert [explain_module.explain(e) for e in expressions] == first
    after = explain_module._explain_canonical.cache_info()
    assert after.misses == before.misses  # the second round is all hits
    assert explain_module.explain("0 9 * * MON-FRI") == explain_module.explain("0 9 * * 1-5")
