"""HTTP routes of live sessions and hooks, registered through :meth:`kairosd.api.router.Router.add_routes`.

    GET    /v1/sessions                     live sessions, most recently active first
    POST   /v1/sessions                     register (RegisterRequest)
    POST   /v1/sessions/{id}/hook           a hook call (HookRequest): claims what it may deliver
    POST   /v1/sessions/{id}/ack            the hook wrote these out (ClaimAckRequest)
    POST   /v1/sessions/{id}/end            deregister (EndRequest, SessionEnd)
    GET    /v1/sessions/{id}/next?agent=A&timeout=S   the asyncRewake waiter's long-poll (ends when
                                            its client hangs up, so it claims nothing for a dead socket)

Request parsing lives here (the bodies are :mod:`kairosd.sessions.requests`); every decision is the hub's.
Each answer is built here as its model (:mod:`kairosd.core.wire.daemon`), but a hook's and its ack's:
they are ``kairos hook``'s, which an agent waits for on every prompt (docs/performance.md), and
tests/unit/kairos/test_wire_responses.py holds them to their models.

Must not import the scheduler, the store or the CLI.
"""

from __future__ import annotations

import math
import re
from urllib.parse import unquote

from kairosd.api.requests import parse_body, query_number
from kairosd.api.router import RouteHandler, typed
from kairosd.api.server import Request, Response, cancel_on_disconnect
from kairosd.core.errors import UsageError
from kairosd.core.protocol import SESSION_MAX_WAIT_S
from kairosd.core.wire.sessions import EndedDoc, NextItemDoc, SessionDoc, SessionsDoc
from kairosd.sessions.hub import SessionHub, check_session_id
from kairosd.sessions.requests import ClaimAckRequest, EndRequest, HookRequest, RegisterRequest
from kairosd.sessions.store import MAX_AGENT_CHARS, MAX_PATH_CHARS

DEFAULT_WAIT_S = 60.0


def session_routes(hub: SessionHub) -> list[tuple[str, dict[str, RouteHandler]]]:
    """(route name, {method: handler}) for :meth:`kairosd.api.router.Router.add_routes`.

    ``POST /v1/consolidate`` (a SessionEnd's hand-over) is consolidation's route, not the hub's.
    """
    routes = _Routes(hub)
    return [
        ("sessions", {"GET": routes.index, "POST": routes.register}),
        ("session_hook", {"POST": routes.hook}),
        ("session_ack", {"POST": routes.ack}),
        ("session_end", {"POST": routes.end}),
        ("session_next", {"GET": routes.next_item}),
    ]


def _session_id(m: re.Match[str]) -> str:
    # The path arrives as sent: clients percent-encode ids (kairosd.core.protocol.quote).
    try:
        return check_session_id(unquote(m["id"], errors="strict"))
    except UnicodeDecodeError:
        raise UsageError("the session id in the path is not valid percent-encoded UTF-8") from None


def _query_text(req: Request, key: str, limit: int) -> str | None:
    value = req.query.get(key) or None
    if value is not None and len(value) > limit:
        raise UsageError(f"{key} is longer than {limit} characters")
    return value


def _timeout(req: Request) -> float:
    value = query_number(req.query.get("timeout"), "timeout must be a number of seconds", quoted=40)
    if value is None:
        return DEFAULT_WAIT_S
    if not math.isfinite(value) or value < 0:
        raise UsageError("timeout must be 0 or more seconds")
    return min(value, SESSION_MAX_WAIT_S)


class _Routes:
    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub

    async def index(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, SessionsDoc.model_validate({"sessions": self.hub.sessions()}))

    @typed(RegisterRequest)
    async def register(self, req: Request, m: re.Match[str]) -> Response:
        registered = await self.hub.register(parse_body(RegisterRequest, req.body))
        return Response(201, SessionDoc.model_validate({"session": registered}))

    @typed(HookRequest)
    async def hook(self, req: Request, m: re.Match[str]) -> Response:
        session_id = _session_id(m)
        return Response(200, await self.hub.hook(session_id, parse_body(HookRequest, req.body)))

    @typed(ClaimAckRequest)
    async def ack(self, req: Request, m: re.Match[str]) -> Response:
        session_id = _session_id(m)
        return Response(200, await self.hub.ack(session_id, parse_body(ClaimAckRequest, req.body)))

    @typed(EndRequest)
    async def end(self, req: Request, m: re.Match[str]) -> Response:
        session_id = _session_id(m)
        body = parse_body(EndRequest, req.body)
        return Response(200, EndedDoc.model_validate(await self.hub.end(session_id, body.agent, body.reason)))

    async def next_item(self, req: Request, m: re.Match[str]) -> Response:
        wait = self.hub.next_item(
            _session_id(m),
            _query_text(req, "agent", MAX_AGENT_CHARS),
            _timeout(req),
            cwd=_query_text(req, "cwd", MAX_PATH_CHARS),
            transcript_path=_query_text(req, "transcript_path", MAX_PATH_CHARS),
        )
        # Safe to cancel: the waiter claims an item only on its way out, never across an await. A waiter
        # left polling for a client that is gone would claim the next item and leave it stuck for a lease.
        return Response(200, NextItemDoc.model_validate(await cancel_on_disconnect(req, wait)))
