"""The daemon's one route table: every capability registers its routes here, and requests are matched here.

A route is a path regex (after ``/v1``) and ``{method: handler}``. Capabilities
(tasks, the registry, sessions, consolidation, export, the doctor) bring their
own handlers; the composition root registers them. A handler whose body is a
typed request model says so with :func:`typed`, and the API reference
(``GET /v1/openapi.json``) is built from the table, so it cannot drift.

Must not import any capability (scheduling, registry, sessions, ...): they import this.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel

from kairosd.api.http_types import Request, Response, StreamResponse
from kairosd.api.openapi import openapi_document
from kairosd.core.errors import KairosError, NotFoundError
from kairosd.core.protocol import API_VERSION, PREFIX

RouteHandler = Callable[[Request, re.Match[str]], Awaitable[Response | StreamResponse]]
Routes = list[tuple[str, dict[str, RouteHandler]]]
_H = TypeVar("_H")
_BODY_ATTR = "__kairos_body__"


class MethodNotAllowed(KairosError):
    code = "method_not_allowed"


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
        self.routes: list[tuple[re.Pattern[str], dict[str, RouteHandler]]] = []
        self.add_routes([("/openapi.json", {"GET": self.openapi})])

    def add_routes(self, routes: Routes) -> None:
        """Register routes: (regex for the path after the prefix, {method: handler}).

        A method and path that is already served is refused (ValueError): the first
        match would win silently, and the second handler would be dead code that looks alive.
        """
        for pattern, methods in routes:
            full = rf"{PREFIX}{pattern}"
            for existing, served in self.routes:
                twice = set(methods) & set(served)
                if existing.pattern == full and twice:
                    raise ValueError(f"{', '.join(sorted(twice))} {full} is registered twice")
            self.routes.append((re.compile(full), methods))

    async def handle(self, req: Request) -> Response | StreamResponse:
        for pattern, methods in self.routes:
            match = pattern.fullmatch(req.path)
            if match:
                handler = methods.get(req.method)
                if handler is None:
                    raise MethodNotAllowed(f"{req.method} is not allowed on {req.path} (use {', '.join(methods)})")
                return await handler(req, match)
        raise NotFoundError(f"no such endpoint: {req.path} (this daemon speaks API v{API_VERSION})")

    async def openapi(self, req: Request, m: re.Match[str]) -> Response:
        table = [(p.pattern, {verb: body_model(h) for verb, h in methods.items()}) for p, methods in self.routes]
        return Response(200, openapi_document(table))
