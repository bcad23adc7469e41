"""The offline extractor's word prefilters are exact: wherever a pattern matches an ASCII sentence, the
sentence has a word its prefilter needs (else the prefilter would drop a match, and change the output).

Checked on every sentence of the corpus (every split), and on sentences made to match each
alternative, including the ones whose word runs into the next ("add to the todothat ...").
"""

from __future__ import annotations

import re

import pytest
from consolidation_corpus.corpus import SPLITS, load

from kairosd.consolidation.offline import changes, cues, extract, noise
from kairosd.consolidation.offline.clauses import sentences
from kairosd.consolidation.offline.letters import letter_runs

# (name, pattern, the words it needs, what the pattern reads of the sentence)
PREFILTERS = [
    ("todo", cues._TODO, cues._TODO_NEEDS | cues._TODO_WE_NEEDS, str),
    ("hypothetical", noise._HYPOTHETICAL, noise._HYPOTHETICAL_NEEDS, str),
    ("reported", noise._REPORTED, noise._REPORTED_NEEDS, str),
    ("counterfactual", noise._COUNTERFACTUAL, noise._COUNTERFACTUAL_NEEDS | noise._ALWAYS_NEVER, str),
    ("for now", noise._FOR_NOW, noise._FOR_NOW_NEEDS, str),
    ("this talk", noise._THIS_TALK, noise._THIS_TALK_NEEDS, str),
    ("that one", noise._THAT_ONE, noise._THAT_ONE_NEEDS, str),
    ("deictic", noise._DEICTIC, noise._DEICTIC_NEEDS, str),
    ("task", noise._TASK, noise._TASK_NEEDS, str),
    ("superseded by", cues._SUPERSEDED_BY, cues._SUPERSEDED_NEEDS, str),
    ("header", extract._HEADER, extract._HEADER_NEEDS, str),
    ("change", changes._CHANGE, changes._CHANGE_WORDS, str),
    ("not a change", changes._NOT_A_CHANGE, changes._NOT_A_CHANGE_WORDS, lambda s: changes._LEAD.sub("", s)),
    ("retraction", extract._RETRACTION, extract._RETRACTING, str),
]

MADE = [
    "TODO: write the runbook", "fixme(ops) rotate keys", "don't forget to bump it", "remind me tomorrow to check",
    "we still need to port it", "note to self: buy milk", "reminder for next week: demo",
    "it's a long one, park it on the backlog",
    "we should clean up the flags next sprint", "I need to fix the build first but not today",
    "we must migrate before the freeze", "I have to remember to ship it", "jot this down: x", "for the list: y",
    "put the cron fix on the board", "Action items: rotate keys", "add the flaky test to our list", "todo for me: x",
    "add to the todothat it works", "add a todo: fix it", "Suppose we drop it", "what if we used redis",
    "let's say we ship", "if we ever move, do it", "in Java I'd use BigDecimal", "and if it breaks we would roll back",
    "The linter says use tabs", "according to the docs it is fine", "my colleague thinks we should use go",
    "you should never have deleted that", "it always ends up broken", "but it does not work",
    "the api moved to 8443", "no longer on envoy", "I was wrong about the port", "I mixed up the hosts",
    "If we switch, tell me", "okay, maybe later", "That supersedes what I said about i128.",
    "So replaces what I told you about the port.", "don't push yet", "use mocks for now", "for the moment skip it",
    "ship it today", "this morning only", "until we review it", "until next week", "please make sure it builds",
    "rhetorical question", "do not answer that", "let's go with yours", "switching to the second option",
    "use that one", "I prefer the other one", "pick option b", "just use a map here", "for this bug skip it",
    "in that function return early", "please write a test that checks it", "set up a job to verify it",
    "the v1 api was superseded by v2", "it has been now replaced by kv/prod", "Correction.", "a quick correction on x:",
    "New decision.", "Change of plans for the api.", "new plan", "House rule:", "rules for this repo:",
    "ok, forget what I said about the port.", "refactor the parser to always use bytes",
    "it should return a list, so please fix it", "ok; correct that", "we should drop it next sprint",
    "i have to ship it before the release", "we gotta fix the cache but not yet", "it never works",
    "always the same story", "never something new", "always like this", "it always ends up red",
    "the cron never fires on sundays, weird", "your change always sends two", "I never told you that",
]  # fmt: skip


def _corpus_sentences() -> list[str]:
    said = {
        s for split in SPLITS for writer in load(split) for project in writer.projects
        for session in project.sessions for turn in session.turns for s in sentences(turn.text)
    }  # fmt: skip
    return sorted(said)


@pytest.mark.parametrize(("name", "pattern", "needs", "read"), PREFILTERS, ids=[p[0] for p in PREFILTERS])
def test_a_match_has_a_word_its_prefilter_needs(
    name: str, pattern: re.Pattern[str], needs: frozenset[str], read: object
) -> None:
    matched = 0
    for sentence in [*_corpus_sentences(), *MADE]:
        said = read(sentence)  # type: ignore[operator]
        if sentence.isascii() and pattern.search(said):
            matched += 1
            assert not needs.isdisjoint(letter_runs(sentence)), (name, sentence)
    assert matched > 0, name  # the check saw the pattern match


@pytest.mark.parametrize(
    "sentence",
    ["re the limiter: it's 200 rps", "Regarding CI: it is slow", "About the db: they are slow", "as for x: it's done"],
)
def test_an_about_opening_is_one_the_prefilter_knows(sentence: str) -> None:
    assert cues._RE_ABOUT.match(sentence)
    assert sentence[:2].lower() in cues._ABOUT_OPENS


def test_the_two_word_prefilters_hold_where_the_patterns_match() -> None:
    # the sharper tests: a to-do's "next"/"but"/"before" comes with "we" or "i"; "always"/"never" with a word
    for sentence in [*_corpus_sentences(), *MADE]:
        if not sentence.isascii():
            continue
        words = letter_runs(sentence)
        if cues._TODO.search(sentence):
            assert cues._may_be_todo(sentence, set(words)), sentence
        if noise._COUNTERFACTUAL.search(sentence):
            assert noise._may_be_counterfactual(words), sentence


def test_a_word_run_into_the_next_is_no_word_of_its_own() -> None:
    # why _TODO_NEEDS has "add" and not "todo" alone: "to-?dos?" may run into "that"
    assert cues._TODO.search("add to the todothat it works")
    assert "todo" not in letter_runs("add to the todothat it works")


def test_non_ascii_sentences_are_searched_whatever_their_words() -> None:
    # IGNORECASE matches "\u017f" (long s) to "s", which lower() leaves: no prefilter for such a sentence
    assert changes._CHANGE.search("the api \u017fwitched to 8443")
    assert "switched" not in letter_runs("the api \u017fwitched to 8443")
    assert changes.update("the api \u017fwitched to 8443", None) is not None
