"""The v2 consolidation corpus and its scorer, pinned (tests/consolidation_corpus).

What is pinned: the held-out split is big and varied enough; a label file with a typo is an error,
never a label scored as something else; every session reads back, in each of the six transcript
shapes, as exactly the turns the person typed (with their own timestamps); the scorer counts a
small known case right; and agent mode with the scripted capable model loses nothing between the
transcript and the board (precision and recall 1.00 on held-out text).

The offline extractor's figures on held-out text were measured once after its rewrite (README,
BENCHMARKS). Issue 22's goals are met for recall only; the floors below are the measured figures,
so a change that loses ground on held-out text fails here. They are regression guards, not goals:
raising one needs a change that was not tuned on this text, and a fresh held-out part to show it.
The fresh part (``data/fresh``, written after the last change) is pinned the same way, and agent mode
with the scripted capable model must lose nothing on both. A second fresh part (``data/fresh2``, six
writers who never saw the extractor) is written to measure it after the current tuning; only its size,
its variety and its reading back are pinned here, no figure. Since the precision work of issue 22 part 2,
``fresh`` and ``fresh2`` are tuned on too (their misses were read): their floors guard against a
regression, and only ``heldout`` (never opened) and ``fresh3`` (six other writers, written blind before
that work merged; only its size and variety are pinned) measure quality. ``fresh4`` (six more writers,
written blind while the extractor was being tuned again) is pinned the same way: size and variety only,
and so is ``fresh5`` (six more writers, written blind during the next round of tuning; never tuned on),
and ``fresh6`` (six more voices, written blind while the offline extractor was tuned once more; its
wrong entries were read in the seventh round, so it is tuned on since, and has floors), and
``fresh7`` (six more voices, written blind during the seventh round; its wrong entries and misses
were read in the eighth round, so it is tuned on since), and ``fresh8`` (six more voices, written
blind while the offline extractor was being changed again in the eighth round; not tuned on).
"""

from __future__ import annotations

import copy
import functools
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from consolidation_corpus import score as scoring
from consolidation_corpus.corpus import SHAPES, CorpusError, Writer, load, parse
from consolidation_corpus.formats import REMINDER
from consolidation_corpus.shapes import READER, render
from sizes_support import full_size

from kairosd.consolidation.board.entries import KINDS
from kairosd.consolidation.offline import kinds
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.transcripts.model import Message
from kairosd.consolidation.transcripts.read import ReadStats, read_file

# Issue 22's goals for offline mode on held-out text; met: recall only (see README, "How good it is").
OFFLINE_GOALS = {"precision": 0.95, "recall": 0.70, "replacements": 0.90}
# What the offline extractor scored when measured once after its last change (2026-11-26, after the
# precision work on fresh and fresh2: joined instructions, kinds, clauses, closes; heldout measured
# with the plain report only): floors. Raised after the replacement work of issue 22 (updates: a
# sentence that says a slot changed replaces that slot's entry, one that says something happened
# closes the to-do it names; board/slots.py): heldout replacements 3/9 -> 4/9 (plain report),
# fresh (tuned on since then) replacements 5/10 -> 10/10, closes 5/7 -> 7/7, recall 58 -> 63 of 80.
OFFLINE_FLOORS = {
    "heldout": {"precision": 82 / 89, "recall": 83 / 107, "replacements": 4 / 9, "closes": 9 / 9},
    "fresh": {"precision": 63 / 64, "recall": 63 / 80, "replacements": 10 / 10, "closes": 7 / 7},
    # tuned on since issue 22's seventh round (general gates: an entry must stand alone, a rule that only
    # reports a change is a fact): blind 0.77 (54/70), after the gates, before its entries were read, 0.82
    "fresh6": {"precision": 57 / 64, "recall": 57 / 106, "replacements": 3 / 12, "closes": 7 / 8},
    # tuned on since issue 22's eighth round (a fact beside a request for work now is that work's context):
    # blind 0.67 (42/63); after the round 0.70 (42/60), the floor below (the default, strict matching)
    "fresh7": {"precision": 42 / 60, "recall": 43 / 114, "replacements": 3 / 11, "closes": 5 / 6},
    # written blind during issue 22's eighth round, scored once after it (the plain report): the same
    # figures as on the code before the round
    "fresh8": {"precision": 48 / 59, "recall": 48 / 102, "replacements": 8 / 11, "closes": 7 / 9},
}

# The cautious offline reading ([consolidation] offline = "cautious": a cue's entry kept only where the
# shipped kinds model reads the same kind), scored once with the shipped model (min_count 2) and the plain
# report (--offline cautious), never tuned on: floors. Broad on the same code: heldout 0.94 (83/88) /
# 0.79, fresh8 0.81 (48/59) / 0.47.
CAUTIOUS_FLOORS = {
    "heldout": {"precision": 72 / 75, "recall": 73 / 107, "replacements": 3 / 6, "closes": 9 / 9},
    "fresh8": {"precision": 33 / 34, "recall": 33 / 102, "replacements": 7 / 10, "closes": 3 / 3},
}


@pytest.fixture(scope="module")
def heldout() -> list[Writer]:
    return load("heldout")


def test_the_heldout_split_is_big_and_varied(heldout: list[Writer]) -> None:
    sessions = [s for w in heldout for p in w.projects for s in p.sessions]
    turns = [t for s in sessions for t in s.turns]
    items = [e for t in turns for e in t.expect]
    assert len(turns) >= 330
    assert len({w.writer for w in heldout}) >= 4
    assert len({w.voice for w in heldout}) == len(heldout)
    assert sum(len(w.projects) for w in heldout) >= 6
    assert {s.shape for s in sessions} == set(SHAPES)
    assert {e.kind for e in items} == set(KINDS)
    assert 0.25 <= sum(bool(t.expect) for t in turns) / len(turns) <= 0.40  # about a third is worth keeping
    assert sum(e.replaces is not None for e in items) >= 8
    assert sum(len(t.closes) for t in turns) >= 8


@pytest.mark.parametrize(
    ("split", "min_turns_each", "min_replaces", "min_closes"),
    [
        ("fresh2", 38, 10, 8),
        ("fresh3", 40, 12, 8),
        ("fresh4", 40, 12, 10),
        ("fresh5", 42, 15, 12),
        ("fresh6", 42, 15, 12),
        ("fresh7", 42, 21, 12),
        ("fresh8", 42, 19, 12),
    ],
)
def test_each_later_fresh_split_is_big_and_varied(
    split: str, min_turns_each: int, min_replaces: int, min_closes: int
) -> None:
    """``data/fresh2`` to ``fresh8``: six writers each, who wrote without seeing the extractor
    (nor the other parts), each a different voice, to measure it after a round of tuning."""
    writers = load(split)
    sessions = [s for w in writers for p in w.projects for s in p.sessions]
    turns = [t for s in sessions for t in s.turns]
    items = [e for t in turns for e in t.expect]
    assert len(turns) >= 250
    assert len(writers) >= 6
    assert len({w.voice for w in writers}) == len(writers)
    assert all(len(w.projects) >= 2 and w.turns >= min_turns_each for w in writers)
    assert all(2 <= len(p.sessions) <= 4 for w in writers for p in w.projects)
    assert all(Counter(s.shape for s in sessions)[shape] >= 4 for shape in SHAPES)
    assert {e.kind for e in items} == set(KINDS)
    assert 0.25 <= sum(bool(t.expect) for t in turns) / len(turns) <= 0.45  # mostly task chatter
    assert sum(e.replaces is not None for e in items) >= min_replaces
    assert sum(len(t.closes) for t in turns) >= min_closes


@pytest.mark.parametrize("shape", [None, "claude", "gemini"])
def test_every_fresh2_session_reads_back_as_what_was_typed(shape: str | None, tmp_path: Path) -> None:
    """In its own shape (None), and in two others: no typed turn of the new split is lost or misread."""
    for writer in load("fresh2"):
        for project in writer.projects:
            for index, session in enumerate(project.sessions):
                own = shape or session.shape
                times = [scoring.BASE + timedelta(days=index, minutes=2 * t) for t in range(len(session.turns))]
                turns = [(t.text, when) for t, when in zip(session.turns, times, strict=True)]
                path = render(tmp_path, own, turns, f"/home/w/{project.name}", f"{project.name}-{index}-{own}")
                stats = ReadStats()
                typed = [(m.text, m.at) for m in read_file(path, READER[own], stats) if m.human]
                assert typed == turns, f"{writer.writer}/{project.name} session {index} as {own}"
                assert stats.malformed == 0


# ---- the loader ---------------------------------------------------------------------------------

VALID: dict[str, Any] = {
    "writer": "w-test",
    "voice": "a test writer",
    "projects": [
        {
            "name": "app",
            "sessions": [
                {
                    "format": "claude",
                    "turns": [
                        {"text": "we use uv not poetry", "expect": [{"kind": "rule", "key": ["uv", "poetry"]}]},
                        {"text": "put the retry cleanup on the list", "expect": [{"kind": "todo", "key": ["retry"]}]},
                        {"text": "thanks", "expect": []},
                    ],
                },
                {
                    "format": "gemini-jsonl",
                    "turns": [
                        {
                            "text": "change of plan: we use pdm now",
                            "expect": [{"kind": ["decision", "rule"], "key": ["pdm"], "replaces": ["uv", "poetry"]}],
                        },
                        {"text": "the retry thing is done", "expect": [], "closes": [["retry"]]},
                    ],
                },
            ],
        }
    ],
}


def _broken(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    change(doc)
    return doc


def _turn(doc: dict[str, Any], session: int, turn: int) -> dict[str, Any]:
    return doc["projects"][0]["sessions"][session]["turns"][turn]


BROKEN = {
    "unknown kind": lambda d: _turn(d, 0, 0)["expect"][0].update(kind="rules"),
    "unknown kind in a list": lambda d: _turn(d, 1, 0)["expect"][0].update(kind=["decision", "rul"]),
    "misspelt field": lambda d: _turn(d, 0, 0)["expect"][0].update(keys=["uv"]),
    "misspelt turn field": lambda d: _turn(d, 1, 1).update(close=[["retry"]]),
    # (on a turn no later label names, so only the typo itself can be the error)
    "key not lower case": lambda d: _turn(d, 0, 2).update(expect=[{"kind": "fact", "key": ["Thanks"]}]),
    "key not in the words typed": lambda d: _turn(d, 0, 2).update(expect=[{"kind": "fact", "key": ["thanx"]}]),
    "empty key": lambda d: _turn(d, 0, 2).update(expect=[{"kind": "fact", "key": []}]),
    "replaces no earlier item": lambda d: _turn(d, 1, 0)["expect"][0].update(replaces=["uv"]),
    "closes no earlier to-do": lambda d: _turn(d, 1, 1).update(closes=[["uv", "poetry"]]),
    "unknown shape": lambda d: d["projects"][0]["sessions"][0].update(format="codex-0.170"),
    "no expect": lambda d: _turn(d, 0, 2).pop("expect"),
    "expect not a list": lambda d: _turn(d, 0, 2).update(expect={"kind": "rule"}),
    "empty text": lambda d: _turn(d, 0, 2).update(text=" "),
    "a project twice": lambda d: d["projects"].append(copy.deepcopy(d["projects"][0])),
}


def test_a_valid_file_is_read() -> None:
    writer = parse(VALID, "heldout", Path("w-test.json"))
    (project,) = writer.projects
    assert [s.shape for s in project.sessions] == ["claude", "gemini-jsonl"]
    change = project.sessions[1].turns[0].expect[0]
    assert (change.kinds, change.key, change.replaces) == (("decision", "rule"), ("pdm",), ("uv", "poetry"))
    assert project.sessions[1].turns[1].closes == (("retry",),)


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_typo_in_a_label_file_is_an_error(what: str) -> None:
    with pytest.raises(CorpusError):
        parse(_broken(BROKEN[what]), "heldout", Path("w-test.json"))


def test_an_unknown_split_or_a_file_that_is_not_json_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="unknown split"):
        load("tuned", tmp_path)
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "w.json").write_text('{"writer": "w", ')
    with pytest.raises(CorpusError, match="cannot be read"):
        load("fresh", tmp_path)


# ---- the six shapes -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_every_session_reads_back_as_what_was_typed(heldout: list[Writer], shape: str, tmp_path: Path) -> None:
    for writer in heldout:
        for project in writer.projects:
            for index, session in enumerate(project.sessions):
                times = [scoring.BASE + timedelta(days=index, minutes=2 * t) for t in range(len(session.turns))]
                turns = [(t.text, when) for t, when in zip(session.turns, times, strict=True)]
                path = render(tmp_path, shape, turns, f"/home/w/{project.name}", f"{project.name}-{index}")
                stats = ReadStats()
                typed = [(m.text, m.at) for m in read_file(path, READER[shape], stats) if m.human]
                assert typed == turns, f"{writer.writer}/{project.name} session {index}"
                assert stats.malformed == 0


def test_the_noise_is_there_to_be_dropped(tmp_path: Path) -> None:
    """Each shape carries what a person did not type: else reading it back proves little."""
    turns = [(f"turn {i}", scoring.BASE + timedelta(minutes=i)) for i in range(5)]
    for shape in SHAPES:
        text = render(tmp_path, shape, turns, "/home/w/app", "s").read_text()
        assert "kairos context board for" in text or "carry out this scheduled task now" in text, shape
        assert "TODO: always validate the input later" in text or "Use `list` instead of" in text, shape


# ---- the scorer ---------------------------------------------------------------------------------------


def test_the_scorer_counts_a_known_case(tmp_path: Path) -> None:
    """Agent mode with a fixed answer per session: what is right, wrong, missed, replaced, closed."""
    writer = parse(VALID, "heldout", Path("w-test.json"))
    answers = {
        # a right rule, a wrong entry, the to-do missed
        0: "ADD RULE: We use uv, not poetry.\nADD RULE: Say thanks.",
        # the change names the rule it replaces; the to-do cannot be closed (never learned)
        1: "REPLACE {uv} DECISION: We use pdm now.",
    }
    calls: list[int] = []

    def answer_for(prompt: str, script: scoring.Script) -> str:
        calls.append(len(calls))
        assert "we use uv not poetry" in prompt or "we use pdm now" in prompt
        ids = {"uv": script.entry_for.get(("uv", "poetry"), "b000000")}
        return answers[len(calls) - 1].format(**ids)

    outcome = scoring.score("heldout", "agent", answer_for, writers=[writer])
    assert (outcome.turns, outcome.human_read) == (5, 5)
    assert (outcome.overall.precision.hit, outcome.overall.precision.of) == (2, 3)
    assert (outcome.overall.recall.hit, outcome.overall.recall.of) == (2, 3)
    assert outcome.by_kind["todo"].recall.value == 0.0
    assert outcome.by_kind["rule"].recall.value == 1.0
    assert (outcome.replacements.hit, outcome.replacements.of) == (1, 1)
    assert outcome.closes.of == 0  # the to-do was never learned
    assert outcome.false == ["[w-test/app s0/claude] rule: 'Say thanks.'"]


def test_a_replacement_not_applied_and_a_todo_left_open_are_counted() -> None:
    writer = parse(VALID, "heldout", Path("w-test.json"))
    answers = iter(["ADD RULE: We use uv, not poetry.\nADD TODO: The retry cleanup", "ADD DECISION: We use pdm now."])
    outcome = scoring.score("heldout", "agent", lambda prompt, script: next(answers), writers=[writer])
    assert outcome.overall.recall.value == 1.0
    assert (outcome.replacements.hit, outcome.replacements.of) == (0, 1)  # the uv rule is still on the board
    assert (outcome.closes.hit, outcome.closes.of) == (0, 1)
    assert len(outcome.failed) == 2


@pytest.mark.parametrize(
    ("answer", "off_board"),
    [
        ("ADD RULE: We use uv, not poetry.", True),
        ("ADD RULE: We use uv, not poetry.\nADD TODO: The retry cleanup", False),
    ],
)
def test_a_todo_opened_and_done_in_one_session_must_be_off_the_board(answer: str, off_board: bool) -> None:
    """Said done in its own session: out of recall and closes; right only if it is not on the board."""
    doc = copy.deepcopy(VALID)
    session = doc["projects"][0]["sessions"][0]
    session["turns"].append({"text": "the retry thing is done", "expect": [], "closes": [["retry"]]})
    doc["projects"][0]["sessions"] = [session]
    writer = parse(doc, "heldout", Path("w-test.json"))
    outcome = scoring.score("heldout", "agent", lambda prompt, script: answer, writers=[writer])
    assert (outcome.overall.recall.hit, outcome.overall.recall.of) == (1, 1)  # the rule; the to-do is not counted
    assert outcome.closes.of == 0
    assert (outcome.done_in_session.hit, outcome.done_in_session.of) == (int(off_board), 1)
    assert bool(outcome.failed) is not off_board


def test_the_scripted_model_leaves_out_a_todo_done_in_the_turns_it_reads() -> None:
    doc = copy.deepcopy(VALID)
    session = doc["projects"][0]["sessions"][0]
    session["turns"].append({"text": "the retry thing is done", "expect": [], "closes": [["retry"]]})
    doc["projects"][0]["sessions"] = [session]
    outcome = scoring.score("heldout", "agent", writers=[parse(doc, "heldout", Path("w-test.json"))])
    assert (outcome.done_in_session.hit, outcome.done_in_session.of) == (1, 1)
    assert outcome.overall.precision.value == outcome.overall.recall.value == 1.0


def test_an_entry_that_fits_two_items_is_paired_with_the_one_no_other_entry_fits() -> None:
    """ "6432, not 5432" fits the old port and the new one; "5432 ... since" only the old. Each item gets one."""
    doc = copy.deepcopy(VALID)
    doc["projects"][0]["sessions"] = [
        {
            "format": "claude",
            "turns": [
                {"text": "the db is on 5432 since forever", "expect": [{"kind": "fact", "key": ["5432"]}]},
                {"text": "pgbouncer is on 6432, not 5432", "expect": [{"kind": "fact", "key": ["6432"]}]},
            ],
        }
    ]
    writer = parse(doc, "heldout", Path("w-test.json"))
    answer = "ADD FACT: pgbouncer is on 6432, not 5432\nADD FACT: the db is on 5432 since forever"
    outcome = scoring.score("heldout", "agent", lambda prompt, script: answer, writers=[writer])
    assert (outcome.overall.recall.hit, outcome.overall.recall.of) == (2, 2), outcome.misses
    assert outcome.overall.precision.value == 1.0


def test_a_change_changed_again_is_judged_by_the_latest_word() -> None:
    doc = copy.deepcopy(VALID)
    third = {"text": "we use hatch now", "expect": [{"kind": "rule", "key": ["hatch"], "replaces": ["pdm"]}]}
    doc["projects"][0]["sessions"].append({"format": "codex", "turns": [third]})
    answers = iter(
        [
            "ADD RULE: We use uv, not poetry.",
            "REPLACE {uv} DECISION: We use pdm now.",
            "REPLACE {pdm} RULE: We use hatch now.",
        ]
    )

    def answer_for(prompt: str, script: scoring.Script) -> str:
        ids = {
            name: script.entry_for.get(key, "b000000") for name, key in (("uv", ("uv", "poetry")), ("pdm", ("pdm",)))
        }
        return next(answers).format(**ids)

    outcome = scoring.score("heldout", "agent", answer_for, writers=[parse(doc, "heldout", Path("w.json"))])
    assert (outcome.replacements.hit, outcome.replacements.of) == (2, 2), outcome.failed


def test_offline_entries_are_scored_against_their_own_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """An offline entry must match an item of the turn it came from, not of another turn."""
    from kairosd.consolidation.board.entries import Candidate
    from kairosd.consolidation.offline.extract import Extraction

    def fake_extract(messages: Any, **_: Any) -> Extraction:
        typed = [m for m in messages if m.human]
        found = Extraction()
        if len(typed) == 3:  # the first session: the rule from its own turn, the to-do from the wrong one
            found.candidates = found.to_merge = [
                Candidate("rule", "We use uv, not poetry", at=typed[0].at),
                Candidate("todo", "The retry cleanup", at=typed[2].at),
                Candidate("fact", "make check is the check command"),  # no turn: a tool call's
            ]
        return found

    monkeypatch.setattr(scoring, "extract", fake_extract)
    writer = parse(VALID, "heldout", Path("w-test.json"))
    outcome = scoring.score("heldout", "offline", writers=[writer])
    assert (outcome.overall.precision.hit, outcome.overall.precision.of) == (1, 2)
    assert (outcome.overall.recall.hit, outcome.overall.recall.of) == (1, 3)
    assert len(outcome.untimed) == 1


@pytest.mark.parametrize(
    ("matching", "precision", "recall"),
    [("standing", (2, 4), (2, 3)), ("strict", (0, 4), (0, 3))],
)
def test_a_standing_kind_fits_a_standing_label_and_a_todo_only_a_todo(
    monkeypatch: pytest.MonkeyPatch, matching: str, precision: tuple[int, int], recall: tuple[int, int]
) -> None:
    """Under ``standing`` matching the rule labeled "rule" may be a fact and the decision a rule (a session
    reads the words); a to-do made of a rule's words, or a rule of a to-do's, never fits; the key words
    must be there whatever the matching."""
    from kairosd.consolidation.board.entries import Candidate
    from kairosd.consolidation.offline.extract import Extraction

    def fake_extract(messages: Any, **_: Any) -> Extraction:
        typed = [m for m in messages if m.human]
        found = Extraction()
        if len(typed) == 3:
            found.candidates = found.to_merge = [
                Candidate("fact", "We use uv, not poetry", at=typed[0].at),  # labeled "rule"
                Candidate("rule", "Put the retry cleanup on the list", at=typed[1].at),  # labeled "todo"
            ]
        else:
            found.candidates = found.to_merge = [
                Candidate("fact", "We use pdm now", at=typed[0].at),  # labeled decision or rule
                Candidate("fact", "We use hatch now", at=typed[0].at),  # the key word is not there
            ]
        return found

    monkeypatch.setattr(scoring, "extract", fake_extract)
    writer = parse(VALID, "heldout", Path("w-test.json"))
    outcome = scoring.score("heldout", "offline", writers=[writer], matching=matching)
    assert (outcome.overall.precision.hit, outcome.overall.precision.of) == precision
    assert (outcome.overall.recall.hit, outcome.overall.recall.of) == recall
    assert any("retry cleanup" in line for line in outcome.false)  # a rule is no to-do under either
    assert any("hatch" in line for line in outcome.false)
    with pytest.raises(ValueError, match="matching"):
        scoring.score("heldout", "offline", writers=[writer], matching="loose")


# ---- agent mode with the scripted capable model -----------------------------------------------------


# The train split's 74 writers in agent mode: at the small size (tests/sizes_support.py) the gate scores
# every third from the second (the fixed 25 that test_consolidation_train scores there), .ci/run all of them.
SMALL_TRAIN_WRITERS = slice(1, None, 3)


@pytest.fixture(scope="module")
def agent_score() -> Callable[[str], scoring.Outcome]:
    """Each split's agent-mode outcome with the scripted capable model, scored once for this module
    (several tests read the same outcome; none changes it)."""

    @functools.cache
    def outcome(split: str) -> scoring.Outcome:
        if split == "train" and not full_size():
            return scoring.score(split, "agent", writers=load(split)[SMALL_TRAIN_WRITERS])
        return scoring.score(split, "agent")

    return outcome


@pytest.fixture(scope="module")
def agent_outcome(agent_score: Callable[[str], scoring.Outcome]) -> scoring.Outcome:
    return agent_score("heldout")


def test_agent_mode_loses_nothing_between_the_transcript_and_the_board(agent_outcome: scoring.Outcome) -> None:
    outcome = agent_outcome
    assert outcome.human_read == outcome.turns >= 330
    assert outcome.misread == []
    assert outcome.overall.precision.value == 1.0, outcome.false
    assert outcome.overall.recall.value == 1.0, outcome.misses
    assert outcome.replacements.value == 1.0, outcome.failed
    assert outcome.replacements.of >= 5
    assert outcome.kept.value == 1.0, outcome.failed
    assert all(t.recall.value == 1.0 for t in outcome.by_shape.values())


@pytest.mark.parametrize(
    "split", ["fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "train"]
)
def test_agent_mode_loses_nothing_on_the_fresh_splits_either(
    split: str, agent_score: Callable[[str], scoring.Outcome]
) -> None:
    """Written after the last change, by writers who never saw the code: the same as held-out (and on
    the train split's writers: 25 of its 74 at the small size, all in .ci/run)."""
    outcome = agent_score(split)
    assert outcome.human_read == outcome.turns > 200
    assert outcome.overall.precision.value == 1.0, outcome.false
    assert outcome.overall.recall.value == 1.0, outcome.misses
    for ratio in (outcome.replacements, outcome.closes, outcome.done_in_session, outcome.kept):
        assert ratio.value == 1.0, outcome.failed


def test_agent_mode_closes_the_todos_said_done(agent_outcome: scoring.Outcome) -> None:
    assert agent_outcome.closes.of >= 8
    assert agent_outcome.closes.value == 1.0, agent_outcome.failed


def test_text_injected_as_typed_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that let kairos' reminder through as typed would show, even with as many turns."""
    from kairosd.consolidation.transcripts.read import Message

    def leaky(path: Any, hint: Any, stats: Any) -> Any:
        for message in read_file(path, hint, stats):
            if message.human and message.text.startswith("thanks"):
                message = Message("user", REMINDER, human=True, at=message.at)
            yield message

    monkeypatch.setattr(scoring, "read_file", leaky)
    writer = parse(VALID, "heldout", Path("w-test.json"))
    outcome = scoring.score("heldout", "agent", writers=[writer])
    assert outcome.human_read == outcome.turns
    assert outcome.misread == ["w-test/app s0/claude: 3 human turn(s) read"]


def test_the_agent_check_fails_when_the_prompt_loses_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted model answers only what reached the prompt, so a prompt that drops turns shows."""
    from kairosd.consolidation.remagent import protocol as rem_protocol

    whole = rem_protocol.prompt_for
    monkeypatch.setattr(
        rem_protocol, "prompt_for", lambda project, board, pieces, **kw: whole(project, board, pieces[:3], **kw)
    )
    outcome = scoring.score("heldout", "agent")
    assert outcome.overall.precision.value == 1.0
    assert outcome.overall.recall.value < 0.8


# ---- offline mode: the goals, not pinned yet --------------------------------------------------------


@pytest.fixture(scope="module", params=sorted(OFFLINE_FLOORS))
def offline_outcome(request: pytest.FixtureRequest) -> tuple[str, scoring.Outcome]:
    return request.param, scoring.score(request.param, "offline")


@pytest.mark.parametrize("figure", ["precision", "recall", "replacements", "closes"])
def test_offline_figures_hold_their_measured_floors(offline_outcome: tuple[str, scoring.Outcome], figure: str) -> None:
    split, outcome = offline_outcome
    assert _figure(outcome, figure) >= OFFLINE_FLOORS[split][figure] - 1e-9, (
        outcome.misses,
        outcome.false,
        outcome.failed,
    )


def _figure(outcome: scoring.Outcome, figure: str) -> float:
    """One of the four figures the floors hold."""
    return {
        "precision": outcome.overall.precision.value,
        "recall": outcome.overall.recall.value,
        "replacements": outcome.replacements.value,
        "closes": outcome.closes.value,
    }[figure]


@pytest.fixture(scope="module", params=sorted(CAUTIOUS_FLOORS))
def cautious_outcome(request: pytest.FixtureRequest) -> tuple[str, scoring.Outcome]:
    return request.param, scoring.score(request.param, "offline", offline="cautious")


@pytest.mark.parametrize("figure", ["precision", "recall", "replacements", "closes"])
def test_the_cautious_reading_holds_its_measured_floors(
    cautious_outcome: tuple[str, scoring.Outcome], figure: str
) -> None:
    split, outcome = cautious_outcome
    assert outcome.offline == "cautious"
    assert _figure(outcome, figure) >= CAUTIOUS_FLOORS[split][figure] - 1e-9, (
        outcome.misses,
        outcome.false,
        outcome.failed,
    )


def test_the_cautious_reading_meets_the_precision_goal_on_heldout_and_the_blind_part() -> None:
    for split in CAUTIOUS_FLOORS:
        assert CAUTIOUS_FLOORS[split]["precision"] >= OFFLINE_GOALS["precision"] > OFFLINE_FLOORS[split]["precision"]


@pytest.mark.parametrize("split", ["heldout", "fresh8", "fresh2", "fresh6"])
def test_the_cautious_reading_only_removes(split: str) -> None:
    """Session by session, every candidate the cautious reading makes is one the broad reading makes too
    (a sentence's entry dropped changes how its neighbours are read, and a cap keeps an older entry)."""
    model = kinds.load()
    removed = 0
    for writer in load(split):
        for project in writer.projects:
            for session in project.sessions:
                at = [scoring.BASE + timedelta(minutes=2 * t) for t in range(len(session.turns))]
                messages = [
                    m
                    for turn, when in zip(session.turns, at, strict=True)
                    for m in (Message("user", turn.text, human=True, at=when), Message("assistant", "OK.", at=when))
                ]
                broad = extract(messages, project="/p", anchor=at[-1], zone=ZoneInfo("UTC"))
                cautious = extract(messages, project="/p", anchor=at[-1], zone=ZoneInfo("UTC"), kinds=model)
                assert set(cautious.to_merge) <= set(broad.to_merge), (writer.writer, project.name)
                assert cautious.candidates == [c for c in cautious.to_merge if c.action != "update"]
                removed += len(broad.to_merge) - len(cautious.to_merge)
    assert removed > 0


def test_offline_recall_meets_its_goal_on_heldout(offline_outcome: tuple[str, scoring.Outcome]) -> None:
    split, outcome = offline_outcome
    if split == "heldout":
        assert outcome.overall.recall.value >= OFFLINE_GOALS["recall"]


def test_agent_mode_loses_nothing_on_the_fresh_part(agent_score: Callable[[str], scoring.Outcome]) -> None:
    outcome = agent_score("fresh")
    assert outcome.turns == outcome.human_read >= 150
    assert (outcome.overall.precision.value, outcome.overall.recall.value) == (1.0, 1.0)
    assert (outcome.replacements.value, outcome.closes.value) == (1.0, 1.0)


def test_offline_figures_do_not_depend_on_the_transcript_shape(heldout: list[Writer]) -> None:
    """The readers are not the problem: each shape gives the same offline figures."""
    figures = Counter()
    for shape in ("claude", "gemini"):
        o = scoring.score("heldout", "offline", shape=shape, writers=heldout)
        figures[(o.overall.precision.hit, o.overall.precision.of, o.overall.recall.hit, str(o.replacements))] += 1
    assert len(figures) == 1
