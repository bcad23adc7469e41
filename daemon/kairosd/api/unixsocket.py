"""The daemon's Unix socket file and peers: a private folder, stale-socket take-over, peer
credentials (``SO_PEERCRED``), and watching a client for a hang-up.

Linux only. Must not import the store, the scheduler, the server or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from kairosd.api.throttle import LogThrottle
from kairosd.core.errors import KairosError, LockHeldError, UsageError

# The server's name: these lines are part of what it reports about its socket and clients.
log = logging.getLogger("kairosd.api.server")

SOCKET_MODE: Final = 0o600
DIR_MODE: Final = 0o700
# sun_path is 108 bytes on Linux including the terminating NUL.
MAX_SOCKET_PATH_BYTES: Final = 107
# Probing an existing socket file: a live daemon with a full backlog never accepts, so bound the wait.
PROBE_TIMEOUT_S: Final = 1.0
_PEERCRED = struct.Struct("3i")
# Only these two mean the peer cannot read us any more (the kernel reports them whatever we ask for).
_HANGUP_EVENTS: Final = select.EPOLLHUP | select.EPOLLERR


def bind_private(path: Path, backlog: int) -> tuple[socket.socket, tuple[int, int]]:
    """Prepare the folder, replace a stale socket file, bind 0600 and listen (it may block).

    Returns the non-blocking listening socket and the file's (st_dev, st_ino), so
    its owner removes it only while it is still the file it bound. Raises
    LockHeldError if another server answers on ``path``.
    """
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise UsageError(
            f"socket path {path} is longer than {MAX_SOCKET_PATH_BYTES} bytes, the limit of Unix "
            "sockets; set KAIROS_HOME or XDG_RUNTIME_DIR to a shorter folder"
        )
    ensure_private_dir(path.parent)
    remove_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    file_id: tuple[int, int] | None = None
    try:
        sock.bind(os.fspath(path))
        # Until listen() nobody can connect, so tightening the mode here leaves no window;
        # it also avoids os.umask, which is process-wide and racy with other threads.
        os.chmod(path, SOCKET_MODE)
        st = os.stat(path)
        file_id = (st.st_dev, st.st_ino)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        unlink_if_same(path, file_id)
        raise KairosError(f"cannot listen on {path}: {exc.strerror or exc}") from exc
    except BaseException:
        sock.close()
        unlink_if_same(path, file_id)
        raise
    return sock, file_id


def unlink_if_same(path: Path, file_id: tuple[int, int] | None) -> None:
    """Remove the socket file at ``path`` if it is still the file ``file_id`` names (None: not ours)."""
    if file_id is None:
        return
    try:
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == file_id:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("could not remove socket %s: %s", path, exc)


def ensure_private_dir(folder: Path) -> None:
    folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    st = os.stat(folder)
    if st.st_uid != os.geteuid():
        # Not ours to chmod (e.g. a shared folder); the socket itself is still 0600 and peers are checked.
        log.warning("socket folder %s belongs to uid %d, not to us", folder, st.st_uid)
        return
    if stat.S_IMODE(st.st_mode) != DIR_MODE:
        log.info("tightening %s from %o to %o", folder, stat.S_IMODE(st.st_mode), DIR_MODE)
        os.chmod(folder, DIR_MODE)


def remove_stale_socket(path: Path) -> None:
    """Unlink a socket file nobody answers on; refuse if someone does or if it is not a socket."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise KairosError(f"{path} exists and is not a socket; move it away and start kairosd again")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(PROBE_TIMEOUT_S)
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        pass  # stale: its daemon is gone
    except (TimeoutError, BlockingIOError) as exc:
        # Someone listens but does not accept in time: still a live server.
        raise LockHeldError(f"another kairosd is already serving on {path} (busy)") from exc
    except OSError as exc:
        raise KairosError(f"cannot check the existing socket {path}: {exc.strerror or exc}") from exc
    else:
        raise LockHeldError(f"another kairosd is already serving on {path}")
    finally:
        probe.close()
    log.info("removing stale socket %s", path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def peer_credentials(writer: asyncio.StreamWriter) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of the peer, or None if the kernel will not say."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        pid, uid, gid = _PEERCRED.unpack(raw)
    except (OSError, struct.error):
        log.exception("cannot read the peer credentials")
        return None
    return int(pid), int(uid), int(gid)


# Out of descriptors, every request would fail to be watched: said once a minute, not per request.
_unwatched = LogThrottle(log, logging.WARNING)


@contextlib.contextmanager
def watch_hangup(writer: asyncio.StreamWriter, disconnected: asyncio.Event) -> Iterator[None]:
    """Set ``disconnected`` if the peer hangs up (EPOLLHUP/EPOLLERR; see the module docstring) meanwhile.

    The loop cannot watch for that alone: its selector asks for readability, which a half-close
    (end of input) also gives, and the transport already owns the socket's registration. So a
    small epoll of our own watches a duplicate of the socket for the hang-up events only, and the
    loop watches that epoll, which is readable exactly when they occurred. The duplicate keeps the
    socket alive until we are done, even if the transport closes its own descriptor first (a reset).
    If any of this fails (out of descriptors), the request is served unwatched, as before.
    """
    loop = asyncio.get_running_loop()
    dup = -1
    watch: select.epoll | None = None

    def hung_up() -> None:
        assert watch is not None
        loop.remove_reader(watch.fileno())  # the events stay pending: once is enough
        disconnected.set()

    try:
        try:
            dup = os.dup(writer.get_extra_info("socket").fileno())
            watch = select.epoll(1)
            watch.register(dup, _HANGUP_EVENTS)
            loop.add_reader(watch.fileno(), hung_up)
        except (AttributeError, OSError) as exc:
            _unwatched.hit(loop.time(), "cannot watch a client for a hang-up, so a long poll may outlive it: %r", exc)
        yield
    finally:
        if watch is not None:
            loop.remove_reader(watch.fileno())
            watch.close()
        if dup >= 0:
            os.close(dup)
