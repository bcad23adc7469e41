"""HTTP routes of the background job registry, registered through :meth:`kairosd.api.router.Router.add_routes`.

    GET    /v1/registry?status=S&parent=ID       list (newest first, without turn history)
    POST   /v1/registry                          start (body: see :func:`parse_start`)
    GET    /v1/registry/{id}                     one task with its turns
    GET    /v1/registry/{id}/wait?timeout=S&since_turn=N&waiter=ID   long-poll (at most REGISTRY_MAX_WAIT_S)
    GET    /v1/registry/{id}/logs?offset=N       a chunk of the log; &follow=1 streams JSON lines
    POST   /v1/registry/{id}/cancel              cancel it and its descendants
    POST   /v1/registry/{id}/send                body {"message": TEXT}: a follow-up turn
    POST   /v1/registry/{id}/close               end an idle multi-turn task (completed)

Request parsing lives here; every decision is the registry's. Each answer is built once, here, as its
model of :mod:`kairosd.core.wire.registry` (the log's followed stream excepted: its lines go as they
come). ``waiter`` on a wait is the asking task's ``KAIROS_TASK_ID``: a task waiting on its own descendant lends it
its slot meanwhile (see :mod:`kairosd.jobs.registry`). The wait is the one route the
server may cancel when its client hangs up (:func:`kairosd.api.server.cancel_on_disconnect`):
it only waits, so cutting it off undoes nothing but the wait and its loan.

Must not import the scheduler, the store or the CLI.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from kairosd.api.requests import parse_body, query_number
from kairosd.api.router import RouteHandler, typed
from kairosd.api.server import Request, Response, StreamResponse, cancel_on_disconnect
from kairosd.core.errors import UsageError
from kairosd.core.protocol import REGISTRY_MAX_WAIT_S
from kairosd.core.wire.registry import (
    BackgroundListDoc,
    BackgroundTaskDoc,
    CancelledDoc,
    LogChunkDoc,
    SettledDoc,
)
from kairosd.jobs.joblog import read_chunk
from kairosd.jobs.model import ExecutionMode, JobKind, JobStatus, view
from kairosd.jobs.registry import Registry, StartSpec
from kairosd.jobs.requests import SendRequest, StartRequest

DEFAULT_WAIT_S = 30.0
_E = TypeVar("_E", JobKind, JobStatus, ExecutionMode)


def registry_routes(registry: Registry) -> list[tuple[str, dict[str, RouteHandler]]]:
    """(route name, {method: handler}) for :meth:`kairosd.api.router.Router.add_routes`."""
    routes = _Routes(registry)
    return [
        ("registry", {"GET": routes.index, "POST": routes.start}),
        ("registry_task", {"GET": routes.show}),
        ("registry_wait", {"GET": routes.wait}),
        ("registry_logs", {"GET": routes.logs}),
        ("registry_cancel", {"POST": routes.cancel}),
        ("registry_send", {"POST": routes.send}),
        ("registry_close", {"POST": routes.close}),
    ]


class _Routes:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def index(self, req: Request, m: re.Match[str]) -> Response:
        status = _enum(JobStatus, req.query.get("status"), "status")
        parent = req.query.get("parent") or None
        records = self.registry.list_tasks(status)
        if parent is not None:
            records = [r for r in records if r.parent_id == parent]
        listing = {"tasks": [view(r, turns=False) for r in records], "registry": self.registry.status()}
        return Response(200, BackgroundListDoc.model_validate(listing))

    @typed(StartRequest)
    async def start(self, req: Request, m: re.Match[str]) -> Response:
        record = await self.registry.start(parse_start(req.body))
        return Response(201, BackgroundTaskDoc.model_validate({"task": view(record)}))

    async def show(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, BackgroundTaskDoc.model_validate({"task": view(self.registry.get(m["id"]))}))

    async def wait(self, req: Request, m: re.Match[str]) -> Response:
        timeout = _number(req.query.get("timeout"), "timeout", DEFAULT_WAIT_S, 0, REGISTRY_MAX_WAIT_S)
        since = req.query.get("since_turn")
        since_turn = int(_number(since, "since_turn", 0, 0, 1_000_000)) if since not in (None, "") else None
        waiter = req.query.get("waiter") or None
        # A wait whose client is gone is cancelled, which also ends the slot loan it made.
        wait = self.registry.wait(self.registry.resolve(m["id"]), timeout, since_turn, waiter=waiter)
        record, timed_out = await cancel_on_disconnect(req, wait)
        return Response(200, SettledDoc.model_validate({"task": view(record), "timed_out": timed_out}))

    async def logs(self, req: Request, m: re.Match[str]) -> Response | StreamResponse:
        record = self.registry.get(m["id"])  # a 404 before any stream starts
        if req.query.get("follow", "").lower() in ("1", "true", "yes"):
            return StreamResponse(self.registry.follow(record.id))
        offset = int(_number(req.query.get("offset"), "offset", 0, 0, 1 << 50))
        text, next_offset, size = read_chunk(self.registry.log_path(record.id), offset)
        body = {"text": text, "offset": offset, "next_offset": next_offset, "size": size, "status": record.status.value}
        return Response(200, LogChunkDoc.model_validate(body))

    async def cancel(self, req: Request, m: re.Match[str]) -> Response:
        task_id = self.registry.resolve(m["id"])
        report = await self.registry.cancel_report(task_id)
        body: dict[str, object] = {
            "cancelled": [r.id for r in report.cancelled],
            # Ignored SIGTERM for the whole grace: killed with SIGKILL (why the cancel took that long).
            "killed": report.killed,
            "kill_grace_s": self.registry.limits.kill_grace_s,
        }
        if report.cancelled:
            body["task"] = view(report.cancelled[0])
        else:  # already cancelled: a note, not an error (as pausing a paused task)
            body.update(task=view(self.registry.get(task_id)), unchanged=True)
        return Response(200, CancelledDoc.model_validate(body))

    @typed(SendRequest)
    async def send(self, req: Request, m: re.Match[str]) -> Response:
        message = parse_body(SendRequest, req.body).message
        record = await self.registry.send(self.registry.resolve(m["id"]), message)
        return Response(202, BackgroundTaskDoc.model_validate({"task": view(record)}))

    async def close(self, req: Request, m: re.Match[str]) -> Response:
        record = await self.registry.close(self.registry.resolve(m["id"]))
        return Response(200, BackgroundTaskDoc.model_validate({"task": view(record)}))


def parse_start(body: Any) -> StartSpec:
    """The start request as a :class:`StartSpec`; UsageError for anything malformed."""
    req = parse_body(StartRequest, body)
    return StartSpec(
        kind=JobKind(req.kind),
        prompt=req.prompt,
        agent=req.agent,
        argv=req.argv,
        cwd=req.cwd,
        session=req.session,
        model=req.model,
        mode=req.mode,
        parent_id=req.parent_id or None,
        parent_depth=req.parent_depth,
        permissions=req.permissions.to_permissions() if req.permissions is not None else None,
        timeout_s=req.timeout_s,
    )


def _enum(kind: type[_E], raw: Any, name: str) -> _E | None:
    if raw in (None, ""):
        return None
    try:
        return kind(raw)
    except ValueError:
        raise UsageError(f"{name} must be one of {', '.join(v.value for v in kind)}, not {raw!r}") from None


def _number(raw: str | None, name: str, default: float, low: float, high: float) -> float:
    value = query_number(raw, f"{name} must be a number")
    if value is None:
        return default
    if not low <= value <= high:
        raise UsageError(f"{name} must be from {low:g} to {high:g}")
    return value
