"""The router: a method and path served twice is refused when routes are wired, not shadowed silently."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kairosd.app.daemon import run, start_app
from kairosd.core import protocol
from kairosd.core.clock import SystemClock
from kairosd.scheduling.api import Api
from kairosd.sessions.api import session_routes
from kairosd.system.paths import Paths


async def _handler(*_: Any) -> Any:  # never called: only the table is under test
    raise AssertionError


def test_a_route_registered_twice_is_refused():
    api = Api(service=None, on_shutdown=lambda: None)  # type: ignore[arg-type]
    api.add_routes([("consolidate", {"POST": _handler})])
    with pytest.raises(ValueError, match="POST /v1/consolidate is registered twice"):
        api.add_routes([("consolidate", {"POST": _handler, "GET": _handler})])
    api.add_routes([("consolidation", {"GET": _handler})])  # another path is fine
    with pytest.raises(ValueError, match="GET /v1/status is registered twice"):
        api.add_routes([("status", {"GET": _handler})])  # the core routes count too


def test_consolidate_is_served_by_consolidation_only():
    """POST /v1/consolidate is consolidation's route; the session routes never claim it."""
    assert "consolidate" not in [p for p, _ in session_routes(hub=None)]  # type: ignore[arg-type]


def test_a_route_outside_the_protocols_table_is_refused():
    """The CLI builds its paths from kairosd.core.protocol.ROUTES: a route it cannot name is refused."""
    api = Api(service=None, on_shutdown=lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'/doctor' is not in kairosd\.core\.protocol\.ROUTES"):
        api.add_routes([("/doctor", {"GET": _handler})])


def test_paths_and_regexes_come_from_the_same_template():
    assert protocol.route_path("task", id="a b/c") == "/tasks/a%20b%2Fc"
    assert protocol.route_path("tasks") == "/tasks"
    with pytest.raises(KeyError):
        protocol.route_path("task")  # its id is missing
    with pytest.raises(KeyError):
        protocol.route_path("tasks", id="x")  # it takes none
    for name, template in protocol.ROUTES.items():
        assert re.fullmatch(r"(/([a-z_.]+|\{[a-z_]+\}))+", template), name  # only "." needs escaping
        params = {p: "x y" for p in re.findall(r"\{(\w+)\}", template)}
        match = re.fullmatch(protocol.route_regex(name), protocol.PREFIX + protocol.route_path(name, **params))
        assert match is not None, name
        assert match.groupdict() == {p: "x%20y" for p in params}, name
    assert re.fullmatch(protocol.route_regex("openapi"), "/v1/openapi_json") is None


def test_the_daemon_serves_exactly_the_protocols_table() -> None:
    """Built and run as kairosd does (start_app, run), the routes its API reference lists are the table's."""
    home = Path(tempfile.mkdtemp(prefix="kr", dir="/tmp"))  # short: AF_UNIX paths are ~107 bytes at most
    environ = {"KAIROS_HOME": str(home), "TZ": "UTC", "PATH": os.environ.get("PATH", "")}
    paths = Paths.from_env(environ)

    async def main() -> dict[str, Any]:
        app, lock = start_app(paths, SystemClock(), environ, None)
        ready = asyncio.Event()
        running = asyncio.ensure_future(run(app, ready=ready))
        await asyncio.wait_for(ready.wait(), 30)
        try:
            reader, writer = await asyncio.open_unix_connection(str(paths.socket))
            writer.write(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            await writer.drain()
            raw = await asyncio.wait_for(reader.read(), 30)
            writer.close()
        finally:
            app.request_stop()
            await asyncio.wait_for(running, 30)
            lock.release()
        head, _, body = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        doc: dict[str, Any] = json.loads(body)
        return doc

    try:
        doc = asyncio.run(main())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    served = set(doc["paths"])
    table = {protocol.PREFIX + template for template in protocol.ROUTES.values()}
    assert served == table
    assert len(protocol.ROUTES) == len(table)  # no two names for one path
    # Every route that takes a body shows its model; the others are actions on the path alone.
    bodiless = {f"/v1{p}" for p in ("/shutdown", "/reload", "/tasks/{id}/pause", "/tasks/{id}/resume",
                                    "/tasks/{id}/run", "/registry/{id}/cancel", "/registry/{id}/close")}  # fmt: skip
    schemas = doc["components"]["schemas"]
    for path, verbs in doc["paths"].items():
        if "post" not in verbs or path in bodiless:
            assert "requestBody" not in verbs.get("post", {}), path
            continue
        ref = verbs["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert schemas[ref.rsplit("/", 1)[1]]["additionalProperties"] is False, path
    hook = doc["paths"]["/v1/sessions/{id}/hook"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schemas[hook["$ref"].rsplit("/", 1)[1]]["properties"]["event"]["enum"] == ["start", "prompt", "stop", "end"]
