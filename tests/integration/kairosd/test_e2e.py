"""End to end through real processes: the kairosd daemon and the kairos CLI.

Each test gets its own short KAIROS_HOME (AF_UNIX paths are limited to ~107
bytes). Waits are bounded polls on a condition, never blind sleeps.

kairosd is always a real process. The CLI is one where it is part of what a test is about (a one-shot
from ``kairos add`` to ``kairos history``, the exit code without a daemon); where a test is about the
daemon (a restart, a reload, a second start, a shell target, the kill switch, a stream limit) the
verbs that ask it run in this process (:meth:`e2e_support.Env.here`), against the same real kairosd.
"""

from __future__ import annotations

import signal
import socket
import time
from typing import Any

import pytest
from e2e_support import env, wait_for

__all__ = ["env"]  # the fixture (tests/e2e_support.py), used below

pytestmark = pytest.mark.slow


def test_one_shot_reaches_the_inbox_and_history_says_delivered(env):
    """add --in 2s lands in the inbox; the one-shot leaves the list; history shows it delivered."""
    env.start_daemon()
    added = env.json("add", "--in", "2s", "look at the deploy")
    task_id = added["task"]["id"] if "task" in added else added["id"]
    assert env.json("list")["tasks"][0]["id"] == task_id

    wait_for(lambda: env.api("inbox")["items"], what="the inbox item")
    items = env.json("inbox")["items"]
    assert items[0]["prompt"] == "look at the deploy"
    assert items[0]["task_id"] == task_id
    wait_for(lambda: env.api("tasks")["tasks"] == [], what="the one-shot to leave the list")
    assert env.json("list")["tasks"] == []
    wait_for(lambda: env.api("runs")["runs"], what="a run")
    runs = env.json("history")["runs"]
    assert runs[0]["outcome"] == "delivered"
    assert runs[0]["task_id"] == task_id


def test_fire_missed_while_the_daemon_was_down_is_listed_by_missed(env):
    """A one-shot whose time passes while kairosd is stopped shows in 'missed' after restart."""
    daemon = env.start_daemon()
    added = env.json_here("add", "--in", "2s", "--name", "while-away", "this one will be missed")
    task = added.get("task", added)
    env.here("daemon", "stop")
    daemon.wait(15)
    due = time.time() + 2.5
    wait_for(lambda: time.time() > due, what="the task's time to pass")
    env.start_daemon()
    missed = env.json_here("missed")["missed"]
    assert [m["task_id"] for m in missed] == [task["id"]]
    assert missed[0]["action"] == "surfaced"
    assert env.json_here("inbox")["items"] == []


def test_config_reload_by_command_and_by_sighup(env):
    """Issue 24, item 8: `kairos daemon reload` and SIGHUP apply config.toml without a restart."""
    config = env.home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[limits]\nmax_depth = 5\n")
    daemon = env.start_daemon()
    config.write_text("[limits]\nmax_depth = 3\nmax_sessions = 10\n")
    result = env.json_here("daemon", "reload")
    assert (result["applied"], result["needs_restart"]) == (["limits.max_depth"], ["limits.max_sessions"])
    assert env.json_here("status")["background"]["max_depth"] == 3
    out = env.here("daemon", "reload").stdout
    assert "nothing new to apply" in out
    assert "needs a restart to take effect: limits.max_sessions" in out
    config.write_text("[limits]\nmax_depth = 2\n")
    daemon.send_signal(signal.SIGHUP)
    wait_for(lambda: env.api("status")["background"]["max_depth"] == 2, what="SIGHUP to reload the config")
    assert env.json_here("status")["background"]["max_depth"] == 2
    assert daemon.poll() is None


def test_second_daemon_refuses_and_kill_9_is_taken_over(env):
    """A second kairosd exits naming the owner; after kill -9 of the first a new one starts."""
    first = env.start_daemon()
    second = env.start_daemon(wait=False)
    assert second.wait(15) != 0
    assert str(first.pid) in env.log(second)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    third = env.start_daemon()
    assert env.json_here("status")["pid"] == third.pid


def test_failing_shell_target_is_recorded_as_failed_with_its_exit_code(env, tmp_path):
    """A shell target that exits 3 shows in history as failed with exit code 3."""
    env.start_daemon()
    added = env.json_here("add", "--in", "1s", "--target", "shell", "--cmd", "sh -c 'exit 3'", "run a failing command")
    task = added.get("task", added)

    def finished(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in runs if r["outcome"] is not None and r["task_id"] == task["id"]]

    wait_for(lambda: finished(env.api("runs")["runs"]), what="the shell run to finish")
    (run,) = finished(env.json_here("history")["runs"])
    assert run["outcome"] == "failed"
    assert run["exit_code"] == 3
    assert "exit code 3" in run["reason"]


def test_no_daemon_gives_exit_code_3_and_a_hint(env):
    """Without a daemon, verbs that change things exit 3 and say how to start one; the read-only views
    read the disk and say kairosd is not running (issue 24, item 9)."""
    proc = env.kairos("add", "--in", "5m", "x", check=False)
    assert proc.returncode == 3
    assert "kairos daemon start" in proc.stderr
    proc = env.kairos("list", check=False)
    assert proc.returncode == 0
    assert "kairos daemon start" in proc.stderr


def test_kill_switch_fires_nothing_and_status_says_why(env):
    """With KAIROS_DISABLE_CRON=1 nothing fires, the API answers, and status names the switch."""
    env.env["KAIROS_DISABLE_CRON"] = "1"
    env.start_daemon()
    env.json_here("add", "--in", "1s", "should not fire")
    status = env.json_here("status")
    assert "KAIROS_DISABLE_CRON" in (status.get("disabled_reason") or "")
    due = time.time() + 2
    wait_for(lambda: time.time() > due, what="the task's time to pass")
    assert env.json_here("inbox")["items"] == []


def test_a_stream_past_the_configured_limit_is_refused_with_a_clear_line(env):
    """[limits] max_streams from config.toml reaches the server: with one stream open, `kairos watch`
    is refused at once with the limit in its message (issue 27, finding 4)."""
    config = env.home / "config"
    config.mkdir(mode=0o700)
    (config / "config.toml").write_text("[limits]\nmax_connections = 8\nmax_streams = 1\n")
    env.start_daemon()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
        first.settimeout(15)
        first.connect(str(env.socket))
        first.sendall(b"GET /v1/events HTTP/1.1\r\nHost: kairosd\r\n\r\n")
        assert first.recv(4096).startswith(b"HTTP/1.1 200 ")
        refused = env.here("watch", check=False)
    assert refused.returncode == 1
    assert "kairosd has 1 streams open, its limit (limits.max_streams in config.toml)" in refused.stderr
    assert env.here("status", check=False).returncode == 0
