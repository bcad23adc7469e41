"""HTTP routes of consolidation and the context board, registered through :meth:`kairosd.api.router.Router.add_routes`.

    POST   /v1/consolidate                   {agent, session_id, transcript_path, cwd, reason,
                                              spawned?, consolidate?}: the gates decide;
                                              202 started or coalesced ({status, gate, reason, run}),
                                              200 skipped (with the gate that stopped it)
    GET    /v1/consolidation                 enabled, mode, running and pending runs, recent decisions
    GET    /v1/consolidation/runs/{id}       a run: its task record and the worker's result
    GET    /v1/board?cwd=DIR[&all=1]         the project's board (entries in priority order; with
                                              all=1 also the superseded entries, newest first)
    POST   /v1/board                         {cwd, text, kind?}: a user's entry (201)
    DELETE /v1/board/entries/{id}?cwd=DIR    remove an entry
    POST   /v1/board/entries/{id}            {cwd, text?, kind?, pinned?} edit or (un)pin an entry;
                                              {cwd, restore: true} put a superseded entry back
    POST   /v1/board/prune                   {cwd}: prune kairos' entries down to 18
    GET    /v1/board/history?cwd=DIR&limit=N the newest changes

Waiting for a run is the registry's long-poll (``GET /v1/registry/{id}/wait``): a run is a task.

Must not import the scheduler, the store or the CLI.
"""

from __future__ import annotations

import re
from typing import Any

from kairosd.api.router import RouteHandler
from kairosd.api.server import Request, Response
from kairosd.consolidation.service import COALESCED, STARTED, Consolidation
from kairosd.core.errors import UsageError

MAX_HISTORY = 10_000


def consolidation_routes(service: Consolidation) -> list[tuple[str, dict[str, RouteHandler]]]:
    """(path regex after /v1, {method: handler}) for :meth:`kairosd.api.router.Router.add_routes`."""
    routes = _Routes(service)
    return [
        ("/consolidate", {"POST": routes.consolidate}),
        ("/consolidation", {"GET": routes.status}),
        (r"/consolidation/runs/(?P<id>[^/]+)", {"GET": routes.run}),
        ("/board", {"GET": routes.show, "POST": routes.add}),
        ("/board/prune", {"POST": routes.prune}),
        ("/board/history", {"GET": routes.history}),
        (r"/board/entries/(?P<id>[^/]+)", {"DELETE": routes.remove, "POST": routes.change}),
    ]


def _object(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    return body


class _Routes:
    def __init__(self, service: Consolidation) -> None:
        self.service = service

    async def consolidate(self, req: Request, m: re.Match[str]) -> Response:
        decision = await self.service.request(req.body)
        return Response(202 if decision["status"] in (STARTED, COALESCED) else 200, decision)

    async def status(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, self.service.status())

    async def run(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.service.run_info(m["id"]))

    async def show(self, req: Request, m: re.Match[str]) -> Response:
        every = req.query.get("all", "0")
        if every not in ("0", "1"):
            raise UsageError("all must be 0 or 1")
        return Response(200, await self.service.board_ops.board(req.query.get("cwd"), every == "1"))

    async def add(self, req: Request, m: re.Match[str]) -> Response:
        body = _object(req.body)
        unknown = set(body) - {"cwd", "text", "kind"}
        if unknown:
            raise UsageError(f"unknown field(s): {', '.join(sorted(unknown))}")
        return Response(201, await self.service.add_entry(body.get("cwd"), body.get("text"), body.get("kind")))

    async def remove(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.service.remove_entry(req.query.get("cwd"), m["id"]))

    async def change(self, req: Request, m: re.Match[str]) -> Response:
        body = _object(req.body)
        unknown = set(body) - {"cwd", "text", "kind", "pinned", "restore"}
        if unknown:
            raise UsageError(f"unknown field(s): {', '.join(sorted(unknown))}")
        return Response(200, await self.service.board_ops.change_entry(body.get("cwd"), m["id"], body))

    async def prune(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.service.prune(_object(req.body).get("cwd")))

    async def history(self, req: Request, m: re.Match[str]) -> Response:
        raw = req.query.get("limit", "100")
        if not raw.isdigit() or not 0 <= int(raw) <= MAX_HISTORY:
            raise UsageError(f"limit must be a whole number from 0 to {MAX_HISTORY} (0: all)")
        return Response(200, await self.service.history(req.query.get("cwd"), int(raw)))
