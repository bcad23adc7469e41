"""The offline consolidator's quality on the v1 corpus (sessions.py, the text it was tuned on),
pinned: precision >= 0.95 and recall >= 0.85, overall and in every transcript format. A change that
loses quality fails here; the figures themselves are printed by bench/bench_board_quality.py
and recorded in BENCHMARKS.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from consolidation_corpus import formats
from consolidation_corpus.legacy import score
from consolidation_corpus.sessions import SESSIONS

from kairosd.consolidation.board.entries import KINDS

PRECISION_FLOOR = 0.95
RECALL_FLOOR = 0.85


def test_the_corpus_is_big_enough_and_labeled() -> None:
    turns = [turn for session in SESSIONS for turn in session]
    assert len(SESSIONS) >= 20
    assert len(turns) >= 150
    for label, text in turns:
        assert text.strip()
        assert label == "-" or set(label.split("/")) <= set(KINDS), label
    labeled = {label.split("/")[0] for label, _ in turns if label != "-"}
    assert labeled == set(KINDS)  # every kind is measured


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory):
    return score(tmp_path_factory.mktemp("corpus"), formats.FORMATS)


def test_every_typed_turn_is_read_in_every_format(outcome) -> None:
    assert outcome.human_read == outcome.turns == len(formats.FORMATS) * sum(len(s) for s in SESSIONS)


def test_precision_and_recall_meet_the_floor(outcome) -> None:
    overall = outcome.overall
    assert overall.precision >= PRECISION_FLOOR, outcome.false_keeps
    assert overall.recall >= RECALL_FLOOR, outcome.misses


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_each_format_meets_the_floor(outcome, fmt: str) -> None:
    tally = outcome.by_format[fmt]
    assert tally.labeled > 0
    assert (tally.precision, tally.recall) >= (PRECISION_FLOOR, 0.0)
    assert tally.recall >= RECALL_FLOOR


def test_plain_project_facts_are_kept_and_chatter_is_not(tmp_path: Path) -> None:
    from zoneinfo import ZoneInfo

    from kairosd.consolidation.offline.extract import extract
    from kairosd.consolidation.transcripts.read import Message

    said = [
        "The billing service runs on port 8443.",
        "Our staging cluster is called osprey-stage.",
        "we use sentry for error tracking",
        "The orders table is read-only on Fridays.",
        "i think the cache lives in redis",  # an opinion
        "where does the config live?",  # a question
        "the deploy failed again on the staging cluster",  # a one-off remark
        "it runs on my machine",
    ]
    messages = [Message("user", text, human=True) for text in said]
    found = extract(messages, project=None, anchor=formats.BASE, zone=ZoneInfo("UTC"))
    assert [(c.kind, c.text) for c in found.candidates] == [
        ("fact", "The billing service runs on port 8443."),
        ("fact", "Our staging cluster is called osprey-stage."),
        ("fact", "We use sentry for error tracking"),
        ("fact", "The orders table is read-only on Fridays."),
    ]
