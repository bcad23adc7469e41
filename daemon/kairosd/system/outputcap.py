"""The per-run output cap: what a command prints is kept up to a number of bytes, the rest is counted.

Shell targets and background jobs share one rule (issue 27): a run's output
(stdout and stderr together) is passed on up to ``limit`` bytes; what comes
after is read, so the command never blocks on a full pipe, but only counted,
and the run ends with one note saying what was cut (:meth:`OutputCap.note`).
The cap is ``[limits] max_output`` in the config.

:func:`pump_to_fd` is the shell target's reader: a pipe copied into a log file
in chunks of at most :data:`READ_CHUNK` bytes, one ``write`` per chunk, so the
event loop does bounded work per chunk however fast the command prints.

Must not import the scheduler, the store, the server or the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import AsyncIterator

log = logging.getLogger(__name__)

READ_CHUNK = 64 << 10
DRAIN_CHUNK = 1 << 20  # past the cap: read (and drop) in larger chunks
DRAIN_PAUSE_S = 0.01  # ... with a pause between them: at most ~100 MiB/s is read to be dropped


class OutputCap:
    """Counts a run's output against ``limit`` bytes; :meth:`take` says how much of a chunk may pass."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.passed = 0
        self.discarded = 0

    def take(self, data: bytes) -> bytes:
        """The part of ``data`` that fits under the cap (the rest is counted as discarded)."""
        room = max(self.limit - self.passed, 0)
        kept = data[:room]
        self.passed += len(kept)
        self.discarded += len(data) - len(kept)
        return kept

    def note(self) -> str | None:
        """One line saying what was cut, or None if nothing was."""
        if not self.discarded:
            return None
        return f"[kairos: output cut after {self.passed} bytes; {self.discarded} more bytes discarded]"


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Chunks:
    """The data of the pipe ``fd`` until end of file, in chunks of at most :data:`READ_CHUNK` bytes.

    Between two chunks the event loop gets a turn, even when the pipe is never empty.
    :meth:`drain` switches to discarding a flood: the pipe is widened and read in
    chunks of :data:`DRAIN_CHUNK` with a pause of :data:`DRAIN_PAUSE_S` between
    them, so output past the cap costs kairosd little CPU (the command waits on
    its full pipe meanwhile). The caller closes ``fd``.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = READ_CHUNK

    def drain(self) -> None:
        if self.size == DRAIN_CHUNK:
            return
        self.size = DRAIN_CHUNK
        with contextlib.suppress(OSError, AttributeError):  # Linux only, and capped by pipe-max-size
            fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, DRAIN_CHUNK)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _read(self)


async def _read(chunks: Chunks) -> AsyncIterator[bytes]:
    fd = chunks.fd
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    while True:
        try:
            data = os.read(fd, chunks.size)
        except BlockingIOError:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _resolve, readable)
            try:
                await readable
            finally:
                loop.remove_reader(fd)
            continue
        if not data:
            return
        yield data
        # Draining: a pause lets the pipe fill, so a command flooding past the cap is slowed to
        # about DRAIN_CHUNK / DRAIN_PAUSE_S instead of costing kairosd a core until its timeout.
        await asyncio.sleep(DRAIN_PAUSE_S if chunks.size == DRAIN_CHUNK else 0)


async def pump_to_fd(read_fd: int, write_fd: int, cap: OutputCap) -> None:
    """Copy the pipe ``read_fd`` into ``write_fd`` until end of file, under ``cap``.

    Output past the cap is read and dropped; the note goes at the end of the
    file. A file that cannot be written any more is left alone: the pipe is
    still drained. Cancelling stops reading at once (the note is still written).
    The caller closes both descriptors once this is done (see :func:`close_when_done`).
    """
    writing = True
    chunks = Chunks(read_fd)
    try:
        async for data in chunks:
            kept = cap.take(data)
            if cap.discarded:
                chunks.drain()
            if kept and writing:
                try:
                    write_all(write_fd, kept)
                except OSError as exc:
                    log.warning("cannot write a run log (%s); its output is dropped from here on", exc)
                    writing = False
    finally:
        note = cap.note()
        if note is not None and writing:
            with contextlib.suppress(OSError):
                write_all(write_fd, f"\n{note}\n".encode())


def close_when_done(task: asyncio.Task[None], *fds: int) -> None:
    """Close ``fds`` once ``task`` (a :func:`pump_to_fd`) has finished, now if it has."""

    def close(_: object = None) -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    if task.done():
        close()
    else:
        task.add_done_callback(close)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
