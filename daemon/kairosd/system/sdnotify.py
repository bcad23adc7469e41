"""systemd integration with the standard library: sd_notify, socket activation, the journal's stderr.

* :class:`Notifier` sends ``READY=1``, ``WATCHDOG=1``, ``STOPPING=1``, ``STATUS=...``
  as one datagram to ``$NOTIFY_SOCKET`` (a path, or an abstract socket written ``@name``).
* :func:`listen_sockets` takes the sockets systemd passed by socket activation:
  ``$LISTEN_FDS`` descriptors from fd 3, meant for us only if ``$LISTEN_PID`` is our pid.
* :func:`watchdog_interval_s` reads ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``).
* :func:`logs_to_journal` says whether stderr is the journal, so log lines get ``<N>`` priorities.

Without these variables every function is a no-op, so kairosd behaves the same outside systemd.
This is the protocol of sd_notify(3) and sd_listen_fds(3) written out, because libsystemd (or a
binding of it) would be a native dependency for a few lines of socket code.

Must not import asyncio, the store, the scheduler or the CLI: it is a leaf the composition root uses.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, MutableMapping
from typing import Final

log = logging.getLogger(__name__)

# sd_listen_fds(3): passed descriptors start right after stdin, stdout and stderr.
LISTEN_FDS_START: Final = 3
# A notification is tiny; a full receive queue must not stall the event loop for long.
SEND_TIMEOUT_S: Final = 1.0
# Read once and removed from os.environ (as sd_notify(3)'s unset_environment does), so that the
# commands kairosd runs for shell targets do not inherit them.
SYSTEMD_VARS: Final = ("NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_PID", "WATCHDOG_USEC")


class Notifier:
    """Sends sd_notify states to one address; does nothing when there is none (not under systemd)."""

    def __init__(self, address: str | None) -> None:
        self.address = address or None
        self._target = _socket_address(address) if address else None
        self._sock: socket.socket | None = None
        if address and self._target is None:
            log.warning("ignoring NOTIFY_SOCKET=%r: not an absolute path or an @abstract name", address)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Notifier:
        return cls(environ.get("NOTIFY_SOCKET"))

    @property
    def enabled(self) -> bool:
        return self._target is not None

    def notify(self, *assignments: str) -> bool:
        """Send ``VAR=value`` lines in one datagram; True if it was sent. Failures are logged, never raised."""
        if self._target is None:
            return False
        payload = "\n".join(assignments).encode("utf-8", "replace")
        try:
            if self._sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                sock.settimeout(SEND_TIMEOUT_S)
                self._sock = sock
            self._sock.sendto(payload, self._target)
        except OSError as exc:
            # systemd may be restarting or the socket gone; the daemon itself must go on.
            what = assignments[0] if assignments else ""
            log.warning("could not notify systemd (%s) at %s: %s", what, self.address, exc)
            return False
        return True

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _socket_address(address: str) -> bytes | None:
    if address.startswith("@"):
        # An abstract socket: Linux names it by a leading NUL byte instead of a file.
        return b"\0" + os.fsencode(address[1:])
    if address.startswith("/"):
        return os.fsencode(address)
    return None  # e.g. systemd 254's "vsock:" addresses, which only VMs use


def listen_sockets(environ: Mapping[str, str], pid: int | None = None) -> list[tuple[str, socket.socket]]:
    """The sockets passed by socket activation, with their names (``LISTEN_FDNAMES``, else "unknown").

    Empty unless ``LISTEN_PID`` is our pid: an inherited ``LISTEN_FDS`` was meant for an ancestor.
    The descriptors are made close-on-exec, so shell targets do not inherit the listening socket.
    """
    own_pid = os.getpid() if pid is None else pid
    if environ.get("LISTEN_PID", "").strip() != str(own_pid):
        return []
    raw = environ.get("LISTEN_FDS", "").strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        if raw:
            log.warning("ignoring LISTEN_FDS=%r: not a positive whole number", raw)
        return []
    count = int(raw)
    names = environ.get("LISTEN_FDNAMES", "").split(":")
    found: list[tuple[str, socket.socket]] = []
    for index, fd in enumerate(range(LISTEN_FDS_START, LISTEN_FDS_START + count)):
        name = names[index] if index < len(names) and names[index] else "unknown"
        try:
            os.set_inheritable(fd, False)
            found.append((name, socket.socket(fileno=fd)))
        except OSError as exc:
            log.warning("ignoring passed fd %d (%s): not a usable socket: %s", fd, name, exc)
    return found


def is_unix_stream_listener(sock: socket.socket) -> bool:
    """True for a listening AF_UNIX stream socket, the only kind the API serves on."""
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) != 0
    except OSError:
        return False
    return sock.family == socket.AF_UNIX and sock.type == socket.SOCK_STREAM and listening


def watchdog_interval_s(environ: Mapping[str, str], pid: int | None = None) -> float | None:
    """How often to send ``WATCHDOG=1`` (half of ``WatchdogSec=``, as sd_watchdog_enabled(3) advises), or None."""
    raw = environ.get("WATCHDOG_USEC", "").strip()
    if not raw:
        return None
    watchdog_pid = environ.get("WATCHDOG_PID", "").strip()
    if watchdog_pid and watchdog_pid != str(os.getpid() if pid is None else pid):
        return None  # meant for another process (e.g. the one that exec'd us under a wrapper)
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        log.warning("ignoring WATCHDOG_USEC=%r: not a positive whole number", raw)
        return None
    return int(raw) / 1_000_000 / 2


def logs_to_journal(environ: Mapping[str, str], fd: int = 2) -> bool:
    """Whether ``fd`` (stderr) goes to the journal, which reads a ``<N>`` prefix as the line's priority.

    ``JOURNAL_STREAM`` names the journal stream's device and inode; it is inherited by children
    whose stderr went elsewhere (a terminal started by a service, a log file), so it counts only
    if it still matches ``fd``. A service without it (``StandardError=`` other than the journal)
    is recognised by ``INVOCATION_ID``.
    """
    stream = environ.get("JOURNAL_STREAM", "").strip()
    if stream:
        dev, _, ino = stream.partition(":")
        try:
            st = os.fstat(fd)
        except OSError:
            return False
        return (dev, ino) == (str(st.st_dev), str(st.st_ino))
    return bool(environ.get("INVOCATION_ID", "").strip())


def forget_environment(environ: MutableMapping[str, str]) -> None:
    """Remove the activation and notification variables (see :data:`SYSTEMD_VARS`) from ``environ``."""
    for var in SYSTEMD_VARS:
        environ.pop(var, None)
