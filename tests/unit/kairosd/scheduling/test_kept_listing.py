"""A listing (``kairos list``, ``kairos list --json``) is kept for the next one while nothing it shows changed
(kairosd.scheduling.kept), and only then.

Each check lists twice through the route, summaries and full views alike: the answers must be what
encoding the whole document afresh gives, and whether the second encoded anything tells whether the
kept answer was used. A change of any of the three things a view depends on (the task object, its
planned Fire object, its running flag) must make a new listing; so must a new Fire equal to the old
one (the two 02:30 of a night the clocks go back compare equal, and read otherwise), and, for full
views, a planned fire falling due (the view then shows the next one). Past the bounds (tasks, bytes)
nothing is kept, and a listing the client left half-read is not kept either.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from session_support import Kairosd

import kairosd.scheduling.api as tasks_api
import kairosd.scheduling.kept as kept_module
import kairosd.scheduling.service as service_module
from kairosd.api.http_types import EncodedJson, JsonPieces, Request, Response, compact_json
from kairosd.core.models import new_task
from kairosd.core.plan import Fire
from kairosd.scheduling.requests import AddRequest

N = 40
SUMMARY = {"view": "summary"}
VIEWS = [SUMMARY, {}]


@pytest.fixture(name="kd")
def _kd(tmp_path: Path) -> Iterator[Kairosd]:
    kd = Kairosd(tmp_path).start()
    try:
        now = kd.clock.now()
        tasks = [
            new_task(
                prompt=f"kept task {i}",
                created_at=now - timedelta(seconds=1),
                tz="Europe/Berlin" if i % 2 else "UTC",
                cron=f"{i % 59 + 1} * * * *",  # none due at the start: the clock is on the hour
                task_id=f"{0x20000000 + i:08x}",
            )
            for i in range(N)
        ]

        kd.load_tasks(tasks)
        yield kd
    finally:
        kd.stop()


@pytest.fixture(name="encoded")
def _encoded(kd: Kairosd, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the summaries each listing encodes (none when it gives the kept answer)."""
    ids: list[str] = []
    make = kd.service.listed_piece

    def counted(rows: list[Any], summary: bool) -> bytes:
        ids.extend(task.id for _, task, _, _ in rows)
        return make(rows, summary)

    monkeypatch.setattr(kd.service, "listed_piece", counted)
    return ids


def _listed(kd: Kairosd, query: dict[str, str] = SUMMARY) -> bytes:
    """The answer's body as the server sends it, and what encoding the document afresh gives (checked equal)."""

    async def both() -> bytes:
        answer = await kd.api.handle(Request("GET", "/v1/tasks", dict(query), None, 0))
        if isinstance(answer, Response):
            assert isinstance(answer.body, EncodedJson)
            body = answer.body.data + b"\n"  # the server ends a JSON answer with a newline
        else:
            assert isinstance(answer, JsonPieces)
            body = b"".join(answer.pieces)
        assert body == compact_json({"tasks": kd.service.list_tasks(summary=bool(query))}) + b"\n"
        return body

    return kd.run(both())


def _listed_twice(kd: Kairosd, encoded: list[str], query: dict[str, str] = SUMMARY) -> tuple[int, int]:
    """How many views the first and the second of two listings in a row encoded."""
    encoded.clear()
    first = _listed(kd, query)
    made = len(encoded)
    encoded.clear()
    assert _listed(kd, query) == first
    return made, len(encoded)


@pytest.mark.parametrize("query", VIEWS)
def test_a_second_listing_of_the_same_is_the_kept_answer(kd: Kairosd, encoded: list[str], query: dict[str, str]):
    assert _listed_twice(kd, encoded, query) == (N, 0)
    assert _listed_twice(kd, encoded, query) == (0, 0)


def test_each_kind_keeps_its_own(kd: Kairosd, encoded: list[str]):
    summaries, views = _listed(kd, SUMMARY), _listed(kd, {})
    encoded.clear()
    assert (_listed(kd, SUMMARY), _listed(kd, {})) == (summaries, views)
    assert encoded == []


def test_a_full_view_whose_fire_fell_due_shows_the_next(kd: Kairosd, encoded: list[str]):
    """The scheduler's loop is not running here: past a planned fire, the view asks the clock (not kept)."""
    _listed_twice(kd, encoded, {})
    kd.clock.advance(3600)
    made, again = _listed_twice(kd, encoded, {})
    assert (made, again) == (N, N)
    assert _listed_twice(kd, encoded) == (N, 0)  # a summary shows the plan, whatever the clock


def _pause(kd: Kairosd) -> None:
    kd.run(kd.service.set_paused("20000003", True))


def _resume(kd: Kairosd) -> None:
    kd.run(kd.service.set_paused("20000003", False))


def _remove(kd: Kairosd) -> None:
    kd.run(kd.service.remove(["20000004"]))


def _add(kd: Kairosd) -> None:
    kd.run(kd.service.add(AddRequest(prompt="added", cron="5 4 * * *")))


def _edit(kd: Kairosd) -> None:
    kd.run(kd.service.edit("20000005", {"name": "renamed"}))


def _starts_running(kd: Kairosd) -> None:
    # The dispatcher's in-flight map is what `running` reads; a real run would need a delivery that hangs.
    kd.call(lambda: kd.scheduler._running.__setitem__("20000006", "run-1"))


def _replanned_equal(kd: Kairosd) -> None:
    """A new Fire object equal to the planned one: found by identity, not by ==."""

    def replan() -> None:
        fire = kd.scheduler.planned("20000007")
        assert fire is not None
        kd.scheduler._next["20000007"] = Fire(fire.scheduled_for, fire.planned_for)

    kd.call(replan)


def _the_other_half_past_two(kd: Kairosd) -> None:
    """The planned 02:30 before the clocks go back becomes the 02:30 after: equal, and another offset."""
    berlin = ZoneInfo("Europe/Berlin")

    def replan() -> None:
        summer = datetime(2027, 10, 31, 2, 30, tzinfo=berlin)  # ahead: not due
        kd.scheduler._next["20000009"] = Fire(summer, summer)

    kd.call(replan)
    before = _listed(kd)
    assert b'"2027-10-31T02:30:00+02:00"' in before

    def fall_back() -> None:
        fire = kd.scheduler.planned("20000009")
        assert fire is not None
        winter = fire.planned_for.replace(fold=1)
        assert winter == fire.planned_for
        kd.scheduler._next["20000009"] = Fire(winter, winter)

    kd.call(fall_back)


@pytest.mark.parametrize("query", VIEWS)
@pytest.mark.parametrize(
    "change",
    [_pause, _resume, _remove, _add, _edit, _starts_running, _replanned_equal, _the_other_half_past_two],
)
def test_a_change_it_shows_makes_a_new_listing(kd: Kairosd, encoded: list[str], change: Any, query: dict[str, str]):
    if change is _resume:
        _pause(kd)  # something to resume
    _listed(kd, query)
    _listed(kd, query)
    change(kd)
    made, again = _listed_twice(kd, encoded, query)
    assert made > 0
    assert again == 0
    if change is _the_other_half_past_two:
        assert b'"2027-10-31T02:30:00+01:00"' in _listed(kd, query)


@pytest.mark.parametrize("query", VIEWS)
def test_past_the_tasks_bound_nothing_is_kept(
    kd: Kairosd, encoded: list[str], monkeypatch: pytest.MonkeyPatch, query: dict[str, str]
):
    monkeypatch.setattr(service_module, "KEEP_TASKS", N - 1)
    assert _listed_twice(kd, encoded, query) == (N, N)


@pytest.mark.parametrize("query", VIEWS)
def test_past_the_bytes_bound_nothing_is_kept(
    kd: Kairosd, encoded: list[str], monkeypatch: pytest.MonkeyPatch, query: dict[str, str]
):
    size = len(_listed(kd, query))
    monkeypatch.setattr(kept_module, "KEEP_BYTES", size // 2)
    _edit(kd)  # so that the next listing is made, not the one kept before the bound was lowered
    assert _listed_twice(kd, encoded, query) == (N, N)


def test_a_listing_left_half_read_is_not_kept(kd: Kairosd, encoded: list[str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tasks_api, "LIST_PIECE", 5)

    def half() -> None:
        async def read_some() -> None:
            answer = await kd.api.handle(Request("GET", "/v1/tasks", dict(SUMMARY), None, 0))
            assert isinstance(answer, JsonPieces)
            pieces = iter(answer.pieces)
            next(pieces), next(pieces)
            pieces.close()  # type: ignore[attr-defined]  # what the server does when the client hangs up

        kd.run(read_some())

    half()
    encoded.clear()
    _listed(kd)
    assert len(encoded) == N
