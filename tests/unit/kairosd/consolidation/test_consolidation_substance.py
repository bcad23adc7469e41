"""An entry must carry a thing to act on, whatever cue made it (issue 22, item 2: precision on new writers).

The sentences here are not from any corpus split: each fragment (a piece of an instruction said over
several sentences, or a to-do that names nothing) is next to a near neighbour that says what it is
about, and stays."""

from __future__ import annotations

import pytest

from kairosd.consolidation.offline.extract import signals
from kairosd.consolidation.offline.substance import content_words, fragment


@pytest.mark.parametrize(
    "sentence",
    [
        "Never float.",  # the rule's thing (money is Decimal) was said in the sentence before
        "Stop using any",
        "Always squash.",
        "Never `any`.",  # a name, but too short to say where or why
        "Not 3.6.2.",  # what is 3.6.3 was said before
        "don't ask",
        "always kebab-case",
        "for next time.",  # to-dos that name nothing to do
        "todo for next time",
        "Later, not now.",
        "Remind me later",
        "add to backlog: later",
        # a question joined into an order is still a question
        "Is the sync job holding the file lock across the upload? Look. Don't touch.",
        # a bare infinitive once "note" is read as an opener: a to-do or a reason, not a rule
        "note to add watcher so schema changes dont need a manual reload",
        # someone else's opinion, whoever holds it
        "A friend of mine, Mrs. Okafor, thinks we should just use Jenkins instead of this.",
    ],
)
def test_a_fragment_makes_no_entry(sentence: str) -> None:
    assert signals(sentence, True) == ()


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Never use float for money.", "rule"),
        ("never log request bodies", "rule"),
        ("pls to use the bulk endpoint always, single writes are too slow", "rule"),  # an infinitive, for good
        ("No unwrap() in the networking code, ever. use ? and proper errors", "rule"),  # "?" as code
        ("Would it be possible to add a dark mode at some point?", "todo"),  # a polite to-do stays
        ("No tailwind, we use vanilla-extract", "rule"),
        ("We use uv not poetry", "rule"),
        ("Put the retry cleanup on the list", "todo"),
        ("remind me to add shell completions", "todo"),
    ],
)
def test_its_neighbour_that_names_its_thing_stays(sentence: str, kind: str) -> None:
    assert [s.kind for s in signals(sentence, True)] == [kind]


def test_the_gate_reads_words() -> None:
    assert fragment("rule", "Never float.")
    assert fragment("correction", "Not 3.6.2.")
    assert not fragment("rule", "Always run the linter.")
    assert not fragment("fact", "Msrv 1.70")  # facts are the cues' to judge
    assert fragment("todo", "Put it on the list for later")
    assert not fragment("todo", "Put the icon audit on the backlog")
    assert content_words("Put the haptics cleanup on the list") == ["haptics", "cleanup"]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # a change reported in the past, ordering nothing: what is so now ("not 9090 anymore" is the old value)
        ("The metrics endpoint moved to metrics.ops.internal:9100, not 9090 anymore", "fact"),
        ("The audit logs moved to `audit.events`, the old table is deprecated", "fact"),
        # a change with an order in it stays a rule
        ("We moved to pnpm, so never use npm here", "rule"),
        ("Deploys moved to Thursday, don't deploy on Tuesdays anymore", "rule"),
    ],
)
def test_a_rule_that_only_reports_a_change_is_a_fact(sentence: str, kind: str) -> None:
    assert [s.kind for s in signals(sentence, True)] == [kind]


@pytest.mark.parametrize(
    ("turn", "said"),
    [
        # a to-do that names nothing is the sentence before it, when that one made no entry
        (
            "need a disk pressure alert for the queue too. later not now",
            [("todo", "Need a disk pressure alert for the queue too: later not now")],
        ),
        # ... never a sentence that made an entry of its own, nor one that says nothing
        (
            "grafana is grafana.ops.internal:3000. fyi for next time",
            [("fact", "Grafana is grafana.ops.internal:3000.")],
        ),
        ("ok. later not now", []),
    ],
)
def test_a_to_do_that_names_nothing_takes_the_sentence_before(turn: str, said: list[tuple[str, str]]) -> None:
    assert [(s.kind, s.text) for s in signals(turn, True)] == said
