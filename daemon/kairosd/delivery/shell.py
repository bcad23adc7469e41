"""The shell target: run the user's command with the prompt on stdin and in the environment.

``target["argv"]`` is executed directly (no shell unless the user wrote
``sh -c``) in its own session, so the command and everything it spawns share
one process group that a timeout, a cancellation or :meth:`ShellDelivery.close`
can signal as a whole. stdout and stderr share one pipe that kairosd copies
into ``<runs_dir>/<task_id>/<run_id>.log`` up to the output cap
(:class:`~kairosd.system.outputcap.OutputCap`, ``[limits] max_output``): past
it the output is read and counted, and the log ends with a note of what was
cut. When the command exits, whatever it left running in its group is stopped
too (TERM, grace, KILL), and so is what left the group (``setsid``), found by
its ``KAIROS_RUN_ID`` (:func:`~kairosd.system.procgroup.find_strays`).

A run is ``delivered`` only when the command exits 0. Every ordinary failure
(command not found, bad cwd, non-zero exit, signal, timeout) comes back as a
failed :class:`~kairosd.delivery.base.Result` with a reason, never as an
exception.

Run logs go with the run history: :meth:`ShellDelivery.forget_runs` is the run
ledger's eviction hook, :meth:`ShellDelivery.remove_task_logs` runs at ``kairos
rm``, and :meth:`ShellDelivery.sweep` deletes at start-up what older versions left.

Idempotence per ``run_id`` (the Delivery contract): a repeated ``deliver`` of
the same run returns the first result (or waits for it, if still running), and
after a daemon restart the existing run log tells us the command was already
started, so it is not started again.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.errors import UsageError
from kairosd.core.models import ShellTarget, Target
from kairosd.delivery.base import SKIP_LATER_CHECKS, Handoff, Result
from kairosd.system.outputcap import OutputCap, close_when_done, pump_to_fd
from kairosd.system.procgroup import (
    describe_exit,
    feed_stdin,
    group_alive,
    process_start,
    signal_group,
    spawn_failure,
    stop_strays,
    strays_of,
    terminate_group,
    timeout_reason,
)

log = logging.getLogger(__name__)

# After the command (and its group) ended, a process that left the group may still hold the output
# pipe open: read on this long, then stop reading.
DRAIN_S = 2.0

# Results kept in memory for repeated deliveries of a run; older runs are still
# protected by their log file, which is what a restarted daemon sees anyway.
_REMEMBERED_RESULTS = 1024


@dataclass(frozen=True)
class _Spec:
    argv: list[str]
    cwd: str
    timeout_s: float


@dataclass
class _Running:
    proc: asyncio.subprocess.Process
    pgid: int
    since: float | None  # the leader's start: what it started began later
    stopping: bool = False  # set by close(): the run ends because the daemon shuts down


class RunRef(Protocol):
    """What names a run's log: a ledger's :class:`~kairosd.core.records.Run` will do."""

    @property
    def task_id(self) -> str: ...

    @property
    def run_id(self) -> str: ...


class ShellDelivery:
    """Runs shell targets; see the module docstring for the contract."""

    kind = "shell"

    def __init__(
        self,
        runs_dir: Path,
        clock: Clock,
        kill_grace_s: float = defaults.KILL_GRACE_S,
        env: Mapping[str, str] | None = None,
        max_output: int = defaults.MAX_OUTPUT_BYTES,
    ) -> None:
        self._runs_dir = runs_dir
        self._clock = clock
        self._kill_grace_s = kill_grace_s
        self._max_output = max_output
        self._env = None if env is None else dict(env)
        self._running: dict[str, _Running] = {}
        self._pending: dict[str, asyncio.Future[Result]] = {}
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._closed = False

    # ---- the Delivery protocol -------------------------------------------

    async def deliver(self, handoff: Handoff) -> Result:
        """Run the command for ``handoff``; return once it exited (or could not start)."""
        known = self._results.get(handoff.run_id)
        if known is not None:
            log.info("shell run %s already ran (%s); not running it again", handoff.run_id, known.outcome)
            return known
        pending = self._pending.get(handoff.run_id)
        if pending is not None:
            # Shielded: a second caller giving up must not cancel the first caller's run.
            return await asyncio.shield(pending)
        if self._closed:
            now = self._clock.now()
            return Result("failed", now, now, reason="shell delivery is closed (kairosd is shutting down)")

        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[handoff.run_id] = future
        started_at = self._clock.now()
        try:
            result = await self._run(handoff, started_at)
        except asyncio.CancelledError:
            # The command may have seen the prompt already, so a retry must not start it again.
            cancelled = Result("failed", started_at, self._clock.now(), reason="cancelled (process group killed)")
            self._remember(handoff.run_id, cancelled)
            future.set_result(cancelled)
            raise
        except Exception as exc:
            # A bug here: the caller gets the exception; concurrent waiters get a failed result.
            future.set_result(Result("failed", started_at, self._clock.now(), reason=f"target error: {exc}"))
            raise
        finally:
            del self._pending[handoff.run_id]
        self._remember(handoff.run_id, result)
        future.set_result(result)
        return result

    async def check(self, target: Target) -> None:
        """At add time: a working directory that does not exist, or a command that is not found on the
        PATH the command will run with (unless ``SKIP_LATER_CHECKS``), would fail every fire."""
        if not isinstance(target, ShellTarget):
            return
        env = os.environ if self._env is None else self._env
        spec = _spec(target, self._home())
        later = not SKIP_LATER_CHECKS.get()
        # In a thread: stat calls on a slow or hung mount must not stall the daemon's loop.
        problem = await asyncio.to_thread(_target_problem, spec, env.get("PATH", os.defpath), later)
        if problem:
            raise UsageError(f"shell target: {problem}")

    async def close(self) -> None:
        """Terminate every in-flight command's process group (TERM, grace, KILL).

        Idempotent. Deliveries still running report a failed "stopped at shutdown"
        result; later deliveries are refused.
        """
        self._closed = True
        running = list(self._running.values())
        if running:
            log.info("stopping %d running shell command(s)", len(running))
        for entry in running:
            entry.stopping = True
        await asyncio.gather(*(self._stop_group(entry) for entry in running))

    # ---- one run -----------------------------------------------------------

    async def _run(self, handoff: Handoff, started_at: datetime) -> Result:
        if not isinstance(handoff.target, ShellTarget):
            return self._failed(started_at, f"not a shell target: {handoff.target.kind}")
        spec = _spec(handoff.target, self._home())
        problem = _cwd_problem(spec.cwd) or _bad_name(handoff.task_id, "task id") or _bad_name(handoff.run_id, "run id")
        if problem:
            return self._failed(started_at, problem)

        task_id = handoff.task_id
        log_path = self._runs_dir / task_id / f"{handoff.run_id}.log"
        try:
            log_fd = self._open_log(log_path)
        except FileExistsError:
            # Left by an earlier daemon that started this run: running it again could repeat its effects.
            return self._failed(
                started_at,
                f"run {handoff.run_id} was already started (its log exists); not running it again",
                output_path=str(log_path),
            )
        except OSError as exc:
            return self._failed(started_at, f"cannot create run log {log_path}: {exc.strerror or exc}")

        try:
            # surrogateescape: a prompt read from bytes that are not UTF-8 goes out as those bytes, as in
            # KAIROS_PROMPT; what cannot be encoded at all fails here, before anything is started.
            stdin_data = handoff.prompt.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            os.close(log_fd)
            return self._failed(started_at, f"the prompt cannot be passed on stdin: {exc.reason}")
        stdin_read, stdin_write = os.pipe()
        out_read, out_write = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=stdin_read,
                stdout=out_write,
                stderr=out_write,
                cwd=spec.cwd,
                env=self._child_env(handoff),
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            os.close(stdin_write)
            os.close(out_read)
            reason = spawn_failure(exc, spec.argv[0], spec.cwd, big=" (the prompt is in KAIROS_PROMPT)")
            with contextlib.suppress(OSError):
                os.write(log_fd, f"kairos: {reason}\n".encode())
            os.close(log_fd)
            log.warning("shell run %s of task %s could not start: %s", handoff.run_id, handoff.task_id, reason)
            return self._failed(started_at, reason, output_path=str(log_path))
        except BaseException:
            os.close(stdin_write)
            os.close(out_read)
            os.close(log_fd)
            raise
        finally:
            # The child has its own copies now (or never started).
            os.close(stdin_read)
            os.close(out_write)

        # A new session's leader leads its own group: pgid == pid.
        running = _Running(proc, proc.pid, process_start(proc.pid))
        self._running[handoff.run_id] = running
        pump = asyncio.create_task(pump_to_fd(out_read, log_fd, OutputCap(self._max_output)))
        feeder: asyncio.Task[None] | None = None
        timed_out = False
        try:
            log.info(
                "shell run %s of task %s started: pid %d, %s", handoff.run_id, handoff.task_id, proc.pid, spec.argv
            )
            feeder = asyncio.create_task(feed_stdin(stdin_write, stdin_data))
            if self._closed:
                # close() ran while the process was being spawned and could not see it.
                running.stopping = True
                await self._stop_group(running)
            try:
                async with asyncio.timeout(spec.timeout_s):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
                log.warning(
                    "shell run %s of task %s timed out after %gs; stopping its process group",
                    handoff.run_id,
                    handoff.task_id,
                    spec.timeout_s,
                )
                await self._stop_group(running)
            if group_alive(running.pgid):
                # The command exited but left processes in its group: nothing it started outlives the run.
                log.info("shell run %s of task %s left processes behind; stopping them", handoff.run_id, task_id)
                await self._stop_group(running)
            strays = await strays_of("KAIROS_RUN_ID", handoff.run_id, running.since, running.pgid)
            await stop_strays(strays, self._kill_grace_s)
            await asyncio.wait({pump}, timeout=DRAIN_S)
        except asyncio.CancelledError:
            # Cancellation means "stop now": no grace period, the whole group is killed at once.
            await _kill_and_reap(running, handoff.run_id)
            raise
        except Exception as exc:
            # kairos itself failed after the command started: nothing it started may outlive the run.
            log.exception(
                "shell run %s of task %s failed in kairos; killing its process group", handoff.run_id, handoff.task_id
            )
            await _kill_and_reap(running, handoff.run_id)
            reason = f"target error: {exc!r} (process group killed)"
            return self._failed(started_at, reason, output_path=str(log_path))
        finally:
            if feeder is None:
                os.close(stdin_write)
            else:
                feeder.cancel()  # its finally closes our end of the stdin pipe
            del self._running[handoff.run_id]
            pump.cancel()  # a pipe still held open after the drain: stop reading, note the cut
            try:
                await asyncio.shield(_settle(pump))
            finally:
                close_when_done(pump, out_read, log_fd)  # never under a pump still running

        finished_at = self._clock.now()
        code = proc.returncode
        assert code is not None  # wait() returned
        output_path = str(log_path)
        if timed_out:
            reason = timeout_reason(code, spec.timeout_s)
        elif running.stopping:
            reason = f"stopped at daemon shutdown ({describe_exit(code)})"
        elif code == 0:
            log.info("shell run %s of task %s exited 0", handoff.run_id, handoff.task_id)
            return Result("delivered", started_at, finished_at, output_path=output_path, exit_code=0)
        else:
            reason = describe_exit(code)
        log.warning("shell run %s of task %s failed: %s", handoff.run_id, handoff.task_id, reason)
        return Result("failed", started_at, finished_at, reason=reason, output_path=output_path, exit_code=code)

    async def _stop_group(self, running: _Running) -> None:
        """SIGTERM the group, give it ``kill_grace_s`` to go, SIGKILL what is left, reap the leader."""
        await terminate_group(running.pgid, self._kill_grace_s, running.proc.wait)

    # ---- run logs ------------------------------------------------------------

    def forget_runs(self, runs: Iterable[RunRef]) -> None:
        """Delete the logs of runs the run history let go (blocking, one unlink each)."""
        for run in runs:
            if _bad_name(run.task_id, "task id") or _bad_name(run.run_id, "run id"):
                continue
            with contextlib.suppress(OSError):
                (self._runs_dir / run.task_id / f"{run.run_id}.log").unlink()

    def remove_task_logs(self, task_id: str) -> None:
        """Delete every run log of a task (``kairos rm``); blocking."""
        if _bad_name(task_id, "task id"):
            return
        shutil.rmtree(self._runs_dir / task_id, ignore_errors=True)

    def sweep(self, known: Callable[[str], bool]) -> int:
        """Delete the logs of runs the history does not know (let go before logs were pruned with it).

        Call at start-up, before any run starts: a run is in the history before its log exists.
        Returns how many were deleted.
        """
        removed = 0
        try:
            folders = list(os.scandir(self._runs_dir))
        except FileNotFoundError:
            return 0
        for folder in folders:
            if not folder.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                for entry in os.scandir(folder.path):
                    run_id, dot, ext = entry.name.rpartition(".")
                    if dot and ext == "log" and not known(run_id):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                            removed += 1
        if removed:
            log.info("deleted %d run log(s) of runs no longer in the run history", removed)
        return removed

    # ---- helpers -------------------------------------------------------------

    def _open_log(self, path: Path) -> int:
        """Create the run's log (folder 0700, file 0600); FileExistsError if the run was started before."""
        self._runs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        # Exact modes: mkdir's and open's are filtered by the umask, and an old folder may be wider.
        os.chmod(path.parent, 0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
        except OSError:
            os.close(fd)
            raise
        return fd

    def _home(self) -> str:
        """Where a target that records no folder runs (older tasks, API clients that leave ``cwd`` out):
        the user's home, as crontab and systemd user units do; never kairosd's own folder (``/``)."""
        env = os.environ if self._env is None else self._env
        return env.get("HOME") or os.path.expanduser("~")

    def _child_env(self, handoff: Handoff) -> dict[str, str]:
        # Read at each run, so the child sees the daemon's environment as it is now.
        env = dict(os.environ if self._env is None else self._env)
        env.update(
            {
                "KAIROS_PROMPT": handoff.prompt,
                "KAIROS_TASK_ID": handoff.task_id,
                "KAIROS_RUN_ID": handoff.run_id,
                "KAIROS_SESSION": str(getattr(handoff.target, "session", None) or "default"),
                "KAIROS_SCHEDULED_FOR": handoff.scheduled_for.isoformat(),
                "KAIROS_CATCH_UP": "1" if handoff.catch_up else "0",
                "KAIROS_LATE_BY_S": str(round(handoff.late_by_s, 3)),
                # Lets kairos hooks in the command tell a process started by kairos from a user's own.
                "KAIROS_SPAWNED": "1",
            }
        )
        return env

    def _failed(self, started_at: datetime, reason: str, output_path: str | None = None) -> Result:
        return Result("failed", started_at, self._clock.now(), reason=reason, output_path=output_path)

    def _remember(self, run_id: str, result: Result) -> None:
        self._results[run_id] = result
        while len(self._results) > _REMEMBERED_RESULTS:
            self._results.popitem(last=False)


async def _kill_and_reap(running: _Running, run_id: str) -> None:
    """SIGKILL the whole group (and what left it) at once and reap its leader, even if cancelled meanwhile."""
    signal_group(running.pgid, signal.SIGKILL)
    with contextlib.suppress(asyncio.CancelledError):
        await running.proc.wait()  # reap it, so no zombie or open transport outlives the run
        strays = await strays_of("KAIROS_RUN_ID", run_id, running.since, running.pgid)
        await stop_strays(strays, 0, at_once=True)


async def _settle(task: asyncio.Task[None]) -> None:
    """Wait for a cancelled task to finish its cleanup; its own errors are logged, not raised."""
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception:
        log.exception("copying a shell run's output failed")


def _spec(target: ShellTarget, home: str) -> _Spec:
    """The runnable parts of a shell target (checked when its task was made); no folder recorded is ``home``."""
    return _Spec(list(target.argv), os.path.expanduser(target.cwd) if target.cwd else home, target.timeout_s)


def _cwd_problem(cwd: str | None) -> str | None:
    if cwd is None or os.path.isdir(cwd):
        return None
    what = "is not a directory" if os.path.exists(cwd) else "does not exist"
    return f"working directory {what}: {cwd}"


def _target_problem(spec: _Spec, path: str, program_too: bool) -> str | None:
    """Why every fire of ``spec`` would fail: its folder, or (``program_too``) its program."""
    return _cwd_problem(spec.cwd) or (_program_problem(spec.argv[0], path, spec.cwd) if program_too else None)


def _program_problem(program: str, path: str, cwd: str) -> str | None:
    """Why ``program`` cannot be started (as execvpe would look for it), if it cannot."""
    if os.sep in program:
        # A relative path such as ./job.sh is found from the working directory, as at every fire.
        where = os.path.join(cwd, program)
        if not os.path.isfile(where):
            return (
                f"{program} does not exist (looked in {cwd})"
                if not os.path.isabs(program)
                else f"{program} does not exist"
            )
        if not os.access(where, os.X_OK):
            return f"{program} is not executable"
        return None
    if shutil.which(program, path=path) is None:
        return (
            f"{program} is not found on kairosd's PATH ({path}); give its full path, install it, "
            "or add the task with --no-check if it will be there by the first fire"
        )
    return None


def _bad_name(value: str, what: str) -> str | None:
    """Why ``value`` cannot name a file in the runs folder (it must not climb out of it), if it cannot."""
    if not value or value in (".", "..") or "/" in value or "\0" in value:
        return f"invalid {what} for a run log: {value!r}"
    return None
