"""Idle wake for Codex: start a turn in a live, idle Codex TUI session with ``codex queue``.

Codex 0.169's TUI is a client of a shared app-server daemon (unless started with
``--no-daemon``). ``codex queue --thread ID --message TEXT`` starts a turn in a thread
that daemon has loaded; the thread id is the session id Codex's hooks report, so kairosd
can do it itself when a prompt for such a session fires, with no waiter process.

The guard, in this order (any doubt means: do not queue, the item stays pending for the
session's next turn boundary, or its fallback when the session ends):

1. the app-server must say the thread is loaded: ``thread/loaded/list``, asked over its
   control socket (``$CODEX_HOME/app-server-control/app-server-control.sock``, a
   WebSocket over a Unix socket). No socket, no answer in time, a malformed answer:
   not queued. A TUI that quit, or one started with ``--no-daemon``, is not listed.
2. Codex's ``config.toml`` must set ``thread_unload_delay_secs = 0`` (``kairos integrate
   codex`` does). Otherwise the app-server keeps a quit TUI's thread loaded for a minute
   (the default), and a turn queued then would run with nobody to see it.
3. ``codex queue`` runs without ``--resume``: on a thread that is not loaded it would
   only store the message, and ``--resume`` would resume a closed thread headless.

Must not import the registry, the sessions, the config module or the server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import socket
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kairosd.system.boundedread import read_capped

SOCKET = Path("app-server-control") / "app-server-control.sock"
QUERY_TIMEOUT_S = 3.0
QUEUE_TIMEOUT_S = 20.0  # under the 30 s claim lease the caller holds while this runs
_MAX_FRAME = 4 << 20
_MAX_PAGES = 20
_CLIENT = {"name": "kairos", "version": "1"}
_CONFIG_MAX_BYTES = 1 << 20
UNLOAD_KEY = "thread_unload_delay_secs"


class AppServerError(Exception):
    """The app-server could not be asked, or answered something this does not understand."""


def codex_home(environ: Mapping[str, str]) -> Path | None:
    """``$CODEX_HOME``, else ``$HOME/.codex`` of ``environ``; None when it names neither."""
    if environ.get("CODEX_HOME", "").strip():
        return Path(environ["CODEX_HOME"]).expanduser()
    home = environ.get("HOME", "").strip()
    return Path(home) / ".codex" if home else None


def unload_delay(home: Path) -> object:
    """``thread_unload_delay_secs`` in ``home/config.toml`` (None when unset); raises OSError/ValueError."""
    import tomllib  # when asked: kairosd builds this at start, and the parser compiles its patterns at import

    text = read_capped(home / "config.toml", _CONFIG_MAX_BYTES).decode()
    return tomllib.loads(text).get(UNLOAD_KEY)


def loaded_threads(sock_path: Path, timeout: float = QUERY_TIMEOUT_S) -> set[str]:
    """The thread ids the app-server behind ``sock_path`` has loaded (``thread/loaded/list``, every page).

    Blocking (run it in a thread). Raises AppServerError (or OSError) when it cannot tell."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(sock_path))
            _handshake(conn)
            _call(conn, 0, "initialize", {"clientInfo": _CLIENT})
            _send(conn, {"method": "initialized"})
            threads: set[str] = set()
            cursor = None
            for page in range(1, _MAX_PAGES + 1):
                result = _call(conn, page, "thread/loaded/list", {"cursor": cursor} if cursor else {})
                data = result.get("data")
                if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
                    raise AppServerError(f"thread/loaded/list answered without a list of ids: {result!r:.200}")
                threads.update(data)
                cursor = result.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    return threads
        except TimeoutError:
            raise AppServerError(f"no answer within {timeout:g}s") from None
    raise AppServerError(f"thread/loaded/list still had more after {_MAX_PAGES} pages")


def _handshake(conn: socket.socket) -> None:
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    conn.sendall(
        (
            "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(1)
        if not chunk or len(head) > 8192:
            raise AppServerError("the app-server closed the connection during the WebSocket handshake")
        head += chunk
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status + b" ":
        raise AppServerError(f"the app-server refused the WebSocket upgrade: {status[:100]!r}")


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    payload = json.dumps(message).encode()
    mask = secrets.token_bytes(4)  # a client masks every frame (RFC 6455)
    size = len(payload)
    if size < 126:
        head = bytes([0x81, 0x80 | size])
    elif size < 1 << 16:
        head = bytes([0x81, 0x80 | 126]) + struct.pack(">H", size)
    else:
        head = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", size)
    conn.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise AppServerError("the app-server closed the connection")
        data += chunk
    return data


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    """The next text message (None for a control frame); fragmented messages are not expected."""
    first, second = _recv_exact(conn, 2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack(">H", _recv_exact(conn, 2))[0]
    elif size == 127:
        size = struct.unpack(">Q", _recv_exact(conn, 8))[0]
    if size > _MAX_FRAME:
        raise AppServerError(f"a {size}-byte frame is more than kairos reads")
    mask = _recv_exact(conn, 4) if second & 0x80 else None
    payload = _recv_exact(conn, size)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    opcode = first & 0x0F
    if opcode == 0x8:
        raise AppServerError("the app-server closed the WebSocket")
    if opcode != 0x1:
        return None  # ping, pong, binary: nothing this asks for
    try:
        message = json.loads(payload)
    except ValueError:
        raise AppServerError("the app-server sent a message that is not JSON") from None
    return message if isinstance(message, dict) else None


def _call(conn: socket.socket, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send one request and return its result, skipping notifications that arrive meanwhile."""
    _send(conn, {"id": request_id, "method": method, "params": params})
    while True:
        message = _receive(conn)
        if message is None or message.get("id") != request_id:
            continue
        if "error" in message:
            raise AppServerError(f"{method} failed: {message['error']!r:.200}")
        result = message.get("result")
        if not isinstance(result, dict):
            raise AppServerError(f"{method} answered without a result")
        return result


class CodexQueue:
    """The idle-wake hook of the ``session`` target for Codex sessions (see the module docstring)."""

    agent = "codex"

    def __init__(self, binary: str, environ: Mapping[str, str], *, queue_timeout: float = QUEUE_TIMEOUT_S) -> None:
        self.binary = binary
        self.environ = dict(environ)
        self.queue_timeout = queue_timeout

    async def __call__(self, session_id: str, text: str) -> tuple[bool, str]:
        """Queue ``text`` into the live thread ``session_id``: (queued, what happened)."""
        home = codex_home(self.environ)
        if home is None:
            return False, "not queued with codex queue: neither CODEX_HOME nor HOME is set for kairosd"
        try:
            delay = await asyncio.to_thread(unload_delay, home)
        except (OSError, ValueError) as exc:
            delay = f"unreadable: {exc}"
        if delay != 0 or isinstance(delay, bool):
            return False, (
                f"not queued with codex queue: {home / 'config.toml'} does not set {UNLOAD_KEY} = 0 "
                f"(kairos integrate codex does), so a loaded thread may be a quit TUI's"
            )
        try:
            loaded = await asyncio.to_thread(loaded_threads, home / SOCKET)
        except (AppServerError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return (
                False,
                f"not queued with codex queue: could not ask Codex's app-server which threads are loaded ({why})",
            )
        if session_id not in loaded:
            return False, (
                "not queued with codex queue: Codex's app-server has not loaded this thread "
                "(its TUI quit, or runs with --no-daemon)"
            )
        return await self._queue(session_id, text)

    async def _queue(self, session_id: str, text: str) -> tuple[bool, str]:
        argv = [self.binary, "queue", "--thread", session_id, "--message", text]  # never --resume
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=self.environ,
                cwd=self.environ.get("HOME") or os.sep,
            )
        except OSError as exc:
            return False, f"not queued: cannot run {self.binary}: {exc.strerror or exc}"
        try:
            _, stderr = await asyncio.wait_for(proc.communicate(), self.queue_timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            return False, f"codex queue did not finish within {self.queue_timeout:g}s"
        if proc.returncode != 0:
            lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
            detail = f": {lines[-1][:200]}" if lines else ""
            return False, f"codex queue exited with {proc.returncode}{detail}"
        return True, "started a turn in its idle thread with codex queue"
