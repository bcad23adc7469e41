"""A sentence that says something changed, with no cue of its own, updates the entry whose slot it
names (offline mode): kept in that entry's place and with its kind, or not kept at all.

The sentences here are not from the corpus: they check the mechanism (a slot: the thing a value
belongs to; an ``update`` candidate the board keeps only when it updates one), not a tuned phrase."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from consolidation_support import board_after

from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.slots import done_by, updated
from kairosd.consolidation.board.store import BoardStore
from kairosd.consolidation.offline.changes import update
from kairosd.testing import FakeClock

NOW = datetime(2026, 11, 20, 9, tzinfo=UTC)


@dataclass
class Item:
    id: str
    kind: str
    text: str


def _board(tmp_path: Path, sessions: list[list[str]]) -> list[tuple[str, str]]:
    """The (kind, text) of the board's entries once each session is consolidated in order, a day apart."""
    return [(e.kind, e.text) for e in board_after(tmp_path, sessions)]


def _texts(board: list[tuple[str, str]]) -> str:
    return " | ".join(text for _, text in board).lower()


@pytest.mark.parametrize(
    ("first", "then", "gone", "new"),
    [
        # a new value of the same shape for the same slot, the slot named anywhere in the sentence
        (
            "fyi the metrics api is at metrics-a.corp.net:9100",
            "metrics api moved, its metrics-b.corp.net:9100 now",
            "metrics-a",
            "metrics-b",
        ),
        # a day of the week, the old one ruled out in the same sentence
        (
            "The compaction job runs on Monday night.",
            "Change: compaction runs now on Wednesday night, not Monday.",
            "runs on monday",
            "wednesday",
        ),
        # what the entry names is gone
        (
            "The new search is behind the search_v3 flag until the beta ends.",
            "The search_v3 flag has been removed; the new search is now the default.",
            "behind the",
            "removed",
        ),
        # a short sentence with no subject is read with the one before it
        (
            "The database for the test suite is on localhost:6001.",
            "Test database moved. localhost:6002 now.",
            "6001",
            "6002",
        ),
    ],
)
def test_a_change_updates_the_entry_whose_slot_it_names(
    tmp_path: Path, first: str, then: str, gone: str, new: str
) -> None:
    board = _board(tmp_path, [[first], [then]])
    assert gone not in _texts(board), board
    assert new in _texts(board), board
    assert len(board) == 1, board


def test_the_update_takes_the_kind_of_what_it_updates(tmp_path: Path) -> None:
    said = "Change: deploys now on Thursday, not Tuesday."
    board = _board(tmp_path, [["We decided to deploy only on Tuesday."], [said]])
    assert board == [("decision", said)]


@pytest.mark.parametrize(
    "then",
    [
        "the mail relay moved, its smtp-2.corp.net:25 now",  # another slot (nothing on the board names the relay)
        "if the metrics api moved to metrics-b.corp.net:9100 now, what breaks?",  # a question
        "maybe we switch the metrics api to metrics-b.corp.net:9100 next quarter",  # a hypothetical
    ],
)
def test_a_change_that_updates_no_entry_adds_nothing(tmp_path: Path, then: str) -> None:
    first = "fyi the metrics api is at metrics-a.corp.net:9100"
    board = _board(tmp_path, [[first], [then]])
    assert len(board) == 1, board
    assert "metrics-a.corp.net" in _texts(board)


def test_two_slots_of_the_same_kind_are_not_one() -> None:
    """ "the prod cluster" is not "the staging cluster", though both are "cluster" with a value."""
    staging = Item("a", "fact", "The staging cluster is eks-stg-2.")
    assert updated("the prod cluster is eks-prod-4 now", [staging]) == []
    assert updated("the staging cluster is eks-stg-3 now", [staging]) == [staging]


def test_what_the_entry_asks_for_ruled_out_by_its_root() -> None:
    rule = Item("a", "decision", "We reject uploads with an unknown mime type outright.")
    said = "Reversing that: uploads with an unknown mime type are quarantined now, not rejected."
    assert updated(said, [rule]) == [rule]


def test_when_two_entries_fit_equally_neither_is_updated() -> None:
    api = Item("a", "fact", "The search api is at search-1.corp.net:8080")
    index = Item("b", "fact", "The search index is at search-2.corp.net:9200")
    said = "search moved, search-3.corp.net:7000 now"
    assert updated(said, [api]) == [api]
    assert updated(said, [api, index]) == []


def test_todos_are_never_updated() -> None:
    todo = Item("a", "todo", "Move the metrics api to metrics-b.corp.net:9100")
    assert updated("metrics api moved, its metrics-c.corp.net:9100 now", [todo]) == []


def test_an_update_candidate_alone_is_not_an_entry(tmp_path: Path) -> None:
    store = BoardStore(tmp_path / "boards", FakeClock(NOW).now)
    result = store.merge("/p", [Candidate("fact", "the api moved, api-2.corp.net:443 now", NOW, action="update")])
    assert result.added == []
    assert store.load("/p").entries == []


@pytest.mark.parametrize(
    ("sentence", "previous", "said"),
    [
        ("stg api moved, its api-stg9.corp.net:8443 now", None, "stg api moved, its api-stg9.corp.net:8443 now"),
        ("localhost:6002 now.", "Test database moved.", "Test database moved. localhost:6002 now."),
        (
            "Change: the sync runs on Fridays now, not Mondays.",
            None,
            "Change: the sync runs on Fridays now, not Mondays.",
        ),
    ],
)
def test_what_reads_as_an_update(sentence: str, previous: str | None, said: str) -> None:
    signal = update(sentence, previous)
    assert signal is not None
    assert (signal.action, signal.text) == ("update", said)


@pytest.mark.parametrize(
    "sentence",
    [
        "is the api on api-2.corp.net:443 now?",  # a question
        "thanks, that did not work",  # nothing changed, nothing happened
        "the build is green on 3.12",  # no word of change
        "if we moved to 3.13 the wheels would break",  # a hypothetical
    ],
)
def test_what_is_no_update(sentence: str) -> None:
    assert update(sentence, None) is None


def test_a_new_entry_that_says_a_slot_changed_replaces_the_entry_of_that_slot(tmp_path: Path) -> None:
    """An entry of its own ("... moved ...: X now") that gives a slot a new value replaces the old
    value's entry, though it names the slot in another clause than its value."""
    board = _board(
        tmp_path,
        [
            ["The artifact store endpoint is https://art-1.corp.net:8443."],
            [
                "The artifact store moved with the cluster last night: https://art-2.corp.net:8443 now, "
                "the old host is read-only."
            ],
        ],
    )
    assert "art-1.corp.net:8443." not in _texts(board), board
    assert "art-2" in _texts(board), board


def test_a_word_said_again_is_not_what_is_ruled_out() -> None:
    rule = Item("a", "rule", "Every widget needs an aria label.")
    assert updated("The widgets are exported from src/index.ts now, the widgets folder is gone.", [rule]) == []
    assert updated("The widgets are gone now, we use the design system's cards from 2.0 on.", [rule]) == [rule]


# ---- a to-do said done in words the cues do not read as "done" -------------------------------------


@pytest.mark.parametrize(
    ("todo", "said"),
    [
        ("Remind me to renew the wildcard cert next wk", "wildcard cert renewed btw"),
        ("Todo: backfill the invoices table for june", "the june invoices backfill ran overnight, all good"),
        ("We gotta do keyboard shortcuts at some point, put it on the list", "keyboard shortcuts shipped \u2705 yay"),
        # a word for finished that is not the to-do's verb ("ping legal"): the DPA is signed
        ("remind me to ping legal about the DPA next week", "legal signed off on the DPA"),
    ],
)
def test_a_todo_said_done_in_other_words_is_closed(tmp_path: Path, todo: str, said: str) -> None:
    board = _board(tmp_path, [[todo, "Write the changelog entry later."], [said]])
    assert [text for _, text in board] == ["Write the changelog entry later."], board


@pytest.mark.parametrize(
    "said",
    [
        "I looked at the wildcard cert renewal, it's tricky",  # only begun
        "the wildcard cert was not renewed, the job failed",  # not done
        "renewed the staging cert",  # one word of the to-do's own: another thing
        "the wildcard cert expired again",  # something happened to it, not what the to-do asked
        "I reviewed the wildcard cert setup",  # nor this
    ],
)
def test_what_closes_no_todo(said: str) -> None:
    todo = Item("a", "todo", "Remind me to renew the wildcard cert next wk")
    assert done_by(said, [todo]) == []


def test_when_two_todos_fit_equally_neither_is_closed() -> None:
    one = Item("a", "todo", "Add retries to the billing client")
    other = Item("b", "todo", "Add metrics to the billing client")
    assert done_by("the billing client rewrite landed", [one, other]) == []
    assert done_by("billing client retries shipped", [one, other]) == [one]


# ---- a correction that names what it corrects ---------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "then", "gone", "new"),
    [
        # the sentence after the new entry takes back what was said about the old one
        ("Decision: ids are uuid4 strings everywhere.",
         "We're going with ulid strings, sortable. That supersedes what I said about uuid4.", "uuid4 strings", "ulid"),
        # "correction on the X rule:" names what it corrects, though the new words name it only inside
        # another word ("k_malloc" is not "alloc")
        ("Rules for this repo: no heap alloc in interrupt handlers.",
         "correction on the alloc rule: k_malloc is fine inside deferred work items, not in the ISR itself",
         "no heap alloc", "k_malloc"),
    ],
)  # fmt: skip
def test_a_correction_that_names_what_it_corrects_replaces_it(
    tmp_path: Path, first: str, then: str, gone: str, new: str
) -> None:
    board = _board(tmp_path, [[first], [then]])
    assert gone not in _texts(board), board
    assert new in _texts(board), board


# ---- what replaces nothing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a change planned for later: what holds now holds until then
        ("Java 17 on Quarkus 3.8, built with Maven.", "We agreed in the review to move to Java 21 next quarter."),
        ("The build host is build-1.int.corp.net", "We're moving builds from build-1 to hosted runners in March 2027"),
        # ruled out only somewhere: not in general
        ("Every `any` needs a comment saying why.", "We don't use any outside src/legacy/ and src/ffi/."),
        ("Python 3 only, never python 2", "We use conda envs, not python venvs, for the notebooks"),
    ],
)
def test_a_planned_or_scoped_change_replaces_nothing(tmp_path: Path, old: str, new: str) -> None:
    from kairosd.consolidation.board.supersede import supersedes

    entry = Item("a", "fact", old)
    assert not supersedes("decision", new, entry)
    assert not supersedes("rule", new, entry)
    assert updated(new, [entry]) == []


def test_a_change_made_in_a_past_month_still_replaces() -> None:
    from kairosd.consolidation.board.supersede import supersedes

    entry = Item("a", "fact", "The api runs on waitress behind nginx")
    assert supersedes("fact", "It's hypercorn not waitress, we moved to ASGI in September 2026", entry)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("We use tox for test envs", "Tox is deprecated here, use nox instead"),
        ("The services target Go 1.21 and Node 20.", "The services target Go 1.23 now, 1.21 is out of support for us."),
    ],
)
def test_what_is_said_deprecated_or_out_of_support_is_replaced(old: str, new: str) -> None:
    from kairosd.consolidation.board.supersede import supersedes

    assert supersedes("rule", new, Item("a", "rule", old))


def test_so_that_item_is_done_closes_what_the_sentence_before_named(tmp_path: Path) -> None:
    todo = "Remind me Monday to ask Priya about the SAML setup for the portal."
    said = "Priya answered. SAML is Azure AD, the portal app is registered as portal-prod. So that item is done."
    board = _board(tmp_path, [[todo, "Write the changelog entry later."], [said]])
    assert [text for _, text in board] == ["Write the changelog entry later."], board


def test_that_item_names_nothing_so_the_close_reads_the_sentence_before() -> None:
    from kairosd.consolidation.offline.extract import signals

    said = signals("SAML is Azure AD, the portal app is registered as portal-prod. So that item is done.", True)
    closes = [s.text for s in said if s.action == "close"]
    assert closes == ["SAML is Azure AD, the portal app is registered as portal-prod. So that item is done."]
