"""Blocking client of the kairosd API over its Unix socket (HTTP/1.1, JSON, one request per connection).

Runs on the hot path of agent hooks, so it is stdlib only: a minimal HTTP/1.1
exchange on an AF_UNIX socket. Paths are given without the API prefix: ``call("GET",
"/tasks")`` requests ``/v1/tasks``; a path that already starts with
``protocol.PREFIX`` is sent as is.

Failures are :class:`KairosError`\\ s with CLI exit codes: :class:`DaemonNotRunning`
(exit 3) when nothing listens on the socket, :class:`ForeignServer` (exit 1) when
what listens runs as another user (checked with ``SO_PEERCRED`` before anything
is sent), :class:`ApiError` for an error
answer (code and exit code from the error body) or for a broken exchange
(status 0, code "unavailable").

Must not import pydantic, h11, asyncio or httpx, nor any kairosd module other
than ``protocol``, ``errors`` and ``paths``; it uses the C module ``_socket``,
not ``socket`` (its enums and selectors), nor contextlib or typing, and JSON through
:mod:`kairos.cjson`, not the json package: docs/performance.md says why, and
``tests/integration/kairos/test_import_budget.py`` keeps it so.
"""

from __future__ import annotations

import _socket
import io
import os
import sys

from kairos import cjson
from kairosd.core import protocol
from kairosd.core.errors import EXIT_NO_DAEMON, KairosError, UsageError
from kairosd.system.paths import socket_path as default_socket_path

# sun_path is 108 bytes on Linux with its NUL (kairosd.api.unixsocket has the same limit; not imported: the
# hooks load this module on every turn).
MAX_SOCKET_PATH_BYTES = 107

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator, Mapping
    from types import TracebackType
    from typing import Any  # for mypy only (docs/performance.md)

# Bytes of a non-JSON error answer quoted in the message.
_SNIPPET = 200
_MAX_LINE = 1 << 16
_PEERCRED_SIZE = 12  # struct ucred: three 32-bit ints


class DaemonNotRunning(KairosError):
    """Nothing listens on the socket (no socket file, or a stale one)."""

    code = "no_daemon"
    exit_code = EXIT_NO_DAEMON

    def __init__(self, socket_path: str | os.PathLike[str], *, stale: bool = False) -> None:
        where = f"nothing listens on {socket_path}" if stale else f"no socket at {socket_path}"
        super().__init__(f"kairosd is not running ({where}); start it with: kairos daemon start")
        self.socket_path = socket_path


class ForeignServer(KairosError):
    """What serves the socket runs as another user than ours (``SO_PEERCRED``): it is not our kairosd."""

    code = "foreign_server"

    def __init__(self, socket_path: str | os.PathLike[str], uid: int, expected: int) -> None:
        super().__init__(
            f"refusing the server on {socket_path}: it runs as uid {uid}, not as you (uid {expected}), so it is "
            "not your kairosd and nothing was sent to it; remove that socket or check KAIROS_HOME and "
            "XDG_RUNTIME_DIR"
        )


class ApiError(KairosError):
    """The daemon answered an error, or the exchange broke (``status`` 0, code "unavailable")."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.exit_code = protocol.exit_code_for(code)


class _ProtocolError(Exception):
    """The daemon's answer is not the HTTP we expect."""


class _SocketReader(io.RawIOBase):
    """What ``socket.makefile("rb")`` wraps in a buffer: reads from the socket, never closes it."""

    def __init__(self, sock: _socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)


class _Response:
    """A minimal HTTP/1.1 response reader over one connection.

    We speak HTTP ourselves rather than use http.client, which pulls in the
    email package (docs/performance.md; hooks call the CLI on every turn).
    The daemon always answers with Content-Length or chunked encoding and closes.
    """

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.file = io.BufferedReader(_SocketReader(sock))
        try:
            self._read_head()
        except BaseException:
            self.file.close()
            raise

    def _read_head(self) -> None:
        status_line = self.file.readline(_MAX_LINE)
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise _ProtocolError(f"bad status line {status_line[:_SNIPPET]!r}")
        self.status = int(parts[1])
        self.headers: dict[str, str] = {}
        while True:
            line = self.file.readline(_MAX_LINE)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        self.remaining = int(length) if length and length.isdigit() else None
        self._chunk_left = 0
        self._done = False

    def pieces(self) -> Iterator[bytes]:
        """The body as it arrives: each chunk of a chunked body, else blocks of up to 64 KiB."""
        if self.chunked:
            yield from iter(self._chunk, b"")
            return
        left = self.remaining
        while left is None or left > 0:
            data = self.file.read1(1 << 16 if left is None else min(left, 1 << 16))
            if not data:
                return
            if left is not None:
                left -= len(data)
            yield data

    def read(self) -> bytes:
        if not self.chunked:
            return self.file.read() if self.remaining is None else self.file.read(self.remaining)
        return b"".join(iter(self._chunk, b""))

    def _chunk(self) -> bytes:
        """The next piece of a chunked body; b"" at its end."""
        if self._done:
            return b""
        if self._chunk_left == 0:
            size_line = self.file.readline(_MAX_LINE)
            if not size_line:
                raise _ProtocolError("connection closed inside a chunked body")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                self._done = True
                return b""
            self._chunk_left = size
        data = self.file.read(self._chunk_left)
        if not data:
            raise _ProtocolError("connection closed inside a chunk")
        self._chunk_left -= len(data)
        if self._chunk_left == 0:
            self.file.readline(_MAX_LINE)  # the CRLF after each chunk
        return data

    def lines(self) -> Iterator[bytes]:
        """The body split into lines as it arrives (for JSON-lines streams)."""
        if not self.chunked:
            yield from iter(self.file.readline, b"")
            return
        pending = b""
        for data in iter(self._chunk, b""):
            pending += data
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line + b"\n"
        if pending:
            yield pending

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class Client:
    """One short connection per call; safe to reuse, not shared between threads."""

    def __init__(
        self, socket_path: str | os.PathLike[str] | None = None, timeout: float = 10.0, expected_uid: int | None = None
    ) -> None:
        self.socket_path = default_socket_path() if socket_path is None else socket_path
        self.timeout = timeout
        # Only a server running as this user is ours; anyone else who can bind the path could read prompts.
        self.expected_uid = os.getuid() if expected_uid is None else expected_uid

    def call(self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None) -> Any:
        """Send one request; return the parsed JSON of a 2xx answer (None if empty)."""
        return _parse(*self._exchange(method, path, body, query))

    def call_raw(self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None) -> bytes:
        """Send one request; return the body of a 2xx answer as it came, unparsed (an error answer raises)."""
        return self._exchange(method, path, body, query)[1]

    def call_pieces(
        self, method: str, path: str, query: Mapping[str, str] | None = None
    ) -> Generator[bytes, None, None]:
        """Send one request; yield the body of a 2xx answer as it arrives, unparsed (an error answer raises).

        For long answers (``GET /tasks`` at 100,000 tasks is ~100 MB): nothing waits for the whole
        body, and the timeout bounds each read, not the whole answer.
        """
        with self._errors():
            response = self._open(method, path, None, query)
        try:
            if not 200 <= response.status < 300:
                with self._errors():
                    data = response.read()
                raise _api_error(response.status, data)
            pieces = response.pieces()
            while True:
                with self._errors():
                    piece = next(pieces, b"")
                if not piece:
                    return
                yield piece
        finally:
            response.close()

    def _exchange(self, method: str, path: str, body: Any, query: Mapping[str, str] | None) -> tuple[int, bytes]:
        """The status and body of a 2xx answer; an error answer raises its ApiError."""
        with self._errors():
            response = self._open(method, path, body, query)
            try:
                data = response.read()
            finally:
                response.close()
        if not 200 <= response.status < 300:
            raise _api_error(response.status, data)
        return response.status, data

    def stream(
        self, path: str, query: Mapping[str, str] | None = None, on_open: Callable[[], object] | None = None
    ) -> Generator[Any, None, None]:
        """GET a JSON-lines stream and yield its items until the server ends it.

        Lazy: the connection opens on the first ``next()``. Closing the iterator
        (or KeyboardInterrupt, which propagates) closes the connection, which
        tells the server to release its subscription. ``on_open`` is called once the
        server has accepted the stream, before its first item: what is read after it
        misses no event (``kairos ui`` fetches its views there).
        """
        with self._errors():
            response = self._open("GET", path, None, query)
        try:
            if not 200 <= response.status < 300:
                with self._errors():
                    data = response.read()
                raise _api_error(response.status, data)
            if on_open is not None:
                on_open()
            response.sock.settimeout(None)  # events may be minutes apart; the timeout was for the answer
            lines = response.lines()
            while True:
                with self._errors():
                    line = next(lines, b"")
                if not line:
                    return
                if line.strip():
                    yield _parse(response.status, line)
        finally:
            response.close()

    def ping(self) -> bool:
        """True if a daemon answers HTTP on the socket (any status)."""
        try:
            self.call("GET", protocol.route_path("status"))
        except DaemonNotRunning:
            return False
        except ApiError as exc:
            return exc.status != 0
        return True

    def _open(self, method: str, path: str, body: Any, query: Mapping[str, str] | None) -> _Response:
        if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH_BYTES:
            # connect() would say "AF_UNIX path too long"; say what kairosd says when it cannot bind it.
            raise UsageError(
                f"socket path {self.socket_path} is longer than {MAX_SOCKET_PATH_BYTES} bytes, the limit of Unix "
                "sockets; set KAIROS_HOME or XDG_RUNTIME_DIR to a shorter folder"
            )
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(os.fspath(self.socket_path))
            self._check_peer(sock)
            payload = b"" if body is None else cjson.dumps(body, compact=True).encode()
            head = (
                f"{method} {_target(path, query)} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
                f"Connection: close\r\nContent-Length: {len(payload)}\r\n"
            )
            if body is not None:
                head += "Content-Type: application/json\r\n"
            try:  # noqa: SIM105 - contextlib.suppress would import contextlib (see the docstring)
                sock.sendall(head.encode("latin-1") + b"\r\n" + payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the daemon may answer (413, 403) before reading all we send; its answer is still there
            return _Response(sock)
        except BaseException:
            sock.close()
            raise

    def _check_peer(self, sock: _socket.socket) -> None:
        """Refuse (ForeignServer) a server whose uid, as the kernel reports it, is not the expected one."""
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _PEERCRED_SIZE)
        uid = int.from_bytes(raw[4:8], sys.byteorder)  # struct ucred {pid_t pid; uid_t uid; gid_t gid;}
        if uid != self.expected_uid:
            raise ForeignServer(self.socket_path, uid, self.expected_uid)

    def _errors(self) -> _Errors:
        """Turn socket and HTTP failures into KairosErrors that name the socket (a ``with`` block)."""
        return _Errors(self)


class _Errors:
    """What ``Client._errors`` returns: a context manager written out, as contextlib is not imported."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None or isinstance(exc, KairosError):
            return  # nothing happened, or already one clear line (a socket path too long)
        where, timeout = self.client.socket_path, self.client.timeout
        if isinstance(exc, FileNotFoundError):
            raise DaemonNotRunning(where) from None
        if isinstance(exc, ConnectionRefusedError):
            raise DaemonNotRunning(where, stale=True) from None
        if isinstance(exc, TimeoutError):
            raise ApiError(0, "unavailable", f"kairosd did not answer within {timeout:g}s (socket {where})") from None
        if isinstance(exc, OSError | ValueError | _ProtocolError):
            raise ApiError(0, "unavailable", f"lost the connection to kairosd at {where}: {exc!r}") from None


def _target(path: str, query: Mapping[str, str] | None) -> str:
    if not path.startswith("/"):
        path = "/" + path
    if not (path == protocol.PREFIX or path.startswith(protocol.PREFIX + "/")):
        path = protocol.PREFIX + path
    if query:
        path += "?" + protocol.encode_query(query)
    return path


def parse_answer(data: bytes) -> Any:
    """What ``call`` returns for a 2xx answer whose body ``call_raw`` returned."""
    return _parse(200, data)


def _parse(status: int, data: bytes) -> Any:
    if not data.strip():
        return None
    try:
        return cjson.loads(data)
    except ValueError:
        raise ApiError(status, "internal", f"kairosd sent something that is not JSON: {data[:_SNIPPET]!r}") from None


def _api_error(status: int, data: bytes) -> ApiError:
    try:
        error = cjson.loads(data)["error"]
        code, message = error["code"], error["message"]
        if isinstance(code, str) and isinstance(message, str):
            return ApiError(status, code, message)
    except (ValueError, TypeError, KeyError):
        pass
    code = "bad_request" if 400 <= status < 500 else "internal"
    text = data[:_SNIPPET].decode("utf-8", "replace").strip()
    return ApiError(status, code, f"kairosd answered HTTP {status}" + (f": {text}" if text else ""))
