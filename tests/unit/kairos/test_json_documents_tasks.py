"""``kairos task ... --json`` against its models in :mod:`kairosd.core.wire.registry` (issue 15, item 2).

The verbs run in-process against the registry's real routes behind the real socket server, with
the fake agent of ``registry_support`` (no real agent CLI), as ``test_registry_api`` does.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, registry_api, run

from kairos.app import run as kairos
from kairosd.api.server import UnixHttpServer
from kairosd.core.wire import verbs as documents


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    return kairos_home


def test_task_verbs_print_their_documents(home, tmp_path, capsys):
    adapter = FakeAdapter(fake_agent(tmp_path))
    checked: set[str] = set()

    async def main() -> None:
        reg = make_registry(home, adapter, kill_grace_s=0.2)
        server = UnixHttpServer(home / "run" / "kairosd.sock", registry_api(reg).handle)
        await server.start()

        async def cli(verb: str, *argv: str, code: int = 0) -> str:
            got = await asyncio.to_thread(kairos, [*verb.split(), *argv, "--json"])
            out, err = capsys.readouterr()
            assert got == code, err
            checked.add(verb)
            return out

        async def check(verb: str, *argv: str, code: int = 0) -> Any:
            doc = json.loads(await cli(verb, *argv, code=code))
            documents.check(verb, doc)
            return doc

        try:
            task = (await check("task start", "--agent", "fake", "hi"))["task"]
            assert (await check("task wait", task["id"], "--timeout", "10"))["task"]["status"] == "idle"
            assert (await check("task start", "--agent", "fake", "--wait", "at once"))["timed_out"] is False
            assert len((await check("task send", task["id"], "more"))["task"]["turns"]) == 2
            await check("task wait", task["id"], "--timeout", "10", "--since-turn", "1")
            assert (await check("task send", task["id"], "again", "--wait"))["task"]["turns_done"] == 3
            listed = await check("task list")
            assert "turns" not in listed["tasks"][0]
            assert listed["registry"]["slots"]["limit"] == 4
            assert (await check("task show", task["id"]))["task"]["response"] == "echo: again"
            assert "echo: more" in (await check("task logs", task["id"]))["text"]
            lines = [json.loads(line) for line in (await cli("task logs", task["id"], "-f")).splitlines()]
            for item in lines:
                documents.STREAM_ITEMS["task logs -f"].model_validate(item)
            assert (lines[0]["seq"], lines[-1]) == (0, {"end": True, "status": "idle"})
            assert (await check("task close", task["id"]))["task"]["status"] == "completed"
            hanging = (await check("task start", "--agent", "fake", f"hang:{tmp_path / 'pid'}"))["task"]
            assert (await check("task wait", hanging["id"], "--timeout", "0.1", code=1))["timed_out"] is True
            assert (await check("task cancel", hanging["id"]))["cancelled"] == [hanging["id"]]
        finally:
            await server.close(grace_s=1.0)
            await reg.stop()

    run(main())
    assert checked == {v for v in documents.DOCUMENTS if v.startswith("task ")}


def _task(**over: Any) -> dict[str, Any]:
    turn = {"number": 1, "prompt": "p", "queued_at": "t", "started_at": None, "finished_at": None, "ok": None,
            "response": None, "error": None, "exit_code": None, "session_id": None, "tool_calls": 0}  # fmt: skip
    task = {
        "id": "t0a1b2c3d4e", "kind": "agent", "parent_id": None, "depth": 0, "agent": "fake", "cli": "fake",
        "argv": None, "prompt": "p", "cwd": "/", "session": None, "model": None, "mode": "background",
        "multi_turn": True, "status": "running", "queued": False, "timeout_s": 3600.0,
        "permissions": {"mode": "default", "allowed_tools": None, "denied_tools": []},
        "agent_session_id": None, "turns": [turn], "progress": {"tool_calls": 0, "intent": None, "last_line": None},
        "exit_code": None, "error": None, "log_path": "/l", "log_lines": 0, "pid": None, "pid_started": None,
        "detached": False, "scheduled_task_id": None, "run_id": None, "created_at": "t", "updated_at": "t",
        "finished_at": None, "turns_done": 0, "response": None,
    }  # fmt: skip
    return task | over


def test_a_background_task_of_the_wrong_shape_is_refused():
    documents.check("task show", {"task": _task()})
    with pytest.raises(ValueError, match="queued"):
        documents.check("task show", {"task": _task(queued=0)})
    with pytest.raises(ValueError, match="turns"):
        documents.check("task show", {"task": {k: v for k, v in _task().items() if k != "turns"}})
    with pytest.raises(ValueError, match="timed_out"):
        documents.check("task wait", {"task": _task(), "timed_out": None})
