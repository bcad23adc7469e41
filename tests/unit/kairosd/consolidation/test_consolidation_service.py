"""The daemon side: every gate (allowing and refusing), coalescing, detached runs and their results,
agent mode and its fallback, and kairosd restarts under a running worker. Real worker processes: forked
from this one where a test checks what a run computes and records (:func:`consolidation_service_support.
fork_workers`), a new interpreter started detached as kairosd starts it where the start, the detach, a
kill, a bound or a restart of kairosd is what the test is about (:func:`real_worker`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from consolidation_service_support import Harness, clean_environ, fork_workers, real_worker
from consolidation_support import (
    WAIT_S,
    fake_claude,
    short_transcript,
    ts,
    write_config,
    write_lines,
    write_transcript,
)
from registry_support import FakeAdapter, fake_agent, make_registry, run, until

from kairosd.consolidation.offline import kinds as kinds_model
from kairosd.consolidation.request import ConsolidationRequest
from kairosd.core.events import EventBus
from kairosd.jobs.model import JobStatus
from kairosd.jobs.registry import StartSpec


@pytest.fixture(autouse=True)
def _workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    fork_workers(request, monkeypatch)


def held_agent(h: Harness, answer: str = "NONE", *, exit_code: int = 0, release: Path | None = None) -> Path:
    """Agent mode with a fake claude that answers ``answer`` once ``release`` exists (if given)."""
    folder = h.root / "bin"
    binary = fake_claude(folder)
    (folder / "answer.txt").write_text(answer)
    (folder / "exit.txt").write_text(str(exit_code))
    if release is not None:
        (folder / "wait-for").write_text(str(release))
    write_config(h.root, f'[agents.claude]\nbinary = "{binary}"\n')
    return folder


async def asked_agent_run(h: Harness, answer: str = "NONE", **held: Any) -> str:
    """Start ``h`` with :func:`held_agent` answering ``answer`` and ask for a consolidation: the run's id."""
    held_agent(h, answer, **held)
    await h.start()
    decision = await h.ask()
    return str(decision["run"]["id"])


# ---- gate 1: enabled ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "environ", "caller", "why"),
    [
        ({"enabled": False}, {}, None, "disabled in the config"),
        ({}, {"KAIROS_CONSOLIDATE": "0"}, None, "KAIROS_CONSOLIDATE=0 is set in kairosd's environment"),
        ({}, {}, "off", "KAIROS_CONSOLIDATE=off is set in the session's environment"),
    ],
)
def test_gate_enabled_refuses(tmp_path, config, environ, caller, why):
    """Off in the config, in kairosd's environment or in the session's: skipped, nothing started."""

    async def main() -> None:
        h = await Harness(tmp_path, environ=clean_environ(**environ), **config).start()
        extra = {"consolidate": caller} if caller else {}
        decision = await h.ask(**extra)
        assert (decision["status"], decision["gate"]) == ("skipped", "enabled")
        assert why in decision["reason"]
        assert h.registry.list_tasks() == []
        assert h.decisions()[-1]["gate"] == "enabled"
        await h.stop()

    run(main())


def test_gate_enabled_allows(tmp_path):
    """On by default; KAIROS_CONSOLIDATE=1 anywhere changes nothing."""

    async def main() -> None:
        h = await Harness(tmp_path, environ=clean_environ(KAIROS_CONSOLIDATE="1")).start()
        decision = await h.ask(consolidate="1")
        assert (decision["status"], decision["gate"]) == ("started", None)
        record = await h.settled(decision["run"]["id"])
        assert record.status is JobStatus.COMPLETED
        await h.stop()

    run(main())


# ---- gate 2: not started by kairos --------------------------------------------------------------


def test_gate_not_spawned_refuses_a_session_kairos_started(tmp_path):
    """The hook's KAIROS_SPAWNED=1, or a session that is kairos' own background task: skipped."""

    async def main() -> None:
        adapter = FakeAdapter(fake_agent(tmp_path))
        h = await Harness(tmp_path, adapter=adapter).start()
        decision = await h.ask(spawned=True)
        assert (decision["status"], decision["gate"]) == ("skipped", "not_spawned")
        assert "KAIROS_SPAWNED=1" in decision["reason"]
        task = await h.registry.start(StartSpec(agent="fake", prompt="hi", cwd=str(tmp_path)))
        task, _ = await h.registry.wait(task.id, WAIT_S)
        assert task.agent_session_id
        decision = await h.ask(session=task.agent_session_id)
        assert (decision["status"], decision["gate"]) == ("skipped", "not_spawned")
        assert task.id in decision["reason"]
        assert [t.kind.value for t in h.registry.list_tasks()] == ["agent"]
        await h.stop()

    run(main())


def test_gate_not_spawned_allows_a_users_session(tmp_path):
    """spawned false (the user's own session): it runs."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        decision = await h.ask(spawned=False)
        assert decision["status"] == "started"
        await h.settled(decision["run"]["id"])
        await h.stop()

    run(main())


@real_worker
def test_the_worker_carries_the_marker(tmp_path):
    """The detached worker (and so anything it runs) has KAIROS_SPAWNED=1: it can never trigger itself."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        folder = held_agent(h, "NONE")
        await h.start()
        decision = await h.ask()
        await h.settled(decision["run"]["id"])
        called = json.loads((folder / "argv.json").read_text())
        assert called["spawned"] == "1"
        await h.stop()

    run(main())


# ---- gate 3: human turns ------------------------------------------------------------------------------


def test_gate_user_turns_refuses_short_or_missing_transcripts(tmp_path):
    """Fewer than 3 human turns, no transcript, a missing one, one that is a folder: skipped with why."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        decision = await h.ask(transcript=short_transcript(tmp_path, 2))
        assert (decision["status"], decision["gate"]) == ("skipped", "user_turns")
        assert decision["reason"] == "2 human turns in the transcript; at least 3 needed"
        decision = await h.service.request(ConsolidationRequest(agent="claude", session_id="s9", cwd=str(h.project)))
        assert decision["reason"] == "no transcript (transcript_path not given)"
        # Issue 24, item 14: a transcript that cannot be read was reported as gate user_turns.
        assert decision["gate"] == "transcript"
        decision = await h.ask(transcript=tmp_path / "gone.jsonl")
        assert decision["reason"].startswith("transcript not found")
        assert decision["gate"] == "transcript"
        decision = await h.ask(transcript=tmp_path)
        assert decision["gate"] == "transcript"
        assert h.registry.list_tasks() == []
        await h.stop()

    run(main())


def test_gate_user_turns_allows_three(tmp_path):
    """Exactly 3 human turns (tool results and meta lines around them do not count): it runs."""

    async def main() -> None:
        h = await Harness(tmp_path, min_user_turns=3).start()
        decision = await h.ask(transcript=short_transcript(tmp_path, 3))
        assert decision["status"] == "started"
        record = await h.settled(decision["run"]["id"])
        assert record.status is JobStatus.COMPLETED
        assert {e["text"] for e in h.board()} == {f"Always keep module {i} small." for i in range(3)}
        await h.stop()

    run(main())


def test_a_copilot_transcript_written_after_session_end_is_waited_for(tmp_path, monkeypatch):
    """Copilot CLI writes events.jsonl only after its sessionEnd hook ran: the gate read it one turn short
    (or found no file) and skipped the session. The real CLI showed it in the compatibility suite."""
    from kairosd.consolidation.transcripts import read as transcripts  # the service imports it at its first request

    looked = threading.Event()  # the gate read the transcript's path and found no file there
    count_human_turns = transcripts.count_human_turns

    def counting(*args: Any) -> Any:
        try:
            return count_human_turns(*args)
        except FileNotFoundError:
            looked.set()
            raise

    monkeypatch.setattr(transcripts, "count_human_turns", counting)

    async def main() -> None:
        h = await Harness(tmp_path).start()
        transcript = h.root / "copilot" / "events.jsonl"

        async def copilot_writes_it_later() -> None:
            # Only once the gate has looked and found nothing, so the test shows that it waits.
            assert await asyncio.to_thread(looked.wait, WAIT_S), "the gate never looked for the transcript"
            done = write_transcript(h.root / "copilot-src", "copilot", str(h.project))
            transcript.parent.mkdir(parents=True, exist_ok=True)
            done.rename(transcript)

        writer = asyncio.ensure_future(copilot_writes_it_later())
        decision = await h.ask("c1", transcript, agent="copilot")
        await writer
        assert decision["status"] == "started", decision
        # Claude writes its transcript as it goes: a missing one is skipped at once, as before.
        gone = await h.ask("c2", tmp_path / "gone.jsonl")
        assert gone["reason"].startswith("transcript not found")
        # And a Copilot transcript that never comes is skipped once the wait is over.
        h.service.late_transcript_s = 0.5
        never = await h.ask("c3", tmp_path / "never.jsonl", agent="copilot")
        assert never["reason"].startswith("transcript not found")
        await h.stop()

    run(main())


# ---- gate 4: interval ------------------------------------------------------------------------------------


def test_gate_interval_refuses_then_allows(tmp_path):
    """Within 10 minutes of the project's last run: skipped; after it: runs. Per project."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        first = await h.ask("s1")
        await h.settled(first["run"]["id"])
        h.clock.advance(9 * 60)
        decision = await h.ask("s2")
        assert (decision["status"], decision["gate"]) == ("skipped", "interval")
        assert "minimum interval is 10 min" in decision["reason"]
        other = tmp_path / "other"
        (other / ".git").mkdir(parents=True)
        transcript = write_transcript(tmp_path / "t-other", "codex", str(other))
        elsewhere = await h.service.request(
            ConsolidationRequest(agent="codex", session_id="s3", transcript_path=str(transcript), cwd=str(other))
        )
        assert elsewhere["status"] == "started"  # another project has its own interval
        h.clock.advance(61)
        decision = await h.ask("s4")
        assert decision["status"] == "started"
        await h.settled(decision["run"]["id"])
        await h.settled(elsewhere["run"]["id"])
        await h.stop()

    run(main())


def test_force_passes_the_interval_gate_when_a_person_asks(tmp_path):
    """Issue 24, item 19: ``kairos consolidate --force`` runs within the interval; the hook's requests do not."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        first = await h.ask("s1")
        await h.settled(first["run"]["id"])
        h.clock.advance(60)
        assert (await h.ask("s2"))["gate"] == "interval"
        forced = await h.ask("s2", force=True)
        assert forced["status"] == "started"
        await h.settled(forced["run"]["id"])
        await h.stop()

    run(main())


def test_the_cli_sends_force_only_when_asked():
    from kairos.app import build_parser
    from kairos.commands.consolidate import build_consolidate_request

    argv = ["consolidate", "--session", "s", "--transcript", "/t.jsonl", "--cwd", "/p"]
    plain = build_consolidate_request(build_parser().parse_args(argv), {})
    forced = build_consolidate_request(build_parser().parse_args([*argv, "--force"]), {})
    assert "force" not in plain
    assert forced["force"] is True


# ---- gate 5: one run per project -------------------------------------------------------------------------


def test_concurrent_requests_for_one_project_are_coalesced(tmp_path):
    """Requests racing for one project: one run; the others join it; another session's transcript follows."""

    async def main() -> None:
        release = tmp_path / "release"
        h = Harness(tmp_path, mode="agent", min_interval_minutes=0)
        held_agent(h, "ADD rule: Always write the test first.", release=release)
        await h.start()
        transcript = write_transcript(tmp_path / "t1", "claude", str(h.project))
        decisions = await asyncio.gather(*(h.ask("s1", transcript) for _ in range(6)))
        started = [d for d in decisions if d["status"] == "started"]
        coalesced = [d for d in decisions if d["status"] == "coalesced"]
        assert (len(started), len(coalesced)) == (1, 5)
        run_id = started[0]["run"]["id"]
        assert {d["run"]["id"] for d in coalesced} == {run_id}
        assert {d["gate"] for d in coalesced} == {"lock"}
        assert h.service.pending == {}  # the same transcript: nothing to follow
        other = await h.ask("s2", short_transcript(tmp_path, 4, "other.jsonl"))
        assert (other["status"], other["run"]["id"]) == ("coalesced", run_id)
        assert "follows when it ends" in other["reason"]
        assert len(h.registry.list_tasks()) == 1
        release.write_text("go")
        assert (await h.settled(run_id)).status is JobStatus.COMPLETED
        await until(lambda: len(h.registry.list_tasks()) == 2, "the follow-up run to start")
        [follow_up] = [t for t in h.registry.list_tasks() if t.id != run_id]
        assert follow_up.session == "s2"
        assert (await h.settled(follow_up.id)).status is JobStatus.COMPLETED
        texts = {e["text"] for e in h.board()}
        assert "Always write the test first." in texts
        await h.stop()

    run(main())


def test_lock_gate_allows_once_the_run_ended(tmp_path):
    """With no run going on, the next request starts its own."""

    async def main() -> None:
        h = await Harness(tmp_path, min_interval_minutes=0).start()
        first = await h.ask("s1")
        await h.settled(first["run"]["id"])
        await until(lambda: not h.service.running, "the run to be let go")
        second = await h.ask("s2")
        assert second["status"] == "started"
        assert second["run"]["id"] != first["run"]["id"]
        await h.settled(second["run"]["id"])
        await h.stop()

    run(main())


# ---- runs ------------------------------------------------------------------------------------------------


@real_worker
def test_a_run_records_its_result_log_and_events(tmp_path):
    """The run is a consolidation task: detached, logged, its result readable; events tell the story."""

    async def main() -> None:
        h = Harness(tmp_path)
        stream = h.events.subscribe(frozenset({"consolidation_started", "consolidation_finished", "board_changed"}))
        await h.start()
        decision = await h.ask()
        record = await h.settled(decision["run"]["id"])
        assert (record.kind.value, record.detached, record.cwd, record.session) == (
            "consolidation", True, str(h.project.resolve()), "s1",
        )  # fmt: skip
        assert record.response.startswith("8 added, 0 seen again, 0 replaced, 0 closed, 0 pruned (offline mode")
        info = await h.service.run_info(record.id)
        assert info["result"]["transcript"]["malformed"] == 4
        assert info["result"]["transcript"]["human_turns"] == 3
        log = _read(Path(record.log_path))
        assert "4 malformed skipped" in log
        assert f"consolidation {record.id} ok" in log
        kinds = [(await anext(stream))["type"] for _ in range(3)]
        assert kinds == ["consolidation_started", "consolidation_finished", "board_changed"]
        await h.stop()

    run(main())


@real_worker
def test_a_worker_that_dies_without_a_result_fails_the_run(tmp_path):
    """Killed mid-run (no result file): the record ends failed, saying so."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        record = h.registry.get(await asked_agent_run(h, release=tmp_path / "never"))
        assert record.pid is not None
        os.killpg(record.pid, signal.SIGKILL)
        record = await h.settled(record.id)
        assert record.status is JobStatus.FAILED
        assert "ended without a result" in (record.error or "")
        await h.stop()

    run(main())


# ---- offline mode's reading ([consolidation] offline) -----------------------------------------------------

# The cues read both as rules; the shipped kinds model reads the first as a rule and the second as a to-do.
AGREED, DISAGREED = "Never push directly to main.", "Remember to bump the version before tagging."


def two_rules(h: Harness) -> Path:
    said = [AGREED, DISAGREED, "Thanks, that is all for today."]
    objects: list[dict[str, Any]] = []
    for i, text in enumerate(said):
        objects += [
            {"role": "user", "content": text, "timestamp": ts(i)},
            {"role": "assistant", "content": "OK.", "timestamp": ts(i + 0.5)},
        ]
    return write_lines(h.root / "transcripts" / "two-rules.jsonl", objects, malformed=[])


@pytest.mark.parametrize(
    ("offline", "board", "summary"),
    [
        ("broad", {AGREED, DISAGREED}, "2 added, 0 seen again, 0 replaced, 0 closed, 0 pruned (offline mode)"),
        (
            "cautious",
            {AGREED},
            "1 added, 0 seen again, 0 replaced, 0 closed, 0 pruned (offline mode, cautious reading)",
        ),
    ],
)
def test_offline_mode_reads_as_the_config_says(tmp_path, offline, board, summary):
    """The cautious reading drops the cue's entry the kinds model reads otherwise and keeps the one it agrees with."""

    async def main() -> None:
        h = Harness(tmp_path, mode="offline", offline=offline)
        await h.start()
        record = await h.settled((await h.ask(transcript=two_rules(h)))["run"]["id"])
        assert record.status is JobStatus.COMPLETED
        info = await h.service.run_info(record.id)
        assert info["result"]["offline_reading"] == offline
        assert "offline_reading_note" not in info["result"]
        assert {e["text"] for e in h.board()} == board
        assert record.response == summary
        await h.stop()

    run(main())


def test_the_cautious_reading_without_its_model_reads_broadly_and_says_why(tmp_path, monkeypatch):
    """A missing (or damaged) model file never costs the run: the broad reading, and the result says so."""
    monkeypatch.setattr(kinds_model, "DATA", "gone.json.gz")  # the forked worker inherits it
    kinds_model.load.cache_clear()

    async def main() -> None:
        h = Harness(tmp_path, mode="offline", offline="cautious")
        await h.start()
        record = await h.settled((await h.ask(transcript=two_rules(h)))["run"]["id"])
        assert record.status is JobStatus.COMPLETED
        result = (await h.service.run_info(record.id))["result"]
        assert result["offline_reading"] == "broad"
        assert result["offline_reading_note"].startswith("cautious reading not used (the kinds model (gone.json.gz)")
        assert {e["text"] for e in h.board()} == {AGREED, DISAGREED}
        assert "cautious reading not used" in record.response
        assert "offline reading: cautious reading not used" in _read(Path(record.log_path))
        await h.stop()

    try:
        run(main())
    finally:
        kinds_model.load.cache_clear()


# ---- agent mode ------------------------------------------------------------------------------------------


def test_agent_mode_uses_rem_agent_read_only(tmp_path):
    """rem-agent runs through the claude adapter with read-only tools; its entries go on the board."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        answer = (
            "ADD rule: Always use uv for Python.\n- add FACT: The API lives in src/api.\nsome chatter\nADD bogus: x"
        )
        folder = held_agent(h, answer)
        await h.start()
        decision = await h.ask()
        record = await h.settled(decision["run"]["id"])
        assert record.status is JobStatus.COMPLETED
        assert record.agent == "rem-agent"
        info = await h.service.run_info(record.id)
        assert info["result"]["mode"] == "agent"
        assert [(e["kind"], e["text"]) for e in h.board()] == [
            ("rule", "Always use uv for Python."),
            ("fact", "The API lives in src/api."),
        ]
        called = json.loads((folder / "argv.json").read_text())
        assert "--tools=Glob,Grep,Read" in called["argv"]
        assert any(a.startswith("--append-system-prompt=You are rem-agent") for a in called["argv"])
        assert "--model" in called["argv"]  # no model configured: the cheap default
        assert called["argv"][called["argv"].index("--model") + 1] == "haiku"
        assert info["result"]["agent_rejected"] == [
            "not a decision line (ADD, REPLACE, CLOSE, KEEP, DROP or NONE): 'some chatter'",
            "unknown kind 'bogus': 'ADD bogus: x'",
        ]
        assert called["cwd"] == str(h.project.resolve())
        await h.stop()

    run(main())


@pytest.mark.parametrize(
    ("answer", "exit_code", "timeout", "why"),
    [
        ("whatever", 1, 60, "rem-agent failed"),
        ("I think the user likes tabs.", 0, 60, "without any ADD, REPLACE, CLOSE, KEEP, DROP or NONE line"),
        ("NONE", 0, 1, "timed out (agent_timeout, 1s; process group killed)"),
    ],
)
def test_agent_mode_falls_back_to_offline(tmp_path, answer, exit_code, timeout, why):
    """A failed, unusable or timed-out rem-agent run: the offline consolidator does the work."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent", agent_timeout=timeout)
        release = tmp_path / "never" if timeout == 1 else None
        record = await h.settled(await asked_agent_run(h, answer, exit_code=exit_code, release=release))
        assert record.status is JobStatus.COMPLETED
        info = await h.service.run_info(record.id)
        assert info["result"]["mode"] == "offline"
        assert why in info["result"]["fallback"]
        assert len(h.board()) == 8
        await h.stop()

    run(main())


# ---- kairosd restarts ------------------------------------------------------------------------------------


@real_worker
def test_a_restart_re_adopts_a_running_worker(tmp_path):
    """kairosd stops while a run goes on: the worker goes on, the next kairosd waits for it and records it."""

    async def main() -> None:
        release = tmp_path / "release"
        h = Harness(tmp_path, mode="agent")
        run_id = await asked_agent_run(h, "ADD decision: Ship on Fridays.", release=release)
        pid = h.registry.get(run_id).pid
        await h.restart()
        assert h.service.running[str(h.project.resolve())].task_id == run_id
        assert h.registry.get(run_id).status is JobStatus.RUNNING
        assert _exists(Path(f"/proc/{pid}"))
        release.write_text("go")
        record = await h.settled(run_id)
        assert record.status is JobStatus.COMPLETED
        assert [e["text"] for e in h.board()] == ["Ship on Fridays."]
        await h.stop()

    run(main())


@real_worker
def test_a_restart_settles_a_run_that_finished_meanwhile(tmp_path):
    """The worker finished while kairosd was down: its result file settles the record at start-up."""

    async def main() -> None:
        release = tmp_path / "release"
        h = Harness(tmp_path, mode="agent")
        run_id = await asked_agent_run(h, "ADD todo: Rotate the keys.", release=release)
        await h.service.stop()
        await h.registry.stop()
        release.write_text("go")
        result = h.service._result_path(run_id)
        await until(lambda: result.exists(), "the worker's result without kairosd")
        assert [e["text"] for e in h.board()] == ["Rotate the keys."]  # the worker wrote the board itself
        h.events = EventBus(h.clock.now)
        h.registry = make_registry(h.root, clock=h.clock, events=h.events)
        h.service = h._service()
        await h.start()
        record = h.registry.get(run_id)
        assert record.status is JobStatus.COMPLETED
        assert h.service.running == {}
        await h.stop()

    run(main())


@real_worker
def test_a_restart_fails_a_run_whose_worker_died(tmp_path):
    """Worker gone, no result: the next kairosd records the run failed instead of waiting forever."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        record = h.registry.get(await asked_agent_run(h, release=tmp_path / "never"))
        await h.service.stop()
        await h.registry.stop()
        assert record.pid is not None
        os.killpg(record.pid, signal.SIGKILL)
        await until(lambda: not os.path.exists(f"/proc/{record.pid}") or _zombie(record.pid), "the worker to die")
        h.events = EventBus(h.clock.now)
        h.registry = make_registry(h.root, clock=h.clock, events=h.events)
        h.service = h._service()
        await h.start()
        settled = h.registry.get(record.id)
        assert settled.status is JobStatus.FAILED
        assert "ended without a result" in (settled.error or "")
        await h.stop()

    run(main())


def _read(path: Path) -> str:
    return path.read_text()


def _exists(path: Path) -> bool:
    return path.exists()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


@real_worker
def test_a_run_past_its_bound_is_stopped_with_its_agent(tmp_path, monkeypatch):
    """kairosd's bound on a run: the worker's group gets SIGTERM, and the worker takes rem-agent down with it."""
    from kairosd.consolidation import service

    # With agent_timeout 60: a 5 s bound. The worker's imports alone take over 1 s on a loaded machine,
    # and the agent must have started before the bound ends the run, for the test to say anything.
    monkeypatch.setattr(service, "OFFLINE_BOUND_S", -55.0)

    async def main() -> None:
        h = Harness(tmp_path, mode="agent", agent_timeout=60)
        folder = held_agent(h, release=tmp_path / "never")
        await h.start()
        decision = await h.ask()
        record = await h.settled(decision["run"]["id"])
        assert record.status is JobStatus.CANCELLED
        await until(lambda: (folder / "argv.json").exists(), "the agent to have started")
        agent_pids = [int(p) for p in _pids_with_cwd_of(folder)]
        assert agent_pids == []  # no fake claude left running
        await h.stop()

    run(main())


def _pids_with_cwd_of(folder: Path) -> list[str]:
    """Processes running the fake claude in ``folder`` (it is a script: its path is in the cmdline)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().split()[2]
            except OSError:
                continue
            if str(folder / "claude").encode() in cmdline and state != "Z":
                found.append(entry.name)
    return found


@real_worker
def test_a_restart_adopts_a_worker_whose_pid_was_not_recorded(tmp_path):
    """kairosd stopped between starting the worker and recording its pid: the pid file lets the next one adopt it."""

    async def main() -> None:
        release = tmp_path / "release"
        h = Harness(tmp_path, mode="agent")
        held_agent(h, "ADD fact: Staging is read-only.", release=release)
        await h.start()
        decision = await h.ask()
        run_id = decision["run"]["id"]
        await h.registry._update(run_id, pid=None, pid_started=None)  # as if the crash came before it was saved
        await h.restart()
        assert h.registry.get(run_id).pid is not None
        assert run_id in {r.task_id for r in h.service.running.values()}
        release.write_text("go")
        assert (await h.settled(run_id)).status is JobStatus.COMPLETED
        assert [e["text"] for e in h.board()] == ["Staging is read-only."]
        await h.stop()

    run(main())


def test_a_session_end_reported_three_times_consolidates_once(tmp_path):
    """Gemini CLI fires SessionEnd three times per /quit: one run, not three, even with no minimum
    interval and the first run over; a transcript that grew afterwards is consolidated again."""
    from consolidation_corpus import formats

    async def main() -> None:
        h = await Harness(tmp_path, min_interval_minutes=0).start()
        turns = [(f"always keep module {i} small", formats.at(0, i)) for i in range(4)]
        transcript = formats.write(tmp_path / "t", "gemini", turns, str(h.project), "g1")
        first = await h.ask("g1", transcript, agent="gemini")
        assert first["status"] == "started"
        await h.settled(first["run"]["id"])
        await until(lambda: not h.service.running, "the run to be let go")
        again = [await h.ask("g1", transcript, agent="gemini") for _ in range(2)]
        assert [(d["status"], d["gate"]) for d in again] == [("skipped", "lock")] * 2
        assert len(h.registry.list_tasks()) == 1
        with transcript.open("a") as file:
            file.write('{"id": "u9", "type": "user", "content": [{"text": "never skip the changelog"}]}\n')
        grown = await h.ask("g1", transcript, agent="gemini")
        assert grown["status"] == "started"
        await h.settled(grown["run"]["id"])
        await h.stop()

    run(main())


def test_per_project_tables_stay_bounded(tmp_path, monkeypatch):
    """Any client can name any existing folder: a project's lock goes once nobody holds it, and only
    the last LAST_RUNS_KEPT projects' runs are remembered."""
    from kairosd.consolidation import service as service_module

    monkeypatch.setattr(service_module, "LAST_RUNS_KEPT", 1)

    async def main() -> None:
        h = await Harness(tmp_path).start()
        first = await h.ask("s1")
        assert first["status"] == "started"
        other = tmp_path / "other"
        (other / ".git").mkdir(parents=True)
        transcript = write_transcript(tmp_path / "t-other", "codex", str(other))
        elsewhere = await h.service.request(
            ConsolidationRequest(agent="codex", session_id="s3", transcript_path=str(transcript), cwd=str(other))
        )
        assert elsewhere["status"] == "started"
        assert h.service.project_locks == 0
        assert list(h.service._last_run_of) == [str(other.resolve())]
        await h.settled(first["run"]["id"])
        await h.settled(elsewhere["run"]["id"])
        await h.stop()

    run(main())
