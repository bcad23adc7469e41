"""Every route's answer against its model in :mod:`kairosd.core.wire.routes` (issue 25, one typed wire).

kairosd as ``build_app`` wires it (the harness of ``session_support``: real service, registry with a
fake agent, sessions, board, export, doctor) answers one representative request per route over its
socket, and each answer is validated against the model ``RESPONSES`` names for it. This is where the
streamed listing (``GET /v1/tasks``, pre-encoded JSON) is held to its shape: the daemon does not
validate per request. ``openapi.json`` shows the same models, and a test here checks it does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from consolidation_service_support import Harness, consolidation_api
from consolidation_support import write_transcript
from pydantic import BaseModel, ValidationError
from registry_support import FakeAdapter, fake_agent, run
from session_support import Kairosd, hook_home

from kairos.client import Client
from kairosd.api import server
from kairosd.api.http_types import compact_json
from kairosd.api.server import Request, Response
from kairosd.core.protocol import PREFIX, ROUTES, route_path
from kairosd.core.wire import routes, tasks
from kairosd.scheduling.api import quarantine_routes
from kairosd.store.quarantine import Quarantine

__all__ = ["hook_home"]  # the fixture `home`, used below


@pytest.fixture
def kd(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kairosd]:
    monkeypatch.setenv("TZ", "UTC")
    daemon = Kairosd(home).start(agents=[FakeAdapter(fake_agent(tmp_path))])
    # Served with the JSON store only (the harness keeps its store in memory): as kairosd wires it then.
    set_aside = Quarantine(daemon.paths.state_dir / "scheduled_tasks.quarantine.json", daemon.clock)
    set_aside.add([({"id": "bad0bad0", "cron": "61 * * * *"}, "invalid cron"), ([1], "not an object")])
    daemon.api.add_routes(quarantine_routes(set_aside))
    try:
        yield daemon
    finally:
        daemon.stop()


def _served(kd: Kairosd) -> set[tuple[str, str]]:
    return {(name, method) for name, _, methods in kd.api.routes for method in methods}


def test_every_served_route_has_a_model_or_a_reason(kd):
    served = _served(kd)
    described = set(routes.RESPONSES) | set(routes.UNTYPED)
    assert served - described == set(), "describe the answer in kairosd.core.wire, or say why not in UNTYPED"
    assert described - served == set(), "a model for a route that is not served"
    assert set(routes.RESPONSES) & set(routes.UNTYPED) == set()
    assert set(routes.STREAMS) <= set(routes.RESPONSES)
    assert set(routes.PLAIN) <= set(routes.RESPONSES), "a plain answer is still described by a model"
    # The route table itself, not only what this harness serves: a route added there needs its answer's model.
    assert set(ROUTES) == {name for name, _ in described}, "a route of protocol.ROUTES without a model"


def test_each_route_answers_its_model(kd, tmp_path, monkeypatch):
    client = Client(kd.paths.socket)
    checked: set[tuple[str, str]] = set()
    sent: list[Any] = []  # what each handler gave the server to send: its model, or plain data (routes.PLAIN)

    def recorded(body: Any) -> bytes:
        sent.append(body)
        return json_line(body)

    json_line = server._json_line
    monkeypatch.setattr(server, "_json_line", recorded)

    def answer(method: str, name: str, body: Any = None, query: dict[str, str] | None = None, **params: str) -> Any:
        sent.clear()
        doc = client.call(method, route_path(name, **params), body, query)
        shapes = routes.models_of(routes.RESPONSES[(name, method)])
        # The default shape, or (chosen by the query) the second: the listing's summary view.
        shape = shapes[1 if query and query.get("view") == "summary" else 0]
        shape.model_validate(doc)
        if (name, method) in routes.PLAIN:
            assert not any(isinstance(b, BaseModel) for b in sent), f"{name} {method} builds its model: not PLAIN"
        else:
            assert [type(b) for b in sent] == [shape], f"{name} {method} answered plain data, not its model"
        checked.add((name, method))
        return doc

    assert answer("GET", "status")["api_version"] == 1
    added = answer("POST", "tasks", {"prompt": "hello", "cron": "0 9 * * *"})["task"]
    answer("POST", "tasks", {"prompt": "soon", "in": "20m", "name": "soon"})
    for query in (None, {"view": "summary"}):  # the streamed listing, both views
        assert len(answer("GET", "tasks", query=query)["tasks"]) == 2
    answer("GET", "task", id=added["id"])
    assert answer("PATCH", "task", {"prompt": "changed"}, id=added["id"])["task"]["changed"] == ["prompt"]
    answer("POST", "task_pause", id=added["id"])
    answer("POST", "task_resume", id=added["id"])
    run_id = answer("POST", "task_run", id=added["id"])["run"]["run_id"]
    assert [r["run_id"] for r in answer("GET", "runs", query={"task": added["id"]})["runs"]] == [run_id]
    # A one-shot whose time passed while it was paused, resumed with catch-up skip: a run never dispatched.
    late = answer("POST", "tasks", {"prompt": "late", "in": "1m", "catch_up": "skip"})["task"]["id"]
    answer("POST", "task_pause", id=late)
    kd.clock.advance(120)
    assert answer("POST", "task_resume", id=late)["task"]["caught_up"]["action"] == "missed"
    missed_runs = [r for r in answer("GET", "runs", query={"task": late})["runs"] if r["dispatched_at"] is None]
    assert missed_runs, "no run that was never dispatched"
    answer("GET", "missed")
    answer("DELETE", "missed")
    answer("GET", "timeline", query={"span": "86400"})
    answer("GET", "timeline", query={"span": "86400", "bins": "4"})
    answer("GET", "inbox", query={"all": "1"})
    answer("POST", "inbox_ack", {"all": True})
    claude = {"tasks": [{"id": "aa11bb22", "cron": "0 9 * * *", "prompt": "p", "createdAt": 1790000000000}]}
    answer("POST", "import", {"data": json.dumps(claude), "tz": "UTC", "dry_run": True})
    answer("POST", "export", {"to": "systemd", "all": True})
    answer("GET", "doctor")
    answer("POST", "reload")
    session = {"agent": "claude", "cwd": str(tmp_path)}
    answer("POST", "sessions", {**session, "session_id": "s-1"})
    held = answer(
        "POST", "tasks", {"prompt": "for s-1", "cron": "0 4 * * *", "target": {"kind": "session", "session_id": "s-1"}}
    )
    kd.fire(held["task"]["id"])  # held for the session's next turn
    assert answer("GET", "sessions")["sessions"][0]["pending"] == 1
    hooked = answer("POST", "session_hook", {**session, "event": "prompt"}, id="s-1")
    assert [i["task_id"] for i in hooked["items"]] == [held["task"]["id"]]
    run_ids = [i["run_id"] for i in hooked["items"]]
    assert answer("POST", "session_ack", {"agent": "claude", "claim": hooked["claim"], "run_ids": run_ids}, id="s-1")
    assert answer("GET", "session_next", query={"agent": "claude", "timeout": "0"}, id="s-1")["item"] is None
    assert answer("POST", "session_end", {"agent": "claude"}, id="s-1")["ended"] is True
    ended = client.call("POST", route_path("session_hook", id="s-2"), {**session, "event": "end"})
    routes.models_of(routes.RESPONSES[("session_hook", "POST")])[1].model_validate(ended)  # the end's answer
    assert [e["id"] for e in answer("GET", "quarantine")["entries"]] == ["bad0bad0", None]

    started = answer("POST", "registry", {"agent": "fake", "prompt": "hi"})["task"]
    assert answer("GET", "registry_wait", query={"timeout": "10"}, id=started["id"])["timed_out"] is False
    answer("GET", "registry")
    answer("GET", "registry_task", id=started["id"])
    answer("GET", "registry_logs", id=started["id"])
    answer("POST", "registry_send", {"message": "more"}, id=started["id"])
    answer("GET", "registry_wait", query={"timeout": "10", "since_turn": "1"}, id=started["id"])
    answer("POST", "registry_close", id=started["id"])
    hanging = answer("POST", "registry", {"agent": "fake", "prompt": f"hang:{tmp_path / 'pid'}"})["task"]
    assert answer("POST", "registry_cancel", id=hanging["id"])["cancelled"] == [hanging["id"]]

    project = tmp_path / "project"
    project.mkdir()
    cwd = str(project)
    handover = {"agent": "codex", "session_id": "s1", "cwd": cwd}
    assert answer("POST", "consolidate", handover)["status"] == "skipped"  # consolidation is off here
    assert [d["outcome"] for d in answer("GET", "consolidation")["recent"]] == ["skipped"]
    entry = answer("POST", "board", {"cwd": cwd, "text": "Use pnpm, not npm."})["entry"]
    answer("GET", "board", query={"cwd": cwd})
    answer("GET", "board", query={"cwd": cwd, "all": "1"})
    answer("POST", "board_entry", {"cwd": cwd, "pinned": True}, id=entry["id"])
    answer("GET", "board_history", query={"cwd": cwd, "limit": "5"})
    answer("POST", "board_prune", {"cwd": cwd})
    answer("DELETE", "board_entry", query={"cwd": cwd}, id=entry["id"])

    assert answer("DELETE", "task", id=added["id"])["removed"] == [added["id"]]
    answer("POST", "shutdown")
    assert checked == set(routes.RESPONSES) - {("consolidation_run", "GET")}  # the next test's


def test_a_consolidation_run_answers_its_model(tmp_path):
    """``GET /v1/consolidation/runs/ID`` needs a run, so consolidation on: the consolidation tests' harness."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        api = consolidation_api(h)
        transcript = write_transcript(tmp_path / "t", "claude", str(h.project))
        body = {"agent": "claude", "session_id": "s1", "transcript_path": str(transcript), "cwd": str(h.project)}
        started = await api.handle(Request("POST", "/v1/consolidate", {}, body, 0))
        assert isinstance(started, Response)
        decision = _wire(started.body)
        routes.models_of(routes.RESPONSES[("consolidate", "POST")])[0].model_validate(decision)
        await h.settled(decision["run"]["id"])
        for name, path in [("consolidation_run", f"/v1/consolidation/runs/{decision['run']['id']}"),
                           ("consolidation", "/v1/consolidation")]:  # fmt: skip
            answered = await api.handle(Request("GET", path, {}, None, 0))
            assert isinstance(answered, Response)
            answer = _wire(answered.body)
            routes.models_of(routes.RESPONSES[(name, "GET")])[0].model_validate(answer)
            if name == "consolidation_run":  # the worker's real result, held to ConsolidationResult
                assert answer["result"]["ok"] is True
                assert answer["result"]["merge"]["added"], answer["result"]
        await h.stop()

    run(main())


def _wire(body: Any) -> Any:
    """A handler's answer as a client gets it: through JSON, as the server encodes it."""
    return json.loads(compact_json(body))


def test_an_answer_of_the_wrong_shape_is_refused():
    """The models catch what the tests above exist for: a listing whose task lost a key, a flag as 0, a
    target without its kind's keys."""
    view = {"id": "t1", "prompt": "p", "cron": None, "at": "2026-01-01T00:00:00Z", "recurring": False, "tz": "UTC",
            "target": {"kind": "inbox", "session": "default"}, "name": None, "created_at": "t", "created_by": "cli",
            "last_fired_at": None,
            "last_scheduled_for": None, "paused": False, "paused_reason": None, "expires_after_days": None,
            "permanent": False,
            "catch_up": "once", "jitter": "none", "overlap": "skip", "meta": {}, "status": "scheduled",
            "schedule": "once", "explanation": "once", "next_fires": [], "planned_for": None,
            "running": False}  # fmt: skip
    tasks.ListDoc.model_validate({"tasks": [view]})
    # A target is told apart by its kind, and holds that kind's keys (kairosd.core.models).
    no_session, unknown = {"kind": "inbox"}, {"kind": "carrier-pigeon", "session": "default"}
    for broken in ({k: v for k, v in view.items() if k != "schedule"}, {**view, "paused": 0},
                   {**view, "target": no_session}, {**view, "target": unknown}):  # fmt: skip
        with pytest.raises(ValidationError):
            tasks.ListDoc.model_validate({"tasks": [broken]})
    with pytest.raises(ValidationError, match="extra"):
        tasks.ListDoc.model_validate({"tasks": [view], "count": 1})


def _schema_names(content: dict[str, Any], kind: str = "application/json") -> list[str]:
    """The names of the models an answer's documented schema refers to (each of its shapes)."""
    if kind not in content:
        return []
    schema = content[kind].get("schema") or content[kind]["itemSchema"]
    return [str(shape["$ref"].rsplit("/", 1)[1]) for shape in schema.get("anyOf", [schema])]


def test_openapi_documents_each_route_s_answer_as_its_model(kd):
    doc = Client(kd.paths.socket).call("GET", "/openapi.json")
    components = doc["components"]["schemas"]
    expected_models: dict[str, type[BaseModel]] = {}
    for name, method in _served(kd):
        success = doc["paths"][PREFIX + ROUTES[name]][method.lower()]["responses"]["2XX"]
        content = success.get("content", {})
        shapes = routes.models_of(routes.RESPONSES[(name, method)]) if (name, method) in routes.RESPONSES else ()
        assert _schema_names(content) == [m.__name__ for m in shapes], (name, method)
        line = routes.STREAMS.get((name, method))
        assert _schema_names(content, "application/jsonl") == ([line.__name__] if line else []), (name, method)
        for answer in (*shapes, line):
            if answer is not None:
                expected_models[answer.__name__] = answer
    assert expected_models, "no route documents its answer"
    for model_name, model in expected_models.items():
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
        nested = schema.pop("$defs", {})
        assert components[model_name] == schema, model_name
        for nested_name, nested_schema in nested.items():
            assert components[nested_name] == nested_schema, nested_name


def test_each_free_form_field_is_named_in_the_wire_docstring():
    """``dict[str, Any]`` (or ``Any``) only where the data is free-form, and each such field named once."""
    import importlib
    import pkgutil

    import kairosd.core.wire

    free = set()
    for found in pkgutil.iter_modules(kairosd.core.wire.__path__):
        module = importlib.import_module(f"kairosd.core.wire.{found.name}")
        for model in vars(module).values():
            if isinstance(model, type) and issubclass(model, BaseModel) and model.__module__ == module.__name__:
                for name, field in model.model_fields.items():
                    if "Any" in str(field.annotation) and name not in getattr(model.__base__, "model_fields", {}):
                        free.add(f"{model.__name__}.{name}")
    assert free, "the walk found no field at all"
    named = set(re.findall(r"\b([A-Z]\w+\.\w+)\b", kairosd.core.wire.__doc__ or ""))
    assert free == named
