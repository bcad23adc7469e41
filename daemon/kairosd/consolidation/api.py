"""HTTP routes of consolidation and the context board, registered through :meth:`kairosd.api.router.Router.add_routes`.

    POST   /v1/consolidate                   ConsolidationRequest: the gates decide;
                                              202 started or coalesced ({status, gate, reason, run}),
                                              200 skipped (with the gate that stopped it)
    GET    /v1/consolidation                 enabled, mode, running and pending runs, recent decisions
    GET    /v1/consolidation/runs/{id}       a run: its task record and the worker's result
    GET    /v1/board?cwd=DIR[&all=1]         the project's board (entries in priority order; with
                                              all=1 also the superseded entries, newest first)
    POST   /v1/board                         BoardAddRequest: a user's entry (201)
    DELETE /v1/board/entries/{id}?cwd=DIR    remove an entry
    POST   /v1/board/entries/{id}            BoardChangeRequest: edit or (un)pin an entry, or
                                              {cwd, restore: true} put a superseded entry back
    POST   /v1/board/prune                   BoardPruneRequest {cwd}: prune kairos' entries down to 18
    GET    /v1/board/history?cwd=DIR&limit=N the newest changes

The bodies are :mod:`kairosd.consolidation.request`. Waiting for a run is the registry's
long-poll (``GET /v1/registry/{id}/wait``): a run is a task.

Must not import the scheduler, the store or the CLI.
"""

from __future__ import annotations

import re

from kairosd.api.requests import parse_body
from kairosd.api.router import RouteHandler, typed
from kairosd.api.server import Request, Response
from kairosd.consolidation.request import (
    BoardAddRequest,
    BoardChangeRequest,
    BoardPruneRequest,
    ConsolidationRequest,
)
from kairosd.consolidation.service import COALESCED, STARTED, Consolidation
from kairosd.core.errors import UsageError
from kairosd.core.wire.board import (
    BoardAddDoc,
    BoardDoc,
    BoardEntryDoc,
    BoardHistoryDoc,
    BoardPruneDoc,
    BoardRemovedDoc,
)
from kairosd.core.wire.consolidation import ConsolidateDecisionDoc, ConsolidationRunDoc
from kairosd.core.wire.sections import ConsolidationStatusDoc

MAX_HISTORY = 10_000


def consolidation_routes(service: Consolidation) -> list[tuple[str, dict[str, RouteHandler]]]:
    """(route name, {method: handler}) for :meth:`kairosd.api.router.Router.add_routes`."""
    routes = _Routes(service)
    return [
        ("consolidate", {"POST": routes.consolidate}),
        ("consolidation", {"GET": routes.status}),
        ("consolidation_run", {"GET": routes.run}),
        ("board", {"GET": routes.show, "POST": routes.add}),
        ("board_prune", {"POST": routes.prune}),
        ("board_history", {"GET": routes.history}),
        ("board_entry", {"DELETE": routes.remove, "POST": routes.change}),
    ]


class _Routes:
    def __init__(self, service: Consolidation) -> None:
        self.service = service

    @typed(ConsolidationRequest)
    async def consolidate(self, req: Request, m: re.Match[str]) -> Response:
        decision = await self.service.request(parse_body(ConsolidationRequest, req.body))
        status = 202 if decision["status"] in (STARTED, COALESCED) else 200
        return Response(status, ConsolidateDecisionDoc.model_validate(decision))

    async def status(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, ConsolidationStatusDoc.model_validate(self.service.status()))

    async def run(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, ConsolidationRunDoc.model_validate(await self.service.run_info(m["id"])))

    async def show(self, req: Request, m: re.Match[str]) -> Response:
        every = req.query.get("all", "0")
        if every not in ("0", "1"):
            raise UsageError("all must be 0 or 1")
        board = await self.service.board_ops.board(req.query.get("cwd"), every == "1")
        return Response(200, BoardDoc.model_validate(board))

    @typed(BoardAddRequest)
    async def add(self, req: Request, m: re.Match[str]) -> Response:
        body = parse_body(BoardAddRequest, req.body)
        return Response(201, BoardAddDoc.model_validate(await self.service.add_entry(body.cwd, body.text, body.kind)))

    async def remove(self, req: Request, m: re.Match[str]) -> Response:
        removed = await self.service.remove_entry(req.query.get("cwd"), m["id"])
        return Response(200, BoardRemovedDoc.model_validate(removed))

    @typed(BoardChangeRequest)
    async def change(self, req: Request, m: re.Match[str]) -> Response:
        change = parse_body(BoardChangeRequest, req.body)
        return Response(200, BoardEntryDoc.model_validate(await self.service.board_ops.change_entry(m["id"], change)))

    @typed(BoardPruneRequest)
    async def prune(self, req: Request, m: re.Match[str]) -> Response:
        pruned = await self.service.prune(parse_body(BoardPruneRequest, req.body).cwd)
        return Response(200, BoardPruneDoc.model_validate(pruned))

    async def history(self, req: Request, m: re.Match[str]) -> Response:
        raw = req.query.get("limit", "100")
        if not (raw.isascii() and raw.isdigit()) or not 0 <= int(raw) <= MAX_HISTORY:
            raise UsageError(f"limit must be a whole number from 0 to {MAX_HISTORY} (0: all)")
        return Response(200, BoardHistoryDoc.model_validate(await self.service.history(req.query.get("cwd"), int(raw))))
