"""The train split the offline extractor is tuned on: well-formed, big enough, and held to floors.

The floors are a regression guard on TUNED text (a change that loses what the cues were written
for fails here), never a quality figure: quality is measured on the held-out and fresh splits,
which the tuner never opens.
"""

from __future__ import annotations

import pytest
from consolidation_corpus.train_score import Figures, load, score_writer
from sizes_support import full_size

from kairosd.consolidation.board.entries import KINDS

FORMATS = {"claude", "codex", "codex-0.169", "gemini", "gemini-jsonl", "copilot"}


def _items(docs: list[dict]) -> list[dict]:
    return [
        item
        for doc in docs
        for project in doc["projects"]
        for session in project["sessions"]
        for turn in session["turns"]
        for item in turn["expect"]
    ]


def test_the_train_split_is_big_varied_and_well_formed() -> None:
    docs = load()
    turns = [t for d in docs for p in d["projects"] for s in p["sessions"] for t in s["turns"]]
    assert len(docs) >= 3
    assert len({d["writer"] for d in docs}) == len(docs)
    assert all(d["voice"].strip() and not d["writer"].startswith("w-heldout") for d in docs)
    assert len(turns) >= 300
    formats = {s["format"] for d in docs for p in d["projects"] for s in p["sessions"]}
    assert formats == FORMATS
    for turn in turns:
        assert turn["text"].strip()
        for item in turn["expect"]:
            kinds = {item["kind"]} if isinstance(item["kind"], str) else set(item["kind"])
            assert kinds <= set(KINDS), item
            assert item["key"], item
            assert all(k == k.lower() for k in item["key"]), item
    labeled = {item["kind"] if isinstance(item["kind"], str) else item["kind"][0] for item in _items(docs)}
    assert labeled == set(KINDS)
    assert sum("replaces" in item for item in _items(docs)) >= 10
    assert sum(len(t.get("closes", [])) for t in turns) >= 10
    assert sum(not t["expect"] and not t.get("closes") for t in turns) >= 120  # noise


# Scoring the 74 train writers (extract, then merge onto a board on disk) is most of this module's time.
# At the small size (tests/sizes_support.py) the gate scores every third writer from the second, a fixed
# 25 (today P 1.00 303/304, R 0.86 303/352, replacements 0.94 49/52, closes 0.98 44/45), held to the
# same floors; ``.ci/run`` (KAIROS_TEST_SIZE=full) scores all of them, the figures the comments quote.
SMALL_WRITERS = slice(1, None, 3)


@pytest.fixture(scope="module")
def figures() -> Figures:
    docs = load()
    total = Figures()
    for doc in docs if full_size() else docs[SMALL_WRITERS]:
        total.add(score_writer(doc))
    return total


def test_the_tuned_figures_hold(figures: Figures) -> None:
    assert figures.precision >= 0.97, figures.false
    # 0.86 (922/1076) today: the 50 writers w-train-25..84, added blind by two engineers at once (one on
    # extraction, one on replacements and closes), their misses left in
    assert figures.recall >= 0.84, figures.missed
    # 0.84 (85/101) today: the blind writers w-train-25..29 and 50..84 brought replacements supersede.py does not
    # apply yet (w-train-62's "it's qa2.shop.test now"), left in for whoever works on replacements
    # 0.90 (141/156) with both branches merged; 0.91 (143/157) with updates (a sentence that says a
    # slot changed replaces the entry of that slot: board/slots.py)
    assert figures.replacements >= 0.90, figures.not_replaced
    # 0.86 (75/87) today, with the blind writers' "Admin UI has the CSP header now", "I learned
    # flask-migrate yesterday" left in
    # 0.91 (116/128) with both branches merged; 0.98 (127/129) once a sentence that says something
    # happened closes the one to-do it names (board/slots.py: done_by)
    assert figures.closes >= 0.97, figures.not_replaced
    assert figures.wrong_closes == 0
    # an entry about another subject is never replaced: today 3 of 79 replaced entries carry no
    # label, and each is arguable (see the commits that list them); the fourth came with the blind
    # writer w-train-71 ("We don't use unsafe outside src/arena.rs" replaces the SAFETY-comment rule),
    # the fifth with w-train-82 ("we agreed ... to move to Kotlin 2.0 next quarter" replaces "Kotlin
    # 1.9 on Spring Boot 3.2" before the move): supersede.py matters, left for whoever works on them
    # the sixth came with both branches merged (w-train-3: "Helm 2 is deprecated, use helm 3 only").
    # The fourth, fifth and sixth are gone: a change planned for later, or a word ruled out only
    # somewhere ("outside src/arena.rs", "not helm, for the internal apps"), replaces nothing
    assert figures.wrong_replacements <= 2, figures.not_replaced
