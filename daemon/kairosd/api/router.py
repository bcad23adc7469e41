"""The daemon's one route table: every capability registers its routes here, and requests are matched here.

A route is a name from the protocol's table (:data:`kairosd.core.protocol.ROUTES`,
which the CLI formats its requests' paths from) and ``{method: handler}``.
Capabilities (tasks, the registry, sessions, consolidation, export, the doctor)
bring their own handlers; the composition root registers them. A handler whose
body is a typed request model says so with :func:`typed`, and the API reference
(``GET /v1/openapi.json``) is built from what is registered, so it cannot drift.

Must not import any capability (scheduling, registry, sessions, ...): they import this.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
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


class MethodNotAllowed(KairosError):
    code = "method_not_allowed"
    http_status = 405


def typed(model: type[BaseModel]) -> Callable[[_H], _H]:
    """Mark a handler as parsing its body with ``model``: the API reference shows that model's schema."""

    def mark(handler: _H) -> _H:
        setattr(handler, _BODY_ATTR, model)
        return handler

    return mark


def body_model(handler: RouteHandler) -> type[BaseModel] | None:
    """The request model a handler was marked with by :func:`typed`, if any."""
    model = getattr(handler, _BODY_ATTR, None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


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
                return await handler(req, match)
        raise NotFoundError(f"no such endpoint: {req.path} (this daemon speaks API v{API_VERSION})")

    async def openapi(self, req: Request, m: re.Match[str]) -> Response:
        served = [(name, verbs) for name, _, verbs in self.routes]
        table = [(name, {verb: body_model(h) for verb, h in verbs.items()}) for name, verbs in served]
        from kairosd.api.openapi import openapi_document  # first use: see docs/performance.md

        return Response(200, openapi_document(table))
