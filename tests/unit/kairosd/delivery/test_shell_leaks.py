"""Nothing a shell target starts outlives its run, whatever fails and wherever (issue 13).

The issue's case: a prompt that is not UTF-8 made the stdin write raise after
the command had started, so ``sh -c 'cat >/dev/null'`` waited on a stdin pipe
nobody would close, past every timeout, while the run was reported as over.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from shell_support import RUN_ID, gone, run, wait_until

from kairosd.core.models import ShellTarget
from kairosd.delivery import shell as shell_module
from kairosd.delivery.base import Handoff
from kairosd.delivery.shell import ShellDelivery
from kairosd.testing import FakeClock

T0 = datetime(2026, 11, 21, 23, 15, 2, tzinfo=UTC)
WAIT_S = 20.0

# The leader records its pid and starts a grandchild (same group) that ignores SIGTERM; neither reads stdin.
SPAWNER = """#!/bin/sh
echo $$ > "$1.leader"
(trap '' TERM; exec sleep 60) &
echo $! > "$1"
exec sleep 60
"""


def handoff(argv: list[str], prompt: str, timeout_s: float) -> Handoff:
    return Handoff(
        run_id=RUN_ID,
        task_id="a1b2c3d4",
        task_name="leak",
        prompt=prompt,
        target=ShellTarget(argv=argv, timeout_s=timeout_s),
        scheduled_for=T0,
        planned_for=T0,
        late_by_s=0.0,
        catch_up=False,
    )


def pid_in(path: Path) -> int | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return int(path.read_text())
    return None


def kill(*pids: int | None) -> None:
    for pid in pids:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def spawner(tmp_path: Path) -> Path:
    path = tmp_path / "spawner.sh"
    path.write_text(SPAWNER)
    path.chmod(0o755)
    return path


def test_the_issues_non_utf8_prompt_runs_and_nothing_is_left(tmp_path: Path) -> None:
    """``printf '\\xff x' | kairos add --cmd "sh -c 'cat >/dev/null'" -``: the bytes reach stdin, sh exits."""
    pid_file = tmp_path / "sh.pid"
    argv = ["sh", "-c", f"echo $$ > {pid_file}; cat > {tmp_path / 'got'}"]
    shell = ShellDelivery(tmp_path / "runs", FakeClock(T0))
    try:
        result = run(shell.deliver(handoff(argv, "\udcff x", timeout_s=20)))
        assert result.outcome == "delivered", result.reason
        assert (tmp_path / "got").read_bytes() == b"\xff x"
        pid = pid_in(pid_file)
        assert pid is not None
        assert wait_until(lambda: gone(pid))
    finally:
        kill(pid_in(pid_file))


def test_a_prompt_that_cannot_be_encoded_starts_nothing(tmp_path: Path) -> None:
    shell = ShellDelivery(tmp_path / "runs", FakeClock(T0))
    marker = tmp_path / "started"
    result = run(shell.deliver(handoff(["sh", "-c", f"touch {marker}"], "\ud800", timeout_s=20)))
    assert result.outcome == "failed"
    assert "cannot" in (result.reason or "")
    assert not marker.exists()


def test_a_failure_while_handing_over_stdin_kills_the_whole_group(tmp_path: Path, monkeypatch: Any) -> None:
    """kairos fails after the start (here: feeding stdin raises): leader and TERM-proof grandchild are killed."""
    pid_file = tmp_path / "grandchild.pid"

    def broken_feed(fd: int, data: bytes) -> Coroutine[Any, Any, None]:
        assert wait_until(lambda: pid_in(pid_file) is not None)  # the grandchild exists: the worst moment
        raise BrokenPipeError(32, "stdin went away")

    monkeypatch.setattr(shell_module, "feed_stdin", broken_feed)
    shell = ShellDelivery(tmp_path / "runs", FakeClock(T0))
    leader_file = Path(f"{pid_file}.leader")
    try:
        result = run(shell.deliver(handoff([str(spawner(tmp_path)), str(pid_file)], "x", timeout_s=60)))
        assert result.outcome == "failed"
        assert "process group killed" in (result.reason or "")
        grandchild, leader = pid_in(pid_file), pid_in(leader_file)
        assert grandchild is not None
        assert leader is not None
        assert wait_until(lambda: gone(grandchild)), "the grandchild outlived the failed run"
        assert wait_until(lambda: gone(leader)), "the leader outlived the failed run"
        assert not shell._running
    finally:
        kill(pid_in(pid_file), pid_in(leader_file))


@pytest.mark.parametrize("prompt_bytes", [10, 100_000])
def test_a_child_that_never_reads_stdin_and_ignores_term_ends_with_its_timeout(
    tmp_path: Path, prompt_bytes: int
) -> None:
    """A full stdin pipe (100 kB unread) does not hold the run: the group goes at the timeout plus the grace."""
    pid_file = tmp_path / "grandchild.pid"
    shell = ShellDelivery(tmp_path / "runs", FakeClock(T0), kill_grace_s=0.2)
    try:
        result = run(shell.deliver(handoff([str(spawner(tmp_path)), str(pid_file)], "p" * prompt_bytes, timeout_s=0.5)))
        assert result.outcome == "failed"
        assert "after the 0.5s timeout" in (result.reason or "")
        grandchild = pid_in(pid_file)
        assert grandchild is not None
        assert wait_until(lambda: gone(grandchild))
    finally:
        kill(pid_in(pid_file), pid_in(Path(f"{pid_file}.leader")))


def test_a_background_task_whose_start_hook_fails_leaves_nothing_running(tmp_path: Path) -> None:
    """The registry's runner: a failure after the spawn (here on_spawn) kills the group and says so."""
    from kairosd.system.runner import ProcessRun, ProcessSpec

    pid_file = tmp_path / "grandchild.pid"

    def on_spawn(pid: int) -> None:
        assert wait_until(lambda: pid_in(pid_file) is not None)
        raise RuntimeError("the registry could not record the pid")

    spec = ProcessSpec([str(spawner(tmp_path)), str(pid_file)], dict(os.environ), stdin="\udcff", timeout_s=60)
    process = ProcessRun(spec, lambda stream, line: None, on_spawn=on_spawn)
    try:
        result = run(process.run())
        assert "process group killed" in (result.error or "")
        grandchild, leader = pid_in(pid_file), pid_in(Path(f"{pid_file}.leader"))
        assert grandchild is not None
        assert leader is not None
        assert wait_until(lambda: gone(grandchild)), "the grandchild outlived the failed run"
        assert wait_until(lambda: gone(leader)), "the leader outlived the failed run"
    finally:
        kill(pid_in(pid_file), pid_in(Path(f"{pid_file}.leader")))
