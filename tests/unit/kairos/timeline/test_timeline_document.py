"""The timeline's answer as ``kairos timeline`` and ``kairos ui`` lay it out (kairos.timeline.document): parsed
JSON, checked against its model (TimelineDoc) only when the layout cannot read it, so that an answer of another
shape is one error naming the key (issue 25)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kairos import answers
from kairos.answers import UnexpectedAnswer
from kairos.timeline.document import chart, cleaned
from kairos.timeline.layout import render_text
from kairosd.core.wire.timeline import TimelineDoc

START = datetime(2026, 10, 24, 0, 0, tzinfo=UTC)


def _iso(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def answer() -> dict[str, Any]:
    """A whole chart answer, as kairosd sends it (the test checks that TimelineDoc takes it)."""
    run = {"run_id": "r1", "at": _iso(15), "scheduled_for": _iso(15), "outcome": "failed", "late_by_s": 0.0,
           "manual": False, "reason": "exit 1"}  # fmt: skip
    task = {"id": "ab12cd34", "name": "backup", "tz": "UTC", "schedule": "*/5 * * * *", "paused": False,
            "capped": False, "planned_bins": [[30, 2]], "planned_count": 2, "runs": [run], "missed": []}  # fmt: skip
    return {"from": _iso(0), "to": _iso(600), "now": _iso(300), "cap": 2000, "bins": 60, "capped": [],
            "tasks": [task], "dst": {}, "downtime": [], "downtime_source": "derived from missed fires",
            "started_at": _iso(0)}  # fmt: skip


def test_a_good_answer_is_laid_out_without_its_model(monkeypatch):
    TimelineDoc.model_validate(answer())  # the fixture is a real answer

    def never(*_: Any) -> None:
        raise AssertionError("a good answer was validated (that is about half of kairos timeline's time)")

    monkeypatch.setattr(answers, "read", never)
    lines = render_text(chart(cleaned(answer()), 67), color=False)
    assert any(line.startswith("backup") and "X" in line for line in lines)


def _without(*path: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *inner, last = path
        for key in inner:
            doc = doc[key]
        del doc[last]

    return change


def _set(value: Any, *path: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *inner, last = path
        for key in inner:
            doc = doc[key]
        doc[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_without("from"), "(from: Field required)"),
        (_without("tasks", 0, "runs"), "(tasks.0.runs: Field required)"),  # not a chart without its runs
        (_without("tasks", 0, "id"), "(tasks.0.id: Field required)"),  # cleaning it, before the layout
        (_set(1700000000, "tasks", 0, "runs", 0, "at"), "(tasks.0.runs.0.at: Input should be a valid string)"),
        (_set({"ab12cd34": {}}, "tasks"), "(tasks: Input should be a valid list)"),
        (_set([[30, "2"]], "tasks", 0, "planned_bins"), "(tasks.0.planned_bins.0.1: Input should be a valid integer"),
        # The model takes any text for a time: what the layout met is said instead.
        (_set("yesterday", "now"), "(Invalid isoformat string: 'yesterday')"),
    ],
)
def test_an_answer_of_another_shape_is_one_error_naming_the_key(change, said):
    doc = copy.deepcopy(answer())
    change(doc)
    with pytest.raises(UnexpectedAnswer) as raised:
        chart(cleaned(doc), 67, "UTC")
    message = raised.value.message
    assert message.startswith("kairosd answered GET /v1/timeline in a shape this kairos does not know ")
    assert said in message
    assert "\n" not in message


def test_the_ui_clock_moves_the_now_mark_and_a_bad_window_is_the_same_error():
    doc = answer()
    later = START + timedelta(minutes=400)
    assert chart(doc, 67, now=later).now_column == 40
    assert chart(doc, 67, now=START).now_column == 30  # behind the answer's own now: that stays
    doc["to"] = 5
    with pytest.raises(UnexpectedAnswer, match=r"\(to: Input should be a valid string"):
        chart(doc, 67, now=later)
