"""Handlers that load their module at first use: the route table holds them from the start, the module
is imported at the first request, and an import that fails answers that route with an error naming it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from pydantic import BaseModel

from kairosd.api.http_types import Request, Response
from kairosd.api.router import HandlerUnavailable, Router, Routes, body_model, on_first_request, typed
from kairosd.core.errors import KairosError


class Body(BaseModel):
    to: str


def _request(method: str, path: str) -> Request:
    return Request(method=method, path=path, query={}, body=None, peer_uid=0)


def _answer(router: Router, method: str, path: str) -> Any:
    return asyncio.run(router.handle(_request(method, path)))


def _export_routes(calls: list[str]) -> Routes:
    calls.append("loaded")

    @typed(Body)
    async def post(req: Request, m: re.Match[str]) -> Response:
        return Response(200, {"exported": True})

    return [("export", {"POST": post})]


def test_the_module_is_loaded_at_the_first_request_and_once() -> None:
    calls: list[str] = []
    router = Router()
    router.add_routes(on_first_request({"export": ["POST"]}, lambda: _export_routes(calls)))
    assert calls == []  # registering is not loading
    assert _answer(router, "POST", "/v1/export").body == {"exported": True}
    assert _answer(router, "POST", "/v1/export").body == {"exported": True}
    assert calls == ["loaded"]


def test_the_api_reference_sees_the_loaded_handlers_body_model() -> None:
    calls: list[str] = []
    (_, methods), *_ = on_first_request({"export": ["POST"]}, lambda: _export_routes(calls))
    assert body_model(methods["POST"]) is Body
    assert calls == ["loaded"]


def test_routes_that_differ_from_the_declared_ones_are_refused() -> None:
    router = Router()
    router.add_routes(on_first_request({"export": ["POST", "GET"]}, lambda: _export_routes([])))
    with pytest.raises(ValueError, match="declared"):
        _answer(router, "POST", "/v1/export")


def test_a_module_that_cannot_be_imported_fails_its_route_with_its_name() -> None:
    """The import fails at the request, not when kairosd starts; the answer names the module, and the
    next request tries again (a reinstall mends it without a restart)."""
    attempts: list[int] = []

    def load() -> Routes:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModuleNotFoundError("No module named 'kairosd.export.common'", name="kairosd.export.common")
        return _export_routes([])

    router = Router()
    router.add_routes(on_first_request({"export": ["POST"]}, load))
    with pytest.raises(HandlerUnavailable) as info:
        _answer(router, "POST", "/v1/export")
    assert isinstance(info.value, KairosError)
    assert info.value.http_status == 500
    assert "POST /v1/export is unavailable: kairosd cannot import kairosd.export.common" in info.value.message
    assert _answer(router, "POST", "/v1/export").body == {"exported": True}


def test_an_import_inside_a_handler_fails_only_that_route() -> None:
    async def doctor(req: Request, m: re.Match[str]) -> Response:
        import kairosd.no_such_module  # type: ignore[import-not-found]  # noqa: F401

        return Response(200, {})

    router = Router()
    router.add_routes([("doctor", {"GET": doctor})])
    with pytest.raises(HandlerUnavailable, match=r"GET /v1/doctor is unavailable: .*kairosd\.no_such_module"):
        _answer(router, "GET", "/v1/doctor")
    assert _answer(router, "GET", "/v1/openapi.json").status == 200
