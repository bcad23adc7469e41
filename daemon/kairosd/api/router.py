"""The daemon's one route table: every capability registers its routes here, and requests are matched here.

A route is a name from the protocol's table (:data:`kairosd.core.protocol.ROUTES`,
which the CLI formats its requests' paths from) and ``{method: handler}``.
Capabilities (tasks, the registry, sessions, consolidation, export, the doctor)
bring their own handlers; the composition root registers them. A handler whose
body is a typed request model says so with :func:`typed`, and the API reference
(``GET /v1/openapi.json``) is built from what is registered, so it cannot drift.

A handler may import what only its route needs when it is first called (the doctor, export, the
task answers' models): kairosd's start does not pay for them (docs/performance.md, and the import
budget in tests/integration/kairosd/app/test_start_imports.py). If such an import fails (a broken
install), that route answers an error naming the module, the log has the traceback, and the rest
of kairosd serves on.

Must not import any capability (scheduling, registry, sessions, ...): they import this.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TypeVar

from pydantic import BaseModel

from kairosd.api.http_types import JsonPieces, Request, Response, StreamResponse
from kairosd.core.errors import KairosError, NotFoundError
from kairosd.core.protocol import API_VERSION, PREFIX, ROUTES, route_regex

RouteHandler = Callable[[Request, re.Match[str]], Awaitable[Response | StreamResponse | JsonPieces]]
# (a route's name in kairosd.core.protocol.ROUTES, {method: handler})
Routes = list[tuple[str, dict[str, RouteHandler]]]
_H = TypeVar("_H")
_BODY_ATTR = "__kairos_body__"
_LOAD_ATTR = "__kairos_load__"

log = logging.getLogger(__name__)


class MethodNotAllowed(KairosError):
    code = "method_not_allowed"
    http_status = 405


class HandlerUnavailable(KairosError):
    """A handler could not import a module it loads at first use (see the module docstring)."""


def typed(model: type[BaseModel]) -> Callable[[_H], _H]:
    """Mark a handler as parsing its body with ``model``: the API reference shows that model's schema."""

    def mark(handler: _H) -> _H:
        setattr(handler, _BODY_ATTR, model)
        return handler

    return mark


def body_model(handler: RouteHandler) -> type[BaseModel] | None:
    """The request model a handler was marked with by :func:`typed`, if any (a handler of
    :func:`on_first_request` is loaded to see it)."""
    load = getattr(handler, _LOAD_ATTR, None)
    model = getattr(handler if load is None else load(), _BODY_ATTR, None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def on_first_request(served: Mapping[str, Collection[str]], load: Callable[[], Routes]) -> Routes:
    """Routes whose handlers ``load`` makes at the first request to any of them, for a capability
    whose module only its routes need (``served``: ``{route name: methods}``, as ``load`` gives them).

    ``load`` imports that module and returns its routes; it runs once, and again after it failed (an
    ImportError is answered as :func:`_unavailable` says). Routes that differ from ``served`` are a
    bug: ValueError at that first request (``GET /v1/openapi.json`` loads every such route).
    """
    loaded: dict[tuple[str, str], RouteHandler] = {}

    def real(name: str, method: str) -> RouteHandler:
        if not loaded:
            made = {(route, verb): h for route, methods in load() for verb, h in methods.items()}
            declared = {(route, verb) for route, verbs in served.items() for verb in verbs}
            if set(made) != declared:
                raise ValueError(f"routes loaded on first request: {sorted(made)}, declared: {sorted(declared)}")
            loaded.update(made)
        return loaded[(name, method)]

    def stand_in(name: str, method: str) -> RouteHandler:
        async def handler(req: Request, m: re.Match[str]) -> Response | StreamResponse | JsonPieces:
            return await real(name, method)(req, m)

        setattr(handler, _LOAD_ATTR, lambda: real(name, method))
        return handler

    return [(name, {verb: stand_in(name, verb) for verb in verbs}) for name, verbs in served.items()]


class Router:
    """The route table and the match; serves ``GET /v1/openapi.json`` itself."""

    def __init__(self) -> None:
        # (route name, its compiled regex, {method: handler}), in registration order
        self.routes: list[tuple[str, re.Pattern[str], dict[str, RouteHandler]]] = []
        self.add_routes([("openapi", {"GET": self.openapi})])

    def add_routes(self, routes: Routes) -> None:
        """Register routes: (a route name from the protocol's table, {method: handler}).

        A name not in the table is refused (ValueError): the CLI could not reach it. So is
        a method and path that is already served: the first match would win silently, and
        the second handler would be dead code that looks alive.
        """
        for name, methods in routes:
            if name not in ROUTES:
                raise ValueError(f"route {name!r} is not in kairosd.core.protocol.ROUTES")
            for existing, _, served in self.routes:
                twice = set(methods) & set(served)
                if existing == name and twice:
                    raise ValueError(f"{', '.join(sorted(twice))} {PREFIX}{ROUTES[name]} is registered twice")
            self.routes.append((name, re.compile(route_regex(name)), methods))

    async def handle(self, req: Request) -> Response | StreamResponse | JsonPieces:
        for _, pattern, methods in self.routes:
            match = pattern.fullmatch(req.path)
            if match:
                handler = methods.get(req.method)
                if handler is None:
                    raise MethodNotAllowed(f"{req.method} is not allowed on {req.path} (use {', '.join(methods)})")
                try:
                    return await handler(req, match)
                except ImportError as exc:
                    raise _unavailable(req, exc) from exc
        raise NotFoundError(f"no such endpoint: {req.path} (this daemon speaks API v{API_VERSION})")

    async def openapi(self, req: Request, m: re.Match[str]) -> Response:
        served = [(name, verbs) for name, _, verbs in self.routes]
        table = [(name, {verb: body_model(h) for verb, h in verbs.items()}) for name, verbs in served]
        from kairosd.api.openapi import openapi_document  # first use: see docs/performance.md

        return Response(200, openapi_document(table))


def _unavailable(req: Request, exc: ImportError) -> HandlerUnavailable:
    """The error a route answers when a module its handler imports at first use cannot be imported."""
    what = exc.name or "a module it needs"
    log.error("%s %s: cannot import %s", req.method, req.path, what, exc_info=exc)
    return HandlerUnavailable(
        f"{req.method} {req.path} is unavailable: kairosd cannot import {what} ({type(exc).__name__}: {exc}); "
        "see the kairosd log, and reinstall kairos if it persists"
    )
