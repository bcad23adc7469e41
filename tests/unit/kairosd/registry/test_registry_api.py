"""The registry's HTTP routes: through kairosd.scheduling.api.Api.add_routes (parsing, errors, long-poll bounds, logs
and their follow stream), and once end to end: the real socket server and the `kairos task` CLI."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import kairos_in_thread
from registry_support import FakeAdapter, fake_agent, make_registry, registry_api, run

from kairosd.api.http_types import compact_json
from kairosd.api.server import Request, Response, StreamResponse, UnixHttpServer
from kairosd.core.errors import ConflictError, NotFoundError, UsageError
from kairosd.scheduling.api import Api


async def _call(api: Api, method: str, path: str, body: Any = None, **query: str) -> Any:
    result = await api.handle(Request(method, f"/v1{path}", query, body, 0))
    assert isinstance(result, Response)
    return result.status, json.loads(compact_json(result.body))  # as a client reads it


@pytest.fixture
def adapter(tmp_path: Path) -> FakeAdapter:
    return FakeAdapter(fake_agent(tmp_path))


def test_start_show_wait_send_close_through_the_routes(tmp_path, adapter):
    """POST starts (201), wait long-polls, send continues (202), close completes, list filters by status."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        api = registry_api(reg)
        body = {"agent": "fake", "prompt": "hi", "cwd": str(tmp_path), "session": "s", "model": "m", "mode": "sync"}
        status, doc = await _call(api, "POST", "/registry", body)
        assert status == 201
        task_id = doc["task"]["id"]
        assert (doc["task"]["status"], doc["task"]["mode"], doc["task"]["session"]) == ("running", "sync", "s")
        status, doc = await _call(api, "GET", f"/registry/{task_id}/wait", timeout="10")
        assert (status, doc["timed_out"], doc["task"]["status"], doc["task"]["response"]) == (
            200, False, "idle", "echo: hi",
        )  # fmt: skip
        status, doc = await _call(api, "POST", f"/registry/{task_id}/send", {"message": "more"})
        assert (status, doc["task"]["status"]) == (202, "running")
        _, doc = await _call(api, "GET", f"/registry/{task_id}/wait", timeout="10", since_turn="1")
        assert (doc["task"]["turns_done"], doc["task"]["response"]) == (2, "echo: more")
        _, doc = await _call(api, "GET", "/registry", status="idle")
        assert [t["id"] for t in doc["tasks"]] == [task_id]
        assert "turns" not in doc["tasks"][0]
        assert doc["registry"]["slots"] == {"limit": 4, "in_use": 0, "waiting": 0, "lent": 0}
        _, doc = await _call(api, "POST", f"/registry/{task_id}/close")
        assert doc["task"]["status"] == "completed"
        _, doc = await _call(api, "GET", "/registry", status="idle")
        assert doc["tasks"] == []
        _, doc = await _call(api, "GET", f"/registry/{task_id}")
        assert len(doc["task"]["turns"]) == 2
        with pytest.raises(ConflictError, match="already completed"):
            await _call(api, "POST", f"/registry/{task_id}/cancel")
        await reg.stop()

    run(main())


@pytest.mark.parametrize(
    ("method", "path", "body", "query", "error", "message"),
    [
        ("POST", "/registry", {"agent": "fake", "prompt": "x", "colour": 1}, {}, UsageError, "unknown field"),
        ("POST", "/registry", {"kind": "fire", "agent": "fake", "prompt": "x"}, {}, UsageError,
         "kind: Input should be 'agent' or 'shell'"),
        ("POST", "/registry", {"agent": 3, "prompt": "x"}, {}, UsageError, "agent: Input should be a valid string"),
        ("POST", "/registry", {"kind": "shell", "argv": "ls"}, {}, UsageError, "argv: Input should be a valid list"),
        ("POST", "/registry", {"agent": "fake", "prompt": "x", "permissions": {"mode": "god"}}, {}, UsageError,
         "permissions.mode: unknown permission mode 'god'"),
        ("POST", "/registry", [], {}, UsageError, "must be a JSON object"),
        ("GET", "/registry", None, {"status": "asleep"}, UsageError, "status must be one of"),
        ("GET", "/registry/t0000000000", None, {}, NotFoundError, "no background job starts with 't0000000000'"),
        ("GET", "/registry/t0000000000/wait", None, {"timeout": "61"}, UsageError, "timeout must be from 0 to 60"),
        ("GET", "/registry/t0000000000/wait", None, {"timeout": "x"}, UsageError, "timeout must be a number"),
        ("GET", "/registry/t0000000000/wait", None, {"timeout": "y" * 50}, UsageError,
         "^timeout must be a number, not '" + "y" * 50 + "'$"),
        ("POST", "/registry/t0000000000/send", {"text": "x"}, {}, UsageError, "message: Field required"),
    ],
)  # fmt: skip
def test_bad_requests_are_clean_errors(tmp_path, adapter, method, path, body, query, error, message):
    """Malformed bodies and queries are KairosErrors with a clear message (the server maps them to 4xx)."""

    async def main() -> None:
        api = registry_api(make_registry(tmp_path, adapter))
        with pytest.raises(error, match=message.replace("(", r"\(").replace("{", r"\{")):
            await _call(api, method, path, body, **query)

    run(main())


def test_logs_in_chunks_and_follow_stream(tmp_path, adapter):
    """GET logs returns text and offsets; follow=1 streams every line once, in order, then an end marker."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        api = registry_api(reg)
        shell = {"kind": "shell", "argv": ["sh", "-c", "read x; echo $x; echo 2"], "prompt": "one\n"}
        _, doc = await _call(api, "POST", "/registry", shell)
        task_id = doc["task"]["id"]
        result = await api.handle(Request("GET", f"/v1/registry/{task_id}/logs", {"follow": "1"}, None, 0))
        assert isinstance(result, StreamResponse)
        items = [item async for item in result.lines]
        assert items[-1] == {"end": True, "status": "completed"}
        lines = [i["line"] for i in items[:-1]]
        assert [i["seq"] for i in items[:-1]] == list(range(len(lines)))
        assert lines[1:3] == ["one", "2"]
        _, chunk = await _call(api, "GET", f"/registry/{task_id}/logs")
        assert chunk["text"].splitlines() == lines
        assert chunk["next_offset"] == chunk["size"]
        _, tail = await _call(api, "GET", f"/registry/{task_id}/logs", offset=str(chunk["size"] - 2))
        assert tail["text"] == "-\n"
        await reg.stop()

    run(main())


# ---- end to end: the real server and the CLI ----------------------------------------------------


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    return kairos_home


def test_cli_against_the_real_server(home, tmp_path, adapter, capsys, monkeypatch):
    """kairos task start --wait / list / logs / cancel / send over the daemon's own socket and routes."""

    async def main() -> None:
        reg = make_registry(home, adapter, kill_grace_s=0.2)
        server = UnixHttpServer(home / "run" / "kairosd.sock", registry_api(reg).handle)
        await server.start()

        cli = functools.partial(kairos_in_thread, capsys)

        try:
            code, out, err = await cli("task", "start", "--shell", "--wait", "--", "sh", "-c", "echo hello")
            assert (code, err) == (0, "")
            assert out.splitlines()[1:] == ["hello"]
            assert out.startswith("t")
            assert " completed after turn 1" in out

            code, out, _ = await cli("task", "start", "--agent", "fake", "--json", f"hang:{tmp_path / 'pid'}")
            hanging = json.loads(out)["task"]
            assert (code, hanging["status"], hanging["cwd"]) == (0, "running", str(Path.cwd()))

            # A task started from inside that task (its env markers) is its child.
            monkeypatch.setenv("KAIROS_TASK_ID", hanging["id"])
            monkeypatch.setenv("KAIROS_TASK_DEPTH", "0")
            code, out, _ = await cli("task", "start", "--agent", "fake", "--json", "child")
            child = json.loads(out)["task"]
            assert (child["parent_id"], child["depth"]) == (hanging["id"], 1)
            monkeypatch.delenv("KAIROS_TASK_ID")
            monkeypatch.delenv("KAIROS_TASK_DEPTH")

            code, out, _ = await cli("task", "wait", child["id"], "--timeout", "10")
            assert code == 0
            assert out.splitlines() == [f"{child['id']} idle after turn 1", "echo: child"]

            code, out, err = await cli("task", "wait", hanging["id"], "--timeout", "0.2")
            assert (code, out) == (1, "")
            assert err == f"kairos: task {hanging['id']} is still running (timed out waiting)\n"

            code, out, _ = await cli("task", "list", "--status", "running")
            assert code == 0
            assert out.splitlines()[0].split() == ["ID", "STATUS", "WHAT", "TURNS", "CREATED", "PROMPT"]
            assert hanging["id"] in out
            assert child["id"] not in out

            code, out, _ = await cli("task", "cancel", hanging["id"])
            assert code == 0
            assert out == f"cancelled {hanging['id']} and 1 descendant(s): {child['id']}\n"
            # Cancelling twice is as pausing twice: exit 0 with a note (issue 24); a prefix in upper case will do.
            code, out, err = await cli("task", "cancel", hanging["id"][:6].upper())
            assert (code, out, err) == (0, f"{hanging['id']} was already cancelled: nothing to do\n", "")

            code, out, _ = await cli("task", "logs", hanging["id"])
            assert code == 0
            assert '{"type": "intent", "text": "hanging"}' in out.splitlines()

            code, out, err = await cli("task", "send", child["id"], "again")
            assert (code, err) == (1, f"kairos: task {child['id']} is cancelled; a follow-up needs an idle task\n")
            code, out, err = await cli("task", "show", "t0000000000")
            assert (code, err) == (1, "kairos: no background job starts with 't0000000000' (see: kairos task list)\n")
        finally:
            await server.close(grace_s=1.0)
            await reg.stop()

    run(main())


def test_build_registry_wires_routes_the_agent_target_and_hooks(tmp_path, adapter):
    """build_registry: limits from the config, routes that Api accepts, the agent delivery, and hooks
    that hear the registry's events; start() recovers, stop() ends everything."""
    from kairosd.config import Limits
    from kairosd.core.clock import SystemClock
    from kairosd.core.events import EventBus
    from kairosd.jobs.wiring import build_registry
    from kairosd.system.paths import Paths

    out = tmp_path / "hook.json"
    paths = Paths(tmp_path / "state", tmp_path / "run", tmp_path / "data", tmp_path / "config")

    async def main() -> None:
        clock = SystemClock()
        parts = build_registry(
            paths,
            clock,
            EventBus(clock.now),
            Limits(max_concurrent=3, max_depth=3, kill_grace=1.5),
            lambda name: adapter,
            {"task_created": [(["sh", "-c", f"cat > {out}"], 5.0)]},
            environ={"PATH": "/usr/bin:/bin"},
        )
        assert (parts.registry.limits.max_concurrent, parts.registry.limits.max_depth) == (3, 3)
        assert parts.registry.limits.kill_grace_s == 1.5
        assert set(parts.deliveries) == {"agent"}
        await parts.start()
        api = registry_api(parts.registry)
        _, doc = await _call(api, "POST", "/registry", {"agent": "fake", "prompt": "wired"})
        task_id = doc["task"]["id"]
        await parts.registry.wait(task_id, 10)
        await until_file(out)
        await parts.stop()
        assert (tmp_path / "state" / "registry" / f"{task_id}.json").exists()
        assert (tmp_path / "data" / "tasks" / f"{task_id}.log").exists()

    run(main())
    event = json.loads(out.read_text())
    assert (event["event"], event["task_id"]) == ("task_created", event["task"]["id"])


async def until_file(path: Path) -> None:
    from registry_support import until

    await until(lambda: path.exists() and path.stat().st_size > 0, f"{path} to be written")
