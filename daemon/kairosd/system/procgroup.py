"""Process-group helpers shared by everything kairosd starts (shell targets, background tasks, hooks).

Every command kairosd runs is started in its own session, so the command and
whatever it spawns share one process group that can be signalled as a whole.
Stopping a group is SIGTERM, a grace period, then SIGKILL for what is left:
:func:`terminate_group`. :func:`feed_stdin` writes a text into a child's stdin
pipe without ever blocking the event loop.

Must not import the scheduler, the store, the server or the registry: it knows
process ids and file descriptors only.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
from collections.abc import Awaitable, Callable

from kairosd.core.schedule.durations import format_duration

log = logging.getLogger(__name__)

# How often a terminating group is checked for stragglers during the kill grace.
POLL_S = 0.05


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the group; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (zombies count until reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id now belongs to someone else's processes: ours are gone
        return False
    return True


async def terminate_group(pgid: int, grace_s: float, reap: Callable[[], Awaitable[object]] | None = None) -> None:
    """SIGTERM the group, give it ``grace_s`` to go, SIGKILL what is left, then ``reap()`` the leader.

    ``reap`` (e.g. ``proc.wait``) matters: a zombie leader keeps the group
    "alive" for :func:`group_alive` until its parent collects it, so it is
    awaited concurrently with the grace period.
    """
    signal_group(pgid, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    reaper = asyncio.ensure_future(reap()) if reap is not None else None
    try:
        # Poll the group, not just the leader: a grandchild may ignore SIGTERM after the leader died.
        # No event exists for "the group is empty": polling killpg(pgid, 0) is the only way to know.
        while group_alive(pgid) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(POLL_S)
    finally:
        # Also on cancellation: nothing of the group may outlive this.
        if group_alive(pgid):
            log.warning("process group %d outlived SIGTERM; sending SIGKILL", pgid)
            signal_group(pgid, signal.SIGKILL)
        if reaper is not None:
            await reaper


def timeout_reason(code: int, timeout_s: float) -> str:
    """``killed by SIGTERM after the 5m timeout, with its process group``: how a timed-out run ended."""
    after = f"after the {format_duration(timeout_s)} timeout, with its process group"
    if code < 0:
        return f"{describe_exit(code).replace('by signal ', 'by ')} {after}"
    return f"stopped {after} ({describe_exit(code)} on SIGTERM)"


def describe_exit(code: int) -> str:
    """``exit code 3`` or ``killed by signal SIGTERM`` for an asyncio return code."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by signal {name}"
    return f"exit code {code}"


def spawn_failure(exc: OSError | ValueError, command: str, cwd: str | None, big: str = "") -> str:
    """A one-line reason for a command that could not be started (``big``: a hint for E2BIG)."""
    if isinstance(exc, ValueError):  # e.g. a NUL byte in an argument or in the prompt
        return f"cannot start {command}: {exc}"
    if cwd is not None and exc.filename == cwd:  # the folder went away after our check
        return f"working directory unusable: {cwd} ({exc.strerror})"
    if exc.errno == errno.ENOENT:
        if "/" in command and os.path.exists(os.path.join(cwd or ".", command)):
            # The file is there, so what is missing is the interpreter on its #! line.
            return f"command not found: {command} (its #! interpreter is missing)"
        return f"command not found: {command}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"command not executable: {command}"
    if exc.errno == errno.ENOEXEC:
        return f"command not executable: {command} (not a program; does a script lack its #! line?)"
    if exc.errno == errno.E2BIG:
        return f"cannot start {command}: arguments or environment too large{big}"
    return f"cannot start {command}: {exc.strerror or exc}"


async def feed_stdin(fd: int, data: bytes) -> None:
    """Write ``data`` into the stdin pipe ``fd``, then close it; never blocks the loop.

    A command that does not read its stdin must not break anything: a full or
    broken pipe is left alone. The caller cancels this once the command exited.
    """
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                writable: asyncio.Future[None] = loop.create_future()
                loop.add_writer(fd, _resolve, writable)
                try:
                    await writable
                finally:
                    loop.remove_writer(fd)
    except (BrokenPipeError, ConnectionResetError):
        log.debug("command closed its stdin before reading all of it")
    finally:
        os.close(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    # The writer callback can fire again before the waiting coroutine resumes.
    if not future.done():
        future.set_result(None)
