"""Blocking client of the kairosd API over its Unix socket (HTTP/1.1, JSON, one request per connection).

Runs on the hot path of agent hooks, so it is stdlib only (``http.client`` on
an AF_UNIX socket). Paths are given without the API prefix: ``call("GET",
"/tasks")`` requests ``/v1/tasks``; a path that already starts with
``protocol.PREFIX`` is sent as is.

Failures are :class:`KairosError`\\ s with CLI exit codes: :class:`DaemonNotRunning`
(exit 3) when nothing listens on the socket, :class:`ApiError` for an error
answer (code and exit code from the error body) or for a broken exchange
(status 0, code "unavailable").

Must not import pydantic, h11, asyncio or httpx, nor any kairosd module other
than ``protocol``, ``errors`` and ``paths``.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from kairosd import protocol
from kairosd.errors import EXIT_NO_DAEMON, KairosError
from kairosd.paths import Paths

# Bytes of a non-JSON error answer quoted in the message.
_SNIPPET = 200


class DaemonNotRunning(KairosError):
    """Nothing listens on the socket (no socket file, or a stale one)."""

    code = "no_daemon"
    exit_code = EXIT_NO_DAEMON

    def __init__(self, socket_path: Path, *, stale: bool = False) -> None:
        where = f"nothing listens on {socket_path}" if stale else f"no socket at {socket_path}"
        super().__init__(f"kairosd is not running ({where}); start it with: kairos daemon start")
        self.socket_path = socket_path


class ApiError(KairosError):
    """The daemon answered an error, or the exchange broke (``status`` 0, code "unavailable")."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.exit_code = protocol.exit_code_for(code)


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTPConnection whose transport is a Unix socket; the Host header stays "localhost"."""

    def __init__(self, socket_path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(os.fspath(self._socket_path))
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Client:
    """One short connection per call; safe to reuse, not shared between threads."""

    def __init__(self, socket_path: Path | None = None, timeout: float = 10.0) -> None:
        self.socket_path = Paths.from_env().socket if socket_path is None else socket_path
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None) -> Any:
        """Send one request; return the parsed JSON of a 2xx answer (None if empty)."""
        with self._errors():
            conn, response = self._open(method, path, body, query)
            try:
                data = response.read()
            finally:
                conn.close()
        if not 200 <= response.status < 300:
            raise _api_error(response.status, data)
        return _parse(response.status, data)

    def stream(self, path: str, query: Mapping[str, str] | None = None) -> Generator[Any, None, None]:
        """GET a JSON-lines stream and yield its items until the server ends it.

        Lazy: the connection opens on the first ``next()``. Closing the iterator
        (or KeyboardInterrupt, which propagates) closes the connection, which
        tells the server to release its subscription.
        """
        with self._errors():
            conn, response = self._open("GET", path, None, query)
        try:
            if not 200 <= response.status < 300:
                with self._errors():
                    data = response.read()
                raise _api_error(response.status, data)
            if conn.sock is not None:
                conn.sock.settimeout(None)  # events may be minutes apart; the timeout was for the answer
            while True:
                with self._errors():
                    line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield _parse(response.status, line)
        finally:
            conn.close()

    def ping(self) -> bool:
        """True if a daemon answers HTTP on the socket (any status)."""
        try:
            self.call("GET", "/status")
        except DaemonNotRunning:
            return False
        except ApiError as exc:
            return exc.status != 0
        return True

    def _open(
        self, method: str, path: str, body: Any, query: Mapping[str, str] | None
    ) -> tuple[_UnixHTTPConnection, http.client.HTTPResponse]:
        conn = _UnixHTTPConnection(self.socket_path, self.timeout)
        try:
            headers = {"Accept": "application/json"}
            payload = None
            if body is not None:
                payload = json.dumps(body, separators=(",", ":")).encode()
                headers["Content-Type"] = "application/json"
            try:
                conn.request(method, _target(path, query), body=payload, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                if conn.sock is None:
                    raise
                # The daemon may answer (413, 403) before reading all we send; its answer is still there.
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn socket and HTTP failures into KairosErrors that name the socket."""
        try:
            yield
        except FileNotFoundError:
            raise DaemonNotRunning(self.socket_path) from None
        except ConnectionRefusedError:
            raise DaemonNotRunning(self.socket_path, stale=True) from None
        except TimeoutError:
            raise ApiError(
                0, "unavailable", f"kairosd did not answer within {self.timeout:g}s (socket {self.socket_path})"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            raise ApiError(0, "unavailable", f"lost the connection to kairosd at {self.socket_path}: {exc!r}") from None


def _target(path: str, query: Mapping[str, str] | None) -> str:
    if not path.startswith("/"):
        path = "/" + path
    if not (path == protocol.PREFIX or path.startswith(protocol.PREFIX + "/")):
        path = protocol.PREFIX + path
    if query:
        path += "?" + urlencode(dict(query))
    return path


def _parse(status: int, data: bytes) -> Any:
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except ValueError:
        raise ApiError(status, "internal", f"kairosd sent something that is not JSON: {data[:_SNIPPET]!r}") from None


def _api_error(status: int, data: bytes) -> ApiError:
    try:
        error = json.loads(data)["error"]
        code, message = error["code"], error["message"]
        if isinstance(code, str) and isinstance(message, str):
            return ApiError(status, code, message)
    except (ValueError, TypeError, KeyError):
        pass
    code = "bad_request" if 400 <= status < 500 else "internal"
    text = data[:_SNIPPET].decode("utf-8", "replace").strip()
    return ApiError(status, code, f"kairosd answered HTTP {status}" + (f": {text}" if text else ""))
