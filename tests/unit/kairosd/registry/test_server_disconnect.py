"""A client that hangs up while its handler runs: the server cancels an opted-in long poll (and the
registry's wait, which ends its slot loan), but a half-close is not a hang-up, handlers that did not opt
in run to the end, and a keep-alive or pipelining client is still answered.

Everything runs on one event loop with non-blocking client sockets; every wait is bounded. A test that
checks nothing happened waits SETTLE_S, far longer than the hang-up takes to be seen when it is real.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, until, wait_file

from kairosd.api.server import Handler, Request, Response, StreamResponse, UnixHttpServer, cancel_on_disconnect
from kairosd.jobs.api import registry_routes
from kairosd.jobs.model import JobStatus
from kairosd.jobs.registry import StartSpec
from kairosd.scheduling.api import Api

WAIT_S = 10.0  # upper bound of every wait; tests pass far sooner
PROMPT_S = 2.0  # a hang-up is seen within milliseconds; this only guards against a regression to "never"
SETTLE_S = 0.3
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(WAIT_S * 3):
            return await coro

    return asyncio.run(bounded())


@pytest.fixture
def root() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can be longer.
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, str(path))
    return sock


async def send(sock: socket.socket, data: bytes) -> None:
    await asyncio.get_running_loop().sock_sendall(sock, data)


async def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (bounded)."""
    loop = asyncio.get_running_loop()
    chunks = []
    async with asyncio.timeout(WAIT_S):
        while True:
            try:
                chunk = await loop.sock_recv(sock, 65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def responses(raw: bytes) -> list[tuple[int, Any]]:
    """(status, JSON body) of each Content-Length response in ``raw``."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
        length = int(headers[b"content-length"])
        found.append((int(lines[0].split(b" ")[1]), json.loads(rest[:length])))
        raw = rest[length:]
    return found


def get(target: str, *, close: bool = True) -> bytes:
    return (
        f"GET {target} HTTP/1.1\r\nHost: x\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n".encode()
    )


class Probe:
    """A long poll that opted in (``/v1/poll``), one that did not (``/v1/plain``), and a plain answer."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.finished = asyncio.Event()
        self.release = asyncio.Event()
        self.requests: list[Request] = []

    async def _wait(self) -> str:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        self.finished.set()
        return "released"

    async def handle(self, request: Request) -> Response | StreamResponse:
        self.requests.append(request)
        if request.path == "/v1/poll":
            return Response(200, {"result": await cancel_on_disconnect(request, self._wait())})
        if request.path == "/v1/plain":
            return Response(200, {"result": await self._wait()})
        if request.path == "/v1/stream":
            return StreamResponse(self._lines())
        return Response(200, {"result": "ok"})

    async def _lines(self) -> AsyncIterator[str]:
        yield "first"
        await self.release.wait()
        yield "second"


@contextlib.asynccontextmanager
async def served(root: Path, handler: Handler) -> AsyncIterator[UnixHttpServer]:
    """A server for ``handler`` on a socket under ``root``, closed (grace 1 s) on the way out."""
    server = UnixHttpServer(root / "run" / "k.sock", handler)
    await server.start()
    try:
        yield server
    finally:
        await server.close(grace_s=1.0)


@contextlib.asynccontextmanager
async def asked(root: Path, request: bytes) -> AsyncIterator[tuple[Probe, UnixHttpServer, socket.socket]]:
    """A :class:`Probe` served under ``root``, and a client connection that has sent it ``request``."""
    probe = Probe()
    async with served(root, probe.handle) as server:
        sock = await connect(server.path)
        await send(sock, request)
        yield probe, server, sock


async def started(probe: Probe) -> None:
    async with asyncio.timeout(WAIT_S):
        await probe.started.wait()


@pytest.mark.parametrize("how", ["close", "shutdown-both"])
def test_an_opted_in_long_poll_is_cancelled_when_its_client_hangs_up(root: Path, how: str) -> None:
    """Closing the socket (or shutting both directions) mid-wait cancels the handler at once; no answer
    is attempted and the server serves the next client."""

    async def main() -> None:
        async with asked(root, get("/v1/poll?timeout=60")) as (probe, server, sock):
            await started(probe)
            gone_at = time.monotonic()
            if how == "close":
                sock.close()
            else:
                sock.shutdown(socket.SHUT_RDWR)
            async with asyncio.timeout(PROMPT_S):
                await probe.cancelled.wait()
            assert time.monotonic() - gone_at < PROMPT_S
            assert probe.requests[0].disconnected.is_set()
            await until(lambda: server.active_requests == 0, "the request to be over")
            assert not probe.finished.is_set()
            sock.close()

            other = await connect(server.path)
            await send(other, get("/v1/ok"))
            assert responses(await read_all(other)) == [(200, {"result": "ok"})]
            other.close()

    run(main())


def test_a_half_closing_client_still_gets_its_answer(root: Path) -> None:
    """shutdown(SHUT_WR) after the request reads as end of input, yet it is not a hang-up: the long poll
    goes on and its answer arrives."""

    async def main() -> None:
        async with asked(root, get("/v1/poll?timeout=60")) as (probe, _, sock):
            sock.shutdown(socket.SHUT_WR)
            await started(probe)
            await asyncio.sleep(SETTLE_S)
            assert not probe.cancelled.is_set()
            assert not probe.requests[0].disconnected.is_set()
            probe.release.set()
            assert responses(await read_all(sock)) == [(200, {"result": "released"})]
            sock.close()

    run(main())


def test_a_handler_that_did_not_opt_in_runs_to_the_end(root: Path) -> None:
    """Most handlers change state; cutting them off could leave it half done, so they finish (the answer is
    lost). They can still see the hang-up on ``request.disconnected``."""

    async def main() -> None:
        async with asked(root, get("/v1/plain")) as (probe, server, sock):
            await started(probe)
            sock.close()
            await until(lambda: probe.requests[0].disconnected.is_set(), "the hang-up to be seen")
            assert not probe.cancelled.is_set()
            probe.release.set()
            async with asyncio.timeout(WAIT_S):
                await probe.finished.wait()
            await until(lambda: server.active_requests == 0, "the request to be over")

    run(main())


def test_keep_alive_and_pipelining_clients_are_answered(root: Path) -> None:
    """A client that asks to keep the connection and sends a second request behind the first is not hanging
    up: the poll is answered (the server still answers one request per connection, then closes)."""

    async def main() -> None:
        pipelined = get("/v1/poll?timeout=60", close=False) + get("/v1/ok", close=False)
        async with asked(root, pipelined) as (probe, _, sock):
            await started(probe)
            await asyncio.sleep(SETTLE_S)
            assert not probe.cancelled.is_set()
            probe.release.set()
            assert responses(await read_all(sock)) == [(200, {"result": "released"})]
            sock.close()

    run(main())


def test_a_stream_still_ends_at_the_clients_end_of_input(root: Path) -> None:
    """Streams keep their rule: one never ends by itself, so a client that half-closes is done with it."""

    async def main() -> None:
        async with asked(root, get("/v1/stream")) as (_, server, sock):
            sock.shutdown(socket.SHUT_WR)
            raw = await read_all(sock)
            assert b'"first"' in raw
            assert b'"second"' not in raw
            assert raw.endswith(b'"first"\n\r\n')  # and the server closed the connection
            await until(lambda: server.active_requests == 0, "the stream to end")
            sock.close()

    run(main())


def test_server_close_cancels_a_long_poll_and_its_work(root: Path) -> None:
    """close() past its grace cancels the connection; the opted-in work must not outlive it."""

    async def main() -> None:
        async with asked(root, get("/v1/poll?timeout=60")) as (probe, server, sock):
            await started(probe)
            await server.close(grace_s=0.1)
            assert probe.cancelled.is_set()
            assert server.active_requests == 0
            sock.close()

    run(main())


# ---- the registry's wait and its slot loan ---------------------------------------------------------


@pytest.fixture
def adapter(root: Path) -> FakeAdapter:
    return FakeAdapter(fake_agent(root))


def _slots(reg: Any) -> dict[str, int]:
    slots: dict[str, int] = reg.status()["slots"]
    return slots


@pytest.mark.parametrize("half_close", [False, True])
def test_a_waiting_parents_loan_ends_when_its_client_hangs_up(
    root: Path, adapter: FakeAdapter, half_close: bool
) -> None:
    """Cap 1: a parent holding the only slot waits (over the socket, as `kairos task wait` from inside it
    would) on its queued child, which then runs on the loan. When that client hangs up, the wait is
    cancelled and the loan ends at once (the child, already running, counts on its own). A client that
    only half-closed keeps its wait and its loan, and gets the answer when the child ends."""

    async def main() -> None:
        reg = make_registry(root, adapter, max_concurrent=1, kill_grace_s=0.2)
        try:
            async with served(root, _api(reg).handle) as server:
                parent = await reg.start(StartSpec(agent="fake", prompt=f"hang:{root / 'parent.pid'}"))
                await asyncio.to_thread(wait_file, root / "parent.pid")
                child = await reg.start(
                    StartSpec(agent="fake", prompt=f"hang:{root / 'child.pid'}", parent_id=parent.id)
                )
                await until(lambda: reg.slots.waiting == 1, "the child to queue")

                sock = await connect(server.path)
                await send(sock, get(f"/v1/registry/{child.id}/wait?timeout=60&waiter={parent.id}"))
                if half_close:
                    sock.shutdown(socket.SHUT_WR)
                await asyncio.to_thread(wait_file, root / "child.pid")  # it runs although the cap is reached
                await until(lambda: not reg.get(child.id).queued, "the child to start")
                assert _slots(reg) == {"limit": 1, "in_use": 1, "waiting": 0, "lent": 1}

                if half_close:
                    await asyncio.sleep(SETTLE_S)
                    assert _slots(reg)["lent"] == 1  # still waiting, still lending
                    await reg.cancel(child.id)
                    [(status, doc)] = responses(await read_all(sock))
                    assert (status, doc["timed_out"], doc["task"]["status"]) == (200, False, "cancelled")
                    assert _slots(reg) == {"limit": 1, "in_use": 1, "waiting": 0, "lent": 0}
                else:
                    sock.close()
                    await until(lambda: _slots(reg)["lent"] == 0, "the loan to end", timeout=PROMPT_S)
                    assert _slots(reg) == {"limit": 1, "in_use": 2, "waiting": 0, "lent": 0}
                    assert reg.get(child.id).status is JobStatus.RUNNING  # the child goes on, on its own slot
                await until(lambda: server.active_requests == 0, "the wait to be over")
                sock.close()
                await reg.cancel(parent.id)
        finally:
            await reg.stop()

    run(main())


def _api(reg: Any) -> Api:
    api = Api(None, lambda: None)  # type: ignore[arg-type]  # the registry routes never touch the service
    api.add_routes(registry_routes(reg))
    return api
