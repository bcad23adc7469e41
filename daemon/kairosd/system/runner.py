"""Run one process of a background job: its own process group, output streamed line by line.

The command runs in a new session (so it and everything it spawns share one
process group), with stdin from a text (or /dev/null) and stdout and stderr on
pipes. The complete lines of each chunk read go to ``on_lines(stream, lines)``
as they arrive (the registry writes them to the task log and publishes them),
up to the run's output cap (:class:`~kairosd.system.outputcap.OutputCap`: past
it, output is read and counted, and one note line, stream ``kairos``, ends the
run); the tail of the whole output is also kept, bounded, for the adapter's
``result()``. A timeout or :meth:`ProcessRun.stop`
ends the group: SIGTERM, a grace period, SIGKILL; so does the leader's exit,
for whatever it left in the group. With ``marker`` (the name of an environment
variable whose value is unique to the run, e.g. ``KAIROS_TASK_ID``), the
descendants that left the group (``setsid``) are found by it and stopped too
(:func:`~kairosd.system.procgroup.find_strays`). Cancelling :meth:`ProcessRun.run`
kills all of it at once.

Never raises for an ordinary failure (not found, bad cwd, timeout): the
:class:`ProcessResult` says what happened.

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kairosd.core import defaults
from kairosd.system.outputcap import Chunks, OutputCap, close_when_done
from kairosd.system.procgroup import (
    feed_stdin,
    group_alive,
    process_start,
    signal_group,
    spawn_failure,
    stop_strays,
    strays_of,
    terminate_group,
)

log = logging.getLogger(__name__)

# A "line" longer than this is passed on in pieces, so one endless line cannot grow memory.
MAX_LINE_BYTES = 1 << 20
# What is kept of each stream for the adapter; older output is dropped (the log has it all).
MAX_KEPT_BYTES = {"stdout": 16 << 20, "stderr": 1 << 20}
# After the leader exits, a leftover grandchild may hold the pipes open; read on this long, then give up.
DRAIN_S = 2.0

LineSink = Callable[[str, list[str]], None]


@dataclass(frozen=True)
class ProcessSpec:
    argv: list[str]
    env: dict[str, str]  # the whole environment
    cwd: str | None = None
    stdin: str | None = None
    timeout_s: float = 3600.0


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None  # None: it never started
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    stopped: bool = False  # ended by stop()
    error: str | None = None  # why it could not start
    discarded: int = 0  # output bytes past the cap, read and dropped


@dataclass
class _Kept:
    """The tail of one stream, at most ``limit`` bytes."""

    limit: int
    chunks: deque[bytes] = field(default_factory=deque)
    size: int = 0

    def add(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        while self.size > self.limit and len(self.chunks) > 1:
            self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


class ProcessRun:
    """One run of one command. ``pid`` is set once it started; it leads its own group (pgid == pid)."""

    def __init__(
        self,
        spec: ProcessSpec,
        on_lines: LineSink,
        *,
        kill_grace_s: float = defaults.KILL_GRACE_S,
        on_spawn: Callable[[int], None] | None = None,
        max_output: int = defaults.MAX_OUTPUT_BYTES,
        marker: str | None = None,
    ) -> None:
        self.spec = spec
        self.pid: int | None = None
        self.killed = False  # something outlived SIGTERM and the grace: SIGKILL was sent
        self._marker = marker
        self._since: float | None = None
        self._on_lines = on_lines
        self._cap = OutputCap(max_output)
        self._on_spawn = on_spawn
        self._grace = kill_grace_s
        self._proc: asyncio.subprocess.Process | None = None
        self._stop_requested = False

    async def stop(self) -> None:
        """End the run: SIGTERM its group, SIGKILL after the grace. Also before or during the spawn."""
        self._stop_requested = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            self.killed |= await terminate_group(proc.pid, self._grace, proc.wait)

    async def run(self) -> ProcessResult:
        spec = self.spec
        if self._stop_requested:
            return ProcessResult(None, stopped=True, error="stopped before it started")
        try:
            # surrogateescape: text read from bytes that are not UTF-8 goes out as those bytes.
            stdin_data = None if spec.stdin is None else spec.stdin.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            return ProcessResult(None, error=f"cannot pass the input on stdin: {exc.reason}")
        stdin_read, stdin_write = os.pipe() if stdin_data is not None else (None, None)
        # Our own pipes, not asyncio's: its wait() returns only once the pipes closed as well, and a
        # child that left the group (setsid) may hold them open for as long as it likes.
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=stdin_read if stdin_read is not None else asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=err_write,
                cwd=spec.cwd,
                env=spec.env,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            _close(stdin_write, out_read, err_read)
            return ProcessResult(None, error=spawn_failure(exc, spec.argv[0], spec.cwd))
        except BaseException:
            _close(stdin_write, out_read, err_read)
            raise
        finally:
            _close(stdin_read, out_write, err_write)  # the child has its own copies now (or never started)
        self._proc = proc
        self.pid = proc.pid
        self._since = process_start(proc.pid)
        feeder = None
        readers: list[asyncio.Task[None]] = []
        kept = {name: _Kept(limit) for name, limit in MAX_KEPT_BYTES.items()}
        timed_out = False
        try:
            if self._on_spawn is not None:
                self._on_spawn(proc.pid)
            if stdin_write is not None and stdin_data is not None:
                feeder = asyncio.create_task(feed_stdin(stdin_write, stdin_data))
                stdin_write = None  # the feeder closes it
            readers = [
                asyncio.create_task(self._pump(out_read, "stdout", kept["stdout"])),
                asyncio.create_task(self._pump(err_read, "stderr", kept["stderr"])),
            ]
            if self._stop_requested:
                # stop() came while the process was being spawned and could not see it.
                self.killed |= await terminate_group(proc.pid, self._grace, proc.wait)
            try:
                async with asyncio.timeout(spec.timeout_s):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
                log.warning("%s timed out after %gs; stopping its process group", spec.argv[0], spec.timeout_s)
                self.killed |= await terminate_group(proc.pid, self._grace, proc.wait)
            await self._end_leftovers(proc.pid)
            _, pending = await asyncio.wait(readers, timeout=DRAIN_S)
            for reader in pending:
                reader.cancel()
            note = self._cap.note()
            if note is not None:
                self._emit("kairos", [note])
        except asyncio.CancelledError:
            # Cancellation means "stop now": no grace period, the whole group is killed at once.
            await self._kill_and_reap(proc, readers)
            raise
        except Exception as exc:
            # kairos itself failed after the start: nothing the command started may outlive the run.
            log.exception("running %s failed in kairos; killing its process group", spec.argv[0])
            await self._kill_and_reap(proc, readers)
            return ProcessResult(
                proc.returncode, error=f"kairos failed while running it: {exc!r} (process group killed)"
            )
        finally:
            if stdin_write is not None:
                os.close(stdin_write)
            if feeder is not None:
                feeder.cancel()  # its finally closes our end of the stdin pipe
            try:
                await asyncio.gather(*readers, return_exceptions=True)
            finally:
                if readers:
                    close_when_done(readers[0], out_read)
                    close_when_done(readers[1], err_read)
                else:
                    _close(out_read, err_read)
        code = proc.returncode
        assert code is not None  # wait() returned
        return ProcessResult(
            code,
            kept["stdout"].text(),
            kept["stderr"].text(),
            timed_out=timed_out,
            stopped=self._stop_requested,
            discarded=self._cap.discarded,
        )

    async def _end_leftovers(self, pgid: int, *, at_once: bool = False) -> None:
        """The leader is gone: stop what it left in its group, and what left the group (by ``marker``)."""
        if group_alive(pgid):
            log.info("%s left processes in its group; stopping them", self.spec.argv[0])
            if at_once:
                signal_group(pgid, signal.SIGKILL)
            else:
                self.killed |= await terminate_group(pgid, self._grace)
        value = self.spec.env.get(self._marker) if self._marker else None
        if self._marker and value:
            strays = await strays_of(self._marker, value, self._since, pgid)
            if strays:
                self.killed |= await stop_strays(strays, self._grace, at_once=at_once)

    async def _kill_and_reap(self, proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> None:
        signal_group(proc.pid, signal.SIGKILL)
        for reader in readers:
            reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await proc.wait()  # reap it, so no zombie or open transport outlives the run
            await self._end_leftovers(proc.pid, at_once=True)

    async def _pump(self, fd: int, name: str, kept: _Kept) -> None:
        """Read the pipe ``fd`` to its end, passing on the lines of each chunk (a last one without newline too).

        Bounded work per chunk: one call of the sink with at most one chunk (64 KiB) of lines,
        nothing at all past the cap, and a turn of the event loop between chunks.
        """
        pending = b""
        chunks = Chunks(fd)
        async for chunk in chunks:
            kept.add(chunk)
            data = self._cap.take(chunk)
            if not data:
                chunks.drain()  # past the cap: read and drop in larger chunks
                continue
            pending += data
            *lines, pending = pending.split(b"\n")
            while len(pending) > MAX_LINE_BYTES:
                lines.append(pending[:MAX_LINE_BYTES])
                pending = pending[MAX_LINE_BYTES:]
            if lines:
                self._emit(name, [_text(line) for line in lines])
        if pending:
            self._emit(name, [_text(pending)])

    def _emit(self, name: str, lines: list[str]) -> None:
        try:
            self._on_lines(name, lines)
        except Exception:
            # A broken sink must not stop reading: an unread pipe would block the command.
            log.exception("handling output lines of %s failed", self.spec.argv[0])


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r")
