"""Cue words that are no standing instruction make no board entry (issue 22, item 2: precision).

The sentences here are not from any corpus split: they are the shapes of noise that carry a
rule's words (hypotheticals, other people's and tools' words, observations, one-offs about the
code at hand, task instructions), each next to a near neighbour that is a real rule and stays."""

from __future__ import annotations

import pytest

from kairosd.consolidation.offline.clauses import typed_lines
from kairosd.consolidation.offline.cues import read
from kairosd.consolidation.offline.extract import signals
from kairosd.consolidation.offline.noise import refused


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("If we ever add a second payment provider, we'd need an adapter layer.", "hypothetical"),
        ("if we ever move to kafka we should always use avro", "hypothetical"),
        ("Suppose we switch to grpc, we must use a new proxy.", "hypothetical"),
        ("what if we never cache the tokens", "hypothetical"),
        ("If the holdout MAPE would be above 15%, we would need to retrain with more features.", "hypothetical"),
        ("the docs say always call close() first", "reported"),
        ("someone on slack said never deploy on fridays", "reported"),
        ("Someone in the community said we should always pin exact SDK versions in samples.", "reported"),
        ("a guy at work says never use orms", "reported"),
        ("My friend says I should never store passwords in plain text lol", "reported"),
        ("the reviewer wrote that we must never use print", "reported"),
        ("my colleague thinks we should use poetry", "reported"),
        ("according to the linter we should use const instead of let", "reported"),
        ("the warning says this will be removed later", "reported"),
        ("we always forget this step haha", "observation"),
        ("you always do this", "observation"),
        ("we never had that problem before", "observation"),
        ("the old team always used jenkins", "observation"),
        ("thanks, always helpful", "observation"),
        ("actually use a set here instead of a list", "one-off"),
        ("use the builder pattern here, not the constructor", "one-off"),
        ("great, let's use that approach for this bug", "one-off"),
        ("write a test that checks we always retry", "task"),
    ],
)
def test_noise_with_a_cue_word_makes_no_entry(sentence: str, why: str) -> None:
    assert signals(sentence, True) == ()
    said = read(sentence, after_agent=False, first=False)
    assert said is None
    # and it is the noise test that refuses it, as what the cues would have read it as
    assert refused(sentence, "rule") == why


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("if the tests fail, never merge", "rule"),  # a conditional rule says what to do
        ("tokens are never logged", "rule"),  # a standing passive, not a past
        ("we always use the design tokens from @shop/tokens, never hardcoded hex colors", "rule"),
        ("orjson is deprecated here, use msgspec", "rule"),  # "here" is the project
        ("from here on use structlog, not print", "rule"),
        ("Dana says we're on React 19 now", "fact"),  # a teammate's statement relayed as the team's
        ("we never terminate tls at the nlb, always at envoy", "rule"),
        ("could you stop using default exports?", "rule"),
    ],
)
def test_near_neighbours_that_are_rules_stay(sentence: str, kind: str) -> None:
    said = read(sentence, after_agent=False, first=False)
    assert said is not None
    assert said.kind == kind


def test_a_hypothetical_todo_or_fact_is_refused_and_a_plain_one_is_not() -> None:
    assert refused("if we ever go multi region, add a global lb to the backlog", "todo") == "hypothetical"
    assert refused("add a global lb to the backlog", "todo") is None
    # observations and one-offs are about rules: a fact that says "here" is still a fact
    assert refused("the inventory lives here in inventories/prod", "fact") is None


# ---- what is pasted ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "E501 line too long, should be under 100",
        "W0611: Unused import os; never import os here",
        "help: use `&str` instead of `String`",
        "- retries = 3  # always 3",
        "+ timeout = 30  // never more than 30",
        "# TODO: make configurable later",
        '      ^--^ SC2115: Use "${var:?}" to ensure this never expands to /* .',
        "## Follow-up",  # a markdown heading titles what follows
        "PHP Deprecated:  Creation of dynamic property WC_Cart::$foo is deprecated in /x/functions.php on line 88",
    ],
)
def test_a_linters_code_a_compilers_help_and_a_diffs_code_line_are_pasted(line: str) -> None:
    assert typed_lines(f"can you look?\n{line}") == ["can you look?"]


def test_a_lint_code_said_in_a_sentence_is_typed() -> None:
    assert typed_lines("E501 is off in this repo") == ["E501 is off in this repo"]


def test_a_line_with_pasted_lines_on_both_sides_is_pasted() -> None:
    typed = (
        "here's the CI tail\n"
        "2024-05-02 03:00:12 INFO step 3 of 5\n"
        "we should always pin the runner image\n"  # printed by the job: no pattern knows it
        "2024-05-02 03:00:14 ERROR step 4 failed\n"
        "can you look?"
    )
    assert typed_lines(typed) == ["here's the CI tail", "can you look?"]
    assert signals(typed, True) == ()
    # the same words typed after the paste are the person's
    after = "2024-05-02 03:00:14 ERROR step 4 failed\nwe should always pin the runner image"
    assert [s.kind for s in signals(after, True)] == ["rule"]


# ---- the work at hand, not the project -----------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "kind", "why"),
    [
        ("the bug is in src/cart/total.ts", "fact", "transient"),
        ("the error is at main.py:12", "fact", "transient"),
        ("my laptop is on macos 14.5", "fact", "transient"),
        ("the PR is at github.com/acme/api/pull/123", "fact", "transient"),
        ("fyi the build is green now", "fact", "transient"),
        ("btw the tests are passing", "fact", "transient"),
        ("todo: check this", "todo", "says nothing"),
        ("Just an idea for later.", "todo", "says nothing"),
        ("you should never have deleted that file", "rule", "observation"),
        ("you must have missed the second test", "rule", "observation"),
        ("you never told me about that flag", "rule", "observation"),
        ("the function should never return None but it does", "rule", "observation"),
        ("always the same story with this lib", "rule", "observation"),
        ("don't commit yet", "rule", "for now"),
        ("don't push until I say", "rule", "for now"),
        ("make sure it compiles", "rule", "for now"),
        ("i'll use my own token for now", "decision", "for now"),
        ("we decided to wait until tomorrow for that", "decision", "for now"),
        ("let's go with your second suggestion", "decision", "one-off"),
        ("we're switching to the other branch", "decision", "one-off"),
        ("I prefer the second version", "preference", "one-off"),
        ("let's use option 2", "decision", "one-off"),  # a number that names no thing
        ("i'd prefer you didn't touch the tests in this pr", "preference", "one-off"),
        ("prefer the simpler fix here", "preference", "one-off"),
        ("the container is on port 5432 on my machine", "fact", "transient"),
        ("my branch is at 4 commits ahead", "fact", "transient"),
        ("Please, in this cell use a log scale for the y axis.", "fact", "one-off"),
    ],
)
def test_what_is_about_the_work_at_hand_makes_no_entry(sentence: str, kind: str, why: str) -> None:
    assert refused(sentence, kind) == why
    assert signals(sentence, True) == ()


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("the build cache lives in ghcr.io/acme/cache", "fact"),
        ("Spring Boot is at 3.2.4 for now, upgrade is planned for Q1.", "fact"),  # "for now" holds a fact
        ("every runbook must have a rollback section", "rule"),  # "must have" a thing, not a past
        ("let's go with catboost instead of lightgbm", "decision"),  # names what it chose
        ("todo: migrate the cron jobs to systemd timers", "todo"),
    ],
)
def test_near_neighbours_about_the_project_stay(sentence: str, kind: str) -> None:
    said = signals(sentence, True)
    assert [s.kind for s in said] == [kind]


# ---- task orders, review comments and how the code behaves ---------------------------------


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("refactor the payment module to always use decimals", "task"),
        ("update the handler so it never returns 500 on bad input", "task"),
        ("make the parser always strip whitespace", "task"),
        ("the function should always return a list, fix it", "task"),
        ("suggestion: use `Optional` instead of `Union[X, None]`", "review"),
        ("+1 to always validating input here", "review"),
        ("LGTM but please never merge on red", "review"),
        ("re the comment above: always await that promise", "review"),
        ("blocking: this never closes the connection", "review"),
        ("your last change always sends two requests", "observation"),
        ("the cron never fires on sundays, weird", "observation"),
        ("we always end up rewriting this", "observation"),
    ],
)
def test_task_orders_review_comments_and_behaviour_make_no_entry(sentence: str, why: str) -> None:
    assert refused(sentence, "rule") == why
    assert signals(sentence, True) == ()


@pytest.mark.parametrize(
    "typed",
    [
        "LGTM. From now on, squash merge everything.",  # the label opens its own sentence
        "make sure every handler returns json errors",  # "make sure" is a rule's word
        "Kindly ensure that PII columns are always hashed with SHA-256",
        "services never call each other's databases",  # a plural subject: how they must behave
        "the frontend never talks to the db directly",  # how the system is, said of a part of it
        "the worker always acks after processing, never before",
    ],
)
def test_rules_near_task_orders_and_reviews_stay(typed: str) -> None:
    assert [s.kind for s in signals(typed, True)] == ["rule"]


def test_a_context_list_item_about_the_work_at_hand_is_refused() -> None:
    typed = "ctx:\n- the bug is in src/cart/total.ts\n- msrv 1.70\n- my laptop is on macos 14"
    assert [s.text for s in signals(typed, True)] == ["Msrv 1.70"]


def test_a_user_storys_musts_are_what_to_build_not_rules() -> None:
    story = "User story: as a guest I want to cancel my booking. The button should be red and it must show the refund."
    assert signals(story, True) == ()
    # a standing word in the story is still a rule; the same "must" outside a story is one too
    told = "As an admin I want to export bookings. The export must be CSV. From now on every export goes through jobs."
    assert [s.kind for s in signals(told, True)] == ["rule"]
    assert [s.kind for s in signals("The export must be CSV.", True)] == ["rule"]


@pytest.mark.parametrize(
    ("sentence", "kind", "why"),
    [
        ("Let's go with your first proposal for the dedupe.", "decision", "one-off"),  # a full stop names nothing
        ("ok go with that one.", "decision", "one-off"),
        ("Rhetorical question, don't answer.", "rule", "one-off"),
    ],
)
def test_w_train_49_to_51s_blind_false_entries_are_refused(sentence: str, kind: str, why: str) -> None:
    assert refused(sentence, kind) == why
    assert signals(sentence, True) == ()


def test_prefer_that_opening_a_clause_is_no_pick() -> None:
    assert refused("I would prefer that you cite the file and line for every finding.", "preference") is None


def test_an_indented_block_and_a_pasted_ticket_are_pasted() -> None:
    config = "show run excerpt:\ninterface Gi1/0/1\n description uplink - never shut this\n switchport mode trunk"
    assert signals(config, True) == ()
    ticket = "From Jira:\nSummary: duplicate posts\nDescription: The bot should never post twice.\nPriority: High"
    assert signals(ticket, True) == ()
    # a nested list is a list, and one "Description:" line typed alone is the person's
    nested = "ctx:\n- db is postgres 15\n  - on rds\n- queue is sqs"
    assert [s.text for s in signals(nested, True)] == ["Db is postgres 15", "On rds", "Queue is sqs"]
    assert typed_lines("Description: we never deploy on fridays") == ["Description: we never deploy on fridays"]


def test_for_now_in_a_last_clause_qualifies_only_that_clause() -> None:
    kept = "Decision from that thread: owner is required in catalog-info, lifecycle optional for now."
    assert [s.kind for s in signals(kept, True)] == ["decision"]
    assert signals("ok, don't commit yet", True) == ()  # a filler before the comma is no clause


def test_a_pasted_chat_thread_is_pasted() -> None:
    thread = "Slack, #platform:\n[10:42] Priya: we should always require an owner\n[10:44 AM] Ben: +1"
    assert signals(thread, True) == ()
