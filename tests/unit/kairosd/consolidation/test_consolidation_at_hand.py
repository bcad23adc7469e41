"""What a sentence is worth depends on what its turn asks (issue 22, eighth round: precision on new writers).

The turns here are not from any corpus split: each statement beside a request for work now is next to
a neighbour that keeps its entry (a marked note, a rule, a turn that asks nothing), and each report of a
thing done next to a pin that only reads like one."""

from __future__ import annotations

import pytest

from kairosd.consolidation.offline.at_hand import asks_for_work, done_news
from kairosd.consolidation.offline.extract import signals


def _adds(text: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in signals(text, True) if s.action == "add"]


@pytest.mark.parametrize(
    "turn",
    [
        "The queue consumer runs in the billing-worker repo. Please explain what the dead letter handler does.",
        "ok, the timeout is a float. cast it.",
        "can you hook that up? --dry-run prints the plan to stdout",
        "Kindly go through the InvoiceExporter class and explain why the totals are off by one.",
        "the cache is keyed by tenant id. could you look at why it misses on every request",
    ],
)
def test_a_statement_beside_a_request_for_work_now_is_no_fact(turn: str) -> None:
    assert [kind for kind, _ in _adds(turn)] == []


@pytest.mark.parametrize(
    ("turn", "kind"),
    [
        # the same statements, with nothing asked: facts about the project
        ("The queue consumer runs in the billing-worker repo.", "fact"),
        ("the cache is keyed by tenant id", "fact"),
        ("ok, the timeout is a float.", "fact"),
        # a note the person marks as one, beside a request
        ("fyi the staging db is at db-stg.internal:5433. can you add a health check for it?", "fact"),
        # an order beside a request has its own cue
        ("Always run the linter before you commit. Please fix the failing test first.", "rule"),
        # a polite standing order is no request for work now
        ("Would you mind not calling the ORM from the views? The ledger db is at ledger.internal:5433.", "fact"),
    ],
)
def test_a_statement_or_an_order_that_stands_is_kept(turn: str, kind: str) -> None:
    assert kind in [k for k, _ in _adds(turn)]


@pytest.mark.parametrize(
    "sentence",
    [
        "good news: the flaky login thing is sorted, we moved to the new SDK and it merged this morning.",
        "the export bug, I actually ended up fixing that myself on the weekend, it batches writes now.",
        "The vendor signed off on the new format and I wrote the parser myself, so we can strike that one off.",
    ],
)
def test_a_thing_reported_done_is_a_close_not_an_entry(sentence: str) -> None:
    said = signals(sentence, True)
    assert done_news(sentence)
    assert [s.action for s in said] in ([], ["close"])


@pytest.mark.parametrize(
    "sentence",
    [
        "The client version is fixed to 8.12.1, not 8.11.0.",
        "The Go version is fixed at 1.22 until the build servers are upgraded.",
        "Bumped the theme pin to 0.128.0 now that upstream fixed it.",
    ],
)
def test_a_pin_is_no_news_of_a_thing_done(sentence: str) -> None:
    assert not done_news(sentence)


def test_what_asks_for_work_now() -> None:
    assert asks_for_work(["the config is in ansible.", "Please explain the transport map."])
    assert asks_for_work(["fix the first one."])
    assert not asks_for_work(["Please always use the bulk api."])
    assert not asks_for_work(["Could you stop using any?"])
    assert not asks_for_work(["we deploy on thursdays."])
