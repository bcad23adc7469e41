"""Run one process of a background task: its own process group, output streamed line by line.

The command runs in a new session (so it and everything it spawns share one
process group), with stdin from a text (or /dev/null) and stdout and stderr on
pipes. The complete lines of each chunk read go to ``on_lines(stream, lines)``
as they arrive (the registry writes them to the task log and publishes them),
up to the run's output cap (:class:`~kairosd.system.outputcap.OutputCap`: past
it, output is read and counted, and one note line, stream ``kairos``, ends the
run); the tail of the whole output is also kept, bounded, for the adapter's
``result()``. A timeout or :meth:`ProcessRun.stop`
ends the group: SIGTERM, a grace period, SIGKILL. Cancelling :meth:`ProcessRun.run`
kills the group at once.

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
from kairosd.system.outputcap import OutputCap
from kairosd.system.procgroup import feed_stdin, signal_group, spawn_failure, terminate_group

log = logging.getLogger(__name__)

READ_CHUNK = 64 << 10
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
    ) -> None:
        self.spec = spec
        self.pid: int | None = None
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
            await terminate_group(proc.pid, self._grace, proc.wait)

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
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=stdin_read if stdin_read is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=spec.cwd,
                env=spec.env,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            if stdin_write is not None:
                os.close(stdin_write)
            return ProcessResult(None, error=spawn_failure(exc, spec.argv[0], spec.cwd))
        except BaseException:
            if stdin_write is not None:
                os.close(stdin_write)
            raise
        finally:
            if stdin_read is not None:
                os.close(stdin_read)  # the child has its own copy now (or never started)
        self._proc = proc
        self.pid = proc.pid
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
            assert proc.stdout is not None
            assert proc.stderr is not None
            readers = [
                asyncio.create_task(self._pump(proc.stdout, "stdout", kept["stdout"])),
                asyncio.create_task(self._pump(proc.stderr, "stderr", kept["stderr"])),
            ]
            if self._stop_requested:
                # stop() came while the process was being spawned and could not see it.
                await terminate_group(proc.pid, self._grace, proc.wait)
            try:
                async with asyncio.timeout(spec.timeout_s):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
                log.warning("%s timed out after %gs; stopping its process group", spec.argv[0], spec.timeout_s)
                await terminate_group(proc.pid, self._grace, proc.wait)
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
            await asyncio.gather(*readers, return_exceptions=True)
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

    @staticmethod
    async def _kill_and_reap(proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> None:
        signal_group(proc.pid, signal.SIGKILL)
        for reader in readers:
            reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await proc.wait()  # reap it, so no zombie or open transport outlives the run

    async def _pump(self, stream: asyncio.StreamReader, name: str, kept: _Kept) -> None:
        """Read ``stream`` to its end, passing on the lines of each chunk (a last one without newline too).

        Bounded work per chunk: one call of the sink with at most :data:`READ_CHUNK` bytes of lines,
        nothing at all past the cap, and a turn of the event loop between chunks.
        """
        pending = b""
        while True:
            data = await stream.read(READ_CHUNK)
            if not data:
                break
            kept.add(data)
            data = self._cap.take(data)
            if data:
                pending += data
                *lines, pending = pending.split(b"\n")
                while len(pending) > MAX_LINE_BYTES:
                    lines.append(pending[:MAX_LINE_BYTES])
                    pending = pending[MAX_LINE_BYTES:]
                if lines:
                    self._emit(name, [_text(line) for line in lines])
            # The stream's buffer may never run dry under a flood: let the API's callbacks run.
            await asyncio.sleep(0)
        if pending:
            self._emit(name, [_text(pending)])

    def _emit(self, name: str, lines: list[str]) -> None:
        try:
            self._on_lines(name, lines)
        except Exception:
            # A broken sink must not stop reading: an unread pipe would block the command.
            log.exception("handling output lines of %s failed", self.spec.argv[0])


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r")
