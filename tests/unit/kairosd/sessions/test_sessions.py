"""Live sessions without HTTP: the session target model, the store (scopes, persistence, expiry, claims),
the reminder wording, the block-chain limit, and the run ledger keeping runs a session holds."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from kairosd.api.server import Request
from kairosd.app.wiring import build_app
from kairosd.config import Config, load_config
from kairosd.core.errors import UsageError
from kairosd.core.events import EventBus
from kairosd.core.models import SessionTarget, Task, new_task
from kairosd.core.protocol import SESSION_MAX_WAIT_S
from kairosd.core.records import Outcome, Run
from kairosd.core.reminder import fence_for, reminder_text
from kairosd.scheduling.ledger import RunLedger
from kairosd.sessions.api import DEFAULT_WAIT_S, _timeout
from kairosd.sessions.hub import SessionHub, chain_limit
from kairosd.sessions.store import CLAIM_LEASE, PendingItem, SessionStore, is_inside
from kairosd.system.paths import Paths
from kairosd.testing import FakeClock

T0 = datetime(2026, 10, 31, 9, 0, tzinfo=UTC)


def _item(run_id: str = "r000000000001", task_id: str = "3f2a9c1d", **target: object) -> PendingItem:
    return PendingItem(
        run_id=run_id,
        task_id=task_id,
        prompt="check the deploy",
        scheduled_for=T0,
        planned_for=T0,
        queued_at=T0,
        target={"kind": "session", "user": True, **target},
    )


# ---- the target model ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{}, {"session_id": "a", "user": True}, {"project": "/x", "session_id": "a"}, {"project": "relative/path"}],
)
def test_a_session_target_needs_exactly_one_scope_and_an_absolute_project(fields):
    """No scope, two scopes or a relative project path are refused."""
    with pytest.raises(ValidationError):
        SessionTarget.model_validate({"kind": "session", **fields})


def test_a_task_round_trips_a_session_target_with_its_defaults():
    """A task keeps its session target through JSON; the fallback defaults to inbox; the path is normalised."""
    task = new_task(
        prompt="p", created_at=T0, tz="UTC", cron="0 9 * * *", target={"kind": "session", "project": "/src/app/../app"}
    )
    again = Task.model_validate(json.loads(task.model_dump_json()))
    assert isinstance(again.target, SessionTarget)
    assert (again.target.project, again.target.fallback, again.target.scope) == (
        "/src/app",
        "inbox",
        "project:/src/app",
    )


# ---- the store -------------------------------------------------------------------------------


def test_scopes_pick_the_most_recent_matching_live_session(tmp_path):
    """session_id is exact, project means inside the path (not a sibling with the same prefix), user means
    the most recently active one; the agent filter narrows each; expired sessions never match."""
    clock = FakeClock(T0)
    store = SessionStore(tmp_path / "s.json", clock, ttl=timedelta(hours=1))
    store.touch("claude", "old", T0 - timedelta(hours=2), cwd="/src/app")  # expired
    store.touch("claude", "a", T0 - timedelta(minutes=5), cwd="/src/app/sub")
    store.touch("codex", "b", T0 - timedelta(minutes=1), cwd="/src/application")
    store.touch("gemini", "c", T0, cwd="/home/dev")

    def pick(**target: object) -> str | None:
        found = store.resolve(SessionTarget.model_validate({"kind": "session", **target}), T0)
        return None if found is None else found.session_id

    assert pick(session_id="a") == "a"
    assert pick(session_id="old") is None
    assert pick(project="/src/app") == "a"
    assert pick(project="/src") == "b"
    assert pick(user=True) == "c"
    assert pick(user=True, agent="claude") == "a"
    assert pick(project="/src/app", agent="codex") is None
    assert is_inside("/src/app", "/src/app")
    assert is_inside("/x/y", "/")
    assert not is_inside("/src/apple", "/src/app")


def test_sessions_and_items_survive_a_reload_but_claims_do_not(tmp_path):
    """save() then a new store's load() gives the same sessions and items; a claim (a lease) is not kept."""
    clock = FakeClock(T0)
    store = SessionStore(tmp_path / "sessions.json", clock)
    session, created = store.touch("claude", "s1", T0, cwd="/src/app", transcript_path="/t.jsonl")
    store.add(session, _item())
    token, claimed = store.claim(session, T0, 1)
    assert created
    assert token
    assert claimed
    store.save()
    again = SessionStore(tmp_path / "sessions.json", clock)
    again.load()
    (loaded,) = list(again)
    assert (loaded.agent, loaded.session_id, loaded.cwd, loaded.transcript_path) == (
        "claude", "s1", "/src/app", "/t.jsonl",
    )  # fmt: skip
    (item,) = loaded.items
    assert (item.run_id, item.claim) == ("r000000000001", None)
    assert oct((tmp_path / "sessions.json").stat().st_mode & 0o777) == "0o600"


def test_a_temp_file_left_by_an_interrupted_save_is_removed_at_load(tmp_path, caplog):
    """A crash between write and rename leaves sessions.json.tmp-<pid>-<hex>: load removes it, the file loads."""
    clock = FakeClock(T0)
    store = SessionStore(tmp_path / "sessions.json", clock)
    store.touch("claude", "s1", T0)
    store.save()
    stale = tmp_path / "sessions.json.tmp-123-abcd"
    stale.write_text("{half a doc")
    again = SessionStore(tmp_path / "sessions.json", clock)
    again.load()
    assert [s.session_id for s in again] == ["s1"]
    assert not stale.exists()
    assert "left by an interrupted write" in caplog.text


def test_an_unreadable_sessions_file_is_copied_aside_and_ignored(tmp_path):
    """A corrupt sessions.json never stops kairosd: it is kept as .corrupt-<time> and the store starts empty."""
    path = tmp_path / "sessions.json"
    path.write_text("{not json")
    store = SessionStore(path, FakeClock(T0))
    store.load()
    assert len(store) == 0
    assert [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name] == ["sessions.json.corrupt-20261031T090000Z"]


def test_a_claim_is_exclusive_until_its_lease_lapses(tmp_path):
    """A claimed item is not handed out again until CLAIM_LEASE passed; take() needs the holding claim."""
    clock = FakeClock(T0)
    store = SessionStore(tmp_path / "s.json", clock)
    session, _ = store.touch("claude", "s1", T0)
    store.add(session, _item())
    first, items = store.claim(session, T0, 5)
    assert len(items) == 1
    assert store.claim(session, T0 + CLAIM_LEASE - timedelta(seconds=1), 5) == (None, [])
    second, again = store.claim(session, T0 + CLAIM_LEASE, 5)
    assert second is not None
    assert again
    assert store.take(session, first or "", {"r000000000001"}) == []  # the first claim lost it
    assert [i.run_id for i in store.take(session, second, {"r000000000001"})] == ["r000000000001"]


def test_the_app_takes_the_session_ttl_and_run_history_from_its_one_config(tmp_path):
    """build_app reads no environment variable of its own: KAIROS_SESSION_TTL, KAIROS_RUNS_PER_TASK and
    KAIROS_DISABLE_CRON reach it only through load_config's Config."""
    paths = Paths(tmp_path / "state", tmp_path / "run", tmp_path / "data", tmp_path / "config")
    env = {"TZ": "UTC", "KAIROS_SESSION_TTL": "2m", "KAIROS_RUNS_PER_TASK": "3", "KAIROS_DISABLE_CRON": "1"}
    app = build_app(load_config(paths, env), paths=paths, clock=FakeClock(T0), environ=env)
    assert app.sessions.hub.store.ttl == timedelta(minutes=2)
    assert app.ledger._keep == 3
    assert app.scheduler.config.disabled_reason is not None
    # The same environment, but a Config that did not come from it: build_app does not look past it.
    app = build_app(Config(), paths=paths, clock=FakeClock(T0), environ=env)
    assert app.sessions.hub.store.ttl == timedelta(hours=24)
    assert app.ledger._keep == 50
    assert app.scheduler.config.disabled_reason is None


def test_expired_sessions_are_dropped_and_their_items_fall_back(tmp_path):
    """sweep() removes a session not seen for the ttl, announces it, and (no inbox here) fails its item
    with a reason rather than keeping it forever."""

    async def main() -> None:
        clock = FakeClock(T0)
        ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        ledger.load()
        run = Run(run_id="r000000000001", task_id="3f2a9c1d", scheduled_for=T0, planned_for=T0,
                  outcome=Outcome.QUEUED, awaiting="session")  # fmt: skip
        ledger.record(run)
        events = EventBus(clock.now)
        store = SessionStore(tmp_path / "s.json", clock, ttl=timedelta(hours=1))
        session, _ = store.touch("claude", "s1", T0)
        store.add(session, _item())
        hub = SessionHub(store, ledger, events, clock, {})
        assert await hub.sweep() == []
        clock.advance(3600)
        assert await hub.sweep() == ["s1"]
        assert len(store) == 0
        done = ledger.get("r000000000001")
        assert done.outcome is Outcome.FAILED
        assert done.reason == (
            "claude session s1 expired (not seen for 1 h) before its next turn; no inbox to fall back to"
        )

    asyncio.run(main())


# ---- wording and limits ----------------------------------------------------------------------


def test_the_reminder_fences_the_prompt_longer_than_any_backtick_run_in_it():
    """A prompt holding ``` gets a four-backtick fence; the text names the task and time, is worded as
    kairos' own request at the user's standing instruction, and says it approves nothing."""
    prompt = "run this:\n```sh\nmake test\n```\nthen ``report``"
    text = reminder_text(task_id="3f2a9c1d", task_name="ci", prompt=prompt, scheduled_for=T0, zone="Europe/Berlin")
    assert fence_for(prompt) == "````"
    assert text.startswith(
        "This is kairos, the scheduler the user set up with `kairos integrate`. At the user's standing "
        'instruction, carry out this scheduled task now (task 3f2a9c1d "ci", scheduled for 2026-10-31 10:00 CET).'
    )
    assert f"\n\n````\n{prompt}\n````\n\n" in text
    assert "approves nothing" in text
    assert "system" not in text.lower()
    assert fence_for("no backticks") == "```"


def test_the_reminder_is_the_hooks_own_request_and_never_read_back_as_typed():
    """Claude Code 2.1.332 tells the model that what a hook only relays (another party's words, "the user
    approved") is data, and to follow what the hook itself asks as the user's standing instruction: the
    delivery is kairos' own request, never relayed words. Consolidation still tells it (and the older
    wording, in older transcripts) from what the person typed."""
    from kairosd.consolidation.transcripts.formats import typed_text

    text = reminder_text(task_id="t", task_name=None, prompt="check the deploy log", scheduled_for=T0, zone="UTC")
    assert "standing instruction" in text
    assert "`kairos integrate`" in text
    for relayed in ("as they wrote it", "Their prompt", "the user's prompt", "user approved"):
        assert relayed not in text
    assert typed_text(text) == ""
    assert typed_text("  " + text) == ""
    old = "Scheduled reminder from kairos (task t, scheduled for 2026-10-05 09:30): the user scheduled this prompt"
    assert typed_text(old) == ""
    assert typed_text("check the deploy log") == "check the deploy log"


def test_late_and_catch_up_fires_say_so():
    """A run fired late or as a catch-up says that in its header."""
    late = reminder_text(task_id="t", task_name=None, prompt="p", scheduled_for=T0, zone="UTC", late_by_s=5400)
    caught = reminder_text(task_id="t", task_name=None, prompt="p", scheduled_for=T0, zone="UTC", catch_up=True)
    assert "(fired 1h30m late)" in late
    assert "(a catch-up for a fire missed while kairosd could not run it)" in caught


def test_the_block_chain_stays_under_each_agents_cap():
    """Claude and Copilot cap consecutive blocks at 8, Codex and Gemini have no cap: we block at most 3 in a
    row, fewer when a user lowered Claude's cap, and 3 when they turned it off (0)."""
    assert [chain_limit(a) for a in ("claude", "copilot", "codex", "gemini", "other")] == [3, 3, 3, 3, 3]
    assert [chain_limit("claude", cap) for cap in (1, 2, 3, 0)] == [1, 1, 2, 3]


# ---- the run ledger --------------------------------------------------------------------------


def test_the_ledger_keeps_runs_a_session_holds_across_a_restart_and_its_trimming(tmp_path: Path):
    """A queued run with awaiting=session stays queued when the ledger is loaded again (a plain queued run
    is marked never started), and trimming to keep_per_task never drops it."""
    clock = FakeClock(T0)
    ledger = RunLedger(tmp_path / "runs.jsonl", clock, keep_per_task=2)
    ledger.load()
    held = Run(run_id="rheld", task_id="t1", scheduled_for=T0, planned_for=T0, dispatched_at=T0,
               outcome=Outcome.QUEUED, awaiting="session")  # fmt: skip
    plain = Run(run_id="rplain", task_id="t2", scheduled_for=T0, planned_for=T0, outcome=Outcome.QUEUED)
    ledger.record_many([held, plain])
    for n in range(3):
        when = T0 + timedelta(minutes=n + 1)
        ledger.record(Run(run_id=f"rdone{n}", task_id="t1", scheduled_for=when, planned_for=when,
                          dispatched_at=when, outcome=Outcome.SKIPPED))  # fmt: skip
    again = RunLedger(tmp_path / "runs.jsonl", clock, keep_per_task=2)
    again.load()
    assert again.get("rheld").outcome is Outcome.QUEUED
    assert again.get("rplain").outcome is Outcome.SKIPPED
    assert [r.run_id for r in again.awaiting("session")] == ["rheld"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, DEFAULT_WAIT_S), ("", DEFAULT_WAIT_S), ("2.5", 2.5), ("1e9", SESSION_MAX_WAIT_S)],
)
def test_the_waiters_timeout_defaults_and_is_capped(raw, expected):
    query = {} if raw is None else {"timeout": raw}
    assert _timeout(Request("GET", "/v1/sessions/s1/next", query, None, 0)) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [("x" * 50, "timeout must be a number of seconds, not '" + "x" * 40 + "'"),
     ("-1", "timeout must be 0 or more seconds"), ("inf", "timeout must be a number of seconds, not 'inf'"),
     ("\u0663", "timeout must be a number of seconds, not '\u0663'")],
)  # fmt: skip
def test_a_bad_waiter_timeout_is_one_clear_line(raw, message):
    with pytest.raises(UsageError) as caught:
        _timeout(Request("GET", "/v1/sessions/s1/next", {"timeout": raw}, None, 0))
    assert caught.value.message == message


# ---- bounds (issue 27, finding 4) ------------------------------------------------------------


def test_past_max_sessions_the_longest_idle_go_and_their_items_move_on(tmp_path, caplog):
    """Any client can register any id: past the cap the longest idle session is evicted (announced,
    logged), and its item takes its fallback as if the session had ended; a recently seen one stays."""
    from kairosd.sessions.requests import RegisterRequest

    async def main() -> None:
        clock = FakeClock(T0)
        ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        ledger.load()
        ledger.record(
            Run(run_id="r000000000001", task_id="3f2a9c1d", scheduled_for=T0, planned_for=T0,
                outcome=Outcome.QUEUED, awaiting="session")
        )  # fmt: skip
        events = EventBus(clock.now)
        ended = events.subscribe(frozenset({"session_ended"}))
        store = SessionStore(tmp_path / "s.json", clock, max_sessions=3)
        hub = SessionHub(store, ledger, events, clock, {})
        for name in ("s1", "s2", "s3"):
            await hub.register(RegisterRequest(agent="claude", session_id=name))
            clock.advance(60)
        pinned = _item().model_copy(update={"target": {"kind": "session", "session_id": "s1"}})
        store.add(store.get(("claude", "s1")), pinned)  # for s1 only: no other session may take it
        await hub.register(RegisterRequest(agent="claude", session_id="s1"))  # seen again: now the newest
        clock.advance(60)
        await hub.register(RegisterRequest(agent="claude", session_id="s4"))
        await hub.register(RegisterRequest(agent="claude", session_id="s5"))
        assert sorted(s.session_id for s in store) == ["s1", "s4", "s5"]
        assert [(await anext(ended))["session_id"] for _ in range(2)] == ["s2", "s3"]
        # Logged once, not per eviction (a client registering in a loop must not flood the log).
        assert [r.message for r in caplog.records if "evicted" in r.message] == [
            "1 session(s) evicted, the last claude s2: 3 are registered, the limit (limits.max_sessions); "
            "the longest idle go first"
        ]

        await hub.register(RegisterRequest(agent="claude", session_id="s6"))  # s1 is now the longest idle
        assert (await anext(ended))["reason"] == "evicted"
        await hub.stop()  # lets the fallback in flight finish
        done = ledger.get("r000000000001")
        assert done.outcome is Outcome.FAILED
        assert done.reason == (
            "claude session s1 was evicted (the longest idle of 3, limits.max_sessions) before its next turn; "
            "no inbox to fall back to"
        )
        assert sorted(s.session_id for s in store) == ["s4", "s5", "s6"]

    asyncio.run(main())


def test_registrations_are_written_together_not_one_rewrite_each(tmp_path):
    """A burst of registrations does not rewrite sessions.json per call: the write is coalesced (within
    a couple of seconds) and the stop writes what is left."""
    from kairosd.sessions.requests import RegisterRequest

    async def main() -> None:
        clock = FakeClock(T0)
        ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        ledger.load()
        path = tmp_path / "s.json"
        hub = SessionHub(SessionStore(path, clock), ledger, EventBus(clock.now), clock, {})
        for n in range(50):
            await hub.register(RegisterRequest(agent="claude", session_id=f"s{n}"))
        assert not path.exists()  # nothing written per registration
        await hub.stop()
        assert len(json.loads(path.read_text())["sessions"]) == 50

    asyncio.run(main())
