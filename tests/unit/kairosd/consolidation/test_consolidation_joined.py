"""Offline mode: one instruction said over several sentences is one entry, a chore is no rule,
a statement of how things are done here is a rule, and the ways people open or close a to-do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.store import BoardStore
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.transcripts.read import Message

ANCHOR = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _candidates(*typed: str, day: int = 0) -> list[Candidate]:
    messages = []
    for step, text in enumerate(typed):
        when = ANCHOR + timedelta(days=day, minutes=step)
        messages += [Message("user", text, human=True, at=when), Message("assistant", "Done.", at=when)]
    return extract(messages, project="/p", anchor=ANCHOR, zone=ZoneInfo("UTC")).candidates


def _kinds(*typed: str) -> list[tuple[str, str]]:
    return [(c.kind, c.text) for c in _candidates(*typed)]


def test_a_rule_and_what_it_means_on_one_line_are_one_entry() -> None:
    assert _kinds("we never hand-edit the generated clients. regenerate them from the spec, the CI diffs them") == [
        ("rule", "We never hand-edit the generated clients. regenerate them from the spec, the CI diffs them")
    ]
    # two orders and what is said between them
    said = "For the record: a session is never shared across tenants. Each one gets its own cookie jar. No cache."
    assert _kinds(said) == [
        ("rule", "A session is never shared across tenants. Each one gets its own cookie jar. No cache.")
    ]


def test_a_correction_takes_what_it_goes_on_to_state() -> None:
    assert _kinds("Set it up.", "wait no, not 2.4. the parser is on 2.5.1, that one handles bom") == [
        ("correction", "Not 2.4. the parser is on 2.5.1, that one handles bom")
    ]


def test_what_is_apart_stays_apart() -> None:
    # items of a list, a fact beside a rule, and a task or a question after the rule
    assert _kinds("rules:\n- never log request bodies\n- always set a timeout on outbound calls") == [
        ("rule", "Never log request bodies"),
        ("rule", "Always set a timeout on outbound calls"),
    ]
    assert _kinds("The broker is at mq.internal:5672. Never publish to it from a request handler.") == [
        ("fact", "The broker is at mq.internal:5672."),
        ("rule", "Never publish to it from a request handler."),
    ]
    assert _kinds("never import the ui package from core. fix the cycle in orders.py") == [
        ("rule", "Never import the ui package from core.")
    ]
    assert _kinds("Never import the ui package from core. Can you check the others?") == [
        ("rule", "Never import the ui package from core.")
    ]


@pytest.mark.parametrize(
    "typed",
    [
        "in this repo we use ruff, not flake8",
        "We use httpx for everything here",
        "every request goes through the gateway client",
        "new migrations go in db/migrations/v2",
        "New rule after the outage: every config change goes to staging first",
    ],
)
def test_how_things_are_done_here_is_a_rule(typed: str) -> None:
    assert [kind for kind, _ in _kinds(typed)] == ["rule"]


@pytest.mark.parametrize(
    "typed", ["remove tools/old_sync.py then, nobody should call it", "k, fix the header one only"]
)
def test_a_chore_is_no_rule(typed: str) -> None:
    assert _kinds(typed) == []


def test_a_chore_with_a_standing_clause_is_kept() -> None:
    assert [k for k, _ in _kinds("fix it in the mapper, we never patch the fixtures")] == ["rule"]


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("add a todo: rotate the webhook secret after the audit", "webhook secret"),
        ("put on the list: a load test for the export job", "load test"),
        ("Add to the todo: drop the v1 serializers once mobile 4.0 is out", "v1 serializers"),
        ("could u put on the list that we should cache the tariff lookups?", "tariff lookups"),
        ("Remind me Friday to ask legal about the retention window", "retention window"),
    ],
)
def test_the_heads_people_give_a_to_do(typed: str, key: str) -> None:
    found = _kinds(typed)
    assert [k for k, _ in found] == ["todo"]
    assert key in found[0][1]


def test_an_order_about_it_takes_the_sentence_that_says_what_it_is() -> None:
    assert _kinds("the seed list lives in the shared bucket, whatever. never edit them by hand") == [
        ("rule", "The seed list lives in the shared bucket, whatever. Never edit them by hand")
    ]
    assert _kinds("Heads up, prod runs Node 20.11 and .nvmrc is the source of truth. Don't bump it in a PR.") == [
        ("rule", "Prod runs Node 20.11 and .nvmrc is the source of truth. Don't bump it in a PR.")
    ]


def test_the_file_at_hand_is_no_fact() -> None:
    assert _kinds("Can you add a case for the refund? The file is in fixtures/refund_partial.json.") == []
    assert _kinds("The config file is in config/app.toml.") == [("fact", "The config file is in config/app.toml.")]


@pytest.mark.parametrize(
    "said",
    [
        "the retry jitter thing from last time, i did it myself so you can take it off the list",
        "product says the retry jitter is covered by the sdk now, so could you take that off the list?",
        "ok it's merged, that's the retry jitter item done",
        "The retry jitter landed in #455, strike it.",
        "retry jitter done btw",
    ],
)
def test_the_ways_people_say_a_to_do_is_done_close_it(tmp_path: Path, said: str) -> None:
    store = BoardStore(tmp_path / "boards", lambda: ANCHOR)
    store.merge("/p", _candidates("put the retry jitter on the list", "Also the export job needs an owner, add a todo"))
    assert [e.text for e in store.load("/p").entries if "jitter" in e.text] == ["Put the retry jitter on the list"]
    store.merge("/p", _candidates(said, day=1))
    assert [e.text for e in store.load("/p").entries if "jitter" in e.text] == []


@pytest.mark.parametrize(
    "typed",
    [
        "that's sorting by the label, ids aren't stable across imports so never sort exports by the label",
        "ok the billing ones are theirs and we don't touch their migrations, anything under db/billing is off limits",
        "and in general don't start more than 3 workers without asking me, the box is shared",
    ],
)
def test_a_rule_in_a_later_clause_keeps_the_whole_sentence(typed: str) -> None:
    found = _kinds(typed)
    assert [k for k, _ in found] == ["rule"]
    assert typed.split()[-1] in found[0][1]


@pytest.mark.parametrize(
    "typed",
    [
        "the build is red right now, don't merge anything",  # the state of the work at hand
        "is it slow because we never cache the tokens, or because of the pool?",  # a question
    ],
)
def test_a_rule_word_in_a_later_clause_of_noise_is_no_rule(typed: str) -> None:
    assert _kinds(typed) == []


def test_a_decision_said_with_when_it_was_made_is_kept() -> None:
    assert _kinds("We decided in the retro yesterday: releases go out on wednesdays, never on fridays.") == [
        ("decision", "We decided in the retro on 2026-11-19: releases go out on wednesdays, never on fridays.")
    ]


def test_what_the_project_is_on_now_is_a_fact_not_a_done_to_do() -> None:
    assert _kinds("also fyi we're on postgres 16 everywhere now, 14 is gone") == [
        ("fact", "We're on postgres 16 everywhere now, 14 is gone")
    ]
    assert [k for k, _ in _kinds("good news: ops merged the upgrade, so we're on Node 22 now")] == ["fact"]


def test_what_i_told_you_before_is_taken_back_and_replaced(tmp_path: Path) -> None:
    store = BoardStore(tmp_path / "boards", lambda: ANCHOR)
    store.merge("/p", _candidates("Set it up.", "in this repo we use jest, not mocha"))
    said = "Sorry, I told you jest before but we moved to vitest, I forgot."
    store.merge("/p", _candidates("Set it up.", said, day=1))
    assert [(e.kind, e.text) for e in store.load("/p").entries] == [
        ("decision", "We moved to vitest, I forgot (corrects what was said about jest)")
    ]


def test_an_order_for_now_after_a_rule_stays_out_of_it() -> None:
    assert _kinds("Never cache the tariffs in redis. Do it in memory for now.") == [
        ("rule", "Never cache the tariffs in redis.")
    ]


# ---- the third round (issue 22): what strangers' talk showed, checked on other words -----------------


def test_an_order_too_short_to_say_what_it_is_about_takes_the_sentence_before() -> None:
    assert _kinds("Timestamps are UTC everywhere. Never naive.") == [
        ("rule", "Timestamps are UTC everywhere. Never naive.")
    ]


@pytest.mark.parametrize(
    ("typed", "todo"),
    [
        (
            "Before I forget: we need a retention job for old exports. It can wait; please add it to the backlog.",
            "Before I forget: we need a retention job for old exports.",
        ),
        (
            "I'd like us to log every admin login, but that is out of scope for now. "
            "Please note it as a follow-up item.",
            "I'd like us to log every admin login, but that is out of scope for now.",
        ),
    ],
)
def test_a_todo_that_asks_to_note_it_takes_what_it_is(typed: str, todo: str) -> None:
    assert _kinds(typed) == [("todo", todo)]


def test_a_confirmation_and_what_one_would_do_elsewhere_are_not_entries() -> None:
    assert _kinds("I misspoke, the broker listens on 5673, not 5672. The hostname is correct.") == [
        ("fact", "The broker listens on 5673, not 5672.")
    ]
    assert _kinds("In Go I would use errgroup for this. What's the Rust way?") == []


def test_for_your_information_opens_a_decision_and_in_this_service_we_use_is_a_rule() -> None:
    assert _kinds("For your information: the team agreed that releases go out on Thursdays.") == [
        ("decision", "The team agreed that releases go out on Thursdays.")
    ]
    assert _kinds("in this service we use structlog, not the stdlib logging") == [
        ("rule", "In this service we use structlog, not the stdlib logging")
    ]


def test_a_fact_about_the_thing_the_fact_before_named_goes_with_it() -> None:
    assert _kinds("The wiki lives on the docs server, not in the repo. That server is at docs.internal:8081.") == [
        ("fact", "The wiki lives on the docs server, not in the repo. That server is at docs.internal:8081.")
    ]
