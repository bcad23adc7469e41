"""The cautious offline reading (``[consolidation] offline = "cautious"``): its model
(kairosd.consolidation.offline.kinds), the data file shipped with it, and the extractor's use of it.

The model is the corpus experiment's naive Bayes (tests/consolidation_corpus/train_classifier.py), its rare
features left out; the shipped file must be what ``python -m tests.consolidation_corpus.train_kinds`` makes
of the corpus as it is now.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from consolidation_corpus import train_kinds
from consolidation_corpus.corpus import load as load_split
from consolidation_corpus.train_classifier import Bayes, examples

from kairosd.consolidation.offline import kinds
from kairosd.consolidation.offline.extract import extract, signals
from kairosd.consolidation.transcripts.model import Message

AT = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def test_the_shipped_model_is_what_the_corpus_gives() -> None:
    """A corpus change (or a change of the features) without regenerating the file fails here."""
    made = train_kinds.encode(train_kinds.model())
    shipped = train_kinds.SHIPPED.read_bytes()
    assert shipped == made, f"{train_kinds.SHIPPED} is not what the corpus gives: run {train_kinds.REGENERATE}"


def test_the_file_is_written_deterministically() -> None:
    document = train_kinds.tables([("Always run the tests.", "rule"), ("ok thanks", "none")], min_count=1)
    first, second = train_kinds.encode(document), train_kinds.encode(json.loads(json.dumps(document)))
    assert first == second
    assert first[4:8] == b"\0\0\0\0"  # gzip's mtime: none, so the bytes depend on the content alone
    assert json.loads(gzip.decompress(first))["splits"] == list(train_kinds.TUNED)


def test_rare_features_are_left_out_and_the_prior_is_kept() -> None:
    data = [("never push main", "rule"), ("never force push", "rule"), ("lunch was good", "none")]
    document = train_kinds.tables(data, min_count=2)
    assert document["prior"] == {"rule": 2, "none": 1}
    counts = document["counts"]
    assert isinstance(counts, dict)
    assert counts["rule"]["w:never"] == 2
    assert counts["rule"]["w:push"] == 2
    assert "w:main" not in counts["rule"]
    assert counts["none"] == {}  # every feature of that sentence was seen once


def test_it_is_the_experiments_naive_bayes_when_nothing_is_pruned() -> None:
    """The same features, smoothing and posterior as train_classifier.Bayes (what the figures were measured on)."""
    data = list(examples(load_split("fresh3")))
    reference = Bayes(data)
    document = train_kinds.tables(data, min_count=1)
    model = kinds.Kinds(document["prior"], document["counts"])  # type: ignore[arg-type]
    for sentence in [text for text, _ in data[::40]] + ["We deploy on Fridays now.", "zzz qqq"]:
        expected, got = reference.posterior(sentence), model.posterior(sentence)
        assert got.keys() == expected.keys()
        assert all(got[label] == pytest.approx(expected[label], rel=1e-9, abs=1e-12) for label in got)


def test_the_shipped_model_loads_and_reads_clear_sentences() -> None:
    model = kinds.load()
    assert kinds.load() is model  # read once per process
    assert set(model.labels) == {"none", "rule", "preference", "correction", "decision", "todo", "fact"}
    assert model.top("Never push directly to main.") == "rule"
    assert model.top("We decided to use postgres for the queue.") == "decision"
    assert model.top("The staging database lives on db2.internal.") == "fact"
    assert model.top("TODO: add a retry to the upload job.") == "todo"
    assert model.top("I think the parser is always slow on big files.") == "none"
    assert kinds.agrees(model, "Remember to bump the version before tagging.", "rule") is False  # a to-do, to it
    assert kinds.agrees(model, "I'd rather you keep replies short.", "preference") is True  # rule: one group


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"", "is damaged"),
        (b"not gzip at all", "is damaged"),
        (gzip.compress(b"{not json", mtime=0), "is damaged"),
        (gzip.compress(b"\xff\xfe", mtime=0), "is damaged"),
        (gzip.compress(b"[]", mtime=0), "not a format 1 kinds model"),
        (gzip.compress(b'{"format": 2, "prior": {"rule": 1}, "counts": {}}', mtime=0), "not a format 1 kinds model"),
        (gzip.compress(b'{"format": 1, "prior": {}, "counts": {}}', mtime=0), "has no labels"),
        (gzip.compress(b'{"format": 1, "prior": {"rule": 1}, "counts": {"fact": {}}}', mtime=0), "do not add up"),
        (
            gzip.compress(b'{"format": 1, "prior": {"rule": 1}, "counts": {"rule": {"w:x": -1}}}', mtime=0),
            "not positive",
        ),
        (train_kinds.encode(train_kinds.tables([("a b", "rule")], 1))[:-9], "is damaged"),  # cut short
    ],
)
def test_a_damaged_file_is_unavailable_with_the_reason(raw: bytes, says: str) -> None:
    with pytest.raises(kinds.Unavailable, match=says):
        kinds.from_bytes(raw)


def test_a_missing_file_is_unavailable_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "DATA", "no-such-model.json.gz")
    kinds.load.cache_clear()
    try:
        with pytest.raises(kinds.Unavailable, match=r"no-such-model\.json\.gz\) cannot be read"):
            kinds.load()
    finally:
        kinds.load.cache_clear()


def typed(*texts: str) -> list[Message]:
    out = []
    for text in texts:
        out += [Message("user", text, human=True, at=AT), Message("assistant", "OK.", at=AT)]
    return out


def test_the_cautious_reading_keeps_what_the_model_agrees_with_and_drops_the_rest() -> None:
    messages = typed("Never push directly to main.", "Remember to bump the version before tagging.")
    broad = extract(messages, project="/p", anchor=AT, zone=ZoneInfo("UTC"))
    cautious = extract(messages, project="/p", anchor=AT, zone=ZoneInfo("UTC"), kinds=kinds.load())
    assert [(c.kind, c.text) for c in broad.candidates] == [
        ("rule", "Never push directly to main."),
        ("rule", "Remember to bump the version before tagging."),
    ]
    assert [(c.kind, c.text) for c in cautious.candidates] == [("rule", "Never push directly to main.")]


def test_a_to_do_said_done_passes_whatever_the_model_says() -> None:
    """The reading gates entries only: a model that reads everything as "none" drops every entry, no close."""
    nothing = kinds.Kinds({"none": 1, "todo": 1}, {"none": {"w:x": 1}})
    said = "TODO: add a retry to the upload job. the upload retry is done"
    assert {s.action for s in signals(said, True)} == {"add", "close"}
    assert [(s.kind, s.action) for s in signals(said, True, nothing)] == [("todo", "close")]
