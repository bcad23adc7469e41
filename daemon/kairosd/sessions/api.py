"""HTTP routes of live sessions and hooks, registered through :meth:`kairosd.api.router.Router.add_routes`.

    GET    /v1/sessions                     live sessions, most recently active first
    POST   /v1/sessions                     register {agent, session_id, cwd?, transcript_path?}
    POST   /v1/sessions/{id}/hook           a hook call (protocol.SessionHookRequest): claims what it may deliver
    POST   /v1/sessions/{id}/ack            {agent, claim, run_ids, via?}: the hook wrote these out
    POST   /v1/sessions/{id}/end            {agent, reason?}: deregister (SessionEnd)
    GET    /v1/sessions/{id}/next?agent=A&timeout=S   the asyncRewake waiter's long-poll (ends when
                                            its client hangs up, so it claims nothing for a dead socket)
    POST   /v1/consolidate                  {agent, session_id, transcript_path, cwd, reason}: 202

Request parsing lives here; every decision is the hub's.

Must not import the scheduler, the store or the CLI.
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import unquote

from kairosd.api.router import RouteHandler
from kairosd.api.server import Request, Response, cancel_on_disconnect
from kairosd.core.errors import UsageError
from kairosd.core.protocol import SESSION_MAX_WAIT_S
from kairosd.sessions.hub import SessionHub, check_session_id
from kairosd.sessions.store import MAX_AGENT_CHARS

DEFAULT_WAIT_S = 60.0


def session_routes(hub: SessionHub, *, consolidate: bool = True) -> list[tuple[str, dict[str, RouteHandler]]]:
    """(path regex after /v1, {method: handler}) for :meth:`kairosd.api.router.Router.add_routes`.

    ``consolidate``: also serve ``POST /v1/consolidate`` (the hub records the hand-over);
    off where the consolidation service serves that route itself.
    """
    routes = _Routes(hub)
    one = r"/sessions/(?P<id>[^/]+)"
    served: list[tuple[str, dict[str, RouteHandler]]] = [
        ("/sessions", {"GET": routes.index, "POST": routes.register}),
        (one + "/hook", {"POST": routes.hook}),
        (one + "/ack", {"POST": routes.ack}),
        (one + "/end", {"POST": routes.end}),
        (one + "/next", {"GET": routes.next_item}),
    ]
    if consolidate:
        served.append(("/consolidate", {"POST": routes.consolidate}))
    return served


def _body(req: Request) -> dict[str, Any]:
    if req.body is None:
        return {}
    if not isinstance(req.body, dict):
        raise UsageError("the request body must be a JSON object")
    return req.body


def _session_id(m: re.Match[str]) -> str:
    # The path arrives as sent: clients percent-encode ids (kairosd.core.protocol.quote).
    try:
        return check_session_id(unquote(m["id"], errors="strict"))
    except UnicodeDecodeError:
        raise UsageError("the session id in the path is not valid percent-encoded UTF-8") from None


def _timeout(req: Request) -> float:
    raw = req.query.get("timeout")
    if raw is None or raw == "":
        return DEFAULT_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"timeout must be a number of seconds, not {raw[:40]!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError("timeout must be 0 or more seconds")
    return min(value, SESSION_MAX_WAIT_S)


class _Routes:
    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub

    async def index(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, {"sessions": self.hub.sessions()})

    async def register(self, req: Request, m: re.Match[str]) -> Response:
        return Response(201, {"session": await self.hub.register(_body(req))})

    async def hook(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.hub.hook(_session_id(m), _body(req)))

    async def ack(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.hub.ack(_session_id(m), _body(req)))

    async def end(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, await self.hub.end(_session_id(m), _body(req)))

    async def next_item(self, req: Request, m: re.Match[str]) -> Response:
        agent = req.query.get("agent") or None
        if agent is not None and len(agent) > MAX_AGENT_CHARS:
            raise UsageError(f"agent is longer than {MAX_AGENT_CHARS} characters")
        wait = self.hub.next_item(
            _session_id(m),
            agent,
            _timeout(req),
            cwd=req.query.get("cwd") or None,
            transcript_path=req.query.get("transcript_path") or None,
        )
        # Safe to cancel: the waiter claims an item only on its way out, never across an await. A waiter
        # left polling for a client that is gone would claim the next item and leave it stuck for a lease.
        return Response(200, await cancel_on_disconnect(req, wait))

    async def consolidate(self, req: Request, m: re.Match[str]) -> Response:
        return Response(202, await self.hub.consolidate(_body(req)))
