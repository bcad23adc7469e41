"""Later words replace earlier ones: within a session and across sessions, with the history kept;
a user's own or a pinned entry is never replaced silently; edit, pin, restore; and the line that
tells a starting session what changed since the project's last session."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from consolidation_corpus import formats
from consolidation_corpus.sessions import SESSIONS

from kairosd.consolidation.board import edits as board_edits
from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.render import render_context
from kairosd.consolidation.board.store import BoardStore
from kairosd.consolidation.board.supersede import ruled_out, supersedes
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.transcripts.read import read_file
from kairosd.core.errors import ConflictError, NotFoundError, UsageError
from kairosd.testing import FakeClock

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
PNPM = "From now on, use pnpm instead of npm in this repo."
YARN = "Use yarn, not pnpm."


@dataclass
class E:
    id: str
    kind: str
    text: str


@pytest.mark.parametrize(
    ("kind", "new", "old_kind", "old", "replaces"),
    [
        ("correction", YARN, "rule", PNPM, True),
        ("rule", PNPM, "rule", "Use npm for installs", True),
        ("rule", "never run migrations on deploy", "rule", "always run migrations on deploy", True),
        ("fact", "The nightly job runs on batch-02.", "fact", "The nightly job runs on the batch-01 host.", True),
        ("fact", "The billing service runs on port 9443.", "fact", "The billing service runs on port 8443.", True),
        (
            "fact",
            "The orders table is read-only on Mondays now.",
            "fact",
            "The orders table is read-only on Fridays.",
            True,
        ),
        ("fact", "Deploys go out from main now.", "fact", "Deploys go out from release/*.", True),
        ("rule", "run the tests with pytest, not make test", "rule", "always run the tests with make test", True),
        ("decision", "we'll use poetry instead of uv", "decision", "We'll use uv instead of pip-tools", True),
        ("preference", "I prefer tabs over spaces", "preference", "use spaces", True),
        # a value slot that changed: the same name just before a new value of the same shape
        ("decision", "Change of plan: we go to terraform 1.7.5 now", "fact", "We are using terraform 1.6.6", True),
        ("fact", "State bucket moved to acme-tfstate-main", "fact", "State is in bucket acme-tfstate-prod", True),
        ("fact", "MLflow moved to mlflow2.ml.io:5000", "fact", "Runs are in MLflow at mlflow.ml.io:5000", True),
        ("fact", "The prod cluster is eks-prod-1", "fact", "The staging cluster is eks-stg-2", False),
        ("fact", "The worker image is based on python 3.12", "fact", "The api pins node 20.11", False),
        ("fact", "Grafana is pinned to 10.4.1", "fact", "Loki is pinned to 2.9.4", False),
        ("todo", "bump terraform to 1.7.5 later", "fact", "We are using terraform 1.6.6", False),
        # a qualifier after the shared name says more; one before it names another thing
        (
            "fact",
            "The raw bucket is renamed to gs://acme-lake-landing",
            "fact",
            "The raw layer is in gs://acme-lake-raw",
            True,
        ),
        # an amount keeps its unit; a plural names the same thing
        ("fact", "Token lifetime is reduced to 10 minutes", "fact", "Tokens expire after 15 minutes", True),
        ("fact", "Sessions expire after 30 minutes", "fact", "Tokens expire after 15 minutes", False),
        ("fact", "The api runs 3 replicas", "fact", "The worker runs 2 replicas", False),
        # what is gone is ruled out; a path is named by its last part
        (
            "fact",
            "Ci moved to buildkite, the github actions workflows are deleted",
            "fact",
            "Ci on github actions",
            True,
        ),
        (
            "correction",
            "Keep unsafe allowed in src/simd.rs too, not only raw.rs",
            "rule",
            "No unsafe outside src/raw.rs",
            True,
        ),
        ("fact", "The old dashboards are deleted", "fact", "Grafana has the old dashboards", False),
        # a version said gone; a number a name gives; an amount per unit
        ("fact", "Envoy bumped to 1.30, 1.28 gone", "fact", "Envoy 1.28 in front of everything", True),
        # a value said to be the old one
        ("fact", "Ledger port is 7443 now, the 7001 was the old one.", "fact", "Ledger is on ledger.svc:7001", True),
        ("fact", "The ledger port is 7443, the old one is gone.", "fact", "The audit db is on audit.svc:7001", False),
        ("fact", "We're on React 19 now", "fact", "The frontend is a Vite + React 18 app", True),
        ("decision", "minSdk goes to 28 now", "fact", "The app is in Kotlin, minSdk is 26.", True),
        ("fact", "Login rate limit -> 10 req/min per ip", "fact", "Rate limit on /login = 20 req/min per ip", True),
        ("fact", "fact number 11", "fact", "fact number 10", False),
        ("fact", "We keep 30 days of logs", "fact", "We keep 7 days of backups", False),
        # one amount says what it is for, the other not: the same unit is the same slot
        (
            "fact",
            "The SLA is 48 hours for non-urgent PRs, 24 for hotfixes.",
            "rule",
            "Code review SLA is 24 hours.",
            True,
        ),
        # the same subject said otherwise
        ("decision", "Social login is now IN scope for v1", "rule", "Social login is out of scope for v1", True),
        ("rule", "Deploys are never on fridays", "rule", "Deploys are always reviewed", False),
        # different subjects, or a different family: both stay
        (
            "fact",
            "Our staging cluster is called osprey-stage.",
            "fact",
            "The billing service runs on port 8443.",
            False,
        ),
        ("rule", "always run the tests", "rule", "never commit directly to main", False),
        ("rule", "don't add dependencies without asking", "rule", "always pin exact versions", False),
        ("rule", "never use the latest tag", "fact", "The deploy uses the latest tag.", False),
        ("todo", "don't forget to update npm", "rule", PNPM, False),
    ],
)
def test_what_replaces_what(kind: str, new: str, old_kind: str, old: str, replaces: bool) -> None:
    assert supersedes(kind, new, E("b000001", old_kind, old)) is replaces


def test_ruled_out_words() -> None:
    assert ruled_out(YARN) == {"pnpm"}
    assert ruled_out(PNPM) == {"npm"}
    assert ruled_out("always run the linter") == set()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> BoardStore:
    return BoardStore(tmp_path / "boards", clock.now)


def _session_candidates(tmp_path: Path, index: int, fmt: str) -> list[Candidate]:
    turns = [(text, formats.at(index, step * 2)) for step, (_, text) in enumerate(SESSIONS[index])]
    path = formats.write(tmp_path, fmt, turns, "/p", f"s{index}")
    return extract(read_file(path, fmt), project="/p", anchor=NOW, zone=ZoneInfo("UTC")).candidates


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_within_one_session_the_later_words_win(tmp_path: Path, store: BoardStore, fmt: str) -> None:
    """The corpus session that says pnpm and then "scratch that: use yarn": only yarn is current."""
    candidates = _session_candidates(tmp_path, 15, fmt)
    assert [c.text for c in candidates if "pnpm" in c.text] == [PNPM, "Scratch that: use yarn, not pnpm."]
    result = store.merge("/p", candidates, session="s15")
    board = store.load("/p")
    assert not any("pnpm instead of npm" in e.text for e in board.entries)
    [old] = board.superseded
    yarn = next(e for e in board.entries if "yarn" in e.text)
    assert (old.text, old.superseded_by, old.superseded_at) == (PNPM, yarn.id, NOW)
    assert [e.id for e in result.superseded] == [old.id]
    [record] = [r for r in store.history("/p") if r["action"] == "supersede"]
    assert (record["id"], record["superseded_by"], record["session"]) == (old.id, yarn.id, "s15")


def test_across_sessions_the_later_words_win(store: BoardStore, clock: FakeClock) -> None:
    store.merge("/p", [Candidate("decision", "We'll use uv instead of pip-tools from now on")], session="a")
    store.merge("/p", [Candidate("fact", "The billing service runs on port 8443.")], session="a")
    clock.advance(timedelta(days=3).total_seconds())
    store.merge("/p", [Candidate("decision", "We'll use poetry instead of uv"),
                       Candidate("fact", "The billing service runs on port 9443.")], session="b")  # fmt: skip
    board = store.load("/p")
    assert sorted(e.text for e in board.entries) == ["The billing service runs on port 9443.",
                                                     "We'll use poetry instead of uv"]  # fmt: skip
    assert sorted(e.text for e in board.superseded) == ["The billing service runs on port 8443.",
                                                        "We'll use uv instead of pip-tools from now on"]  # fmt: skip
    assert {e.superseded_at for e in board.superseded} == {NOW + timedelta(days=3)}
    assert "8443" not in (render_context(board, clock.now()) or "")  # a session receives only what is current


@pytest.mark.parametrize("protect", ["user", "pinned"])
def test_a_users_or_pinned_entry_is_never_replaced_silently(store: BoardStore, protect: str) -> None:
    if protect == "user":
        mine, _ = store.add_user("/p", PNPM, "rule")
    else:
        store.merge("/p", [Candidate("rule", PNPM)])
        mine = store.load("/p").entries[0]
        board_edits.pin(store, "/p", mine.id)
    result = store.merge("/p", [Candidate("correction", YARN)])
    board = store.load("/p")
    assert [e.text for e in board.entries] == [PNPM, YARN]
    assert board.superseded == []
    new = board.entries[1]
    assert new.conflicts_with == mine.id
    assert [e.id for e in result.conflicts] == [new.id]
    assert any(r["action"] == "conflict" and r["with"] == mine.id for r in store.history("/p"))
    text = render_context(board, NOW) or ""
    assert f'conflicts with "{PNPM}", which the user set: ask them which holds' in text


def test_pinned_entries_are_never_pruned(store: BoardStore) -> None:
    store.merge("/p", [Candidate("fact", f"Often edited file: src/f{i}.py") for i in range(20)])
    first = store.load("/p").entries[0]
    board_edits.pin(store, "/p", first.id)
    store.merge("/p", [Candidate("fact", f"Often edited file: src/g{i}.py") for i in range(10)])
    assert store.load("/p").find(first.id) is not None


def test_edit_makes_the_entry_the_users_and_records_it(store: BoardStore) -> None:
    store.merge("/p", [Candidate("rule", PNPM)])
    entry = store.load("/p").entries[0]
    edited, before = board_edits.edit(store, "/p", entry.id, "Use yarn for installs", "preference")
    assert (edited.text, edited.kind, edited.author, before) == ("Use yarn for installs", "preference", "user", PNPM)
    record = store.history("/p")[-1]
    assert (record["action"], record["before"], record["text"]) == ("edit", PNPM, "Use yarn for installs")
    with pytest.raises(UsageError):
        board_edits.edit(store, "/p", entry.id, None, None)
    with pytest.raises(UsageError):
        board_edits.edit(store, "/p", entry.id, "token = abcdefghijkl", None)
    with pytest.raises(NotFoundError):
        board_edits.edit(store, "/p", "b000000", "x y z", None)
    store.merge("/p", [Candidate("rule", "Always run make check")])
    with pytest.raises(ConflictError):
        board_edits.edit(store, "/p", entry.id, "always run make check!", None)


def test_restore_undoes_a_wrong_replacement(store: BoardStore) -> None:
    store.merge("/p", [Candidate("rule", PNPM), Candidate("correction", YARN)])
    [old] = store.load("/p").superseded
    back = board_edits.restore(store, "/p", old.id)
    board = store.load("/p")
    assert (back.superseded_by, back.pinned) == (None, True)
    assert sorted(e.text for e in board.entries) == sorted([PNPM, YARN])
    assert board.superseded == []
    assert store.history("/p")[-1]["action"] == "restore"
    with pytest.raises(NotFoundError):
        board_edits.restore(store, "/p", old.id)


def test_the_board_file_keeps_what_was_superseded(store: BoardStore) -> None:
    store.merge("/p", [Candidate("rule", PNPM), Candidate("correction", YARN)])
    again = BoardStore(store.folder, store.now).load("/p")
    assert [e.text for e in again.superseded] == [PNPM]
    assert again.superseded[0].superseded_by == again.entries[0].id


def test_what_changed_since_the_last_session(store: BoardStore, clock: FakeClock) -> None:
    store.merge("/p", [Candidate("rule", PNPM), Candidate("rule", "Always run make check")])
    assert board_edits.last_session(store, "/p") is None
    first = render_context(store.load("/p"), clock.now(), None) or ""
    assert "Changed since" not in first  # no earlier session: everything is simply the board
    board_edits.mark_session(store, "/p", clock.now())
    since = board_edits.last_session(store, "/p")
    assert since == NOW
    clock.advance(3600)
    store.merge("/p", [Candidate("correction", YARN), Candidate("fact", "The api lives in server/.")])
    board = store.load("/p")
    text = render_context(board, clock.now(), since) or ""
    new_ids = ", ".join(e.id for e in board.entries if e.created_at > since)
    line = text.splitlines()[1]
    assert line.startswith(f"Changed since this project's last session (2026-11-20 12:00 UTC): 2 new ({new_ids}), ")
    assert f'1 replaced: "{PNPM}" replaced by {board.entries[1].id}' in line
    assert "(seen 1x, last 2026-11-20; new; guessed offline)" in text
    assert render_context(board, clock.now(), clock.now()) is not None
    assert "Changed since" not in (render_context(board, clock.now(), clock.now()) or "")


def test_the_whole_corpus_on_one_board_replaces_only_what_later_words_replace(
    tmp_path: Path, store: BoardStore, clock: FakeClock
) -> None:
    """Every corpus session, a day apart, into one board: the one replacement the sessions call for
    (pnpm, then yarn) happens, and no other entry is replaced by a later one about something else."""
    replaced = []
    for index in range(len(SESSIONS)):
        fmt = formats.FORMATS[index % len(formats.FORMATS)]
        result = store.merge("/p", _session_candidates(tmp_path, index, fmt), session=f"s{index}")
        replaced += [(index, e.text) for e in result.superseded]
        clock.advance(86400)
    assert replaced == [(15, PNPM)]


def test_a_person_adding_later_words_replaces_kairos_entry_not_their_own(store: BoardStore) -> None:
    store.merge("/p", [Candidate("rule", PNPM)])
    mine, _ = store.add_user("/p", "Always run the migrations on deploy", "rule")
    store.add_user("/p", YARN, "correction")
    store.add_user("/p", "Never run the migrations on deploy", "rule")
    board = store.load("/p")
    assert [e.text for e in board.superseded] == [PNPM]
    assert {e.text for e in board.entries} == {mine.text, YARN, "Never run the migrations on deploy"}
    assert [r["by"] for r in store.history("/p") if r["action"] == "supersede"] == ["user"]
    assert board.entries[-1].conflicts_with == mine.id  # their own contradiction: shown, not resolved


def test_a_todo_said_done_is_closed_by_its_words(store: BoardStore) -> None:
    store.merge("/p", [Candidate("todo", "Put the iam cleanup on the list"),
                       Candidate("todo", "Remind me to rotate the webhook secret"),
                       Candidate("rule", "Never apply terraform from a laptop")])  # fmt: skip
    result = store.merge("/p", [Candidate("todo", "the iam thing is fixed", action="close")])
    board = store.load("/p")
    assert sorted(e.text for e in board.entries) == ["Never apply terraform from a laptop",
                                                     "Remind me to rotate the webhook secret"]  # fmt: skip
    assert [e.text for e in result.closed] == ["Put the iam cleanup on the list"]
    assert [(r["action"], r["text"]) for r in store.history("/p") if r["action"] == "close"] == [
        ("close", "Put the iam cleanup on the list")
    ]


def test_a_close_that_names_no_single_todo_closes_nothing(store: BoardStore) -> None:
    store.merge("/p", [Candidate("todo", "Fix the login test"), Candidate("todo", "Fix the signup test")])
    store.merge("/p", [Candidate("todo", "the test is fixed", action="close")])  # which one? neither
    store.merge("/p", [Candidate("todo", "the docs are done", action="close")])  # no to-do about docs
    assert len(store.load("/p").entries) == 2
