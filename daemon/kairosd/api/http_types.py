"""What a handler of :mod:`kairosd.api.server` sees and returns: requests, answers, and the hang-up rule.

Kept apart from the server so route modules (the API, sessions, the registry)
import these small types without the server's socket and HTTP machinery.

Must not import the store, the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

_T = TypeVar("_T")


@dataclass(frozen=True)
class Request:
    """One parsed request. ``path`` is the raw target without its query; ``body`` is JSON or None.

    ``disconnected`` is set by the server once the client has hung up (closed its socket, not
    merely half-closed it) before its answer was sent; see :func:`cancel_on_disconnect`.
    """

    method: str
    path: str
    query: dict[str, str]
    body: Any
    peer_uid: int
    disconnected: asyncio.Event = field(default_factory=asyncio.Event, compare=False, repr=False)


@dataclass(frozen=True)
class Response:
    """A complete answer; ``body`` is serialised as JSON: plain data, or the route's model of its answer
    (:mod:`kairosd.core.wire`), sent as the keys it was given (see :func:`compact_json`)."""

    status: int
    body: Any


@dataclass(frozen=True)
class EncodedJson:
    """A :class:`Response` body already encoded by :func:`compact_json` (or joined from its pieces): sent as is.

    For a long list built from cached items, whose JSON can be cached with them: ``GET /tasks``
    with 2,000 tasks spent ~12 ms of its ~26 ms encoding (``bench/bench_cli.py``).
    """

    data: bytes


def compact_json(body: Any) -> bytes:
    """``body`` as the server sends JSON: compact, ASCII; a model as its fields by their wire names (a key
    left out stays out: a model's optional key is absent, not null, unless the route set it), anything
    else JSON lacks as its ``str``."""
    return _COMPACT.encode(body).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return str(value)


# What json.dumps(separators=(",", ":"), default=...) builds on every call: made once, it is
# ~1/4 of encoding a small document (a listing of 100,000 tasks encodes 100,000 of them).
_COMPACT = json.JSONEncoder(separators=(",", ":"), default=_plain)


@dataclass(frozen=True)
class StreamResponse:
    """An open-ended answer: each item of ``lines`` is sent as one JSON line (application/x-ndjson).

    The server always ``aclose()``s ``lines`` when the stream ends (client gone,
    server closing, or exhausted), so subscribers are released.
    """

    lines: AsyncIterator[Any]
    status: int = 200


@dataclass(frozen=True)
class JsonPieces:
    """A complete JSON answer sent as it is made: ``pieces`` (bytes) joined are the document.

    Sent chunked, each piece as it comes, yielding to the loop between pieces: a listing of
    100,000 tasks is ~100 MB of JSON, which must neither sit whole in memory nor hold the
    loop (issue 28). ``pieces`` is iterated on the loop thread, after the handler returned.
    """

    pieces: Iterable[bytes]
    status: int = 200


Handler = Callable[[Request], Awaitable[Response | StreamResponse | JsonPieces]]


class ClientGone(Exception):
    """Raised by :func:`cancel_on_disconnect` when the client hung up: the server sends nothing."""


async def cancel_on_disconnect(request: Request, work: Awaitable[_T]) -> _T:
    """Await ``work`` for a handler, cancelling it if ``request``'s client hangs up first (ClientGone).

    For long polls: waiting whose cancellation undoes nothing but the wait itself. Do not wrap
    work that changes state, which a cancellation could leave half done. ``work`` has ended
    (its cleanup run) by the time this returns or raises.
    """
    job = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(request.disconnected.wait())
    try:
        await asyncio.wait((job, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Also when our own task is cancelled (server closing): nothing of ``work`` may outlive it.
        gone.cancel()
        if not job.done():
            job.cancel()
        await asyncio.gather(job, gone, return_exceptions=True)
    if job.cancelled() and request.disconnected.is_set():
        raise ClientGone
    return job.result()  # an answer that was ready as the client left is still sent (and lost)
