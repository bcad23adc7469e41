"""The offline extractor by sentence: what a person typed is split from what they pasted, each
sentence is read for a clear cue (precision first), and later words replace or close earlier ones
on the board (issue 22's hard cases and the noise that got through)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.store import BoardStore
from kairosd.consolidation.offline.clauses import is_log_line, sentences
from kairosd.consolidation.offline.cues import classify, read
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.transcripts.read import Message

UTC_ZONE = ZoneInfo("UTC")
ANCHOR = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _session(*typed: str, day: int = 0) -> list[Candidate]:
    messages = []
    for step, text in enumerate(typed):
        when = ANCHOR + timedelta(days=day, minutes=step)
        messages += [Message("user", text, human=True, at=when), Message("assistant", "Done.", at=when)]
    return extract(messages, project="/p", anchor=ANCHOR, zone=UTC_ZONE).candidates


def _kinds(*typed: str) -> list[tuple[str, str]]:
    return [(c.kind, c.text) for c in _session(*typed)]


# ---- sentences and what is pasted ----------------------------------------------------------


def test_sentences_split_after_a_lower_case_full_stop_and_keep_abbreviations() -> None:
    assert sentences("ok looks sane. next: silences. dont ever create silences longer than 24h.") == [
        "ok looks sane.",
        "next: silences.",
        "dont ever create silences longer than 24h.",
    ]
    assert sentences("use e.g. polars here. And pin v1.2.3 please.") == [
        "use e.g. polars here.",
        "And pin v1.2.3 please.",
    ]
    assert sentences("By the way, the API is at https://api.shop.internal:8443.") == [
        "By the way, the API is at https://api.shop.internal:8443."
    ]
    # one rule said in two sentences stays one
    assert sentences("CSS modules only. No tailwind, please.") == ["CSS modules only. No tailwind, please."]
    assert sentences("no dynamic allocation after boot. static buffers only") == [
        "no dynamic allocation after boot. static buffers only"
    ]
    assert sentences("- alertmanager is at a:9093\n- grafana is at g:3000") == [
        "alertmanager is at a:9093",
        "grafana is at g:3000",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "warning: unused variable `amt`, fix later",
        "error[E0308]: mismatched types",
        "app/refund.py:12:5: UP006 Use `list` instead of `List` for type annotation",
        "  12:3  warning  Prefer `const` over `let`  prefer-const",
        "##[warning]Node.js 16 actions are deprecated. Please update to use Node.js 20 instead of Node.js 16.",
        "W1002 10:02:11 warnings.go:70] policy/v1beta1 PodSecurityPolicy is deprecated",
        'level=warn ts=2026-10-01T02:11Z msg="Notify attempt failed, will retry later"',
        "[2026-10-03 01:00:12] WARNING - Task exceeded its SLA. Consider retrying later.",
        "DeprecationWarning: datetime.utcnow() is deprecated, use datetime.now(UTC)",
        "│ Use `aws_s3_bucket_versioning` instead of `versioning` block",
        "FAILED tests/test_sync.py::test_replay - AssertionError: always expected 3 rows",
    ],
)
def test_lines_a_program_printed_are_not_the_persons(line: str) -> None:
    assert is_log_line(line)
    assert sentences(f"look:\n{line}\nwhat now") == ["look:", "what now"]


@pytest.mark.parametrize(
    "line", ["Note: the label column is called churned_90d", "we use uv not poetry", "fyi the db is at db:5433"]
)
def test_lines_a_person_typed_are_kept(line: str) -> None:
    assert not is_log_line(line)


# ---- the hard cases the issue names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # plain facts
        ("fyi the ledger db is at ledger.internal:5433", "fact"),
        ("the webhook listener listens on :8002", "fact"),
        ("terraform is pinned to 1.5.7", "fact"),
        ("the fraud check is behind the checkout_v2 flag", "fact"),
        ("the vpn gateway was renamed to edge-gw-2", "fact"),
        ("heads up: web-7 is being decommissioned friday", "fact"),
        ("Heads up: the blog is moving to a headless CMS next quarter.", "fact"),
        # rules with no rule word
        ("we use uv not poetry", "rule"),
        ("new code should use polars", "rule"),
        ("CSS modules only. No tailwind, please.", "rule"),
        ("orjson is deprecated here, use msgspec", "rule"),
        ("Random seed is always 42 in this repo", "rule"),
        ("jobs must finish in under 15 minutes, split them if not", "rule"),
        # polite questions that are rules
        ("could you stop using any?", "rule"),
        ("Would you mind always running the type check before you say it's done?", "rule"),
        # decisions taken with others
        ("decided with the team: refunds go through the outbox, never direct", "decision"),
        ("we agreed in standup: no new endpoints without an openapi entry", "decision"),
        ("change of plan: we deploy on thursdays now, not tuesdays", "decision"),
        # to-dos
        ("put the retry cleanup on the list", "todo"),
        ("remind me next week to rotate the stripe webhook secret", "todo"),
        ('Please add "migrate the remaining class components" to the backlog.', "todo"),
        ("reminder for next sprint: load test the lobby with 10k bots", "todo"),
        ("Decision from the architecture review: events go to Kafka, not RabbitMQ.", "decision"),
        ("Migrations are run by the deploy pipeline, don't run them by hand.", "rule"),  # the rule clause wins
        ("no unwrap() in the networking code, ever.", "rule"),
        ("so the matchmaker binds to 0.0.0.0:7777", "fact"),
        ("Spring Boot is at 3.2.4 for now, upgrade is planned for Q1.", "fact"),
        ("module path is github.com/acme/billing", "fact"),
        ("Our SDK package on PyPI is acme-sdk and the import name is acme.", "fact"),
        ("Stripe webhooks hit /hooks/stripe, port 8081 in all envs", "fact"),
        ("todo(me): ask legal about the VAT wording on invoices", "todo"),
        ("please no global state, pass deps through the Server struct", "rule"),
        ("All code samples in the docs have to compile, we check them in CI.", "rule"),
        ("When you mention the rate limit, please always link to the limits page.", "rule"),
        ("kill the thing on port 8080", None),  # an imperative, not a fact
        ("we're on rails 7.1, ruby 3.3", "fact"),
        ("no new gems without a heads up in #backend first", "rule"),
        ("the digest feature is behind the weekly_digest flipper flag", "fact"),
        ("jot down: write a data migration for the old digest prefs", "todo"),
        ("we talked it over and we're dropping the digest email for sms", "decision"),
        ("Passwords are hashed with argon2id.", "fact"),
        ("python client version is fixed to 8.11.0", "fact"),  # "fixed to 8.11.0" says nothing is done
        ("conventions: snake_case json fields; cursor pagination, no offsets", "rule"),
        ("v1 endpoints are deprecated; new clients go to v2", "rule"),
        ("please not commit the .env file never", "rule"),
        ("need to remember: write alert for indexing lag", "todo"),
        ("re the limiter: it's 200 rps per token now, not 100", "fact"),
        ("stick to the official clickhouse-connect driver, not the community one", "rule"),
        ("collectors push to kafka topic telemetry.raw", "fact"),
        ("the enricher is in enricher/ and the schema in schema/events.sql", "fact"),
        ("the team signed off on daily partitions, monthly was too coarse", "decision"),
        ("GraphQL is off the table, we stay with REST for the BFF.", "decision"),
        ("ping me tomorrow about the clickhouse upgrade", "todo"),
        ("The BFF is a Node 20 service deployed on Cloud Run.", "fact"),
        ("We only ever return camelCase to the apps.", "rule"),
        ("Timeouts to upstreams are 2 seconds max.", "rule"),
        ("the raw sales extract lands in gs://acme-forecast/raw every night at 2am", "fact"),
        ("prophet gave us garbage so we're using statsforecast from here on", "rule"),
        ("note that the store_id column is a string, not an int", "fact"),
        ("someday we should try hierarchical reconciliation, park it in the backlog", "todo"),
        ("Rule of thumb for this app: every table gets server-side pagination.", "rule"),
        ("ledger writes go through the ledger-writer service only, nothing else touches the ledger tables", "rule"),
        ("after talking to finance we settled on reconciling per currency, not globally", "decision"),
        ("the currency rates come from the fx-rates service on port 7070", "fact"),
        ("heads up: finance wants the recon report by 9am daily", "fact"),
        ("we're going to batch emails per user per hour, the team voted on it", "decision"),
        ("the sender address is noreply@notify.acme.io", "fact"),
        ("idempotency keys are mandatory on every send call", "rule"),
        ("Models are registered in MLflow at mlflow.ml.internal:5000.", "fact"),
        ("We should add drift monitoring to the churn model next sprint.", "todo"),
        ("push the branch and open a PR", None),  # an imperative, not "push goes through ..."
        ("toolchain is arm-none-eabi-gcc 12.2, zephyr 3.5", "fact"),
        ("no dynamic allocation after boot.", "rule"),
        ("no dynamic allocation after boot. static buffers only", "rule"),
        ("no luck in prod", None),
        ("all ISRs shall be shorter than 50us, defer work to a workqueue", "rule"),
        ("Let's make it a rule that every bug fix PR comes with a regression test.", "rule"),
        ("no worries, just use whatever", None),
    ],
)
def test_hard_cases(sentence: str, kind: str) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


@pytest.mark.parametrize(
    ("typed", "kind", "text"),
    [
        ("ugh wait no, not 5.4.0, pin it to 5.6.1", "correction", "Not 5.4.0, pin it to 5.6.1"),
        ("wait, sorry, I was wrong: the worker runs on batch-04 now", "fact", "The worker runs on batch-04 now"),
        ("sorry, I was wrong about the pool: it's called spot-batch-2", "fact", "The pool is called spot-batch-2"),
        ("scratch that, terraform is pinned to 1.6.2 now", "fact", "Terraform is pinned to 1.6.2 now"),
        ("no, the worker should retry 3 times, not 5", "correction", "The worker should retry 3 times, not 5"),
    ],
)
def test_corrections_keep_what_is_right_now(typed: str, kind: str, text: str) -> None:
    signal = read(typed, after_agent=True, first=True)
    assert signal is not None
    assert (signal.kind, signal.text) == (kind, text)


def test_put_that_on_the_list_is_the_sentence_before() -> None:
    assert _kinds("ok. write the runbook for the disk alert. put that on the list") == [
        ("todo", "Write the runbook for the disk alert: put that on the list")
    ]
    assert _kinds("put that on the list") == []  # "that" is what the agent said: unknown, kept out


# ---- the noise that got through ------------------------------------------------------------


@pytest.mark.parametrize(
    "typed",
    [
        "actually use a dict there",  # a one-off
        "actually use a dict there, not a list",  # a one-off, even with a contrast
        "use a Map in this one, not an object",
        "actually make it horizontal",
        "no not like that, put it in the cli module",
        "what did that helper `to_cents` do again? the one from yesterday",  # a question about earlier work
        "did the migration from last time actually run?",
        "should we always use the retry helper from yesterday? we added it last week",
        "here's the log:\n```\nwarning: unused variable `amt`, fix later\n```",  # a compiler warning saying later
        "warning: unused variable `amt`, fix later",  # the same, pasted without a fence
        "app/refund.py:12:5: UP006 Use `list` instead of `List` for type annotation\nwhats this",  # a linter
        "Here is what the linter said:\n  40:1  error  Always use `===` instead of `==`  eqeqeq",
        "interesting. never would have guessed",  # chit-chat with a rule word
        "Could you use a Map here instead?",
        "Hmm, maybe we should rethink the spacing scale at some point? Not sure yet.",
        "lol nice",
    ],
)
def test_noise_makes_no_entry(typed: str) -> None:
    assert _kinds(typed) == []
    assert _kinds("Set it up.", typed) == []  # nor when it answers the agent


# ---- later words replace, done to-dos close --------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> BoardStore:
    return BoardStore(tmp_path / "boards", lambda: ANCHOR)


def _board(store: BoardStore, *sessions: tuple[str, ...]) -> list[str]:
    for day, typed in enumerate(sessions):
        store.merge("/p", _session(*typed, day=day))
    return sorted(e.text for e in store.load("/p").entries)


def test_a_change_of_plan_across_sessions_replaces_the_old_rule(store: BoardStore) -> None:
    board = _board(
        store, ("from now on, deploy on tuesdays",), ("change of plan: we deploy on thursdays now, not tuesdays",)
    )
    assert board == ["Change of plan: we deploy on thursdays now, not tuesdays"]


def test_a_correction_within_a_session_replaces_the_fact(store: BoardStore) -> None:
    board = _board(
        store, ("the stripe client is pinned to 5.4.0, dont bump it", "ugh wait no, not 5.4.0, pin it to 5.6.1")
    )
    assert board == ["Not 5.4.0, pin it to 5.6.1"]
    board = _board(
        store, ("the sync worker runs on batch-03",), ("wait, sorry, I was wrong: the worker runs on batch-04 now",)
    )
    assert "The sync worker runs on batch-03" not in board
    assert "The worker runs on batch-04 now" in board


def test_moving_away_from_a_tool_replaces_the_fact_about_it(store: BoardStore) -> None:
    board = _board(
        store, ("Hilt is our DI framework.",), ("Change of heart on the DI thing, we're moving from Hilt to Koin.",)
    )
    assert board == ["Change of heart on the DI thing, we're moving from Hilt to Koin."]


def test_a_todo_said_done_is_closed(store: BoardStore) -> None:
    board = _board(
        store,
        ("put the iam cleanup on the list", "remind me next week to rotate the secret"),
        ("the iam thing is fixed",),
    )
    assert board == ["Remind me the week of 2026-11-23 to rotate the secret"]
    [close] = [c for c in _session("got read access today!! so that's done") if c.action == "close"]
    assert (close.kind, close.text) == ("todo", "got read access on 2026-11-20!! so that's done")


def test_a_todo_said_done_in_few_words_is_closed() -> None:
    signal = read("load test done, lobby held 10k fine", after_agent=True, first=False)
    assert signal is not None
    assert (signal.kind, signal.action) == ("todo", "close")
    # a decision that mentions something gone is a decision, not a close
    signal = read("we went with redis sorted sets, the old postgres table is gone", after_agent=True, first=False)
    assert signal is not None
    assert (signal.kind, signal.action) == ("decision", "add")


@pytest.mark.parametrize(
    "typed",
    [
        "legal answered about VAT, sorted",
        "I wrote the troubleshooting section, so that's off my plate.",
        "idempotency key for recon runs is in, shipped this morning",
    ],
)
def test_other_ways_to_say_done(typed: str) -> None:
    signal = read(typed, after_agent=True, first=False)
    assert signal is not None
    assert signal.action == "close"


def test_a_todo_not_yet_done_is_not_closed() -> None:
    assert _session("the iam thing is not fixed yet") == []
    assert _session("is the iam thing fixed?") == []


def test_a_new_name_or_place_for_the_same_subject_replaces_the_fact(store: BoardStore) -> None:
    board = _board(store, ("The topic is called orders.v1.",), ("Small update, the topic got renamed to orders.v2.",))
    assert board == ["The topic got renamed to orders.v2."]
    board = _board(
        store,
        ("the metrics endpoint is /metrics on port 9100",),
        ("correction on yesterday: metrics is on port 9102, 9100 is the node exporter",),
    )
    assert "The metrics endpoint is /metrics on port 9100" not in board


def test_scratch_what_i_said_about_x_replaces_x(store: BoardStore) -> None:
    board = _board(
        store,
        ("We chose Tanstack Query over SWR, decided in the frontend sync.",),
        ("Wait, scratch what I said about Tanstack, the sync went the other way: we're on SWR.",),
    )
    assert board == ["We're on SWR (not Tanstack)"]


def test_a_name_that_grew_a_version_replaces_the_old_name(store: BoardStore) -> None:
    board = _board(
        store,
        ("the forecast job runs on airflow, dag name is forecast_weekly",),
        ("oops the dag is called forecast_weekly_v2 now, they redeployed it",),
    )
    assert board == ["The dag is called forecast_weekly_v2 now, they redeployed it"]


def test_a_small_correction_replaces_what_it_corrects(store: BoardStore) -> None:
    board = _board(
        store,
        ("We agreed at the guild that RFCs stay open for review for at least five working days.",),
        ("Small correction: review stays open for three working days, not five.",),
    )
    assert board == ["Review stays open for three working days, not five."]
    # "urgh no, ..." answers the agent: the same session, after the agent spoke
    board = _board(
        store,
        (
            "the currency rates come from the fx-rates service on port 7070",
            "urgh no, rates are on port 7071, 7070 is the old one",
        ),
    )
    assert "The currency rates come from the fx-rates service on port 7070" not in board


def test_a_value_changed_replaces_the_old_value(store: BoardStore) -> None:
    board = _board(
        store,
        ("the sender address is noreply@notify.acme.io",),
        ("sender address changed to alerts@notify.acme.io btw",),
    )
    assert board == ["Sender address changed to alerts@notify.acme.io btw"]


# ---- principles from the seventeenth and eighteenth (blind) writers -------------------------


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # a rule said with its rule word last, or as what is important
        ("is better if every module have its own README, always", "rule"),
        ("use zod for every api input no exceptions", "rule"),
        ("It is important that all rules declare their conda environment explicitly.", "rule"),
        # a to-do deferred in so many words
        ("We should add a MultiQC report at the end, but not today.", "todo"),
        # a decision reached after talking it over, or opened by a connective
        ("we talked it over as a team and decided to drop Core Data for SwiftData", "decision"),
        ("Furthermore, we have decided in the group meeting to use Salmon instead of STAR.", "decision"),
        # a change made is a decision whatever time word comes with it
        ("we moved the alerts from #ops-alerts to #sre-pager, update the docs", "decision"),
        ("switched db from neon to supabase yesterday", "decision"),
        ("we moved off vercel to fly.io, app name invoicer-prod", "decision"),
        # facts: a name's value in a later clause, how something deploys, targets and builds
        ("the on-call rotation is in pagerduty, schedule name is OPS-PRIMARY", "fact"),
        ("db is on neon, project id is shy-frog-482913", "fact"),
        ("the docs site deploys with github pages from the gh-pages branch", "fact"),
        ("the app targets iOS 16 and up, and we build with Xcode 15.2 on the CI runners.", "fact"),
        ("emails go out through resend, from billing@invoicer.app", "fact"),
        ("The pipeline is written in Snakemake 7.32.", "fact"),  # "written in": not a to-do said done
        # and what stays out
        ("deploy to staging first", None),
        ("maybe we moved the cache from redis to memcached, not sure", None),
        ("is better if you rename it, always confusing otherwise?", None),
    ],
)
def test_principles_from_the_later_blind_writers(sentence: str, kind: str | None) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


def test_a_correction_with_an_article_is_a_correction() -> None:
    signal = read("A correction to what I said yesterday: the annotation is GENCODE 45, not 44.", after_agent=False,
                  first=False)  # fmt: skip
    assert signal is not None
    assert (signal.kind, signal.text) == ("fact", "The annotation is GENCODE 45, not 44.")  # a corrected fact


@pytest.mark.parametrize(
    "typed",
    [
        "dunning emails are live",
        "the nat gateway thing is checked, we keep one per az",
        "Actually, you know what, let's not bother with the screenshots, marketing is doing them.",
        "The rename is announced, we can forget about that reminder.",
    ],
)
def test_a_todo_live_checked_or_dropped_is_closed(typed: str) -> None:
    assert [c.action for c in _session(typed)] == ["close"]


def test_a_change_of_plan_that_rules_a_tool_out_replaces_the_fact_naming_it(store: BoardStore) -> None:
    board = _board(store, ("we deploy on vercel, prod branch is main",), ("we moved off vercel to fly.io",))
    assert board == ["We moved off vercel to fly.io"]
    # a standing contrast is not a change of plan: the fact that names prod stays
    board = _board(store, ("the backup job runs on the prod replica",), ("use the staging db for tests, not prod",))
    assert "The backup job runs on the prod replica" in board


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("no unsafe outside src/raw.rs", "rule"),  # a path as what it is outside of
        ("no job should write to the curated bucket directly", "rule"),
        ("Composer is upgraded, we are now on Airflow 2.9.", "fact"),  # "we are now on X 2.9", in a later clause
        ("we upgraded to Unreal 5.4 over the weekend", "fact"),
        ("benches use criterion 0.5", "fact"),
        ("msrv -> 1.75 now", "fact"),
        ("benches moved from criterion to divan, criterion is gone from dev-deps", "decision"),
        ("We have moved audit logging from the AuditTrail middleware to the audit service.", "decision"),
        ("release notes go in CHANGELOG.md, keep-a-changelog format", "fact"),
        ("p4 is the source of truth for assets", "fact"),
        ("The service is deployed to the AWS account 4417-2290-1183 in us-east-1.", "fact"),
        ("All access to patient records is audited through the AuditTrail middleware.", "fact"),
        ("Tokens issued by Okta expire after 15 minutes.", "fact"),
        ("Effective immediately, token lifetime is reduced to 10 minutes.", "fact"),
        ("the raw layer is landing in gs://acme-lake-raw", "fact"),
        ("don't forget we need to update the artist onboarding doc", "todo"),
        # and what stays out
        ("the signature is fn len(&self) -> usize", None),
        ("go in there and fix it", None),
        ("no idea why the job should fail", None),
    ],
)
def test_principles_from_the_nineteenth_and_twentieth_writers(sentence: str, kind: str | None) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


def test_a_context_list_is_facts() -> None:
    assert _kinds("ctx:\n- crate is no_std\n- msrv 1.70\n- fix the flaky test\n- why is ci slow?") == [
        ("fact", "Crate is no_std"),
        ("fact", "Msrv 1.70"),
    ]
    assert _kinds("- crate is no_std\n- msrv 1.70") == []  # a list with no context head: not said as facts


def test_a_correction_that_narrows_a_rule_is_kept() -> None:
    signal = read("wait actually no, 4k textures are fine now for hero assets only", after_agent=True, first=True)
    assert signal is not None
    assert (signal.kind, signal.text) == ("correction", "4k textures are fine now for hero assets only")


@pytest.mark.parametrize("typed", ["0.4.0 is out", "The threat model for the export feature has been approved."])
def test_out_and_approved_say_done(typed: str) -> None:
    assert [c.action for c in _session(typed)] == ["close"]
    assert [c.action for c in _session("0.4.0 is out of date")] == []


def test_a_todo_is_closed_by_the_roots_of_its_words(store: BoardStore) -> None:
    board = _board(store, ("todo: fuzz the push/pop path with cargo-fuzz", "remind me to cut 0.4.0"), ("fuzzing done",))
    assert board == ["Remind me to cut 0.4.0"]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # a time word in a change statement says when, it does not hedge
        ("envoy bumped to 1.30 yesterday, 1.28 gone", "fact"),
        ("it failed again yesterday", None),
        # someone's words relayed by name
        ("update: Dana says we're on React 19 now", "fact"),
        ("Dana also wants every PR to have screenshots if it touches UI", "rule"),
        # a quoted sentence after a speech verb is someone else's words
        ('The designer said: "always use the primary color for the FAB".', None),
        # corrections that name what was wrong
        ("sorry, the staging URL I gave you was wrong, it's staging.shop-demo.dev, not .io", "fact"),
        ("Correction on the SLA: 48 hours for non-urgent PRs, 24 for hotfixes.", "correction"),
        # fragments and other shapes
        ("Postgres 15 on RDS.", "fact"),
        ("tls certs via cert-manager w/ letsencrypt prod issuer", "fact"),
        ("For the DI we are using Hilt, it is already everywhere in the code.", "fact"),
        ("envoy 1.28 in front of everything", "fact"),
        ("rate limit on /login = 20 req/min per ip", "fact"),
        ("the frontend is a Vite + React 18 app", "fact"),
        ("Also the analytics are sent with Firebase, not with Mixpanel.", "fact"),
        ("We have to respect Material 3 for all the new components.", "rule"),
        ("It is not possible to use Gson anymore, we use kotlinx.serialization.", "rule"),
        ("NO direct pushes to main.", "rule"),
        ("We need to write the migration for the Room database before the release.", "todo"),
        ("I need to remember to add tests for the Cart component tomorrow", "todo"),
        ("We're moving background jobs off Sidekiq onto GoodJob.", "decision"),
        ("No exceptions.", None),  # alone it says nothing
        ("set x = 5 in the test", None),
    ],
)
def test_principles_from_the_twenty_first_and_twenty_second_writers(sentence: str, kind: str | None) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


def test_a_heading_sentence_is_read_with_the_next_and_a_stressing_one_makes_a_rule() -> None:
    assert _kinds("New decision. We're moving background jobs off Sidekiq onto GoodJob. Less infra.") == [
        ("decision", "New decision: We're moving background jobs off Sidekiq onto GoodJob.")
    ]
    assert _kinds("Code review SLA is 24 hours. No exceptions.") == [
        ("rule", "Code review SLA is 24 hours. No exceptions.")
    ]


def test_scratching_what_was_said_about_x_replaces_it(store: BoardStore) -> None:
    board = _board(
        store,
        ("tls certs via cert-manager w/ letsencrypt prod issuer",),
        ("scratch what i said about cert-manager, we use aws acm for the public certs now",),
    )
    assert board == ["We use aws acm for the public certs now (corrects what was said about cert-manager)"]


def test_a_todo_in_place_is_closed() -> None:
    assert [c.action for c in _session("cert expiry alert in place")] == ["close"]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("the features come from the feature store, dataset is ml_features_v3", "fact"),
        ("we train with lightgbm 4.1, not xgboost", "fact"),
        ("ahh I said wrong before, we train with lightgbm 4.3 not 4.1", "fact"),
        ("och wait, I tell a lie, it's only mx1 now", "correction"),
        ("Configuration is loaded from Consul KV under the prefix gateway/", "fact"),
        ("We have upgraded the toolchain to Go 1.22 across the monorepo", "fact"),
        ("Also, a change of plan regarding deployment: the gateway is now a Deployment", "decision"),
        ("the mail relay is postfix on mx1.corp.example", "fact"),
        ("Social login is now IN scope for v1 (Google only)", "decision"),
        ("play with it using python 3.12 if you like?", None),
    ],
)
def test_principles_from_the_twenty_third_and_twenty_fourth_writers(sentence: str, kind: str | None) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


def test_the_items_of_a_spec_are_rules() -> None:
    typed = (
        "Spec for the onboarding flow:\n- Users MUST verify their email first\n- The flow SHOULD take under 2 minutes"
    )
    assert _kinds(typed) == [
        ("rule", "Users MUST verify their email first"),
        ("rule", "The flow SHOULD take under 2 minutes"),
    ]


def test_in_scope_after_out_of_scope_and_dropping_replace(store: BoardStore) -> None:
    board = _board(
        store,
        ("Let's go with magic links instead of passwords for v1.",),
        ("We're dropping magic links, passwords plus Google SSO instead.",),
    )
    assert board == ["We're dropping magic links, passwords plus Google SSO instead."]


@pytest.mark.parametrize(
    ("typed", "kinds"),
    [
        ("Do not forget to update the operator manual before the next production run.", ["todo"]),
        ("Team rule: no new Java files, Kotlin only.", ["rule"]),
        ("A general rule for this codebase: no dynamic allocation after the scheduler starts.", ["rule"]),
        ("ok so context: charts are recharts, state is zustand", ["fact"]),
        ("The feature flags come from ConfigCat.", ["fact"]),
        ("The jig is on firmware 2.5.0 since yesterday, the vendor shipped a fix.", ["fact"]),
        ("Context for today:\n- app is Kotlin, minSdk 26\n- DI is Koin", ["fact", "fact"]),
        ("I think the jig was on firmware 2.5.0 yesterday", []),  # unsure, and an event
    ],
)
def test_principles_from_the_twenty_eighth_to_thirtieth_writers(typed: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in _kinds(typed)] == kinds


def test_has_been_updated_closes_the_todo(store: BoardStore) -> None:
    store.merge("p", _session("Don't forget to update the operator manual."))
    store.merge("p", _session("The operator manual has been updated.", day=1))
    assert [e.text for e in store.load("p").entries if e.kind == "todo"] == []


@pytest.mark.parametrize(
    ("typed", "kinds"),
    [
        ("thats from staging, look at main.go:42", []),  # a pronoun without its apostrophe names nothing
        ("Please keep the raw k6 JSON output of every run in results/.", []),  # an order is no fact
        ("Our test environment is qa.shop.test and it is reset every night at 01:00.", ["fact"]),
        ("The threshold should be 350 ms for this run only.", []),
    ],
)
def test_principles_from_the_thirty_first_to_thirty_third_writers(typed: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in _kinds(typed)] == kinds


@pytest.mark.parametrize(
    "typed",
    ["The new DAG is documented in the wiki.", "The ConfigCat SDK key is rotated.", "old cron entries are cleaned up"],
)
def test_documented_rotated_and_cleaned_up_say_done(typed: str) -> None:
    said = read(typed, after_agent=True, first=True)
    assert said is not None
    assert said.action == "close"


@pytest.mark.parametrize(
    ("typed", "kinds"),
    [
        ("Policy: all secrets come from Vault, nothing in env files.", ["rule"]),
        ("One thing that is non-negotiable: every run config gets committed before the run starts.", ["rule"]),
        ("Marta confirmed: yes every view needs a permission class", ["rule"]),
        # a markdown code block (four spaces in) is pasted, whatever it says
        ("semgrep:\n  jinja2.audit\n    You should always use Flask's render_template.\n\nfix the SQL one", []),
    ],
)
def test_principles_from_the_thirty_fourth_to_thirty_sixth_writers(typed: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in _kinds(typed)] == kinds


@pytest.mark.parametrize(
    ("typed", "kinds"),
    [
        ("action item: add cpu requests to the checkout deployment", ["todo"]),
        ("the payment provider's status page is status.payco.com", ["fact"]),
        ("We're moving the MSRV to 1.78 for the new let-else in the compaction code.", ["decision"]),
        ("Please put the partial refunds topic in the backlog, is complicated.", ["todo"]),
        ("For the admin, every destructive action needs a confirmation dialog.", ["rule"]),
        ("Team convention, for good: money math uses Decimal end to end.", ["rule"]),
    ],
)
def test_principles_from_the_fortieth_to_forty_second_writers(typed: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in _kinds(typed)] == kinds


@pytest.mark.parametrize(
    "typed", ["Partial refunds are implemented, finally!", "Lock screen widgets are shipped in 2.1 beta."]
)
def test_implemented_and_shipped_in_a_version_say_done(typed: str) -> None:
    said = read(typed, after_agent=True, first=True)
    assert said is not None
    assert said.action == "close"


def test_written_in_a_language_is_still_a_fact() -> None:
    said = read("the api is written in go 1.22", after_agent=True, first=True)
    assert said is not None
    assert (said.kind, said.action) == ("fact", "add")


def test_the_outcome_of_a_meeting_is_a_decision_and_todays_stays_a_possessive() -> None:
    said = _kinds("Outcome of today's planning: the standup bot is frozen, no new features this quarter.")
    assert [kind for kind, _ in said] == ["decision"]
    assert said[0][1].startswith(f"Outcome of {ANCHOR.date().isoformat()}'s planning:")


# ---- the sixth round (tuned on the fresh4 and fresh5 writers; their sentences are not copied) ----------


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # a statement that also forbids something is an instruction
        ("Outbound calls go through the circuit breaker; no hand-written retry loops.", "rule"),
        ("Touch targets are 48px minimum on every screen.", "rule"),
        ("The deploy key is in 1password under ci-bot (don't paste it anywhere)", "fact"),
        ("For the DI we are using Hilt, it is already everywhere in the code.", "fact"),
        # "later" that is no time, "eventually" inside a preference
        ("The driver is pinned to 2.4.1 because of a regression in later releases.", "fact"),
        ("For this client i prefer plain CSS over a framework, someone else maintains it eventually", "preference"),
        ("decided with the team: we ship it now, not later", "decision"),
        # rules without a rule word
        ("We build with Bazel, not CMake.", "rule"),
        ("Unit tests use pytest-mock, not unittest.mock.", "rule"),
        ("we're using httpx for the client btw, not requests.", "rule"),
        ("Could you also stop adding type: ignore comments?", "rule"),
        ("Some house rules: every handler must be idempotent.", "rule"),
        ("Every example stays self-contained.", "rule"),
        ("One last preference: keep docstrings in Google style.", "preference"),
        ("Going forward I'd like commit messages in the imperative mood.", "preference"),
        ("nit: we use ruff everywhere in this project, not flake8.", "rule"),
        ("nit: rename this variable", None),
        # decisions said mid-sentence or headed "Decided:"
        ("I talked to the lead and we decided the API ships as REST, not gRPC.", "decision"),
        ("Decided: the queue consumer acks after the write.", "decision"),
        ("Decided with the client this morning: invoices go out in EUR only.", "decision"),
        # an order about one thing at hand is not a fact
        ("For E501 split the long line into two.", None),
    ],
)
def test_principles_from_the_fresh4_and_fresh5_writers(sentence: str, kind: str | None) -> None:
    assert classify(sentence, after_agent=True, first=False) == kind


def test_a_short_order_about_it_alone_names_nothing_but_one_that_names_its_thing_is_kept() -> None:
    assert _kinds("Don't build anything for it.") == []
    assert _kinds("Only there, never to a bucket.") == []
    assert _kinds("Don't fix it with waitForTimeout. Ever.") == [("rule", "Don't fix it with waitForTimeout. Ever.")]
    assert [
        kind for kind, _ in _kinds("Errors: thiserror in the libraries, anyhow in the binary. Don't mix them.")
    ] == ["rule"]


def test_a_title_before_a_name_does_not_end_the_sentence() -> None:
    assert sentences("i need to ask dr. patel about the bins. thanks") == [
        "i need to ask dr. patel about the bins.",
        "thanks",
    ]


@pytest.mark.parametrize("typed", ["The wiki page is up now, so that's settled.", "we can cross that one off"])
def test_settled_and_crossed_off_say_done(typed: str) -> None:
    said = read(typed, after_agent=True, first=False)
    assert said is not None
    assert said.action == "close"
