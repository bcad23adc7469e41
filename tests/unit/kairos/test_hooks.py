"""``kairos hook`` against a kairosd-like harness (real socket, API, scheduler, ledger, inbox and session
parts): each agent's schemas and outputs, the Stop guards, ack-after-output, failure silence, session
scopes, fallbacks, the pending -> delivered run transition, and the asyncRewake waiter.

The hook runs in-process (``kairos.integrations.hook.main`` with stdin and stdout swapped), the daemon on a loop in a
background thread; ``test_hooks_cli.py`` covers the real ``kairos`` processes.
"""

from __future__ import annotations

import io
import socket
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from registry_support import FakeAdapter, fake_agent
from session_support import (
    Kairosd,
    call_hook,
    fixture,
    hook_home,
    hook_kd,
    session_of,
    wait_for,
)

from kairosd.core.errors import UsageError
from kairosd.core.records import Outcome
from kairosd.core.reminder import REMINDER_LEAD
from kairosd.sessions.hub import MAX_CHAIN
from kairosd.sessions.store import CLAIM_LEASE

STOP = {"claude": "Stop", "copilot": "agentStop", "codex": "Stop", "gemini": "AfterAgent"}
START = {"claude": "SessionStart", "copilot": "sessionStart", "codex": "SessionStart", "gemini": "SessionStart"}
PROMPT = {"claude": "UserPromptSubmit", "copilot": "userPromptSubmitted", "codex": "UserPromptSubmit",
          "gemini": "BeforeAgent"}  # fmt: skip
END = {"claude": "SessionEnd", "copilot": "sessionEnd", "codex": "SessionEnd", "gemini": "SessionEnd"}
AGENTS = tuple(STOP)
# Shared with the other hook tests; pytest knows them as the fixtures ``home`` and ``kd``.
FIXTURES = (hook_home, hook_kd)


def _start(monkeypatch, agent: str, **changes: Any) -> dict[str, Any]:
    """SessionStart of ``agent``'s recorded session; returns its payload."""
    payload = fixture(agent, START[agent], **changes)
    assert call_hook(monkeypatch, agent, START[agent], payload).code == 0
    return payload


def _queue(kd: Kairosd, prompt: str = "check the deploy", **target: Any) -> str:
    """Add a session-target task, fire it, and return the run id (queued for the session)."""
    task_id = kd.add(prompt, {"kind": "session", **(target or {"user": True})}, overlap="queue")
    return kd.fire(task_id)


async def _no_check(target: Any) -> None:
    """A delivery's add-time check that accepts everything: for tasks stored under other conditions."""


def _reason_of(agent: str, output: dict[str, Any]) -> str:
    assert output["decision"] == ("deny" if agent == "gemini" else "block")
    assert set(output) == {"decision", "reason"}
    return str(output["reason"])


# ---- each agent's turn boundary --------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_stop_delivers_one_item_as_block_and_reason_then_the_run_is_delivered(kd, monkeypatch, agent):
    """A run for a live session is queued ("waiting for <agent> session X's next turn"); the agent's Stop
    hook returns it as block+reason (Gemini: deny+reason), acknowledges it, and the run becomes delivered
    with a run_finished event; the next Stop has nothing to say."""
    payload = _start(monkeypatch, agent)
    sid = session_of(payload)
    run_id = _queue(kd, "summarise ```the``` open PRs")
    queued = kd.run_record(run_id)
    assert (queued.outcome, queued.awaiting) == (Outcome.QUEUED, "session")
    waiting = f"waiting for {agent} session {sid}'s next turn"
    if agent == "codex":  # its idle wake declined: the harness has no Codex config or app-server
        assert queued.reason.startswith(waiting + " (not queued with codex queue: ")
    else:
        assert queued.reason == waiting
    assert kd.events_of("run_pending")[-1]["run_id"] == run_id

    hook = call_hook(monkeypatch, agent, STOP[agent], fixture(agent, STOP[agent]))
    assert hook.code == 0
    reason = _reason_of(agent, hook.output)
    assert reason.startswith(f"{REMINDER_LEAD} At the user's standing instruction, carry out this scheduled task now")
    assert "\n````\nsummarise ```the``` open PRs\n````\n" in reason
    done = kd.run_record(run_id)
    assert (done.outcome, done.awaiting) == (Outcome.DELIVERED, None)
    assert done.reason == f"delivered into {agent} session {sid} by its {STOP[agent]} hook"
    assert [e["outcome"] for e in kd.events_of("run_finished") if e["run_id"] == run_id] == ["delivered"]
    assert kd.pending() == []
    again = call_hook(monkeypatch, agent, STOP[agent], fixture(agent, STOP[agent]))
    assert (again.code, again.stdout) == (0, "")


@pytest.mark.parametrize("agent", AGENTS)
def test_stop_hook_active_means_no_block(kd, monkeypatch, agent):
    """A Stop that already continues because of a Stop hook (stop_hook_active) gets no output; the item waits."""
    _start(monkeypatch, agent)
    run_id = _queue(kd)
    hook = call_hook(monkeypatch, agent, STOP[agent], fixture(agent, STOP[agent], stop_hook_active=True))
    assert (hook.code, hook.stdout) == (0, "")
    assert kd.run_record(run_id).outcome is Outcome.QUEUED
    assert kd.pending() == [run_id]


def test_consecutive_blocks_stop_at_the_chain_limit_even_when_stop_hook_active_lies(kd, monkeypatch):
    """With an agent that always says stop_hook_active=false, at most MAX_CHAIN Stops in a row block; the
    next one lets the turn end, and then a new chain may start."""
    _start(monkeypatch, "codex")
    runs = [_queue(kd, f"item {n}") for n in range(MAX_CHAIN + 2)]
    outputs = [call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop")).stdout for _ in range(MAX_CHAIN + 1)]
    assert [bool(o) for o in outputs] == [True] * MAX_CHAIN + [False]
    assert call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop")).stdout
    delivered = [r for r in runs if kd.run_record(r).outcome is Outcome.DELIVERED]
    assert delivered == runs[: MAX_CHAIN + 1]


def test_a_lowered_claude_cap_lowers_the_chain(kd, monkeypatch):
    """CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=2 in the hook's environment allows one block in a row, not three."""
    monkeypatch.setenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2")
    _start(monkeypatch, "claude")
    for n in range(3):
        _queue(kd, f"item {n}")
    outputs = [call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).stdout for _ in range(3)]
    assert [bool(o) for o in outputs] == [True, False, True]


def test_an_item_is_acknowledged_only_after_its_output_was_written(kd, monkeypatch):
    """When writing the hook's output fails, nothing is acknowledged: the run stays queued, and once the claim
    lapses the next Stop hands the same item out again."""
    _start(monkeypatch, "claude")
    run_id = _queue(kd)
    broken = call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop"), broken_stdout=True)
    assert broken.code == 0
    assert kd.run_record(run_id).outcome is Outcome.QUEUED
    assert call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).stdout == ""  # still claimed
    kd.clock.advance(CLAIM_LEASE.total_seconds())
    hook = call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop"))
    assert "check the deploy" in _reason_of("claude", hook.output)
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


# ---- session start, prompts, end -------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_session_start_registers_and_returns_pending_items_as_context(kd, monkeypatch, agent):
    """SessionStart registers the session (agent, id, cwd, transcript) and hands over what waits for it as
    additional context in the agent's shape; the runs become delivered."""
    payload = fixture(agent, START[agent])
    sid = session_of(payload)
    kd.call(lambda: kd.hub.store.touch(agent, sid, kd.clock.now(), cwd="/home/dev/src/app"))
    runs = [_queue(kd, "first", session_id=sid), _queue(kd, "second", session_id=sid)]
    hook = call_hook(monkeypatch, agent, START[agent], payload)
    assert hook.code == 0
    if agent == "copilot":
        assert set(hook.output) == {"additionalContext"}
        context = hook.output["additionalContext"]
    else:
        assert set(hook.output) == {"hookSpecificOutput"}
        specific = hook.output["hookSpecificOutput"]
        assert set(specific) == {"hookEventName", "additionalContext"}
        assert specific["hookEventName"] == "SessionStart"
        context = specific["additionalContext"]
    assert context.index("\nfirst\n") < context.index("\nsecond\n")
    assert [kd.run_record(r).outcome for r in runs] == [Outcome.DELIVERED, Outcome.DELIVERED]
    (view,) = kd.sessions_view()
    assert (view["agent"], view["session_id"], view["cwd"], view["pending"]) == (agent, sid, payload["cwd"], 0)
    transcript = payload.get("transcript_path")
    if transcript:
        assert view["transcript_path"] == transcript


def test_session_start_without_items_says_nothing(kd, monkeypatch):
    """A SessionStart with nothing pending registers the session and prints nothing."""
    assert call_hook(monkeypatch, "claude", "SessionStart", fixture("claude", "SessionStart")).stdout == ""
    assert [s["agent"] for s in kd.sessions_view()] == ["claude"]
    assert kd.events_of("session_started")[0]["session_id"] == session_of(fixture("claude", "SessionStart"))


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_user_prompt_submit_returns_due_items_as_context(kd, monkeypatch, agent):
    """UserPromptSubmit (Gemini: BeforeAgent) adds due items next to the user's prompt as additional context."""
    _start(monkeypatch, agent)
    run_id = _queue(kd)
    hook = call_hook(monkeypatch, agent, PROMPT[agent], fixture(agent, PROMPT[agent]))
    event_name = "BeforeAgent" if agent == "gemini" else "UserPromptSubmit"
    specific = hook.output["hookSpecificOutput"]
    assert specific["hookEventName"] == event_name
    assert set(specific) == {"hookEventName", "additionalContext"}
    assert "check the deploy" in specific["additionalContext"]
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


def test_copilot_prompt_hook_claims_nothing_because_copilot_drops_its_output(kd, monkeypatch):
    """Copilot ignores a userPromptSubmitted command hook's output: the hook prints nothing and the item
    waits for agentStop, where it is delivered."""
    _start(monkeypatch, "copilot")
    run_id = _queue(kd)
    hook = call_hook(monkeypatch, "copilot", "userPromptSubmitted", fixture("copilot", "userPromptSubmitted"))
    assert (hook.code, hook.stdout) == (0, "")
    assert kd.run_record(run_id).outcome is Outcome.QUEUED
    stop = call_hook(monkeypatch, "copilot", "agentStop", fixture("copilot", "agentStop"))
    assert "check the deploy" in _reason_of("copilot", stop.output)


@pytest.mark.parametrize("agent", AGENTS)
def test_session_end_deregisters_hands_over_for_consolidation_and_falls_back(kd, monkeypatch, agent):
    """SessionEnd removes the session, records the consolidation hand-over with its fields (the transcript from
    an earlier hook when the payload has none), and the pending item goes to the inbox named after the session
    id (the default fallback)."""
    start = _start(monkeypatch, agent)
    sid = session_of(start)
    stop = fixture(agent, STOP[agent])
    assert call_hook(monkeypatch, agent, STOP[agent], stop).stdout == ""  # nothing due yet; it tells the transcript
    run_id = _queue(kd, session_id=sid)
    end = fixture(agent, END[agent])
    hook = call_hook(monkeypatch, agent, END[agent], end)
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")
    assert kd.sessions_view() == []
    (handover,) = kd.call(lambda: list(kd.handovers))
    assert {k: handover[k] for k in ("agent", "session_id", "cwd", "reason")} == {
        "agent": agent, "session_id": sid, "cwd": end["cwd"], "reason": end["reason"],
    }  # fmt: skip
    # Copilot's sessionEnd carries no transcript: the one its agentStop reported is handed over.
    assert handover["transcript_path"] == (end.get("transcript_path") or stop["transcriptPath"])
    assert "spawned" not in handover
    done = wait_for(lambda: kd.run_record(run_id).outcome is Outcome.DELIVERED and kd.run_record(run_id), "fallback")
    assert done.reason == (
        f"{agent} session {sid} ended ({end['reason']}) before its next turn; "
        f"delivered to inbox {sid!r} (fallback=inbox)"
    )
    (item,) = kd.call(lambda: kd.inbox.list(sid))
    assert (item.id, item.prompt) == (run_id, "check the deploy")


def test_an_agent_kairos_spawned_is_not_a_live_session(kd, monkeypatch):
    """With KAIROS_SPAWNED=1 (a background task's agent runs the user's hooks too) the hooks neither register
    the session nor hand it prompts; its SessionEnd still tells consolidation, marked spawned."""
    _start(monkeypatch, "claude")  # the user's own session
    run_id = _queue(kd)
    monkeypatch.setenv("KAIROS_SPAWNED", "1")
    child = {"session_id": "c41d0000-0000-4000-8000-00000000000c"}
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        hook = call_hook(monkeypatch, "claude", event, fixture("claude", event, **child))
        assert (hook.code, hook.stdout) == (0, "")
    assert [s["session_id"] for s in kd.sessions_view()] == [session_of(fixture("claude", "Stop"))]
    assert kd.run_record(run_id).outcome is Outcome.QUEUED
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd", **child))
    (handover,) = kd.call(lambda: list(kd.handovers))
    assert (handover["session_id"], handover["spawned"]) == (child["session_id"], True)


# ---- failure silence -------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("kind", ["start", "prompt", "stop", "end"])
def test_the_hook_is_silent_and_exits_0_when_kairosd_is_not_running(home, monkeypatch, agent, kind):
    """No daemon (no socket): every hook of every agent exits 0 with no output at all."""
    event = {"start": START, "prompt": PROMPT, "stop": STOP, "end": END}[kind][agent]
    hook = call_hook(monkeypatch, agent, event, fixture(agent, event))
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")


@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage{", b"[1, 2]", b'"text"', b"\xff\xfe", b'{"cwd": "/x"}', b'{"session_id": 42}', b"{" * 100_000],
)
def test_the_hook_is_silent_on_garbage_stdin(kd, monkeypatch, stdin):
    """Bad JSON, a non-object, invalid UTF-8, no session id or a deeply nested document: exit 0, no output."""
    _queue(kd)
    kd.call(lambda: kd.hub.store.touch("claude", "s1", kd.clock.now()))
    hook = call_hook(monkeypatch, "claude", "Stop", stdin)
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")


@pytest.mark.parametrize("argv", [["claude"], ["nobody", "Stop"], ["claude", "Nonsense"], []])
def test_the_hook_ignores_an_unknown_agent_or_event(kd, monkeypatch, argv):
    """A misconfigured hook entry (unknown agent or event, missing words) exits 0 and prints nothing."""
    from kairos.integrations.hook import main

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"session_id": "s"}'))
    assert main(argv) == 0
    assert out.getvalue() == ""


def test_a_daemon_error_answer_is_silent_too(kd, monkeypatch):
    """A session id the daemon refuses (too long) comes back as an API error: still exit 0, no output."""
    hook = call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop", session_id="x" * 300))
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")


# ---- targets and fallbacks -------------------------------------------------------------------


def test_a_project_scope_picks_the_most_recent_session_inside_the_project(kd, monkeypatch):
    """--project /home/dev/src: the session in /home/dev/src/app gets it, not the one in /home/dev/srcx."""
    _start(monkeypatch, "claude")
    _start(monkeypatch, "codex", cwd="/home/dev/srcx")
    run_id = _queue(kd, project="/home/dev/src")
    assert (
        kd.run_record(run_id).reason
        == f"waiting for claude session {session_of(fixture('claude', 'Stop'))}'s next turn"
    )
    assert call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop", cwd="/home/dev/srcx")).stdout == ""
    assert call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).output["decision"] == "block"


def test_the_user_scope_follows_the_most_recently_active_session_and_the_agent_filter(kd, monkeypatch):
    """--user-session goes to the session seen last; with an agent filter, to that agent's latest session."""
    _start(monkeypatch, "gemini")
    kd.clock.advance(10)
    _start(monkeypatch, "claude")
    assert "claude session" in kd.run_record(_queue(kd, "a")).reason
    assert "gemini session" in kd.run_record(_queue(kd, "b", user=True, agent="gemini")).reason


def test_a_session_id_scope_only_reaches_that_session(kd, monkeypatch):
    """--session-target ID waits for that session; another live session's Stop does not take it."""
    gemini = session_of(_start(monkeypatch, "gemini"))
    _start(monkeypatch, "claude")
    run_id = _queue(kd, session_id=gemini)
    assert call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).stdout == ""
    assert call_hook(monkeypatch, "gemini", "AfterAgent", fixture("gemini", "AfterAgent")).output["decision"] == "deny"
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


def test_no_live_session_means_the_inbox_at_once(kd):
    """Fired with no live session and fallback inbox: delivered to the inbox named after the target's session
    id (or 'default'), with the reason recorded."""
    run_id = _queue(kd, session_id="gone-1")
    run = kd.run_record(run_id)
    assert run.outcome is Outcome.DELIVERED
    assert run.reason == "no live session matches session:gone-1; delivered to inbox 'gone-1' (fallback=inbox)"
    other = kd.run_record(_queue(kd, "x", user=True, agent="codex"))
    assert other.reason == "no live session matches user (agent codex); delivered to inbox 'default' (fallback=inbox)"
    assert sorted(i.session for i in kd.call(lambda: kd.inbox.list())) == ["default", "gone-1"]


def test_no_live_session_and_fallback_drop_is_skipped_with_a_reason(kd):
    """fallback=drop: the run is skipped, with why, and nothing lands anywhere."""
    run = kd.run_record(_queue(kd, project="/nowhere", fallback="drop"))
    assert (run.outcome, run.reason) == (
        Outcome.SKIPPED,
        "no live session matches project:/nowhere; dropped (fallback=drop)",
    )
    assert kd.call(lambda: kd.inbox.list()) == []


def test_headless_without_a_registry_is_refused_at_add_time(kd):
    """A new task cannot ask for a headless fallback this kairosd cannot run (issue 15, item 11)."""
    with pytest.raises(UsageError, match="needs the background job registry"):
        kd.add("p", {"kind": "session", "user": True, "agent": "claude", "fallback": "headless"})


def test_headless_without_a_registry_falls_back_to_the_inbox_and_says_so(kd):
    """A stored task with fallback=headless in a kairosd without the background task registry (it was
    added to a kairosd that had one): inbox, with the reason."""
    check = kd.deliveries["session"].check  # type: ignore[attr-defined]
    kd.deliveries["session"].check = _no_check  # type: ignore[attr-defined]
    try:
        target = {"kind": "session", "user": True, "agent": "claude", "fallback": "headless"}
        task_id = kd.add("check the deploy", target, overlap="queue")
    finally:
        kd.deliveries["session"].check = check  # type: ignore[attr-defined]
    run = kd.run_record(kd.fire(task_id))
    assert run.outcome is Outcome.DELIVERED
    assert run.reason == (
        "no live session matches user (agent claude); fallback=headless needs the background job registry, "
        "which this kairosd lacks; delivered to inbox 'default' (fallback=inbox)"
    )


@pytest.fixture
def kd_with_registry(home, tmp_path) -> Iterator[Kairosd]:
    daemon = Kairosd(home).start(agents=[FakeAdapter(fake_agent(tmp_path), name="claude")])
    try:
        yield daemon
    finally:
        daemon.stop()


def test_headless_fallback_runs_the_agent_in_the_background(kd_with_registry):
    """fallback=headless with the registry wired and no live session: the agent runs headless (a registry
    task of kind fire) and the run is delivered when its turn completed."""
    kd = kd_with_registry
    run = kd.run_record(_queue(kd, user=True, agent="claude", fallback="headless"))
    (record,) = kd.call(kd.registry.list_tasks)
    assert run.outcome is Outcome.DELIVERED
    assert run.reason == (
        "no live session matches user (agent claude); ran headless (fallback=headless): "
        f"agent job {record.id} completed"
    )
    assert (record.run_id, record.prompt) == (run.run_id, "check the deploy")


def test_a_session_that_ends_runs_its_items_headless_in_its_cwd(kd_with_registry, monkeypatch, tmp_path):
    """A session ends with an item whose fallback is headless: the session's agent runs it in the session's cwd."""
    kd = kd_with_registry
    sid = session_of(_start(monkeypatch, "claude", cwd=str(tmp_path)))
    run_id = _queue(kd, session_id=sid, fallback="headless")
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd"))
    done = wait_for(lambda: kd.run_record(run_id).outcome is Outcome.DELIVERED and kd.run_record(run_id), "headless")
    (record,) = kd.call(kd.registry.list_tasks)
    assert (record.cwd, record.agent, record.run_id) == (str(tmp_path), "claude", run_id)
    assert done.reason.startswith(f"claude session {sid} ended (prompt_input_exit) before its next turn; ran headless")


def test_a_session_that_ends_drops_items_whose_fallback_is_drop(kd, monkeypatch):
    """A pending item with fallback=drop is recorded skipped when its session ends."""
    sid = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, session_id=sid, fallback="drop")
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd"))
    done = wait_for(lambda: kd.run_record(run_id).outcome is Outcome.SKIPPED and kd.run_record(run_id), "drop")
    assert (
        done.reason == f"claude session {sid} ended (prompt_input_exit) before its next turn; dropped (fallback=drop)"
    )


def test_a_project_item_moves_to_another_live_session_when_its_session_ends(kd, monkeypatch):
    """A project-scoped item outlives its session when another session of the project is live."""
    _start(monkeypatch, "codex")
    kd.clock.advance(5)
    sid = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, project="/home/dev/src/app")
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd"))
    codex = session_of(fixture("codex", "Stop"))
    wait_for(lambda: "now waiting for codex" in (kd.run_record(run_id).reason or ""), "the move")
    assert kd.run_record(run_id).reason == (
        f"claude session {sid} ended (prompt_input_exit) before its next turn; now waiting for codex session {codex}'s "
        "next turn"
    )
    assert call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop")).output["decision"] == "block"
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


def test_after_clear_the_successor_session_takes_a_project_item(kd, monkeypatch):
    """/clear ends a session and starts the next one a moment later: a project-scoped item waits for that
    successor (within the grace) instead of falling back to the inbox."""
    old = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, project="/home/dev/src/app")
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd", reason="clear"))
    assert kd.run_record(run_id).outcome is Outcome.QUEUED
    new = _start(monkeypatch, "claude", session_id="5e55ion2-0000-4000-8000-000000000002", source="clear")
    wait_for(lambda: "now waiting for" in (kd.run_record(run_id).reason or ""), "the move to the successor")
    assert kd.run_record(run_id).reason == (
        f"claude session {old} ended (clear) before its next turn; now waiting for claude session "
        f"{session_of(new)}'s next turn"
    )


def test_without_a_successor_a_project_item_falls_back_after_the_grace(kd, monkeypatch):
    """No session of the project comes back within the grace: the item takes its fallback (the inbox)."""
    kd.call(lambda: setattr(kd.hub, "successor_grace_s", 0.2))
    sid = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, project="/home/dev/src/app")
    call_hook(monkeypatch, "claude", "SessionEnd", fixture("claude", "SessionEnd"))
    done = wait_for(lambda: kd.run_record(run_id).outcome is Outcome.DELIVERED and kd.run_record(run_id), "fallback")
    assert done.reason == (
        f"claude session {sid} ended (prompt_input_exit) before its next turn; delivered to inbox {sid!r} "
        "(fallback=inbox)"
    )


def test_an_expired_session_hands_its_items_to_the_fallback(kd, monkeypatch):
    """A session not seen for 24 h expires at the next sweep; its item goes to the inbox."""
    sid = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, session_id=sid)
    kd.clock.advance(timedelta(hours=24).total_seconds())
    assert kd.run(kd.hub.sweep()) == [sid]
    assert kd.sessions_view() == []
    assert kd.run_record(run_id).reason == (
        f"claude session {sid} expired (not seen for 24 h) before its next turn; delivered to inbox {sid!r} "
        "(fallback=inbox)"
    )


# ---- the scheduler around pending runs -------------------------------------------------------


def test_a_pending_item_holds_no_slot_and_overlap_skip_applies_to_it(home, monkeypatch):
    """With one concurrency slot, a run waiting for a session does not block another task's delivery; a
    second fire of the same task (overlap=skip) is skipped while the first still waits."""
    kd = Kairosd(home, max_concurrent=1).start()
    try:
        _start(monkeypatch, "claude")
        waiting = kd.add("into the session", {"kind": "session", "user": True})
        first = kd.fire(waiting)
        other = kd.fire(kd.add("to the inbox", {"kind": "inbox"}))
        assert kd.run_record(other).outcome is Outcome.DELIVERED
        second = kd.run_record(kd.fire(waiting))
        assert (second.outcome, second.reason) == (
            Outcome.SKIPPED,
            f"run {first} of this task is still waiting for claude session "
            f"{session_of(fixture('claude', 'Stop'))}'s next turn (overlap=skip)",
        )
        assert kd.call(lambda: kd.scheduler.status()["deliveries_running"]) == 0
    finally:
        kd.stop()


def _queued_then_stopped(home: Path, monkeypatch) -> tuple[Kairosd, str]:
    """A kairosd that queued a run for a claude session and then stopped; it (for its clock) and the run id."""
    first = Kairosd(home).start()
    try:
        _start(monkeypatch, "claude")
        run_id = _queue(first)
    finally:
        first.stop()
    return first, run_id


def test_a_pending_item_survives_a_daemon_restart(home, monkeypatch):
    """Stop kairosd with an item pending and start it again: the run is still queued (not 'never started'),
    the session and its item are back, and the next Stop delivers it."""
    first, run_id = _queued_then_stopped(home, monkeypatch)
    second = Kairosd(home, clock=first.clock).start()
    try:
        assert second.run_record(run_id).outcome is Outcome.QUEUED
        assert second.pending() == [run_id]
        hook = call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop"))
        assert hook.output["decision"] == "block"
        assert second.run_record(run_id).outcome is Outcome.DELIVERED
    finally:
        second.stop()


def test_a_run_whose_item_was_lost_is_failed_at_start(home, monkeypatch):
    """sessions.json removed while kairosd was down: the run it held is failed with the reason, not left queued."""
    first, run_id = _queued_then_stopped(home, monkeypatch)
    (home / "state" / "sessions.json").unlink()
    second = Kairosd(home, clock=first.clock).start()
    try:
        run = second.run_record(run_id)
        assert (run.outcome, run.reason) == (
            Outcome.FAILED,
            "the pending session item was lost (sessions.json was missing or unreadable at start)",
        )
    finally:
        second.stop()


# ---- the asyncRewake waiter ------------------------------------------------------------------


def _waiter(monkeypatch, *extra: str) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def wait() -> None:
        hook = call_hook(monkeypatch, "claude", "wait", fixture("claude", "Stop"), *extra)
        result.update(code=hook.code, stdout=hook.stdout, stderr=hook.stderr)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread, result


def test_the_waiter_wakes_the_session_with_exit_2_and_the_prompt_on_stderr(kd, monkeypatch):
    """kairos hook claude wait blocks while nothing is due; a fire for its session makes it print the reminder on
    stderr and exit 2, and the run becomes delivered."""
    sid = session_of(_start(monkeypatch, "claude"))
    thread, result = _waiter(monkeypatch, "--max-wait", "30")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the waiter to long-poll")
    assert thread.is_alive()
    run_id = _queue(kd, "look at the deploy", session_id=sid)
    thread.join(10)
    assert not thread.is_alive()
    assert (result["code"], result["stdout"]) == (2, "")
    assert result["stderr"].startswith(REMINDER_LEAD + " At the user's standing instruction")
    assert "\n```\nlook at the deploy\n```\n" in result["stderr"]
    run = kd.run_record(run_id)
    assert (run.outcome, run.reason) == (
        Outcome.DELIVERED,
        f"delivered into claude session {sid} by its asyncRewake waiter hook",
    )


def test_the_waiter_steps_aside_in_an_unattended_claude_at_once(kd, monkeypatch):
    """claude -p (CLAUDE_CODE_SESSION_ATTENDED=0) waits for async hooks before it exits: no waiter there."""
    sid = session_of(_start(monkeypatch, "claude"))
    run_id = _queue(kd, "look at the deploy", session_id=sid)  # due now: an attended waiter would take it
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ATTENDED", "0")
    hook = call_hook(monkeypatch, "claude", "wait", fixture("claude", "Stop"), "--max-wait", "30")
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")
    assert kd.run_record(run_id).outcome is not Outcome.DELIVERED  # left for the Stop hook


def test_the_waiter_times_out_quietly_with_exit_0(kd, monkeypatch):
    """With nothing due within --max-wait, the waiter exits 0 and prints nothing."""
    _start(monkeypatch, "claude")
    hook = call_hook(monkeypatch, "claude", "wait", fixture("claude", "Stop"), "--max-wait", "0.3")
    assert (hook.code, hook.stdout, hook.stderr) == (0, "", "")


def test_a_newer_waiter_of_the_same_session_supersedes_the_older(kd, monkeypatch):
    """Each Stop re-arms a waiter; the older one of the session steps aside (exit 0), so an item goes to one."""
    _start(monkeypatch, "claude")
    older, older_result = _waiter(monkeypatch, "--max-wait", "30")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the first waiter")
    newer = kd.run(kd.hub.next_item(session_of(fixture("claude", "Stop")), "claude", 0.2))
    older.join(10)
    assert not older.is_alive()
    assert (older_result["code"], older_result["stderr"]) == (0, "")
    assert newer == {"item": None, "why": "timeout"}


def test_the_waiter_leaves_mid_turn_items_to_the_stop_hook(kd, monkeypatch):
    """While a turn is under way (UserPromptSubmit seen, no Stop yet) the waiter does not take the item; the
    Stop hook delivers it."""
    _start(monkeypatch, "claude")
    call_hook(monkeypatch, "claude", "UserPromptSubmit", fixture("claude", "UserPromptSubmit"))
    run_id = _queue(kd)
    waited = kd.run(kd.hub.next_item(session_of(fixture("claude", "Stop")), "claude", 0.3))
    assert waited == {"item": None, "why": "timeout"}
    assert call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).output["decision"] == "block"
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


def test_stopping_kairosd_releases_a_waiter_at_once(home, monkeypatch):
    """Shutdown sets the closing event: a long-polling waiter exits 0 right away instead of holding the server."""
    kd = Kairosd(home).start()
    _start(monkeypatch, "claude")
    thread, result = _waiter(monkeypatch, "--max-wait", "60")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the waiter")
    kd.stop()
    thread.join(10)
    assert (result["code"], result["stderr"]) == (0, "")


def test_a_waiter_whose_client_hung_up_is_gone_and_claims_nothing(kd, monkeypatch):
    """A waiter whose hook process died (its socket closed) stops polling at once: left polling, it would
    claim the next item for nobody, and the session would get it only after the claim's lease lapsed."""
    sid = session_of(_start(monkeypatch, "claude"))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(kd.paths.socket))
        sock.sendall(f"GET /v1/sessions/{sid}/next?agent=claude&timeout=60 HTTP/1.1\r\nHost: k\r\n\r\n".encode())
        wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the waiter to long-poll")
    wait_for(lambda: kd.call(lambda: not kd.hub._waiters), "the hung-up waiter to stop polling")
    run_id = _queue(kd, "look at the deploy", session_id=sid)
    assert call_hook(monkeypatch, "claude", "Stop", fixture("claude", "Stop")).output["decision"] == "block"
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


# ---- the API around sessions -----------------------------------------------------------------


def test_sessions_register_over_the_api_and_list_most_recent_first(kd):
    """POST /v1/sessions registers; GET lists live sessions newest activity first with pending counts."""
    from kairos.client import Client

    client = Client(kd.paths.socket)
    client.call("POST", "/sessions", {"agent": "codex", "session_id": "a", "cwd": "/src"})
    kd.clock.advance(1)
    client.call("POST", "/sessions", {"agent": "claude", "session_id": "b"})
    listed = client.call("GET", "/sessions")["sessions"]
    assert [(s["agent"], s["session_id"], s["pending"]) for s in listed] == [("claude", "b", 0), ("codex", "a", 0)]
    assert listed[1]["expires_at"] == (kd.clock.now() - timedelta(seconds=1) + timedelta(hours=24)).isoformat()


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/sessions", {"agent": "claude"}, "session_id: Field required"),
        ("/sessions", {"agent": "claude", "session_id": "s", "colour": 1}, "colour: unknown field"),
        ("/sessions/s/hook", {"agent": "claude", "event": "nap"}, "event: Input should be 'start', 'prompt'"),
        ("/sessions/s/hook", {"agent": "claude", "event": "stop", "deliver": 0}, "deliver: Input should be a valid"),
        ("/sessions/s/hook", {"agent": "claude", "event": "stop", "block_cap": "8"}, "block_cap: Input should be"),
        ("/sessions/s/hook", {"agent": "a" * 101, "event": "stop"}, "agent: String should have at most 100"),
        ("/sessions/s/hook", {"agent": "claude", "event": "start", "cwd": "/a\u0000b"}, "cwd: contains a NUL"),
        ("/sessions/s/ack", {"agent": "claude", "claim": "c", "run_ids": "r1"}, "run_ids: Input should be a valid"),
        ("/sessions/s/ack", {"agent": "claude", "run_ids": []}, "claim: Field required"),
        ("/sessions/s/end", {"reason": "bye"}, "agent: Field required"),
        ("/sessions/s/end", [], "the request body must be a JSON object"),
    ],
)
def test_session_bodies_are_typed(kd, path, body, message):
    """Each session route parses its body with its model: a malformed one is a 400 naming the field."""
    from kairos.client import ApiError, Client

    with pytest.raises(ApiError) as bad:
        Client(kd.paths.socket).call("POST", path, body)
    assert bad.value.status == 400
    assert message in str(bad.value)
    assert kd.call(kd.hub.sessions) == []


def test_a_relative_or_empty_cwd_is_dropped_not_refused(kd):
    """An agent's payload may hold either; the session is kept without a project folder."""
    from kairos.client import Client

    client = Client(kd.paths.socket)
    answer = client.call("POST", "/sessions/s/hook", {"agent": "claude", "event": "start", "cwd": "src"})
    assert answer["session"]["cwd"] is None
    answer = client.call("POST", "/sessions/t/hook", {"agent": "claude", "event": "start", "cwd": "", "source": ""})
    assert answer["session"]["cwd"] is None
