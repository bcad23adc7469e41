"""The shell target: run the user's command with the prompt on stdin and in the environment.

``target["argv"]`` is executed directly (no shell unless the user wrote
``sh -c``) in its own session, so the command and everything it spawns share
one process group that a timeout, a cancellation or :meth:`ShellDelivery.close`
can signal as a whole. stdout and stderr go straight from the child into
``<runs_dir>/<task_id>/<run_id>.log``; nothing is pumped through the daemon.

A run is ``delivered`` only when the command exits 0. Every ordinary failure
(command not found, bad cwd, non-zero exit, signal, timeout) comes back as a
failed :class:`~kairosd.delivery.base.Result` with a reason, never as an
exception.

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
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.errors import UsageError
from kairosd.core.models import ShellTarget, Target
from kairosd.delivery.base import SKIP_LATER_CHECKS, Handoff, Result
from kairosd.system.procgroup import (
    describe_exit,
    feed_stdin,
    signal_group,
    spawn_failure,
    terminate_group,
    timeout_reason,
)

log = logging.getLogger(__name__)

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
    stopping: bool = False  # set by close(): the run ends because the daemon shuts down


class ShellDelivery:
    """Runs shell targets; see the module docstring for the contract."""

    kind = "shell"

    def __init__(
        self,
        runs_dir: Path,
        clock: Clock,
        kill_grace_s: float = defaults.KILL_GRACE_S,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._runs_dir = runs_dir
        self._clock = clock
        self._kill_grace_s = kill_grace_s
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

        log_path = self._runs_dir / handoff.task_id / f"{handoff.run_id}.log"
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
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=stdin_read,
                stdout=log_fd,
                stderr=log_fd,
                cwd=spec.cwd,
                env=self._child_env(handoff),
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            os.close(stdin_write)
            reason = spawn_failure(exc, spec.argv[0], spec.cwd, big=" (the prompt is in KAIROS_PROMPT)")
            with contextlib.suppress(OSError):
                os.write(log_fd, f"kairos: {reason}\n".encode())
            log.warning("shell run %s of task %s could not start: %s", handoff.run_id, handoff.task_id, reason)
            return self._failed(started_at, reason, output_path=str(log_path))
        except BaseException:
            os.close(stdin_write)
            raise
        finally:
            # The child has its own copies now (or never started).
            os.close(stdin_read)
            os.close(log_fd)

        running = _Running(proc, proc.pid)  # a new session's leader leads its own group: pgid == pid
        self._running[handoff.run_id] = running
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
        except asyncio.CancelledError:
            # Cancellation means "stop now": no grace period, the whole group is killed at once.
            await _kill_and_reap(running)
            raise
        except Exception as exc:
            # kairos itself failed after the command started: nothing it started may outlive the run.
            log.exception(
                "shell run %s of task %s failed in kairos; killing its process group", handoff.run_id, handoff.task_id
            )
            await _kill_and_reap(running)
            reason = f"target error: {exc!r} (process group killed)"
            return self._failed(started_at, reason, output_path=str(log_path))
        finally:
            if feeder is None:
                os.close(stdin_write)
            else:
                feeder.cancel()  # its finally closes our end of the stdin pipe
            del self._running[handoff.run_id]

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


async def _kill_and_reap(running: _Running) -> None:
    """SIGKILL the whole group at once and reap its leader, even if we are cancelled meanwhile."""
    signal_group(running.pgid, signal.SIGKILL)
    with contextlib.suppress(asyncio.CancelledError):
        await running.proc.wait()  # reap it, so no zombie or open transport outlives the run


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
