"""The daemon's HTTP server and the CLI's client, over real Unix sockets."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kairos.client import ApiError, Client, DaemonNotRunning, ForeignServer
from kairos.integrations.settings.merge import Refused
from kairosd.api.router import MethodNotAllowed
from kairosd.api.server import Request, Response, StreamResponse, UnixHttpServer
from kairosd.core import protocol
from kairosd.core.errors import ConfigError, CronSyntaxError, KairosError, LockHeldError, NotFoundError
from kairosd.system.trust import UnsafePathError
from kairosd.testing import FakeClock

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
WAIT_S = 10.0  # upper bound of every wait; tests pass far sooner
T = TypeVar("T")


class Loop:
    """An event loop in a background thread, so blocking clients can run in the test's thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="server-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = WAIT_S) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT_S)
        self.loop.close()


class Harness:
    """Starts servers on the background loop and closes them at teardown."""

    def __init__(self, root: Path, loop: Loop) -> None:
        self.root = root
        self.loop = loop
        self.sock = root / "run" / "k.sock"
        self.servers: list[UnixHttpServer] = []

    def start(self, handler: Any = None, path: Path | None = None, **kwargs: Any) -> UnixHttpServer:
        server = UnixHttpServer(path or self.sock, handler or echo, **kwargs)
        self.servers.append(server)
        self.loop.run(server.start())
        return server

    def client(self, **kwargs: Any) -> Client:
        return Client(self.sock, **kwargs)

    def close_all(self) -> None:
        for server in self.servers:
            self.loop.run(server.close(grace_s=1.0))


@pytest.fixture
def harness() -> Iterator[Harness]:
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can be longer.
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))
    loop = Loop()
    h = Harness(root, loop)
    try:
        yield h
    finally:
        try:
            h.close_all()
        finally:
            loop.stop()
            shutil.rmtree(root, ignore_errors=True)


async def echo(request: Request) -> Response:
    if request.path == "/v1/missing":
        raise NotFoundError("no task abc")
    if request.path == "/v1/cron":
        raise CronSyntaxError("61 is out of range", field="minute")
    if request.path == "/v1/boom":
        raise RuntimeError("handler bug")
    return Response(
        200,
        {
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "body": request.body,
            "uid": request.peer_uid,
        },
    )


def raw_exchange(path: Path, data: bytes, *, shut: bool = True) -> bytes:
    """Send raw bytes, optionally half-close, return everything the server sends until it closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(WAIT_S)
        s.connect(os.fspath(path))
        if data:
            s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def parse_raw(raw: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_round_trip_json(harness: Harness) -> None:
    """A JSON body, query and method go through the client and back; /v1 is prefixed once."""
    harness.start()
    client = harness.client()
    got = client.call("POST", "/tasks", body={"prompt": "hé", "n": [1, 2]}, query={"a": "1", "b": "x y"})
    assert got == {
        "method": "POST",
        "path": "/v1/tasks",
        "query": {"a": "1", "b": "x y"},
        "body": {"prompt": "hé", "n": [1, 2]},
        "uid": os.getuid(),
    }
    assert client.call("GET", "/v1/status")["path"] == "/v1/status"
    assert client.call("GET", "/x")["body"] is None
    assert client.ping()


def test_query_last_value_wins(harness: Harness) -> None:
    """A repeated query key keeps its last value."""
    harness.start()
    assert harness.client().call("GET", "/v1/runs?task=a&task=b&limit=")["query"] == {"task": "b", "limit": ""}


def test_kairos_errors_map_to_status_and_exit_code(harness: Harness) -> None:
    """NotFoundError is a 404 with exit code 1; CronSyntaxError a 400 with exit code 2."""
    harness.start()
    client = harness.client()
    with pytest.raises(ApiError) as err:
        client.call("GET", "/missing")
    assert (err.value.status, err.value.code, err.value.exit_code) == (404, "not_found", 1)
    assert err.value.message == "no task abc"
    with pytest.raises(ApiError) as err:
        client.call("GET", "/cron")
    assert (err.value.status, err.value.code, err.value.exit_code) == (400, "cron_syntax", 2)
    assert err.value.message == "minute: 61 is out of range"


def test_handler_crash_is_500_and_server_survives(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """A handler raising RuntimeError gives 500 internal, is logged with traceback, and serving goes on."""
    harness.start()
    client = harness.client()
    with pytest.raises(ApiError) as err:
        client.call("GET", "/boom")
    assert (err.value.status, err.value.code) == (500, "internal")
    assert "kairosd log" in err.value.message
    assert any(r.exc_info and "handler bug" in str(r.exc_info[1]) for r in caplog.records)
    assert client.call("GET", "/ok")["path"] == "/v1/ok"


@pytest.mark.parametrize("body", [b"{nope", b"\xff\xfe", b"[" * 100_000])
def test_bad_json_body(harness: Harness, body: bytes) -> None:
    """A body that is not UTF-8 JSON (or absurdly nested) is a 400 bad_request."""
    harness.start()
    raw = raw_exchange(
        harness.sock,
        b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
    )
    status, payload = parse_raw(raw)
    assert status == 400
    assert payload["error"]["code"] == "bad_request"
    assert payload["error"]["message"].startswith("body is not valid JSON: ")


def test_body_over_limit_is_413(harness: Harness) -> None:
    """A body over MAX_BODY_BYTES is refused with 413 too_large (exit code 2) before it is read."""
    harness.start()
    client = harness.client()
    with pytest.raises(ApiError) as err:
        client.call("POST", "/tasks", body={"prompt": "x" * protocol.MAX_BODY_BYTES})
    assert (err.value.status, err.value.code, err.value.exit_code) == (413, "too_large", 2)
    assert client.call("GET", "/ok")["path"] == "/v1/ok"


def test_chunked_body_over_limit_is_413(harness: Harness) -> None:
    """A chunked body is counted while it is read."""
    harness.start()
    chunk = b"a" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(protocol.MAX_BODY_BYTES // len(chunk) + 1))
    raw = raw_exchange(
        harness.sock,
        b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n",
    )
    status, payload = parse_raw(raw)
    assert (status, payload["error"]["code"]) == (413, "too_large")


@pytest.mark.parametrize("shut", [True, False])
def test_oversized_headers(harness: Harness, shut: bool) -> None:
    """Headers over MAX_HEADER_BYTES get 431 too_large, whether complete or still arriving."""
    harness.start()
    big = b"X-Big: " + b"a" * (protocol.MAX_HEADER_BYTES + 10) + b"\r\n"
    end = b"\r\n" if shut else b""  # complete head, or one that never ends
    raw = raw_exchange(harness.sock, b"GET /v1/x HTTP/1.1\r\nHost: x\r\n" + big + end, shut=shut)
    status, payload = parse_raw(raw)
    assert (status, payload["error"]["code"]) == (431, "too_large")


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        b"HELLO\r\n\r\n",
        b"GET /v1/x HTTP/1.1\r\n\r\n",
        b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\x00",
    ],
)
def test_garbage_is_400_and_server_survives(harness: Harness, garbage: bytes) -> None:
    """Bytes that are not HTTP get 400 bad_request and the server keeps serving."""
    harness.start()
    status, payload = parse_raw(raw_exchange(harness.sock, garbage))
    assert (status, payload["error"]["code"]) == (400, "bad_request")
    assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"


def test_connection_closed_without_request(harness: Harness) -> None:
    """A client that connects and leaves gets nothing and costs nothing."""
    harness.start()
    assert raw_exchange(harness.sock, b"") == b""
    assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"


def test_silent_client_times_out(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that sends nothing (or half a request) gets 408 and the server keeps serving."""
    monkeypatch.setattr(protocol, "REQUEST_TIMEOUT_S", 0.3)
    harness.start()
    for partial in (b"", b"POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"):
        started = time.monotonic()
        status, payload = parse_raw(raw_exchange(harness.sock, partial, shut=False))
        assert (status, payload["error"]) == (408, {"code": "bad_request", "message": "request timed out"})
        assert time.monotonic() - started < WAIT_S
    assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"


def test_socket_and_folder_modes(harness: Harness) -> None:
    """The socket is 0600 and its folder 0700; a looser folder of ours is tightened."""
    harness.sock.parent.mkdir(mode=0o755)
    os.chmod(harness.sock.parent, 0o755)
    harness.start()
    assert stat.S_ISSOCK(os.lstat(harness.sock).st_mode)
    assert stat.S_IMODE(os.lstat(harness.sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(harness.sock.parent).st_mode) == 0o700


def test_folder_is_created_0700(harness: Harness) -> None:
    """A missing socket folder is created 0700."""
    path = harness.root / "a" / "b" / "k.sock"
    harness.start(path=path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_stale_socket_is_replaced(harness: Harness) -> None:
    """A socket file nobody listens on is removed and replaced."""
    harness.sock.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(os.fspath(harness.sock))
    keep = harness.root / "old.sock"
    os.link(harness.sock, keep)  # pins the old inode, so the new file cannot reuse its number
    harness.start()
    assert os.lstat(harness.sock).st_ino != os.lstat(keep).st_ino
    assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"


def test_live_server_is_not_replaced(harness: Harness) -> None:
    """Starting a second server on a live socket fails clearly and leaves the first one serving."""
    harness.start()
    second = UnixHttpServer(harness.sock, echo)
    with pytest.raises(LockHeldError, match="another kairosd is already serving on"):
        harness.loop.run(second.start())
    assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"


def test_regular_file_at_socket_path_is_left_alone(harness: Harness) -> None:
    """A non-socket file where the socket goes is an error, not something to delete."""
    harness.sock.parent.mkdir(mode=0o700)
    harness.sock.write_text("precious")
    server = UnixHttpServer(harness.sock, echo)
    with pytest.raises(KairosError, match="is not a socket"):
        harness.loop.run(server.start())
    assert harness.sock.read_text() == "precious"


def test_other_uid_is_forbidden(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """A peer with another uid gets 403 forbidden, the handler is not called, and a warning is logged."""
    called = []

    async def handler(request: Request) -> Response:
        called.append(request)
        return Response(200, {})

    harness.start(handler, uid=os.getuid() + 1)
    with pytest.raises(ApiError) as err:
        harness.client().call("POST", "/tasks", body={"prompt": "x" * 100_000})
    assert (err.value.status, err.value.code) == (403, "forbidden")
    assert not called
    assert any(r.levelname == "WARNING" and f"uid {os.getuid()}" in r.getMessage() for r in caplog.records)


def test_stream_lines_and_release_on_disconnect(harness: Harness) -> None:
    """Stream items arrive as JSON lines; when the client disconnects, the iterator's finally runs."""
    released = threading.Event()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def events() -> AsyncIterator[Any]:
        try:
            while True:
                yield await queue.get()
        finally:
            released.set()

    async def handler(request: Request) -> StreamResponse:
        assert request.query == {"types": "a,b"}
        return StreamResponse(events())

    server = harness.start(handler)
    for item in ({"type": "a", "n": 1}, {"type": "b", "n": 2}, "three"):
        harness.loop.call(functools.partial(queue.put_nowait, item))
    stream = harness.client().stream("/events", query={"types": "a,b"})
    assert next(stream) == {"type": "a", "n": 1}
    assert next(stream) == {"type": "b", "n": 2}
    assert next(stream) == "three"
    assert server.active_requests == 1
    stream.close()  # the client goes away while the server waits for the next event
    assert released.wait(WAIT_S)
    wait_for(lambda: server.active_requests == 0, "the stream to end")


def test_stream_that_ends_and_non_generator_iterators(harness: Harness) -> None:
    """An exhausted stream ends the response cleanly; aclose() is called on any iterator that has it."""
    closed = threading.Event()

    class Items:
        def __init__(self) -> None:
            self.items = iter([1, 2])

        def __aiter__(self) -> Items:
            return self

        async def __anext__(self) -> int:
            try:
                return next(self.items)
            except StopIteration:
                raise StopAsyncIteration from None

        async def aclose(self) -> None:
            closed.set()

    async def handler(request: Request) -> StreamResponse:
        return StreamResponse(Items())

    harness.start(handler)
    assert list(harness.client().stream("/events")) == [1, 2]
    assert closed.wait(WAIT_S)


def test_stream_error_status(harness: Harness) -> None:
    """A stream request the handler refuses raises ApiError from the iterator."""
    harness.start()
    with pytest.raises(ApiError) as err:
        next(harness.client().stream("/missing"))
    assert err.value.code == "not_found"


def test_close_ends_streams_and_waits_for_requests(harness: Harness) -> None:
    """close() removes the socket, ends open streams, and lets an in-flight request finish."""
    proceed = asyncio.Event()
    released = threading.Event()

    async def handler(request: Request) -> Response | StreamResponse:
        if request.path == "/v1/events":

            async def events() -> AsyncIterator[Any]:
                try:
                    yield "hello"
                    await asyncio.Event().wait()  # no more events, ever
                    yield "never"
                finally:
                    released.set()

            return StreamResponse(events())
        await proceed.wait()
        return Response(200, {"done": True})

    server = harness.start(handler)
    stream = harness.client().stream("/events")
    assert next(stream) == "hello"
    results: list[Any] = []
    caller = threading.Thread(target=lambda: results.append(harness.client().call("POST", "/slow")))
    caller.start()
    wait_for(lambda: server.active_requests == 2, "both requests to be in flight")

    closing = harness.loop.submit(server.close(grace_s=WAIT_S))
    assert list(stream) == []  # the stream ends cleanly
    assert released.wait(WAIT_S)
    wait_for(lambda: not harness.sock.exists(), "the socket file to go")
    assert not closing.done()  # still waiting for /slow
    with pytest.raises(DaemonNotRunning):
        harness.client().call("GET", "/ok")

    harness.loop.call(proceed.set)
    caller.join(WAIT_S)
    assert results == [{"done": True}]
    closing.result(WAIT_S)
    assert server.active_requests == 0


def test_close_gives_up_after_grace(harness: Harness) -> None:
    """A request that outlives the grace period is cancelled and close() returns."""
    cancelled = threading.Event()

    async def handler(request: Request) -> Response:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    server = harness.start(handler)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            harness.client().call("GET", "/hang")
        except KairosError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    wait_for(lambda: server.active_requests == 1, "the request to be in flight")
    started = time.monotonic()
    harness.loop.run(server.close(grace_s=0.2))
    assert time.monotonic() - started < WAIT_S
    assert cancelled.is_set()
    caller.join(WAIT_S)
    assert len(errors) == 1
    assert isinstance(errors[0], ApiError)
    assert errors[0].code == "unavailable"


def test_close_keeps_a_successors_socket(harness: Harness) -> None:
    """close() removes the socket file only if it is still the one it bound."""
    server = harness.start()
    harness.sock.unlink()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(os.fspath(harness.sock))
        harness.loop.run(server.close())
        assert harness.sock.exists()


def test_daemon_not_running(harness: Harness) -> None:
    """No socket means DaemonNotRunning with exit code 3 and a hint; a stale one too; ping is False."""
    client = harness.client()
    with pytest.raises(DaemonNotRunning) as err:
        client.call("GET", "/status")
    assert err.value.exit_code == 3
    assert err.value.code == "no_daemon"
    assert "kairos daemon start" in err.value.message
    assert str(harness.sock) in err.value.message
    assert not client.ping()
    harness.sock.parent.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(os.fspath(harness.sock))
        with pytest.raises(DaemonNotRunning):
            next(client.stream("/events"))


def test_http10_client_gets_a_response(harness: Harness) -> None:
    """An HTTP/1.0 client is answered and the connection closed."""
    harness.start()
    status, payload = parse_raw(raw_exchange(harness.sock, b"GET /v1/ok?x=1 HTTP/1.0\r\n\r\n", shut=False))
    assert status == 200
    assert payload["query"] == {"x": "1"}


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(harness: Harness) -> None:
    """curl --unix-socket works, for JSON and for a stream."""

    async def handler(request: Request) -> Response | StreamResponse:
        if request.path == "/v1/events":

            async def events() -> AsyncIterator[Any]:
                for n in range(3):
                    yield {"n": n}

            return StreamResponse(events())
        return await echo(request)

    harness.start(handler)
    base = ["curl", "--silent", "--show-error", "--max-time", str(WAIT_S), "--unix-socket", str(harness.sock)]
    out = subprocess.run(
        [*base, "-H", "Content-Type: application/json", "-d", '{"a":1}', "http://localhost/v1/tasks?q=1"],
        capture_output=True,
        check=True,
        timeout=WAIT_S,
    )
    assert json.loads(out.stdout)["body"] == {"a": 1}
    out = subprocess.run([*base, "-N", "http://localhost/v1/events"], capture_output=True, check=True, timeout=WAIT_S)
    assert [json.loads(line) for line in out.stdout.splitlines()] == [{"n": 0}, {"n": 1}, {"n": 2}]
    out = subprocess.run(
        [*base, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost/v1/missing"],
        capture_output=True,
        check=True,
        timeout=WAIT_S,
    )
    assert out.stdout == b"404"


# --- limits (issue 27, finding 4) -----------------------------------------------------------------


def _bus_handler(bus: Any) -> Callable[[Request], Coroutine[Any, Any, Response | StreamResponse]]:
    proceed = asyncio.Event()

    async def handler(request: Request) -> Response | StreamResponse:
        if request.path == "/v1/events":
            stream = bus.subscribe()
            bus.publish("hello")  # every stream open so far sees one when another starts
            return StreamResponse(stream)
        if request.path == "/v1/slow":
            await proceed.wait()
        return Response(200, {"ok": True})

    handler.proceed = proceed  # type: ignore[attr-defined]
    return handler


def test_streams_past_the_limit_are_refused_as_busy(harness: Harness) -> None:
    """A stream past max_streams gets 503 ``busy`` naming the limit, its subscription is released, and
    a stream is accepted again once one ends; other requests still work meanwhile."""
    from kairosd.core.events import EventBus

    bus = EventBus(FakeClock(T0).now)
    server = harness.start(_bus_handler(bus), max_streams=2)
    first = harness.client().stream("/events")
    second = harness.client().stream("/events")
    assert next(first)["type"] == next(second)["type"] == "hello"

    with pytest.raises(ApiError) as err:
        next(harness.client().stream("/events"))
    assert (err.value.status, err.value.code) == (503, "busy")
    assert "2 streams open, its limit (limits.max_streams" in err.value.message
    assert harness.loop.call(lambda: bus.subscribers) == 2  # the refused one let go of its subscription
    assert harness.client().call("GET", "/ok") == {"ok": True}

    first.close()
    wait_for(lambda: server.active_requests == 1, "the first stream to end")
    third = harness.client().stream("/events")
    assert next(third)["type"] == "hello"
    third.close()
    second.close()


def test_connections_past_the_limit_are_refused_as_busy(harness: Harness) -> None:
    """Past max_connections a client is answered 503 ``busy`` at once, not left waiting; a slot that
    frees up is used again."""
    handler = _bus_handler(None)
    server = harness.start(handler, max_connections=2)
    results: list[Any] = []
    callers = [
        threading.Thread(target=lambda: results.append(harness.client().call("POST", "/slow"))) for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    wait_for(lambda: server.active_requests == 2, "both slow requests to be in flight")

    with pytest.raises(ApiError) as err:
        harness.client().call("GET", "/ok")
    assert (err.value.status, err.value.code) == (503, "busy")
    assert "serving 2 connections, its limit (limits.max_connections" in err.value.message

    harness.loop.call(handler.proceed.set)  # type: ignore[attr-defined]
    for caller in callers:
        caller.join(WAIT_S)
    assert results == [{"ok": True}, {"ok": True}]
    wait_for(lambda: server.open_connections == 0, "the connections to close")
    assert harness.client().call("GET", "/ok") == {"ok": True}


def test_an_unread_subscription_is_released_by_aclose() -> None:
    """The server closes a stream it refuses before reading it: its subscriber must go, or every
    refused stream would leak a queue that fills with events."""
    from kairosd.core.events import EventBus

    async def scenario() -> tuple[int, int, int]:
        bus = EventBus(FakeClock(T0).now)
        stream = bus.subscribe()
        during = bus.subscribers
        await stream.aclose()
        dropped = bus.subscribers
        kept = bus.subscribe()
        del kept  # dropped without aclose: garbage collection frees it too
        return during, dropped, bus.subscribers

    assert asyncio.run(scenario()) == (1, 0, 0)


STARVED_SERVER = """
import asyncio, logging, resource, sys
from pathlib import Path
from kairosd.api.server import Response, StreamResponse, UnixHttpServer

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

async def forever():
    yield {"hello": 1}
    await asyncio.Event().wait()

async def handler(request):
    if request.path == "/v1/events":
        return StreamResponse(forever())
    return Response(200, {"ok": True})

async def main():
    server = UnixHttpServer(Path(sys.argv[1]), handler, max_connections=1000, max_streams=1000)
    await server.start()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await server.close(grace_s=0.5)

asyncio.run(main())
"""


@pytest.mark.slow
def test_out_of_descriptors_is_logged_once_and_recovers(harness: Harness) -> None:
    """With limits set above what RLIMIT_NOFILE allows, streams use up the descriptors: the server
    logs that once (not a traceback per accept), keeps the clients that wait, and serves again as soon
    as descriptors are freed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STARVED_SERVER, os.fspath(harness.sock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    log_lines: list[str] = []
    reader = threading.Thread(target=lambda: log_lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    streams: list[socket.socket] = []
    try:
        assert proc.stdout.readline() == "ready\n"
        for _ in range(60):  # more than 48 descriptors allow
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(WAIT_S)
            s.connect(os.fspath(harness.sock))
            s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: k\r\n\r\n")
            streams.append(s)
        for s in streams[:30]:
            _read_until(s, b'"hello"')
        # Ours says "cannot accept a client"; asyncio's own accept loop said "socket.accept() out of system resource".
        wait_for(lambda: any("accept" in line for line in log_lines), "the server to run out")
        # The rest wait in the backlog while accept() fails; a request now waits too.
        results: list[Any] = []
        waiting = threading.Thread(target=lambda: results.append(Client(harness.sock).call("GET", "/ok")))
        waiting.start()
        for s in streams[:30]:
            s.close()  # frees descriptors: the waiting clients are served
        waiting.join(WAIT_S)
        assert results == [{"ok": True}]
        for s in streams[30:]:
            _read_until(s, b'"hello"')
    finally:
        for s in streams:
            s.close()
        proc.communicate("stop\n", timeout=WAIT_S)
        reader.join(WAIT_S)
    err = "".join(log_lines)
    starved = [line for line in log_lines if "cannot accept a client" in line]
    assert len(starved) == 1, err
    assert "Too many open files" in starved[0]
    assert "accepting clients again" in err
    assert "Traceback" not in err
    assert "out of system resource" not in err
    assert proc.returncode == 0


def _read_until(s: socket.socket, mark: bytes) -> None:
    seen = b""
    while mark not in seen:
        chunk = s.recv(4096)
        assert chunk, f"closed before {mark!r}: {seen!r}"
        seen += chunk


def test_connection_limits_fit_the_descriptor_limit(caplog: pytest.LogCaptureFixture) -> None:
    """Configured limits a low RLIMIT_NOFILE cannot hold are lowered, with a warning that says so."""
    from kairosd.system.fdlimit import fit_connections

    assert fit_connections(256, 64, 65536) == (256, 64)
    assert fit_connections(256, 64, 1024) == (256, 64)  # (1024 - 256) // 3 = 256
    assert fit_connections(1000, 500, 1024) == (256, 256)
    assert "limits.max_connections = 1000 needs more descriptors than the limit of 1024 allows" in caplog.text
    assert fit_connections(256, 64, 100) == (8, 8)


RAISE_LIMIT = """
import resource
from kairosd.system.fdlimit import raise_open_files_limit
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
got = raise_open_files_limit()
print(got, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)
"""


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    done = subprocess.run([sys.executable, "-c", RAISE_LIMIT], capture_output=True, text=True, check=True, timeout=30)
    got, soft, hard = (int(n) for n in done.stdout.split())
    assert got == soft == min(hard, 65536)


def test_requests_that_cannot_be_watched_are_logged_once(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Out of descriptors, no request can get its hang-up watch: they are served, and the log says so
    once with a count, not once per request."""
    import errno

    from kairosd.api import unixsocket
    from kairosd.api.throttle import LogThrottle

    def no_descriptors(fd: int) -> int:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(unixsocket, "_unwatched", LogThrottle(unixsocket.log, logging.WARNING))
    monkeypatch.setattr(unixsocket.os, "dup", no_descriptors)
    harness.start()
    for _ in range(5):
        assert harness.client().call("GET", "/ok")["path"] == "/v1/ok"
    warnings = [r.getMessage() for r in caplog.records if "cannot watch a client" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].endswith("(1 time(s) since the last report)")


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (lambda: UnsafePathError("/srv/x is writable by others"), 403, "unsafe_path"),
        (lambda: Refused("~/.claude/settings.json is not kairos' to change"), 403, "refused"),
        (lambda: NotFoundError("no task abc"), 404, "not_found"),
        (lambda: LockHeldError("another kairosd owns the store"), 409, "lock_held"),
    ],
)
def test_an_error_is_answered_with_the_status_its_class_carries(
    harness: Harness, error: Any, status: int, code: str
) -> None:
    """The class says its status; a refusal (unsafe_path, refused) is never a 500 "server fault"."""

    async def handler(request: Request) -> Response:
        raise error()

    harness.start(handler)
    with pytest.raises(ApiError) as err:
        harness.client().call("GET", "/anything")
    assert (err.value.status, err.value.code) == (status, code)


def test_the_wire_table_agrees_with_every_error_class() -> None:
    """protocol.ERROR_STATUS documents each code on the wire; each class that the server may answer
    with says the same status (the CLI's own transport errors never reach a server)."""

    def subclasses(cls: type[KairosError]) -> list[type[KairosError]]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    cli_only = {DaemonNotRunning, ForeignServer, ApiError}
    ours = [c for c in subclasses(KairosError) if c not in cli_only and c.__module__.startswith("kairos")]
    assert {UnsafePathError, Refused, MethodNotAllowed, ConfigError} <= set(ours)
    said = {cls.code: cls.http_status for cls in ours}
    assert {code: protocol.ERROR_STATUS.get(code) for code in said} == said


def test_a_client_accepted_as_close_begins_is_not_left_unclosed(tmp_path: Path) -> None:
    """close() cancels the accept loop; a client the kernel had handed over just before (asyncio's
    sock_accept accepts in a callback, then wakes the task) must not be dropped as an unclosed socket."""
    import gc
    import warnings

    async def handler(request: Request) -> Response:
        return Response(200, {"ok": True})

    async def once(path: Path) -> None:
        server = UnixHttpServer(path, handler)
        await server.start()
        await asyncio.sleep(0)  # the accept loop waits for a client
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(str(path))  # in the backlog at once
            # One loop pass lets the readiness callback run (it accepted there, before the fix), the
            # next runs this task before the accept loop's own step: close() cancels it in between.
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            await server.close(grace_s=1.0)
        finally:
            client.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(20):
            asyncio.run(once(tmp_path / f"s{n}.sock"))
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert unclosed == []
