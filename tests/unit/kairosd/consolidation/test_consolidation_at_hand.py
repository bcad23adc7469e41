"""What a sentence is worth depends on what its turn asks (issue 22, eighth round: precision on new writers).

The turns here are not from any corpus split: each statement beside a request for work now is next to
a neighbour that keeps its entry (a marked note, a rule, a turn that asks nothing)."""

from __future__ import annotations

import pytest

from kairosd.consolidation.offline.at_hand import asks_for_work
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


def test_what_asks_for_work_now() -> None:
    assert asks_for_work(["the config is in ansible.", "Please explain the transport map."])
    assert asks_for_work(["fix the first one."])
    assert not asks_for_work(["Please always use the bulk api."])
    assert not asks_for_work(["Could you stop using any?"])
    assert not asks_for_work(["we deploy on thursdays."])
