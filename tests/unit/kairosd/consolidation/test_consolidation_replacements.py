"""Replacement a person can follow, through offline extraction and the board's merge: a retraction
("forget what I said about X"), a correction within a session, a change of plan across sessions,
and a to-do said done in the words people use ("done with X", "shipped X", "took care of X")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from consolidation_support import board_after

NOW = datetime(2026, 11, 20, 9, tzinfo=UTC)


def _board(tmp_path: Path, sessions: list[list[str]]) -> list[str]:
    """The texts on the board once each session (the turns a person typed, each answered by the
    agent) is consolidated in order, a day apart."""
    return [e.text for e in board_after(tmp_path, sessions)]


def _has(board: list[str], word: str) -> bool:
    return any(word.lower() in text.lower() for text in board)


@pytest.mark.parametrize(
    ("sessions", "gone", "kept"),
    [
        # a retraction, then what holds instead in the next sentence, whatever its words
        (
            [["always use decimal for money, never float"],
             ["forget what i said about decimal for money. we store integer cents now"]],
            "never float", "integer cents",
        ),
        (
            [["the staging db is on db-1.internal"],
             ["Forget what I said about the staging db: it's on db-2.internal now."]],
            "db-1", "db-2",
        ),
        # "forget the X rule: ..." rules X out
        (
            [["New DAGs should use the TaskFlow API."],
             ["morning",
              "Hmm, actually, forget the TaskFlow rule: new DAGs should use classic operators, the team likes them."]],
            "taskflow api", "classic operators",
        ),
        # a correction within a session names an identifier with underscores
        (
            [["tests go in __tests__ next to the component", "lol that broke everything",
              "ugh wait no, not __tests__, tests go in the top level test folder"]],
            "next to the component", "test folder",
        ),
        # a path under the same root is the same slot
        (
            [["Quick note: the training data lives in s3://acme-ml/forecast/raw."],
             ["Also, the raw data moved to s3://acme-ml/forecast/v2/raw."]],
            "forecast/raw", "v2/raw",
        ),
        # a day of the week is a value: the same slot, said again
        (
            [["from now on we deploy on tuesdays"], ["change of plan: we deploy on thursdays"]],
            "tuesdays", "thursdays",
        ),
        # a port ruled out by itself is the port of an address
        (
            [["the orders service talks to postgres on pg-orders.internal:5432"],
             ["Correction: the port is 6432, not 5432, we go through pgbouncer."]],
            "pg-orders", "6432",
        ),
        # "oops no" corrects the sentence before it, in the same session
        (
            [["pricing copy is in content/pricing.md", "thanks",
              "oops no, pricing copy is in content/pages/pricing.mdx, the md one is old"]],
            "content/pricing.md", "pricing.mdx",
        ),
        # an arrow says where something moved to; a mind changed is a decision
        (
            [["we deploy the landing page on vercel"],
             ["update: landing moved off vercel -> cloudflare pages, cheaper"]],
            "on vercel", "cloudflare pages",
        ),
        (
            [["state management is zustand, no redux"],
             ["ok changed my mind on state: we go with jotai instead of zustand"]],
            "no redux", "jotai",
        ),
        # what moved, named by a fact that says where it is
        (
            [["fyi the build cache is in S3 under nx-cache-prod"],
             ["We decided to move the build cache to GCS, S3 egress got too expensive."]],
            "nx-cache-prod", "gcs",
        ),
        # what was ruled out, taken back
        (
            [["GraphQL is off the table, we stay with REST for the BFF."],
             ["Let's use GraphQL after all, the app team pushed back hard."]],
            "off the table", "after all",
        ),
        # a time word in a statement of an upgrade says when, not that it is unsure
        (
            [["The pricing engine is written in Kotlin and runs on JDK 17."],
             ["We are on JDK 21 now, the upgrade went through yesterday."]],
            "jdk 17", "jdk 21",
        ),
        # "scrap the X rule": what follows is what holds instead
        (
            [["Dates are always shown in ISO format."],
             ["Scrap the ISO rule, HR wants dates as DD.MM.YYYY in the UI."]],
            "always shown", "dd.mm.yyyy",
        ),
        # "wait no" then a thing said to be another value
        (
            [["the vocab size of the small model is 32k"],
             ["wait no the small model vocab is 48k, 32k was the tiny one"]],
            "vocab size", "48k",
        ),
        # a folder in common is the same kind of value
        (
            [["results go to the eval-results bucket, prefix runs/2026/"],
             ["hmm actually results should go under prefix runs/v2/ now, the old prefix is frozen"]],
            "runs/2026/", "runs/v2/",
        ),
        # "no more X, we ..." and "we upgrade to X 5.0" say what changed
        (
            [["hi. we use expo for the app"], ["no more expo, we did eject to bare react native"]],
            "for the app", "bare react native",
        ),
        (
            [["admin is django 4.2"], ["we upgrade to django 5.0 now"]],
            "django 4.2", "django 5.0",
        ),
        # what moved, said of the subject; "signing" and "signed" name one thing
        (
            [["Release builds are signed with the key in the release-keystore vault entry."],
             ["The signing key moved to the mobile-signing vault entry."]],
            "release-keystore", "mobile-signing",
        ),
        # what is dropped, named by a fact; a subject changed to another value, named by a rule
        (
            [["the cli is built with cobra"], ["we're dropping cobra for urfave/cli"]],
            "built with cobra", "urfave/cli",
        ),
        (
            [["Our brand font is Inter, always load it from the local /fonts folder."],
             ["Quick update: brand font changed to Geist, Inter is out. Still load it locally though."]],
            "/fonts", "geist",
        ),
        # "sorry, small correction:" then a thing said to be at another path
        (
            [["Icons are exported as React components from src/icons/index.ts."],
             ["Sorry, small correction: the icons are exported from src/index.ts now, the icons folder is gone."]],
            "src/icons/index.ts", "src/index.ts",
        ),
        # "scratch that about X:" retracts X
        (
            [["We use `thiserror` for error types, never `anyhow` in the library."],
             ["Scratch that about thiserror: we use `snafu` now, it gives us context selectors."]],
            "never `anyhow`", "snafu",
        ),
        # "X is superseded by Y" rules X out; "we're on X since yesterday" says when it changed
        (
            [["All secrets are stored in Vault under secret/prod/."],
             ["The Vault path secret/prod/ is superseded by kv/prod/ after the migration."]],
            "stored in vault", "kv/prod/",
        ),
        (
            [["yo, engine is godot 4.2 btw"], ["we're on godot 4.3 since yesterday"]],
            "godot 4.2", "godot 4.3",
        ),
        # "nah actually" opens a statement that holds now
        (
            [["saves go to user://saves/slot_N.json"],
             ["nah actually saves go to user://profiles/<id>/save.json now, one per profile"]],
            "user://saves", "user://profiles",
        ),
        # the old value named again as what was wrong; a file of the same name in another folder
        (
            [["Requirements for the ingest API:\n- payloads MUST be under 1 MB"],
             ["Update to the requirements: payloads MUST be under 5 MB, the 1 MB limit was too strict."]],
            "under 1 mb", "5 mb",
        ),
        (
            [["tokens are generated by style-dictionary into dist/tokens.css"],
             ["correction: the output is dist/css/tokens.css since the v3 upgrade"]],
            "into dist/tokens.css", "dist/css/tokens.css",
        ),
        # "we have upgraded to X 3.3" is what the project is on now
        (
            [["Hello, kindly note that the loan service uses Spring Boot 3.1."],
             ["Small change: we have upgraded to Spring Boot 3.3 yesterday itself."]],
            "spring boot 3.1", "spring boot 3.3",
        ),
    ],
)  # fmt: skip
def test_later_words_replace_what_they_correct(tmp_path: Path, sessions: list[list[str]], gone: str, kept: str) -> None:
    board = _board(tmp_path, sessions)
    assert not _has(board, gone), board
    assert _has(board, kept), board


def test_a_day_ruled_out_is_not_the_slot_a_new_day_fills(tmp_path: Path) -> None:
    board = _board(tmp_path, [["never deploy on fridays"], ["change of plan: we deploy on thursdays"]])
    assert _has(board, "fridays"), board
    assert _has(board, "thursdays"), board


@pytest.mark.parametrize(
    "said",
    [
        "done with the webhook retries cleanup",
        "ok, shipped the webhook retries fix",
        "I took care of the webhook retries this morning",
        "finished the webhook retries cleanup",
        "the webhook retries cleanup is taken care of",
        "The webhook retries are documented in the wiki now.",
        "webhook retries \u2705",
        "webhook retries fixed in 2.3.1 \U0001f389",
        "The webhook retries cleanup is created and deployed.",
        "the stripe webhook retries are cleaned up now",
        "stripe webhook retries cleaned up this morning.",
        "the stripe webhook retries are cleaned up finally",
        "Done: the stripe webhook retries.",
        "Cleaned up the stripe webhook retries today, valid until the next incident.",
        "cleaned up the stripe webhook retries, all green",
        "the stripe webhook retries cleanup works now, merged it",
        "The stripe webhook retries cleanup is live in production.",
        "The stripe webhook retries cleanup is configured now.",
        "We won't need the stripe webhook retries anymore, the new importer retries by itself.",
    ],
)
def test_a_todo_said_done_is_closed(tmp_path: Path, said: str) -> None:
    todos = ["remind me to clean up the stripe webhook retries", "put the invoice pdf cleanup on the list"]
    board = _board(tmp_path, [todos, [said]])
    assert not _has(board, "webhook"), board
    assert _has(board, "invoice pdf"), board  # the other to-do stays


def test_a_todo_said_as_what_is_so_now_is_closed_only_if_the_sentence_says_nearly_all_of_it(tmp_path: Path) -> None:
    todo = "TODO: make the login helper reuse the session cookie."
    board = _board(tmp_path, [[todo], ["Login helper reuses the session cookie now."]])
    assert not _has(board, "login helper"), board
    board = _board(tmp_path / "3", [["todo: add tests for the sessions model"], ["sessions model has tests now"]])
    assert board == [], board
    board = _board(tmp_path / "2", [[todo], ["The login page shows the cookie banner now."]])
    assert board == ["TODO: make the login helper reuse the session cookie."]


def test_a_todo_said_done_with_its_own_verb_closes_only_a_todo_that_asks_for_it(tmp_path: Path) -> None:
    """ "the tests are skipped now" is no word for done: it closes a to-do to skip them, never one to
    fix the skipped tests."""
    board = _board(tmp_path, [["todo: fix the skipped tests in ci"], ["the tests are skipped now"]])
    assert _has(board, "fix the skipped tests"), board
    board = _board(tmp_path / "2", [["put 'quarantine flaky specs' on the list"], ["flaky specs are quarantined now"]])
    assert not _has(board, "quarantine"), board
    board = _board(
        tmp_path / "3",
        [["Remind me to write the safety comments for every unsafe block."],
         ["Wrote the safety comments for all unsafe blocks."]],
    )  # fmt: skip
    assert board == [], board
    board = _board(
        tmp_path / "5", [["add 'split the vendor chunk' to the backlog"], ["vendor chunk is split, bundle halved"]]
    )
    assert board == [], board
    # another verb, but a word for done: the to-do's words are enough
    board = _board(
        tmp_path / "4",
        [["I'd like to add a troubleshooting section later"],
         ["I wrote the troubleshooting section this morning, so that's off my plate."]],
    )  # fmt: skip
    assert board == [], board


@pytest.mark.parametrize(
    "said",
    [
        "I added a test for the parser",  # a word for done with one word in common: another thing
        "drop the parser thing, it's fine",  # nothing said to hold instead
        "the parser tests are skipped now",  # not the to-do's verb
        "add fuzz tests for the parser now",  # an order, not what is so now
    ],
)
def test_what_closes_and_replaces_nothing(tmp_path: Path, said: str) -> None:
    todos = ["todo: add fuzz tests for the parser", "always run the parser tests before pushing"]
    board = _board(tmp_path, [todos, [said]])
    assert board == ["Todo: add fuzz tests for the parser", "Always run the parser tests before pushing"]


def test_a_todo_said_done_takes_no_room_from_the_sessions_todos(tmp_path: Path) -> None:
    """A session keeps at most four to-dos; a sentence saying one is done adds none, so it must not
    push out one of them."""
    todos = [f"todo: write the {name} runbook" for name in ("billing", "search", "auth", "queue")]
    board = _board(tmp_path, [[*todos, "the flaky specs are quarantined now"]])
    assert len(board) == 4, board


def test_a_value_that_got_later_is_a_fact_not_a_todo(tmp_path: Path) -> None:
    """ "later" as what a thing became is no to-do: the changed time is a fact."""
    from kairosd.consolidation.offline.cues import read

    said = read("update: dbt runs at 04:00 utc now, the upstream export got later", after_agent=True, first=False)
    assert said is not None
    assert said.kind == "fact"
