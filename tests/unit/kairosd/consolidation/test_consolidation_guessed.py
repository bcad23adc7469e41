"""Offline mode's entries are marked as guesses until someone confirms them, and a session is told so.

On talk it was not tuned on, offline mode's pattern reader gets about a third of its entries wrong
(README, "How good it is"), while the rem-agent's answers and the person's own words are not guesses:
the board keeps which is which (``guessed``), and the starting session learns which notes to check.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from kairosd.consolidation.board import edits as board_edits
from kairosd.consolidation.board.render import changes_line, render_context
from kairosd.consolidation.board.store import Board, BoardStore, Entry
from kairosd.consolidation.offline.extract import Candidate
from kairosd.consolidation.remagent.protocol import read_answer
from kairosd.testing import FakeClock

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def _store(tmp_path: Path) -> BoardStore:
    return BoardStore(tmp_path / "boards", FakeClock(NOW).now)


def _agent(line: str) -> Candidate:
    [candidate] = read_answer(line, {}).candidates
    return candidate


def _by_text(store: BoardStore) -> dict[str, Entry]:
    return {e.text: e for e in store.load("/p").entries}


def test_offline_entries_are_guesses_and_the_rem_agents_are_not(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "We use uv, not poetry.")])
    store.merge("/p", [_agent("ADD DECISION: Deploys happen on Thursdays.")])
    entries = _by_text(store)
    assert entries["We use uv, not poetry."].guessed is True
    assert entries["Deploys happen on Thursdays."].guessed is False
    # it is stored, and read back (only where true: older boards have no such field)
    raw = json.loads(store.path_of("/p").read_text())
    assert [e.get("guessed") for e in raw["entries"]] == [True, None]


def test_a_change_offline_mode_infers_is_a_guess_too(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [_agent("ADD FACT: The staging cluster is eks-stg-2.")])
    store.merge("/p", [Candidate("fact", "the staging cluster is eks-stg-3 now", action="update")])
    entries = _by_text(store)
    assert list(entries) == ["the staging cluster is eks-stg-3 now"]
    assert entries["the staging cluster is eks-stg-3 now"].guessed is True


def test_the_rem_agent_saying_the_same_confirms_a_guess_and_offline_mode_never_unconfirms(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "We use uv, not poetry.")])
    store.merge("/p", [_agent("ADD RULE: We use uv, not poetry.")])
    assert _by_text(store)["We use uv, not poetry."].guessed is False
    store.merge("/p", [Candidate("rule", "We use uv, not poetry.")])  # offline sees it again: still confirmed
    entry = _by_text(store)["We use uv, not poetry."]
    assert (entry.guessed, entry.hits) == (False, 3)


def test_the_person_editing_pinning_or_restoring_confirms_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "We use uv, not poetry."), Candidate("rule", "Always run ruff.")])
    ids = {e.text: e.id for e in store.load("/p").entries}
    board_edits.edit(store, "/p", ids["We use uv, not poetry."], None, "preference")
    pinned = board_edits.pin(store, "/p", ids["Always run ruff."])
    assert pinned.guessed is False
    board_edits.pin(store, "/p", ids["Always run ruff."], pinned=False)  # unpinning does not make it a guess again
    assert [e.guessed for e in store.load("/p").entries] == [False, False]
    store.merge("/p", [Candidate("rule", "Always use pnpm.")])
    store.merge("/p", [Candidate("rule", "Use yarn, not pnpm.")])
    [old] = store.load("/p").superseded
    assert old.guessed is True
    assert board_edits.restore(store, "/p", old.id).guessed is False


def test_the_session_is_told_which_notes_are_guesses() -> None:
    def board(*guessed: bool) -> Board:
        return Board(
            "/p", [Entry(f"b{i}", f"note {i}", "rule", "kairos", NOW, NOW, guessed=g) for i, g in enumerate(guessed)]
        )

    none = render_context(board(False, False), NOW) or ""
    assert "guessed offline" not in none
    one = render_context(board(True, False), NOW) or ""
    assert 'The note marked "guessed offline" was picked out of the user\'s words' in one
    assert "check one with the user before it decides what you do" in one
    assert "- [rule] note 0 (seen 1x, last 2026-11-20; guessed offline)" in one
    assert "- [rule] note 1 (seen 1x, last 2026-11-20)" in one
    two = render_context(board(True, True, False), NOW) or ""
    assert 'The 2 notes marked "guessed offline" were picked' in two
    assert "nobody has confirmed them" in two


def test_a_board_written_before_the_mark_loads_with_no_guesses() -> None:
    data = {"id": "b1", "text": "We use uv.", "kind": "rule", "author": "kairos", "created_at": NOW.isoformat()}
    assert Entry.from_json(data).guessed is False
    assert Entry.from_json({**data, "guessed": "yes"}).guessed is False  # only a JSON true marks it
    assert Entry.from_json({**data, "guessed": True}).to_json()["guessed"] is True


def test_a_rem_agents_keep_confirms_a_guess_and_its_drop_takes_one_off_restorably(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "We use uv, not poetry."), Candidate("rule", "Kindly go through the job.")])
    ids = {e.text: e.id for e in store.load("/p").entries}
    good, junk = ids["We use uv, not poetry."], ids["Kindly go through the job."]
    guesses = set(ids.values())
    parsed = read_answer(f"KEEP {good}\nDROP {junk}", {i: "rule" for i in guesses}, guesses)
    result = store.merge("/p", parsed.candidates, run="r1")
    assert ([e.id for e in result.confirmed], [e.id for e in result.dropped]) == ([good], [junk])
    board = store.load("/p")
    assert [(e.id, e.guessed) for e in board.entries] == [(good, False)]
    [dropped] = board.superseded
    assert (dropped.id, dropped.dropped_by, dropped.superseded_by, dropped.superseded_at) == (
        junk,
        "rem-agent",
        None,
        NOW,
    )
    assert [(r["action"], r["id"]) for r in store.history("/p")][-2:] == [("confirm", good), ("drop", junk)]
    # undone as a wrong replacement is: back, pinned (the person's word), no longer a guess, nothing in conflict
    back = board_edits.restore(store, "/p", junk)
    assert (back.pinned, back.guessed, back.dropped_by, back.conflicts_with) == (True, False, None, None)
    raw = json.loads(store.path_of("/p").read_text())
    assert [e.get("dropped_by") for e in raw["entries"]] == [None, None]


def test_only_a_guess_still_on_the_board_is_judged(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "We use uv, not poetry.")])
    [entry] = store.load("/p").entries
    board_edits.pin(store, "/p", entry.id)  # the person's word: no longer a guess, and never dropped by kairos
    result = store.merge("/p", [Candidate("rule", "", supersedes=entry.id, action="drop", infer=False)])
    assert result.dropped == []
    assert result.notes == [f"no offline guess {entry.id} on the board to drop"]
    assert [e.id for e in store.load("/p").entries] == [entry.id]


def test_the_session_is_told_a_dropped_guess_left_the_board(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("rule", "Kindly go through the job.")])
    [junk] = store.load("/p").entries
    store.merge("/p", [Candidate("rule", "", supersedes=junk.id, action="drop", infer=False)])
    line = changes_line(store.load("/p"), datetime(2026, 11, 19, tzinfo=UTC)) or ""
    assert '1 offline guess the rem-agent judged wrong and dropped: "Kindly go through the job."' in line
    assert "replaced" not in line.split("`kairos board history`")[0]
