"""The shell target with real processes: stdin and env, exit codes, timeouts, process groups, close()."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
import time
from pathlib import Path
from typing import Any

from shell_support import (
    RUN_ID,
    T0,
    TASK_ID,
    await_pid,
    delivery,
    gone,
    handoff,
    kill_leftover,
    run,
    script,
    wait_until,
)

from kairosd.core.models import InboxTarget
from kairosd.delivery.base import Handoff, Result

ECHO = f"""#!{sys.executable}
import json, os, sys
data = sys.stdin.read()
sys.stderr.write("to stderr\\n")
print(json.dumps({{"stdin": data, "cwd": os.getcwd(),
                  "env": {{k: v for k, v in os.environ.items() if k.startswith(("KAIROS_", "EXTRA_"))}}}}))
"""

# The grandchild ignores SIGTERM (the disposition survives exec), so only the
# group-wide SIGKILL after the grace period can end it.
SPAWNER = """#!/bin/sh
(trap '' TERM; exec sleep 60) &
echo $! > "$1"
exec sleep 60
"""


def test_success_passes_prompt_on_stdin_and_env(tmp_path: Path) -> None:
    """Exit 0 is delivered; the log has stdout and stderr, the prompt on stdin and every KAIROS_ var."""
    echo = script(tmp_path, "echo.py", ECHO)
    work = tmp_path / "work"
    work.mkdir()
    shell = delivery(tmp_path, env={"PATH": os.environ["PATH"], "EXTRA_VAR": "kept"})

    result = run(shell.deliver(handoff([str(echo)], prompt="héllo\nkairos", cwd=str(work), session="s1")))

    log = tmp_path / "runs" / TASK_ID / f"{RUN_ID}.log"
    assert result == Result("delivered", T0, T0, output_path=str(log), exit_code=0)
    text = log.read_text(encoding="utf-8")
    assert "to stderr\n" in text
    seen = json.loads(next(line for line in text.splitlines() if line.startswith("{")))
    assert seen["stdin"] == "héllo\nkairos"
    assert seen["cwd"] == str(work)
    assert seen["env"] == {
        "EXTRA_VAR": "kept",
        "KAIROS_PROMPT": "héllo\nkairos",
        "KAIROS_TASK_ID": TASK_ID,
        "KAIROS_RUN_ID": RUN_ID,
        "KAIROS_SESSION": "s1",
        "KAIROS_SCHEDULED_FOR": "2026-11-21T23:15:02+00:00",
        "KAIROS_CATCH_UP": "1",
        "KAIROS_LATE_BY_S": "4.25",
        "KAIROS_SPAWNED": "1",
    }


def test_session_defaults_and_daemon_env_is_inherited(tmp_path: Path, monkeypatch: Any) -> None:
    """Without ``env`` the child gets the daemon's environment; the session defaults to "default"."""
    monkeypatch.setenv("EXTRA_FROM_DAEMON", "yes")
    echo = script(tmp_path, "echo.py", ECHO)

    result = run(delivery(tmp_path).deliver(handoff([str(echo)])))

    assert result.outcome == "delivered"
    assert result.output_path is not None
    seen = json.loads(Path(result.output_path).read_text().splitlines()[-1])
    assert seen["env"]["EXTRA_FROM_DAEMON"] == "yes"
    assert seen["env"]["KAIROS_SESSION"] == "default"


def test_nonzero_exit_is_failed_with_exit_code(tmp_path: Path) -> None:
    """A non-zero exit is a failed run with the code and the log kept."""
    result = run(delivery(tmp_path).deliver(handoff(["sh", "-c", "echo oops; exit 3"])))

    assert result.outcome == "failed"
    assert result.reason == "exit code 3"
    assert result.exit_code == 3
    assert result.output_path is not None
    assert Path(result.output_path).read_text() == "oops\n"


def test_command_not_found_is_failed_not_raised(tmp_path: Path) -> None:
    """A missing argv[0] gives a failed result naming it."""
    result = run(delivery(tmp_path).deliver(handoff(["kairos-no-such-command-xyz", "arg"])))

    assert result.outcome == "failed"
    assert result.reason == "command not found: kairos-no-such-command-xyz"
    assert result.exit_code is None


def test_command_not_executable_is_failed(tmp_path: Path) -> None:
    """A file without the execute bit gives a failed result naming it."""
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o644)

    result = run(delivery(tmp_path).deliver(handoff([str(plain)])))

    assert result.outcome == "failed"
    assert result.reason == f"command not executable: {plain}"


def test_missing_cwd_is_failed_with_reason(tmp_path: Path) -> None:
    """A cwd that does not exist fails before anything runs, and leaves no run log."""
    missing = tmp_path / "nowhere"

    result = run(delivery(tmp_path).deliver(handoff(["true"], cwd=str(missing))))

    assert result.outcome == "failed"
    assert result.reason == f"working directory does not exist: {missing}"
    assert not (tmp_path / "runs" / TASK_ID / f"{RUN_ID}.log").exists()


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """On timeout the group is TERMed then KILLed, including a grandchild that ignores SIGTERM."""
    spawner = script(tmp_path, "spawner.sh", SPAWNER)
    pid_file = tmp_path / "grandchild.pid"
    shell = delivery(tmp_path, kill_grace_s=0.5)
    try:
        started = time.monotonic()
        result = run(shell.deliver(handoff([str(spawner), str(pid_file)], timeout_s=0.5)))
        elapsed = time.monotonic() - started

        assert result.outcome == "failed"
        # Issue 24, item 14: history showed "exit -15" for this.
        assert result.reason == "killed by SIGTERM after the 0.5s timeout, with its process group"
        assert result.exit_code == -signal.SIGTERM  # the leader itself obeyed SIGTERM
        assert elapsed < 10
        grandchild = int(pid_file.read_text())
        assert wait_until(lambda: gone(grandchild)), "grandchild survived the timeout"
    finally:
        kill_leftover(pid_file)


def test_killed_by_signal_is_failed_with_negative_code(tmp_path: Path) -> None:
    """A command that dies from a signal reports the signal's name and -signum."""
    result = run(delivery(tmp_path).deliver(handoff(["sh", "-c", "kill -KILL $$"])))

    assert result.outcome == "failed"
    assert result.reason == "killed by signal SIGKILL"
    assert result.exit_code == -signal.SIGKILL


def test_close_stops_in_flight_runs(tmp_path: Path) -> None:
    """close() terminates every running group (grandchild included); the run is failed, later runs refused."""
    spawner = script(tmp_path, "spawner.sh", SPAWNER)
    pid_file = tmp_path / "grandchild.pid"
    shell = delivery(tmp_path, kill_grace_s=0.5)

    async def scenario() -> tuple[Result, int, Result]:
        running = asyncio.create_task(shell.deliver(handoff([str(spawner), str(pid_file)], timeout_s=60)))
        grandchild = await await_pid(pid_file)
        await shell.close()
        result = await running
        after = await shell.deliver(handoff(["true"], run_id="r000000000002"))
        return result, grandchild, after

    try:
        result, grandchild, after = run(scenario())

        assert result.outcome == "failed"
        assert result.reason == "stopped at daemon shutdown (killed by signal SIGTERM)"
        assert wait_until(lambda: gone(grandchild)), "grandchild survived close()"
        assert after.outcome == "failed"
        assert after.reason is not None
        assert "closed" in after.reason
    finally:
        kill_leftover(pid_file)


def test_cancellation_kills_the_group_and_reraises(tmp_path: Path) -> None:
    """Cancelling deliver() kills the whole group at once and lets CancelledError through."""
    spawner = script(tmp_path, "spawner.sh", SPAWNER)
    pid_file = tmp_path / "grandchild.pid"
    shell = delivery(tmp_path, kill_grace_s=30)  # a grace period would show up as a slow test

    async def scenario() -> tuple[bool, int]:
        running = asyncio.create_task(shell.deliver(handoff([str(spawner), str(pid_file)], timeout_s=60)))
        grandchild = await await_pid(pid_file)
        running.cancel()
        try:
            await running
        except asyncio.CancelledError:
            return True, grandchild
        return False, grandchild

    try:
        started = time.monotonic()
        cancelled, grandchild = run(scenario())

        assert cancelled
        assert time.monotonic() - started < 10
        assert wait_until(lambda: gone(grandchild)), "grandchild survived cancellation"
    finally:
        kill_leftover(pid_file)


def test_log_file_path_and_permissions(tmp_path: Path) -> None:
    """The log is runs/<task_id>/<run_id>.log, the folder 0700 and the file 0600 whatever the umask."""
    old_umask = os.umask(0o022)
    try:
        result = run(delivery(tmp_path).deliver(handoff(["sh", "-c", "echo hi"], run_id="rabcdef012345")))
    finally:
        os.umask(old_umask)

    log = tmp_path / "runs" / TASK_ID / "rabcdef012345.log"
    assert result.output_path == str(log)
    assert log.read_text() == "hi\n"
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_command_ignoring_a_large_prompt_on_stdin_is_delivered(tmp_path: Path) -> None:
    """A child that never reads stdin, with a prompt bigger than the pipe buffer, neither hangs nor fails."""
    prompt = "x" * 100_000  # above the 64 KiB pipe buffer, below the 128 KiB limit of one env string

    result = run(delivery(tmp_path).deliver(handoff(["sh", "-c", "exit 0"], prompt=prompt)))

    assert result.outcome == "delivered"


def test_same_run_is_never_started_twice(tmp_path: Path) -> None:
    """A repeated run_id returns the first result; after a restart the existing log blocks a second start."""
    counter = tmp_path / "count"
    argv = ["sh", "-c", f"echo run >> {counter}"]

    async def twice() -> tuple[Result, Result]:
        shell = delivery(tmp_path)
        first, second = await asyncio.gather(shell.deliver(handoff(argv)), shell.deliver(handoff(argv)))
        return first, second

    first, second = run(twice())
    restarted = run(delivery(tmp_path).deliver(handoff(argv)))

    assert first.outcome == "delivered"
    assert second == first
    assert restarted.outcome == "failed"
    assert restarted.reason is not None
    assert "already started" in restarted.reason
    assert counter.read_text() == "run\n"


def test_invalid_target_is_failed(tmp_path: Path) -> None:
    """A target of another kind is a failed result, not an exception (an unusable argv cannot reach
    a delivery: the task's target is parsed when the task is made, tests/unit/kairosd/core/test_models.py)."""
    bad = Handoff("r1", TASK_ID, None, "p", InboxTarget(), T0, T0)

    result = run(delivery(tmp_path).deliver(bad))

    assert result.outcome == "failed"
    assert result.reason == "not a shell target: inbox"


def test_a_target_without_a_folder_runs_in_home_not_in_kairosds_folder(tmp_path: Path, monkeypatch) -> None:
    """Issue 24, item 1: a shell target stored without cwd ran in kairosd's folder (``/`` under systemd).
    It runs in $HOME, as crontab and systemd user units do."""
    echo = script(tmp_path, "echo.py", ECHO)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir("/")
    shell = delivery(tmp_path, env={"PATH": os.environ["PATH"], "HOME": str(home)})

    result = run(shell.deliver(handoff([str(echo)])))

    assert result.outcome == "delivered"
    text = (tmp_path / "runs" / TASK_ID / f"{RUN_ID}.log").read_text(encoding="utf-8")
    seen = json.loads(next(line for line in text.splitlines() if line.startswith("{")))
    assert seen["cwd"] == str(home)
