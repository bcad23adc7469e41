"""The daemon's HTTP/1.1 server on its Unix socket: asyncio streams plus the ``h11`` state machine.

We serve HTTP ourselves (no uvicorn/starlette) because every connection must be
checked with ``SO_PEERCRED`` against the daemon's uid, and because the limits
of :mod:`kairosd.core.protocol` (header and body size, request timeout) must hold
exactly. One request per connection: every response says ``Connection: close``
and the connection is closed after it. Routing is not done here: one
:data:`Handler` gets every parsed :class:`Request`; a :class:`KairosError` it
raises becomes the protocol's error body, anything else a logged 500. The
server must never crash or hang on any input, so every wait is bounded.

A client that hangs up. While a handler runs, the server watches for its
client closing the socket and then sets the request's ``disconnected`` event; a
handler that opted in with :func:`cancel_on_disconnect` (a long poll) is then
cancelled and gets no answer. Other handlers run to the end (most change state
and are not written to be cut off halfway); their answer is lost. The rule for
"hung up": the peer can no longer read us, i.e. our socket reports ``EPOLLHUP``
(the peer closed, or shut both directions) or ``EPOLLERR``. End of input alone
is not enough: a client may ``shutdown(SHUT_WR)`` after its request and still
wait for the answer, and on a Unix stream socket that reads exactly like a
close; Linux sets ``EPOLLHUP`` on our end only when the peer's socket is
released or shut in both directions, so the two are told apart without reading
or writing. A stream is the exception: it ends at the client's end of input,
half-close included, because it has no end of its own and a client that sent
all it will send and then waits for the server to close would wait forever.

Limits. At most ``max_connections`` connections are served at once, and of those at most
``max_streams`` streams; a client past either gets a 503 with the code ``busy`` and a message
naming the limit (the refusal itself is bounded: past :data:`MAX_REFUSING` refusals in flight a
new connection is closed at once). The accept loop is our own rather than asyncio's, whose
3.11 loop logs a traceback for every failed accept() when descriptors run out: ours waits with
a growing pause, logs that once a minute (:mod:`kairosd.api.throttle`), and says when it accepts again.

Linux only (``SO_PEERCRED``). Must not import the store, the scheduler or the
CLI; it knows nothing about routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import http
import logging
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl

import h11

from kairosd.api.http_types import (
    ClientGone,
    EncodedJson,
    Handler,
    JsonPieces,
    Request,
    Response,
    StreamResponse,
    cancel_on_disconnect,
    compact_json,
)
from kairosd.api.throttle import LogThrottle
from kairosd.api.unixsocket import bind_private, peer_credentials, unlink_if_same, watch_hangup
from kairosd.core import bounds, defaults, jsonsafe, protocol
from kairosd.core.errors import KairosError

# Route modules import these from here too (the server's public face).
__all__ = [
    "ClientGone",
    "Handler",
    "JsonPieces",
    "Request",
    "Response",
    "StreamResponse",
    "UnixHttpServer",
    "cancel_on_disconnect",
]

log = logging.getLogger(__name__)

BACKLOG: Final = 64
READ_CHUNK: Final = 64 << 10
# After an early error reply we read and discard what the client still sends (a lingering close):
# closing with unread data makes Linux reset the peer, which could then lose our reply.
LINGER_S: Final = 1.0
# How long an async iterator's cleanup (aclose) may take before we give up on it.
ACLOSE_TIMEOUT_S: Final = 2.0
# A connection's transport normally closes once its buffer is flushed; a peer that never reads is aborted.
CLOSE_TIMEOUT_S: Final = 1.0
INTERNAL_MESSAGE: Final = "internal error; see the kairosd log"
# accept() failing for want of descriptors or memory: wait for some to be freed (growing pauses), never spin.
_STARVED_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_PAUSE_MIN_S: Final = 0.05
ACCEPT_PAUSE_MAX_S: Final = 1.0
# Busy refusals in flight; each holds a descriptor for up to LINGER_S, so they are bounded too.
MAX_REFUSING: Final = 16


class _HttpError(Exception):
    """A request we refuse before (or instead of) calling the handler."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class _Connection(h11.Connection):
    """h11's connection, remembering whether the request was HEAD (h11 keeps that to itself):
    a response to HEAD must not carry the body its Content-Length announces."""

    head_only = False


class UnixHttpServer:
    """Serves ``handler`` on a Unix socket, for one uid only.

    ``sock`` is an already-listening socket (systemd socket activation): then
    the socket file belongs to whoever made it, and we neither probe, chmod nor
    unlink it.
    """

    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        uid: int | None = None,
        sock: socket.socket | None = None,
        max_connections: int = defaults.MAX_CONNECTIONS,
        max_streams: int = defaults.MAX_STREAMS,
    ) -> None:
        self._path = path
        self._handler = handler
        self._uid = os.getuid() if uid is None else uid
        self._given_sock = sock
        self._max_connections = max(1, max_connections)
        self._max_streams = max(1, min(max_streams, self._max_connections))
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._file_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket file we bound
        self._closing = asyncio.Event()  # binds to a loop on first use, not here
        self._connections: set[asyncio.Task[Any]] = set()
        self._reading: set[asyncio.Task[Any]] = set()  # still reading their request: cancelled on close
        self._busy: set[asyncio.Task[Any]] = set()  # requests handed to the handler (streams included)
        self._streams: set[asyncio.Task[Any]] = set()  # connections streaming now
        self._refusing: set[asyncio.Task[Any]] = set()  # busy refusals in flight
        self._starved_log = LogThrottle(log, logging.ERROR)
        self._refused_log = LogThrottle(log, logging.WARNING)
        self._accept_log = LogThrottle(log, logging.WARNING)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def active_requests(self) -> int:
        """Requests parsed and not yet fully answered; open streams count."""
        return len(self._busy)

    @property
    def open_connections(self) -> int:
        """Connections being served now (a busy refusal is not one)."""
        return len(self._connections)

    async def start(self) -> None:
        """Listen. Raises LockHeldError if another server answers on the path."""
        if self._sock is not None or self._closing.is_set():
            raise RuntimeError("UnixHttpServer.start() called twice")
        if self._given_sock is not None:
            sock = self._given_sock
            sock.setblocking(False)
        else:
            sock = await asyncio.to_thread(self._bind)
        self._sock = sock
        self._accepting = asyncio.create_task(self._accept_loop(sock))
        log.info("listening on %s", self._path)

    async def close(self, grace_s: float = 5.0) -> None:
        """Stop accepting, end open streams, let in-flight requests finish (up to ``grace_s``), clean up.

        The socket file goes first (if it is still ours), so new clients see
        "not running" rather than a hang. A handler may call this (e.g. for
        /v1/shutdown): its own request is not waited for.
        """
        if self._closing.is_set():
            return
        self._closing.set()
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
        self._unlink_own_socket()
        current = asyncio.current_task()
        for task in self._reading | self._refusing:
            if task is not current:
                task.cancel()
        pending = {task for task in self._connections if task is not current}
        if pending:
            _, late = await asyncio.wait(pending, timeout=grace_s)
            if late:
                log.warning("%d request(s) still running after %.1fs; cancelling them", len(late), grace_s)
                for task in late:
                    task.cancel()
                await asyncio.wait(late, timeout=CLOSE_TIMEOUT_S)
        if self._refusing:
            await asyncio.wait(set(self._refusing), timeout=CLOSE_TIMEOUT_S)
        log.info("stopped serving on %s", self._path)

    # -- socket file -----------------------------------------------------------------------------------

    def _bind(self) -> socket.socket:
        """Bind and listen on our socket file (runs in a thread: probing a stale socket may block)."""
        sock, self._file_id = bind_private(self._path, BACKLOG)
        return sock

    def _unlink_own_socket(self) -> None:
        """Remove the socket file if it is still the one we bound (a successor may have replaced it)."""
        file_id, self._file_id = self._file_id, None
        unlink_if_same(self._path, file_id)

    # -- accepting -------------------------------------------------------------------------------------

    async def _accept_loop(self, sock: socket.socket) -> None:
        """Accept until closed; out of descriptors, pause and retry (see the module docstring)."""
        loop = asyncio.get_running_loop()
        pause = ACCEPT_PAUSE_MIN_S
        starved = False
        while True:
            # accept() itself runs here, in this task's own step, and only readiness is awaited:
            # loop.sock_accept accepts in a callback, and a close() that cancelled this task between that
            # accept and the task's next step dropped the accepted socket unclosed.
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                await _readable(loop, sock)
                continue
            except OSError as exc:
                if exc.errno in _STARVED_ERRNOS:
                    starved = True
                    self._starved_log.hit(
                        loop.time(),
                        "cannot accept a client: %s; %d connection(s) open; "
                        "retrying as descriptors free up (raise LimitNOFILE= or lower limits.max_connections)",
                        os.strerror(exc.errno or 0),
                        len(self._connections),
                    )
                else:
                    self._accept_log.hit(loop.time(), "accept() failed: %r", exc)
                await asyncio.sleep(pause)  # an error that repeats must never become a busy loop
                pause = min(pause * 2, ACCEPT_PAUSE_MAX_S)
                continue
            if starved:
                log.warning("accepting clients again (%d connection(s) open)", len(self._connections))
                starved = False
            pause = ACCEPT_PAUSE_MIN_S
            self._admit(conn)

    def _admit(self, conn: socket.socket) -> None:
        """Serve a new connection, or refuse it with ``busy`` if the connection limit is reached."""
        conn.setblocking(False)
        if len(self._connections) < self._max_connections:
            task = asyncio.create_task(self._connection(conn))
            self._connections.add(task)  # counted at once, not when the task first runs
            task.add_done_callback(self._connections.discard)
            # Cancelled before its first step (the loop torn down under it), the task never ran the code
            # that closes ``conn``; one that ran ends normally, whatever happened (see _on_connection).
            task.add_done_callback(lambda done: conn.close() if done.cancelled() else None)
            return
        now = asyncio.get_running_loop().time()
        self._refused_log.hit(now, "refusing clients: %d connections open, the limit", self._max_connections)
        if len(self._refusing) >= MAX_REFUSING:
            conn.close()  # a flood: even the refusals are bounded
            return
        message = (
            f"kairosd is serving {self._max_connections} connections, its limit "
            "(limits.max_connections in config.toml); try again later"
        )
        refusal = asyncio.create_task(self._refuse_busy(conn, message))
        self._refusing.add(refusal)
        refusal.add_done_callback(self._refusing.discard)

    async def _refuse_busy(self, conn: socket.socket, message: str) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn, limit=READ_CHUNK)
        except OSError:
            conn.close()
            return
        try:
            conn_state = _Connection(h11.SERVER, max_incomplete_event_size=protocol.MAX_HEADER_BYTES)
            await self._refuse(conn_state, reader, writer, protocol.status_for("busy"), "busy", message)
        except asyncio.CancelledError:
            pass  # close() ends refusals; this task is ours alone
        finally:
            await _close_writer(writer)

    async def _connection(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn, limit=READ_CHUNK)
        except OSError as exc:
            conn.close()
            log.info("could not set up a client connection: %r", exc)
            return
        except asyncio.CancelledError:
            conn.close()
            return
        await self._on_connection(reader, writer)

    # -- connections -----------------------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # a connection always runs in a task
        self._connections.add(task)
        try:
            await self._serve(task, reader, writer)
        except asyncio.CancelledError:
            # Only close() cancels a connection; this task is top level (nobody awaits its result).
            log.debug("connection cancelled by close()")
        except OSError as exc:  # includes TimeoutError from a peer that stopped reading
            log.info("client went away before its answer was sent: %r", exc)
        except Exception:
            # Nothing may escape: asyncio would only log it, and the client would hang until close.
            log.exception("unexpected error while serving a connection")
        finally:
            self._connections.discard(task)
            self._reading.discard(task)
            self._busy.discard(task)
            await _close_writer(writer)

    async def _serve(self, task: asyncio.Task[Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(h11.SERVER, max_incomplete_event_size=protocol.MAX_HEADER_BYTES)
        creds = peer_credentials(writer)
        if creds is None or creds[1] != self._uid:
            pid, uid = (creds[0], creds[1]) if creds else (-1, -1)
            log.warning("refused a connection from pid %d uid %d: this kairosd serves uid %d", pid, uid, self._uid)
            await self._refuse(conn, reader, writer, 403, "forbidden", "this kairosd belongs to another user")
            return
        if self._closing.is_set():
            await self._refuse(conn, reader, writer, 503, "unavailable", "kairosd is shutting down")
            return

        self._reading.add(task)
        try:
            # Looked up per connection, not bound at import, so tests can shorten it.
            async with asyncio.timeout(protocol.REQUEST_TIMEOUT_S):
                request = await self._read_request(conn, reader, writer, creds[1])
        except _HttpError as exc:
            await self._refuse(conn, reader, writer, exc.status, exc.code, exc.message)
            return
        except TimeoutError:
            await self._refuse(conn, reader, writer, 408, "bad_request", "request timed out")
            return
        finally:
            self._reading.discard(task)
        if request is None:
            return  # the client left without asking anything

        self._busy.add(task)
        try:
            with watch_hangup(writer, request.disconnected):
                result = await self._call_handler(request)
                if result is None:
                    log.info("client hung up; %s %s was cancelled", request.method, request.path)
                    return
            if isinstance(result, StreamResponse):
                if len(self._streams) >= self._max_streams:
                    await _aclose(result.lines)
                    await self._refuse_stream(conn, writer)
                    return
                self._streams.add(task)
                try:
                    await self._stream(conn, reader, writer, result)
                finally:
                    self._streams.discard(task)
            elif isinstance(result, JsonPieces):
                await self._send_pieces(conn, writer, result)
            else:
                await self._send_json(conn, writer, result.status, result.body)
            log.debug("%s %s -> %d", request.method, request.path, result.status)
        finally:
            self._busy.discard(task)

    async def _read_request(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer_uid: int,
    ) -> Request | None:
        head: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                if exc.error_status_hint == 431:
                    raise _header_too_large() from exc
                raise _HttpError(400, "bad_request", f"malformed HTTP request: {exc}") from exc
            if event is h11.NEED_DATA:
                try:
                    data = await reader.read(READ_CHUNK)
                except OSError:
                    data = b""  # a reset peer is a closed peer
                conn.receive_data(data)  # b"" tells h11 about EOF
            elif isinstance(event, h11.ConnectionClosed):
                return None
            elif isinstance(event, h11.Request):
                head = event
                if isinstance(conn, _Connection):
                    conn.head_only = event.method == b"HEAD"
                _check_head(event)
                if conn.they_are_waiting_for_100_continue:
                    writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > protocol.MAX_BODY_BYTES:
                    raise _body_too_large()
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
        assert head is not None  # h11 emits EndOfMessage only after a Request
        return _build_request(head, b"".join(chunks), peer_uid)

    async def _call_handler(self, request: Request) -> Response | StreamResponse | JsonPieces | None:
        """The handler's answer; None if it gave up because its client hung up."""
        try:
            result = await self._handler(request)
        except ClientGone:
            return None
        except KairosError as exc:
            log.debug("%s %s failed: %s (%s)", request.method, request.path, exc.message, exc.code)
            return Response(exc.http_status, protocol.error_body(exc.code, exc.message))
        except Exception:
            log.exception("handler failed on %s %s", request.method, request.path)
            return Response(500, protocol.error_body("internal", INTERNAL_MESSAGE))
        if not isinstance(result, Response | StreamResponse | JsonPieces):
            log.error("handler returned %r for %s %s", type(result), request.method, request.path)
            return Response(500, protocol.error_body("internal", INTERNAL_MESSAGE))
        return result

    # -- writing ---------------------------------------------------------------------------------------

    async def _send_json(self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, body: Any) -> None:
        try:
            payload = _json_line(body)
        except (TypeError, ValueError, RecursionError):
            log.exception("response body for status %d is not serialisable", status)
            status, payload = 500, _json_line(protocol.error_body("internal", INTERNAL_MESSAGE))
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return  # a response already started; nothing sensible can follow
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(payload))),
            ("Connection", "close"),
        ]
        out = conn.send(h11.Response(status_code=status, headers=headers, reason=_reason(status))) or b""
        if not getattr(conn, "head_only", False):  # the answer to HEAD is the head alone (RFC 9110)
            out += conn.send(h11.Data(data=payload)) or b""
        out += conn.send(h11.EndOfMessage()) or b""
        writer.write(out)
        await _drain(writer)

    async def _refuse_stream(self, conn: h11.Connection, writer: asyncio.StreamWriter) -> None:
        now = asyncio.get_running_loop().time()
        self._refused_log.hit(now, "refusing a stream: %d streams open, the limit", self._max_streams)
        message = (
            f"kairosd has {self._max_streams} streams open, its limit (limits.max_streams in config.toml); "
            "close a `kairos watch` or a follow, or try again later"
        )
        await self._send_json(conn, writer, protocol.status_for("busy"), protocol.error_body("busy", message))

    async def _send_pieces(self, conn: h11.Connection, writer: asyncio.StreamWriter, response: JsonPieces) -> None:
        """A JSON answer made piece by piece: chunked (no Content-Length), each piece written as it comes."""
        headers = [("Content-Type", "application/json"), ("Connection", "close")]
        head = h11.Response(status_code=response.status, headers=headers, reason=_reason(response.status))
        writer.write(conn.send(head) or b"")
        for piece in response.pieces:  # an error here leaves the body unended: the client sees a broken answer
            writer.write(conn.send(h11.Data(data=piece)) or b"")
            await _drain(writer)
            await asyncio.sleep(0)  # fires and other clients go on while a long listing is sent
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await _drain(writer)

    async def _refuse(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        status: int,
        code: str,
        message: str,
    ) -> None:
        """Answer an error before the request was read in full, then close gracefully."""
        try:
            await self._send_json(conn, writer, status, protocol.error_body(code, message))
        except (OSError, h11.LocalProtocolError):
            return  # the client is gone or the exchange is beyond repair; just close
        await _linger(reader, writer)

    async def _stream(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        response: StreamResponse,
    ) -> None:
        lines = response.lines
        try:
            headers = [("Content-Type", "application/x-ndjson"), ("Connection", "close")]
            # No Content-Length: h11 frames the body as chunked for HTTP/1.1 and close-delimited for 1.0.
            head = conn.send(
                h11.Response(status_code=response.status, headers=headers, reason=_reason(response.status))
            )
            writer.write(head or b"")
            await _drain(writer)
            pump = asyncio.create_task(_pump(conn, writer, lines))
            gone = asyncio.create_task(_wait_eof(reader))  # end of input, half-close included (see the top)
            stop = asyncio.create_task(self._closing.wait())
            tasks = (pump, gone, stop)
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            if pump.done() and not pump.cancelled() and (exc := pump.exception()) is not None:
                if isinstance(exc, OSError):  # includes TimeoutError from a stalled reader
                    log.info("stream client went away or stalled: %r", exc)
                    return
                log.error("stream ended by an error", exc_info=exc)
            if gone.cancelled():
                # Exhausted, failed or server closing: end the body properly so the client sees a clean end.
                with contextlib.suppress(OSError, TimeoutError, h11.LocalProtocolError):
                    writer.write(conn.send(h11.EndOfMessage()) or b"")
                    await _drain(writer)
        finally:
            await _aclose(lines)


# -- helpers ---------------------------------------------------------------------------------------------


def _check_head(head: h11.Request) -> None:
    # h11's max_incomplete_event_size only limits a head still arriving; one that came in a
    # single read can be larger, so measure the parsed head as well.
    size = len(head.method) + len(head.target) + 12
    size += sum(len(name) + len(value) + 4 for name, value in head.headers)
    if size > protocol.MAX_HEADER_BYTES:
        raise _header_too_large()
    for name, value in head.headers:
        # h11 has checked that Content-Length is digits and that duplicates agree.
        if name == b"content-length" and int(value) > protocol.MAX_BODY_BYTES:
            raise _body_too_large()


def _build_request(head: h11.Request, body: bytes, peer_uid: int) -> Request:
    try:
        target = bytes(head.target).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _HttpError(400, "bad_request", "request target is not valid UTF-8") from exc
    path, _, query_string = target.partition("?")
    try:
        # A dict keeps the last value of a repeated key, as documented.
        query = dict(parse_qsl(query_string, keep_blank_values=True, max_num_fields=100))
    except ValueError as exc:
        raise _HttpError(400, "bad_request", f"bad query string: {exc}") from exc
    parsed: Any = None
    if body:
        try:
            # Depth measured before parsing, so no RecursionError; see core.jsonsafe.
            parsed = jsonsafe.loads(body.decode("utf-8"), bounds.MAX_JSON_DEPTH, lenient=True)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _HttpError(400, "bad_request", f"body is not valid JSON: {exc}") from exc
        odd = jsonsafe.find_odd(parsed)  # nested too deep, or a number such as 1e999 or NaN: say where
        if odd is not None:
            raise _HttpError(400, "bad_request", f"{odd[0] or 'the body'}: {odd[1].reason}")
        problem = bounds.json_problem(parsed)
        if problem:
            raise _HttpError(400, "bad_request", problem)
    return Request(bytes(head.method).decode("ascii"), path, query, parsed, peer_uid)


def _header_too_large() -> _HttpError:
    # 431 is HTTP's status for this; the code stays the protocol's "too_large".
    return _HttpError(431, "too_large", f"request headers exceed {protocol.MAX_HEADER_BYTES} bytes")


def _body_too_large() -> _HttpError:
    return _HttpError(
        protocol.status_for("too_large"), "too_large", f"request body exceeds {protocol.MAX_BODY_BYTES} bytes"
    )


def _json_line(body: Any) -> bytes:
    return (body.data if isinstance(body, EncodedJson) else compact_json(body)) + b"\n"


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _drain(writer: asyncio.StreamWriter) -> None:
    # A peer that stops reading must not hold the connection (and its task) forever.
    async with asyncio.timeout(protocol.REQUEST_TIMEOUT_S):
        await writer.drain()


async def _pump(conn: h11.Connection, writer: asyncio.StreamWriter, lines: AsyncIterator[Any]) -> None:
    async for item in lines:
        writer.write(conn.send(h11.Data(data=_json_line(item))) or b"")
        await _drain(writer)


async def _wait_eof(reader: asyncio.StreamReader) -> None:
    """Return when the client closes its end (anything it still sends is ignored)."""
    try:
        while await reader.read(READ_CHUNK):
            pass
    except OSError:
        pass


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close, then discard input until the client closes or LINGER_S passes."""
    try:
        if writer.can_write_eof():
            writer.write_eof()
        async with asyncio.timeout(LINGER_S):
            while await reader.read(READ_CHUNK):
                pass
    except (OSError, TimeoutError):
        pass


async def _aclose(lines: AsyncIterator[Any]) -> None:
    aclose = getattr(lines, "aclose", None)
    if aclose is None:
        return
    try:
        async with asyncio.timeout(ACLOSE_TIMEOUT_S):
            await aclose()
    except Exception:
        log.exception("closing a stream's iterator failed")


async def _close_writer(writer: asyncio.StreamWriter) -> None:
    writer.close()
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await writer.wait_closed()
    except TimeoutError:
        writer.transport.abort()
    except OSError:
        pass
    except asyncio.CancelledError:
        writer.transport.abort()
        raise


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Until ``sock`` is readable (a client waits in its backlog). Cancelling this loses nothing: the
    client is still in the backlog, accepted by the next call or refused when the socket closes."""
    ready: asyncio.Future[None] = loop.create_future()
    fd = sock.fileno()

    def wake() -> None:
        if not ready.done():  # readable again before this task ran
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
