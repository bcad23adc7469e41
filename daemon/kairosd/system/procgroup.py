"""Process-group helpers shared by everything kairosd starts (shell targets, background jobs, hooks).

Every command kairosd runs is started in its own session, so the command and
whatever it spawns share one process group that can be signalled as a whole.
Stopping a group is SIGTERM, a grace period, then SIGKILL for what is left:
:func:`terminate_group`. A descendant can leave the group (``setsid``) and be
reparented away from the command; :func:`find_strays` finds those by the
marker every run puts in its environment (``KAIROS_RUN_ID`` of a shell run,
``KAIROS_TASK_ID`` of a background job's turn) and :func:`stop_strays` ends
them the same way, so a run's end reaches everything it started however it
ends (issue 27). A process that rewrites or clears its environment escapes
this; nothing short of a cgroup would catch it. :func:`feed_stdin` writes a
text into a child's stdin pipe without ever blocking the event loop.

Must not import the scheduler, the store, the server or the registry: it knows
process ids and file descriptors only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

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


async def terminate_group(pgid: int, grace_s: float, reap: Callable[[], Awaitable[object]] | None = None) -> bool:
    """SIGTERM the group, give it ``grace_s`` to go, SIGKILL what is left, then ``reap()`` the leader.

    Returns whether SIGKILL was needed (something outlived SIGTERM and the grace).

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
        killed = group_alive(pgid)
        if killed:
            log.warning("process group %d outlived SIGTERM; sending SIGKILL", pgid)
            signal_group(pgid, signal.SIGKILL)
        if reaper is not None:
            await reaper
    return killed


def process_start(pid: int) -> float | None:
    """The process' start time (seconds since the epoch, as the kernel has it), if it still exists."""
    import psutil  # on use: not needed to start (issue 16)

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def find_strays(name: str, value: str, since: float | None, group: int) -> list[int]:
    """This user's processes started at or after ``since`` (outside ``group``) whose environment has
    ``name=value`` and ``KAIROS_SPAWNED=1``: what a run started and that left its group.

    Blocking (it reads /proc): call it through :func:`strays_of`. Only processes started since the
    run began have their environment read, so the cost is a listing of /proc and a few small reads.
    """
    import psutil

    uid, me = os.getuid(), os.getpid()
    if since is None:  # the leader was gone before its start was read: kairosd's own start bounds it
        since = psutil.Process(me).create_time()
    found: list[int] = []
    # The kernel's start times have a granularity of a clock tick: allow for it.
    for proc in psutil.process_iter(["uids", "create_time"]):
        try:
            uids, created = proc.info["uids"], proc.info["create_time"]
            if proc.pid == me or uids is None or uids.real != uid or created is None or created < since - 0.05:
                continue
            if os.getpgid(proc.pid) == group:
                continue  # the group itself is stopped as a group
            env = proc.environ()
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to read
        if env.get(name) == value and env.get("KAIROS_SPAWNED") == "1":
            found.append(proc.pid)
    return found


_scanner: concurrent.futures.ThreadPoolExecutor | None = None


async def strays_of(name: str, value: str, since: float | None, group: int) -> list[int]:
    """:func:`find_strays` on a thread of its own: never queued with the store's writes in the
    default pool, and one scan at a time however many runs end together."""
    global _scanner
    if _scanner is None:
        _scanner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kairos-strays")
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_scanner, find_strays, name, value, since, group)


async def stop_strays(pids: list[int], grace_s: float, *, at_once: bool = False) -> bool:
    """SIGTERM each stray (and the group it leads, if it made one), SIGKILL what is left after
    ``grace_s`` (at once with ``at_once``); returns whether SIGKILL was needed."""
    import psutil

    procs: list[psutil.Process] = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    if not procs:
        return False
    log.warning("stopping %d process(es) that left their run's process group: %s", len(procs), pids)
    first = signal.SIGKILL if at_once else signal.SIGTERM
    _signal_strays(procs, first)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (0 if at_once else grace_s)
    while any(_running(p) for p in procs) and loop.time() < deadline:  # noqa: ASYNC110 - no event for "gone"
        await asyncio.sleep(POLL_S)
    killed = any(_running(p) for p in procs)
    if killed:
        _signal_strays(procs, signal.SIGKILL)
    return killed


def _running(proc: psutil.Process) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_strays(procs: list[psutil.Process], sig: signal.Signals) -> None:
    import psutil

    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError):
            if not proc.is_running():  # also: the pid now belongs to another process
                continue
            if os.getpgid(proc.pid) == proc.pid:
                signal_group(proc.pid, sig)  # it made its own group (setsid): its children go too
            proc.send_signal(sig)


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
