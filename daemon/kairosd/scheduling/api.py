"""HTTP routes of the daemon: one small handler per request, each calling the service.

The route table is the protocol's (see :mod:`kairosd.core.protocol`); this module
turns a parsed :class:`~kairosd.api.server.Request` into a service call and its
result into a :class:`~kairosd.api.server.Response`, built once here as the answer's model
(:mod:`kairosd.core.wire`). Three answers stay plain data, for their size: the listing (``GET /v1/tasks``,
sent as pre-encoded pieces: 100,000 tasks are ~100 MB), the timeline (50,000 instants for a week of
1,000 tasks) and an import's (a batch of 5,000 task views); tests/unit/kairos/test_wire_responses.py holds
them to their models. The task answers' models (:mod:`kairosd.core.wire.tasks`, 39 classes) are imported by
the handlers that build them, at their first request: a start does not need them (docs/performance.md).
Errors are KairosErrors; the server maps them to status codes.

Must not import the scheduler internals, the store or the CLI.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from kairosd.api.http_types import EncodedJson, JsonPieces
from kairosd.api.requests import parse_body
from kairosd.api.router import Router, typed
from kairosd.api.server import Request, Response, StreamResponse
from kairosd.core.bounds import query_int
from kairosd.core.errors import UsageError
from kairosd.core.protocol import API_VERSION, EVENT_TYPES
from kairosd.core.wire.daemon import StoppingDoc
from kairosd.core.wire.status import StatusDoc
from kairosd.scheduling.kept import KeptListing
from kairosd.scheduling.requests import AckRequest, AddRequest, EditRequest, ImportRequest
from kairosd.scheduling.service import Service
from kairosd.scheduling.timeline import DEFAULT_CAP, DEFAULT_SPAN, MAX_CAP, MAX_WINDOW
from kairosd.store.quarantine import Quarantine

MAX_LIMIT = 10_000
LIST_PIECE = 500  # views per piece of a listing: ~0.5 MB of JSON, a few ms of the loop at most
MAX_BINS = 10_000  # columns of a timeline chart


def _instant(raw: str | None, name: str) -> datetime | None:
    """An ISO 8601 instant with its offset from the query, or None when not given."""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise UsageError(f"{name} must be an ISO 8601 time with an offset, not {raw[:60]!r}") from None
    if value.tzinfo is None:
        raise UsageError(f"{name} must carry its UTC offset (e.g. 2026-03-29T12:00:00+00:00), not {raw[:60]!r}")
    return value


def _flag(req: Request, name: str) -> bool:
    return req.query.get(name, "").lower() in ("1", "true", "yes")


class Api(Router):
    """The router, with the task routes (and status and shutdown) registered; the other capabilities add theirs."""

    def __init__(self, service: Service, on_shutdown: Callable[[], None]) -> None:
        super().__init__()
        self.service = service
        self.on_shutdown = on_shutdown
        # The last listing of each kind (False: full views, True: summaries), for the next (kairosd.scheduling.kept).
        self._kept = {False: KeptListing(), True: KeptListing()}
        self.add_routes(
            [
                ("status", {"GET": self.status}),
                ("tasks", {"GET": self.list_tasks, "POST": self.add}),
                ("task", {"GET": self.show, "DELETE": self.remove, "PATCH": self.edit}),
                ("task_pause", {"POST": self.pause}),
                ("task_resume", {"POST": self.resume}),
                ("task_run", {"POST": self.run}),
                ("runs", {"GET": self.runs}),
                ("missed", {"GET": self.missed, "DELETE": self.clear_missed}),
                ("timeline", {"GET": self.timeline}),
                ("inbox", {"GET": self.inbox}),
                ("inbox_ack", {"POST": self.ack}),
                ("events", {"GET": self.events}),
                ("import", {"POST": self.import_claude}),
                ("shutdown", {"POST": self.shutdown}),
            ]
        )

    async def status(self, req: Request, m: re.Match[str]) -> Response:
        return Response(200, StatusDoc.model_validate({"api_version": API_VERSION, **self.service.status()}))

    async def list_tasks(self, req: Request, m: re.Match[str]) -> JsonPieces | Response:
        """``{"tasks": [...]}``, sent piece by piece as each piece of views is encoded: the bytes
        ``compact_json`` would give for the whole document, which ``kairos list --json`` prints unchanged
        (``bench/bench_cli.py``), never the whole document in memory (issue 28), except the last listing
        of each kind while it is small, kept for the next while nothing in it changed
        (:mod:`kairosd.scheduling.kept`)."""
        summary = req.query.get("view") == "summary"
        # The last listing of this kind, if nothing it shows changed (kairosd.scheduling.kept), in one write.
        now = self.service.clock.now()  # one instant for the state and the listing
        state = self.service.listing_state(summary, now)
        kept = self._kept[summary]
        body = kept.get(state)
        if body is not None:
            return Response(200, EncodedJson(body))
        pieces = self._listed(self.service.listing(summary, now), summary)
        return JsonPieces(pieces if state is None else kept.keeping(pieces, state))

    def _listed(self, rows: list[tuple[Any, ...]], summary: bool) -> Iterator[bytes]:
        yield b'{"tasks":['
        for start in range(0, len(rows), LIST_PIECE):
            yield (b"," if start else b"") + self.service.listed_piece(rows[start : start + LIST_PIECE], summary)
        yield b"]}\n"

    @typed(AddRequest)
    async def add(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import AddDoc

        return Response(201, AddDoc.model_validate({"task": await self.service.add(parse_body(AddRequest, req.body))}))

    async def show(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import TaskDoc

        return Response(200, TaskDoc.model_validate({"task": self.service.get(m["id"])}))

    @typed(EditRequest)
    async def edit(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import EditDoc

        edited = await self.service.edit(m["id"], parse_body(EditRequest, req.body))
        return Response(200, EditDoc.model_validate({"task": edited}))

    async def remove(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import RemovedDoc

        return Response(200, RemovedDoc.model_validate({"removed": await self.service.remove([m["id"]])}))

    async def pause(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import PausedDoc

        return Response(200, PausedDoc.model_validate({"task": await self.service.set_paused(m["id"], True)}))

    async def resume(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.tasks import PausedDoc

        return Response(200, PausedDoc.model_validate({"task": await self.service.set_paused(m["id"], False)}))

    async def run(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.runs import RunDoc

        return Response(202, RunDoc.model_validate({"run": await self.service.run_now(m["id"])}))

    async def runs(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.runs import HistoryDoc

        limit = query_int(req.query.get("limit"), "limit", 50, 1, MAX_LIMIT)
        return Response(
            200, HistoryDoc.model_validate({"runs": self.service.history(req.query.get("task") or None, limit)})
        )

    async def missed(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.runs import MissedDoc

        return Response(200, MissedDoc.model_validate({"missed": self.service.missed()}))

    async def timeline(self, req: Request, m: re.Match[str]) -> Response:
        """``{"from", "to", "now", "tasks": [...], "downtime": [...], ...}``: see :mod:`kairosd.scheduling.timeline`."""
        q = req.query
        ids = [i for i in q.get("ids", "").split(",") if i] or None
        cap = query_int(q.get("cap"), "cap", DEFAULT_CAP, 1, MAX_CAP)
        # The window's length when one end (or neither: then either side of now) is not given.
        span = query_int(q.get("span"), "span", int(DEFAULT_SPAN.total_seconds()), 60, int(MAX_WINDOW.total_seconds()))
        doc = self.service.timeline(
            _instant(q.get("from"), "from"),
            _instant(q.get("to"), "to"),
            ids,
            target=q.get("target") or None,
            project=q.get("project") or None,
            name=q.get("name") or None,
            cap=cap,
            span=timedelta(seconds=span),
            bins=query_int(q.get("bins"), "bins", 0, 1, MAX_BINS) if q.get("bins") else None,
        )
        return Response(200, doc)

    async def clear_missed(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.runs import ClearedDoc

        return Response(200, ClearedDoc.model_validate({"cleared": await self.service.clear_missed()}))

    async def inbox(self, req: Request, m: re.Match[str]) -> Response | StreamResponse:
        from kairosd.core.wire.inbox import InboxDoc

        session = req.query.get("session") or None
        if _flag(req, "follow"):
            return StreamResponse(self._follow_inbox(session, _flag(req, "all")))
        return Response(200, InboxDoc.model_validate({"items": self.service.inbox_items(session, _flag(req, "all"))}))

    async def _follow_inbox(self, session: str | None, include_acked: bool) -> AsyncIterator[Any]:
        # Subscribe first, then send the backlog, so nothing falls in between;
        # an item can then show up twice, so dedupe by id.
        async with contextlib.aclosing(self.service.events.subscribe(frozenset({"inbox_item"}), session)) as stream:
            seen: set[str] = set()
            for item in self.service.inbox_items(session, include_acked):
                seen.add(item["id"])
                yield item
            async for event in stream:
                item = event.get("item", {})
                if item.get("id") not in seen:
                    seen.add(item.get("id"))
                    yield item

    @typed(AckRequest)
    async def ack(self, req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.inbox import AckDoc

        body = parse_body(AckRequest, req.body)
        if not body.all and not body.ids:
            raise UsageError('give {"ids": ["..."]} or {"all": true}')
        acked = self.service.ack(body.session, None if body.all else body.ids)
        return Response(200, AckDoc.model_validate({"acked": acked}))

    async def events(self, req: Request, m: re.Match[str]) -> StreamResponse:
        types = None
        if req.query.get("types"):
            types = frozenset(t for t in req.query["types"].split(",") if t)
            unknown = types - set(EVENT_TYPES) - {"clock_jump", "overflow"}
            if unknown:
                raise UsageError(f"unknown event type(s): {', '.join(sorted(unknown))}")
        return StreamResponse(self.service.events.subscribe(types, req.query.get("session") or None))

    @typed(ImportRequest)
    async def import_claude(self, req: Request, m: re.Match[str]) -> Response:
        body = parse_body(ImportRequest, req.body)
        return Response(200, await self.service.import_claude(body.data, body.tz, body.dry_run, body.project))

    async def shutdown(self, req: Request, m: re.Match[str]) -> Response:
        self.on_shutdown()
        return Response(202, StoppingDoc(stopping=True))


def quarantine_routes(quarantine: Quarantine) -> list[tuple[str, dict[str, Any]]]:
    """``GET /v1/quarantine`` (``kairos list --problems``): the tasks the store set aside, and why.

    Here rather than in the store: no package but the api modules serves routes.
    """

    async def get(req: Request, m: re.Match[str]) -> Response:
        from kairosd.core.wire.listing import ProblemsDoc

        return Response(
            200, ProblemsDoc.model_validate({"path": str(quarantine.path), "entries": quarantine.entries()})
        )

    return [("quarantine", {"GET": get})]
