"""The board applies the rem-agent's (and offline mode's) decisions: a closed to-do leaves the board,
a replacement whose text is already there still removes the entry it names, and a restored entry
is marked as in conflict with the one that had replaced it, which the next session is told."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kairosd.consolidation.board import edits as board_edits
from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.render import render_context
from kairosd.consolidation.board.store import BoardStore
from kairosd.testing import FakeClock

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def _store(tmp_path: Path, clock: FakeClock | None = None) -> BoardStore:
    return BoardStore(tmp_path / "boards", (clock or FakeClock(NOW)).now)


def _ids(store: BoardStore) -> dict[str, str]:
    return {e.text: e.id for e in store.load("/p").entries}


def test_close_by_id_takes_the_todo_off_and_the_history_says_close(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("todo", "Fix the IAM role of the deploy bot."), Candidate("rule", "Use uv.")])
    todo = _ids(store)["Fix the IAM role of the deploy bot."]
    result = store.merge("/p", [Candidate("todo", "", supersedes=todo, action="close")], run="r2")
    assert [e.id for e in result.closed] == [todo]
    assert list(_ids(store)) == ["Use uv."]
    assert result.as_dict()["closed"][0]["id"] == todo
    [record] = [r for r in store.history("/p") if r["action"] == "close"]
    assert (record["id"], record["run"]) == (todo, "r2")


def test_close_by_words_closes_the_one_todo_it_is_about(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.merge("/p", [Candidate("todo", "Fix the IAM role of the deploy bot."),
                       Candidate("todo", "Update the migration guide.")])  # fmt: skip
    result = store.merge("/p", [Candidate("todo", "the iam thing is fixed", action="close")])
    assert [e.text for e in result.closed] == ["Fix the IAM role of the deploy bot."]
    assert list(_ids(store)) == ["Update the migration guide."]
    vague = store.merge("/p", [Candidate("todo", "that's all done now", action="close")])
    assert vague.closed == []
    assert "none closed" in vague.notes[0]
    assert list(_ids(store)) == ["Update the migration guide."]


def test_a_users_own_todo_is_not_closed_silently(tmp_path: Path) -> None:
    store = _store(tmp_path)
    mine, _ = store.add_user("/p", "Rotate the keys.", "todo")
    result = store.merge("/p", [Candidate("todo", "", supersedes=mine.id, action="close")])
    assert result.closed == []
    assert f"kairos board rm {mine.id}" in result.notes[0]
    assert list(_ids(store)) == ["Rotate the keys."]


def test_a_replacement_with_the_text_of_an_entry_there_still_removes_the_named_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    # the rem-agent's ADDs (infer=False): offline, the later day would replace the earlier at once
    store.merge(
        "/p",
        [Candidate("rule", "From now on, deploy on Tuesdays.", infer=False),
         Candidate("rule", "Deploy on Thursdays.", infer=False)],
    )  # fmt: skip
    ids = _ids(store)
    tuesday, thursday = ids["From now on, deploy on Tuesdays."], ids["Deploy on Thursdays."]
    result = store.merge("/p", [Candidate("rule", "Deploy on Thursdays.", supersedes=tuesday)])
    assert list(_ids(store)) == ["Deploy on Thursdays."]
    assert [e.id for e in result.seen] == [thursday]
    [gone] = store.load("/p").superseded
    assert (gone.id, gone.superseded_by) == (tuesday, thursday)
    assert [r["id"] for r in store.history("/p") if r["action"] == "supersede"] == [tuesday]


def test_restore_marks_the_conflict_and_the_next_session_is_told(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    store = _store(tmp_path, clock)
    store.merge("/p", [Candidate("rule", "Always use pnpm.")])
    clock.advance(86400)
    store.merge("/p", [Candidate("rule", "Use yarn, not pnpm.")])
    old = store.load("/p").superseded[0]
    yarn = _ids(store)["Use yarn, not pnpm."]
    restored = board_edits.restore(store, "/p", old.id)
    board = store.load("/p")
    assert restored.conflicts_with == yarn
    assert board.find(yarn).conflicts_with == old.id  # type: ignore[union-attr]
    assert board.find(old.id).pinned  # type: ignore[union-attr]
    [record] = [r for r in store.history("/p") if r["action"] == "restore"]
    assert record["conflicts_with"] == yarn
    text = render_context(board, clock.now())
    assert text is not None
    assert 'Notes marked "conflicts with" disagree' in text
    assert (
        '- [rule] Use yarn, not pnpm. (seen 1x, last 2026-11-21; conflicts with "Always use pnpm.", which the user set'
        in text
    )
    assert (
        '- [rule] Always use pnpm. (seen 1x, last 2026-11-20; pinned; conflicts with "Use yarn, not pnpm.", a later'
        in text
    )
    # the person decides by editing one: neither is in conflict any more
    board_edits.edit(store, "/p", yarn, None, "correction")
    board = store.load("/p")
    assert [e.conflicts_with for e in board.entries] == [None, None]
    assert "conflicts with" not in (render_context(board, clock.now()) or "")


def test_an_add_from_the_rem_agent_replaces_nothing_it_did_not_name(tmp_path: Path) -> None:
    """The rem-agent's answer says what it replaces (REPLACE ID): an ADD of a related entry keeps the
    old one, where offline mode's word-based inference would replace it. kairos loses nothing the
    agent decided to keep (a held-out session lost an entry this way)."""
    from kairosd.consolidation.remagent.protocol import read_answer

    for infer, kept in ((False, True), (True, False)):
        store = _store(tmp_path / str(infer))
        store.merge("/p", [Candidate("fact", "We are using terraform 1.6.6.")])
        [candidate] = read_answer("ADD FACT: We go to terraform 1.7.5.", {}).candidates
        assert candidate.infer is False
        if infer:
            candidate = Candidate(candidate.kind, candidate.text)  # as offline mode would say it
        store.merge("/p", [candidate])
        texts = [e.text for e in store.load("/p").entries]
        assert ("We are using terraform 1.6.6." in texts) is kept, (infer, texts)
        assert "We go to terraform 1.7.5." in texts


def test_restore_marks_the_conflict_with_the_latest_entry_of_a_chain_of_replacements(tmp_path: Path) -> None:
    """pnpm was replaced by yarn, yarn by bun: restoring pnpm conflicts with bun, the entry on the
    board now, instead of being pinned beside it silently."""
    clock = FakeClock(NOW)
    store = _store(tmp_path, clock)
    store.merge("/p", [Candidate("rule", "Always use pnpm.")])
    clock.advance(86400)
    store.merge("/p", [Candidate("rule", "Use yarn, not pnpm.")])
    clock.advance(86400)
    store.merge("/p", [Candidate("rule", "Use bun, not yarn.")])
    board = store.load("/p")
    assert [e.text for e in board.entries] == ["Use bun, not yarn."]
    pnpm = next(e for e in board.superseded if e.text == "Always use pnpm.")
    bun = board.entries[0].id
    restored = board_edits.restore(store, "/p", pnpm.id)
    board = store.load("/p")
    assert restored.conflicts_with == bun
    assert board.find(bun).conflicts_with == pnpm.id  # type: ignore[union-attr]
    text = render_context(board, clock.now())
    assert text is not None
    assert 'conflicts with "Use bun, not yarn."' in text
