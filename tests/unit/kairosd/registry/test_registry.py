"""The background task registry with a fake agent: turns, multi-turn send, wait, events, env markers,
permissions, depth, shell tasks and refusals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, run, until

from kairosd.agents.base import Permissions
from kairosd.core.errors import ConflictError, LimitError, NotFoundError, UsageError
from kairosd.core.events import EventBus
from kairosd.jobs.model import ExecutionMode, JobKind, JobStatus
from kairosd.jobs.registry import AgentPolicy, Registry, StartSpec
from kairosd.testing import FakeClock


@pytest.fixture
def adapter(tmp_path: Path) -> FakeAdapter:
    return FakeAdapter(fake_agent(tmp_path))


async def _collect(bus: EventBus, body) -> list[dict]:
    """Run ``body()`` and return every event published meanwhile."""
    seen: list[dict] = []
    stream = bus.subscribe()

    async def reader() -> None:
        async for event in stream:
            seen.append(event)

    task = asyncio.create_task(reader())  # subscribed above: it gets every event from here on
    await body()
    # A closed bus drops what its readers have not taken yet: close once the reader took a last marker.
    bus.publish("collected")
    await until(lambda: bool(seen) and seen[-1]["type"] == "collected", "the reader to take every event")
    bus.close()
    await task
    return seen[:-1]


def test_agent_turn_completes_idle_with_response_progress_and_log(tmp_path, adapter):
    """A multi-turn agent turn ends idle with the response, session id, progress and a log of every line."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        await reg.recover()
        record = await reg.start(StartSpec(agent="fake", prompt="hello", cwd=str(tmp_path)))
        assert (record.status, record.queued, record.depth, record.parent_id) == (JobStatus.RUNNING, True, 0, None)
        record, timed_out = await reg.wait(record.id, 10)
        assert not timed_out
        assert record.status is JobStatus.IDLE
        assert record.response == "echo: hello"
        assert record.agent_session_id == f"sess-{record.id}"
        assert record.exit_code == 0
        assert record.progress.tool_calls == 1
        assert record.progress.intent == "answering"
        assert record.progress.last_line == "echo: hello"
        (turn,) = record.turns
        assert (turn.number, turn.ok, turn.tool_calls) == (1, True, 1)
        log = (await asyncio.to_thread(Path(record.log_path).read_text)).splitlines()
        assert log[0].startswith("--- kairos: turn 1 started")
        assert '{"type": "tool", "name": "Read"}' in log
        assert "a note on stderr" in log
        assert log[-1] == "--- kairos: turn 1 ended: idle (exit code 0) ---"
        await reg.stop()

    run(main())


def test_env_markers_and_cwd_reach_the_agent(tmp_path, adapter):
    """The process gets KAIROS_TASK_ID, KAIROS_TASK_DEPTH, KAIROS_SESSION, KAIROS_SPAWNED and the adapter's env."""
    out = tmp_path / "env.json"

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        parent = await reg.start(StartSpec(agent="fake", prompt="hi"))
        await reg.wait(parent.id, 10)
        child = await reg.start(StartSpec(agent="fake", prompt=f"env:{out}", session="work", parent_id=parent.id))
        child, _ = await reg.wait(child.id, 10)
        assert child.status is JobStatus.IDLE
        env = json.loads(out.read_text())
        assert env == {
            "KAIROS_TASK_ID": child.id,
            "KAIROS_TASK_DEPTH": "1",
            "KAIROS_SESSION": "work",
            "KAIROS_SPAWNED": "1",
        }
        assert (child.parent_id, child.depth) == (parent.id, 1)
        await reg.stop()

    run(main())


def test_multi_turn_send_resumes_the_same_agent_session(tmp_path, adapter):
    """send() starts turn 2 with --resume of the session the first turn reported; wait(since_turn) sees it."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt="first"))
        record, _ = await reg.wait(record.id, 10)
        session = record.agent_session_id
        sent = await reg.send(record.id, "second")
        assert (sent.status, len(sent.turns)) == (JobStatus.RUNNING, 2)
        record, timed_out = await reg.wait(record.id, 10, since_turn=1)
        assert not timed_out
        assert (record.status, record.turns_done, record.response) == (JobStatus.IDLE, 2, "echo: second")
        assert record.agent_session_id == session
        assert [r.resume_session for r in adapter.requests] == [None, session]
        assert [t.prompt for t in record.turns] == ["first", "second"]
        closed = await reg.close(record.id)
        assert closed.status is JobStatus.COMPLETED
        assert closed.finished_at is not None
        with pytest.raises(ConflictError, match="completed; a follow-up needs an idle task"):
            await reg.send(record.id, "third")
        await reg.stop()

    run(main())


def test_send_is_refused_while_running_and_for_shell_tasks(tmp_path, adapter):
    """A follow-up to a running task or a shell task is a clear conflict, not a second process."""
    pidfile = tmp_path / "pid"

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt=f"hang:{pidfile}"))
        with pytest.raises(ConflictError, match="still running turn 1"):
            await reg.send(record.id, "more")
        shell = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"]))
        await reg.wait(shell.id, 10)
        with pytest.raises(ConflictError, match="shell job; only agent jobs take follow-ups"):
            await reg.send(shell.id, "more")
        await reg.stop()

    run(main())


def test_wait_times_out_and_returns_the_running_record(tmp_path, adapter):
    """wait() with a timeout returns (record still running, timed_out=True) without ending the task."""
    pidfile = tmp_path / "pid"

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt=f"hang:{pidfile}"))
        loop = asyncio.get_running_loop()
        began = loop.time()
        waited, timed_out = await reg.wait(record.id, 0.3)
        assert timed_out
        assert waited.status is JobStatus.RUNNING
        assert 0.3 <= loop.time() - began < 5
        await reg.stop()

    run(main())


def test_wait_since_turn_on_an_idle_task_times_out(tmp_path, adapter):
    """wait(since_turn=N) on an idle task with N turns done waits for a follow-up that never comes."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt="once"))
        await reg.wait(record.id, 10)
        _, timed_out = await reg.wait(record.id, 0.1, since_turn=1)
        assert timed_out
        done, timed_out = await reg.wait(record.id, 0.1, since_turn=0)
        assert not timed_out
        assert done.turns_done == 1
        await reg.stop()

    run(main())


def test_failed_turn_is_terminal_with_the_agents_error(tmp_path, adapter):
    """A failed agent result makes the task failed (terminal), with the adapter's error and exit code."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt="fail"))
        record, _ = await reg.wait(record.id, 10)
        assert (record.status, record.error, record.exit_code) == (JobStatus.FAILED, "the agent failed", 1)
        assert record.finished_at is not None
        with pytest.raises(ConflictError, match=f"task {record.id} is already failed"):
            await reg.cancel(record.id)
        await reg.stop()

    run(main())


def test_agent_without_resume_completes_after_one_turn(tmp_path):
    """An adapter that cannot resume (or a single-turn start) completes instead of going idle."""
    adapter = FakeAdapter(fake_agent(tmp_path), supports_resume=False)

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        record = await reg.start(StartSpec(agent="fake", prompt="one"))
        record, _ = await reg.wait(record.id, 10)
        assert record.status is JobStatus.COMPLETED
        await reg.stop()

    run(main())


def test_shell_task_gets_the_prompt_on_stdin(tmp_path):
    """A shell task runs its argv with the prompt on stdin; exit 0 completes, with stdout as the response."""

    async def main() -> None:
        reg = make_registry(tmp_path)
        ok = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sh", "-c", "tr a-z A-Z"], prompt="quiet\n"))
        bad = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["sh", "-c", "echo nope; exit 3"]))
        missing = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["/nonexistent/kairos-cmd"]))
        ok, _ = await reg.wait(ok.id, 10)
        bad, _ = await reg.wait(bad.id, 10)
        missing, _ = await reg.wait(missing.id, 10)
        assert (ok.status, ok.response, ok.progress.last_line) == (JobStatus.COMPLETED, "QUIET", "QUIET")
        assert (bad.status, bad.error, bad.exit_code, bad.response) == (JobStatus.FAILED, "exit code 3", 3, "nope")
        assert (missing.status, missing.error) == (JobStatus.FAILED, "command not found: /nonexistent/kairos-cmd")
        await reg.stop()

    run(main())


def test_turn_timeout_kills_the_group_and_fails(tmp_path, adapter):
    """A turn past its timeout is stopped (TERM, grace, KILL) and the task fails saying so."""
    pidfile = tmp_path / "pid"

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, kill_grace_s=0.2)
        record = await reg.start(StartSpec(agent="fake", prompt=f"hang-hard:{pidfile}", timeout_s=1))
        record, _ = await reg.wait(record.id, 10)
        assert record.status is JobStatus.FAILED
        assert record.error == "timed out after 1s (process group killed)"
        assert record.exit_code == -9
        await reg.stop()

    run(main())


def test_events_are_patch_style(tmp_path, adapter):
    """task_started carries the record; task_updated only changed fields; progress and one notification per line."""

    async def main() -> None:
        clock = FakeClock()
        bus = EventBus(clock.now)
        reg = make_registry(tmp_path, adapter, events=bus, clock=clock)
        ids: list[str] = []

        async def body() -> None:
            record = await reg.start(StartSpec(agent="fake", prompt="hello", session="s1"))
            ids.append(record.id)
            await reg.wait(record.id, 10)

        seen = await _collect(bus, body)
        (task_id,) = ids
        started = [e for e in seen if e["type"] == "task_started"]
        assert len(started) == 1
        assert started[0]["task"]["status"] == "running"
        assert started[0]["session"] == "s1"
        updates = [e for e in seen if e["type"] == "task_updated"]
        envelope = {"type", "at", "task_id", "session", "updated_at"}
        assert updates[0].keys() - envelope == {"queued", "turn", "turns_done", "response"}
        assert updates[0]["queued"] is False
        spawn = next(u for u in updates if "pid" in u)
        assert spawn.keys() - envelope == {"pid", "pid_started"}
        last = updates[-1]
        assert last["status"] == "idle"
        assert last["turn"]["ok"] is True
        assert "prompt" not in last  # unchanged fields are never repeated
        assert all(u["task_id"] == task_id for u in updates)
        progress = [e for e in seen if e["type"] == "task_progress"]
        assert progress[-1]["tool_calls"] == 1
        assert any(p.get("tool") == "Read" for p in progress)
        notes = [e for e in seen if e["type"] == "task_notification"]
        assert [n["seq"] for n in notes] == list(range(len(notes)))
        log_lines = (await asyncio.to_thread(Path(reg.get(task_id).log_path).read_text)).splitlines()
        assert [n["line"] for n in notes] == log_lines
        assert {n["stream"] for n in notes} == {"kairos", "stdout", "stderr"}

    run(main())


def test_permissions_only_narrow(tmp_path, adapter):
    """A child's permissions are its request intersected with its parent's: a parent's deny always stays."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        parent_perms = Permissions("acceptEdits", frozenset({"Read", "Edit", "Bash"}), frozenset({"WebFetch"}))
        parent = await reg.start(StartSpec(agent="fake", prompt="p", permissions=parent_perms))
        await reg.wait(parent.id, 10)
        wide = Permissions("bypassPermissions", frozenset({"Read", "Bash", "WebFetch", "Write"}), frozenset())
        child = await reg.start(StartSpec(agent="fake", prompt="c", parent_id=parent.id, permissions=wide))
        assert child.permissions.mode == "acceptEdits"
        assert child.permissions.allowed_tools == ["Bash", "Read"]
        assert child.permissions.denied_tools == ["WebFetch"]
        assert adapter.requests[-1].permissions == child.permissions.to_permissions()
        inherit = await reg.start(StartSpec(agent="fake", prompt="i", parent_id=child.id))
        assert inherit.permissions == child.permissions
        narrower = await reg.start(
            StartSpec(agent="fake", prompt="n", parent_id=child.id, permissions=Permissions("plan", None, frozenset()))
        )
        assert (narrower.permissions.mode, narrower.permissions.allowed_tools) == ("plan", ["Bash", "Read"])
        for record in (child, inherit, narrower):
            await reg.wait(record.id, 10)
        await reg.stop()

    run(main())


def test_configured_ceiling_and_timeout_apply_to_top_level_tasks(tmp_path, adapter):
    """policy_for's ceiling narrows even a top-level request, and its timeout is the default per turn."""

    async def main() -> None:
        clock = FakeClock()
        ceiling = Permissions("default", None, frozenset({"Bash"}))
        reg = Registry(
            make_registry(tmp_path, adapter)._store,
            tmp_path / "logs",
            clock,
            EventBus(clock.now),
            lambda name: adapter,
            policy_for=lambda name, cwd: AgentPolicy(ceiling, 42.0),
        )
        wide = Permissions("bypassPermissions", None, frozenset())
        record = await reg.start(StartSpec(agent="fake", prompt="x", permissions=wide))
        assert (record.permissions.mode, record.permissions.denied_tools, record.timeout_s) == ("default", ["Bash"], 42)
        await reg.wait(record.id, 10)
        await reg.stop()

    run(main())


def test_a_named_definition_runs_on_its_cli_with_its_instructions(tmp_path, adapter):
    """policy_for maps a definition name to its CLI, instructions, model and own restrictions (narrowing only);
    a follow-up gets the instructions again."""
    calls: list[tuple[str, str | None]] = []

    def policy_for(name: str, cwd: str | None) -> AgentPolicy:
        calls.append((name, cwd))
        if name != "reviewer":
            return AgentPolicy()
        own = Permissions("plan", frozenset({"Read", "Grep"}), frozenset())
        return AgentPolicy(cli="fake", agent_definition="Review the diff.", model="m2", restrictions=own)

    async def main() -> None:
        clock = FakeClock()
        reg = Registry(
            make_registry(tmp_path, adapter)._store, tmp_path / "logs", clock, EventBus(clock.now),
            lambda name: {"fake": adapter}[name], policy_for=policy_for,
        )  # fmt: skip
        wide = Permissions("acceptEdits", frozenset({"Read", "Edit"}), frozenset())
        record = await reg.start(StartSpec(agent="reviewer", prompt="look", cwd=str(tmp_path), permissions=wide))
        assert (record.agent, record.cli, record.model) == ("reviewer", "fake", "m2")
        assert (record.permissions.mode, record.permissions.allowed_tools) == ("plan", ["Read"])
        first = adapter.requests[-1]
        assert (first.agent_definition, first.model) == ("Review the diff.", "m2")
        record, _ = await reg.wait(record.id, 10)
        await reg.send(record.id, "and again")
        await reg.wait(record.id, 10)
        assert adapter.requests[-1].agent_definition == "Review the diff."
        assert calls == [("reviewer", str(tmp_path))] * 2
        await reg.stop()

    run(main())


def test_depth_cap_refuses_cleanly(tmp_path, adapter):
    """Past max_depth a start is refused with a LimitError naming the limit; nothing is recorded."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, max_depth=2)
        chain = [await reg.start(StartSpec(agent="fake", prompt="0"))]
        for level in (1, 2):
            chain.append(await reg.start(StartSpec(agent="fake", prompt=str(level), parent_id=chain[-1].id)))
        assert [r.depth for r in chain] == [0, 1, 2]
        with pytest.raises(LimitError, match="would be at depth 3, past the limit KAIROS_MAX_DEPTH=2"):
            await reg.start(StartSpec(agent="fake", prompt="3", parent_id=chain[-1].id))
        # A process that only claims its depth (its parent is not a registry task) counts too.
        with pytest.raises(LimitError, match="from the calling task"):
            await reg.start(StartSpec(agent="fake", prompt="x", parent_id="3f2a9c1d", parent_depth=2))
        claimed = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["true"], parent_id="3f2a9c1d"))
        assert (claimed.depth, claimed.parent_id) == (1, None)
        assert len(reg.list_tasks()) == 4
        for record in reg.list_tasks():
            await reg.wait(record.id, 10)
        await reg.stop()

    run(main())


def test_start_refusals_leave_no_record(tmp_path, adapter):
    """Unknown agent, refused command, empty prompt, bad cwd: KairosErrors, and nothing recorded."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        with pytest.raises(UsageError, match=r"unknown agent 'nope' \(available: fake\)"):
            await reg.start(StartSpec(agent="nope", prompt="x"))
        with pytest.raises(UsageError, match="fake cannot do that"):
            await reg.start(StartSpec(agent="fake", prompt="refuse this"))
        with pytest.raises(UsageError, match="non-empty prompt"):
            await reg.start(StartSpec(agent="fake", prompt="  "))
        with pytest.raises(UsageError, match="working directory does not exist"):
            await reg.start(StartSpec(agent="fake", prompt="x", cwd=str(tmp_path / "missing")))
        with pytest.raises(UsageError, match="needs a command"):
            await reg.start(StartSpec(kind=JobKind.SHELL, argv=[]))
        with pytest.raises(NotFoundError):
            reg.get("t0000000000")
        assert reg.list_tasks() == []
        assert not (tmp_path / "state" / "registry").exists() or not any((tmp_path / "state" / "registry").iterdir())

    run(main())


def test_list_filters_by_status_newest_first(tmp_path, adapter):
    """list_tasks(status) filters; the newest task comes first; mode is recorded."""

    async def main() -> None:
        clock = FakeClock()
        reg = make_registry(tmp_path, adapter, clock=clock)
        first = await reg.start(StartSpec(agent="fake", prompt="a", mode=ExecutionMode.SYNC))
        clock.advance(1)
        second = await reg.start(StartSpec(kind=JobKind.SHELL, argv=["false"]))
        await reg.wait(first.id, 10)
        await reg.wait(second.id, 10)
        assert [r.id for r in reg.list_tasks()] == [second.id, first.id]
        assert [r.id for r in reg.list_tasks(JobStatus.FAILED)] == [second.id]
        assert reg.get(first.id).mode is ExecutionMode.SYNC
        await reg.stop()

    run(main())
