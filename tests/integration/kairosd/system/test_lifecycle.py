"""Lifecycle hooks: user commands for task and schedule events, with the event as JSON on stdin, a timeout,
and failures that are logged and never stop anything."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path

import pytest
from registry_support import run, until, write_script

from kairosd.core.events import EventBus
from kairosd.system.lifecycle import LifecycleHooks
from kairosd.testing import FakeClock

# Appends its event (stdin) and KAIROS_HOOK_EVENT to a JSON-lines file.
RECORDER = f"""#!{sys.executable}
import json, os, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({{"env": os.environ.get("KAIROS_HOOK_EVENT"), "spawned": os.environ.get("KAIROS_SPAWNED"),
                        "event": event}}) + "\\n")
"""


def _seen(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _settle(hooks: LifecycleHooks, runs: int) -> None:
    await until(lambda: hooks.runs >= runs and not hooks._running, f"{runs} hook run(s) to finish")


def test_bus_events_become_hook_events_with_json_on_stdin(tmp_path: Path):
    """task_started, terminal task_updated, run_started, missed and expired reach their hooks as JSON."""
    recorder = write_script(tmp_path, "recorder", RECORDER)
    out = tmp_path / "events.jsonl"
    argv = [str(recorder), str(out)]

    async def main() -> None:
        clock = FakeClock()
        bus = EventBus(clock.now)
        hooks = LifecycleHooks(
            bus,
            {name: (argv, 5.0) for name in ("task_created", "task_completed", "scheduled_task_fired")}
            | {"scheduled_task_missed": [(argv, 5.0)], "scheduled_task_expired": [(argv, 5.0), (argv, 5.0)]},
            lookup=lambda task_id: {"id": task_id, "prompt": "the whole record"},
        )
        hooks.start()
        bus.publish("task_started", task_id="t0000000001", task={"id": "t0000000001"})
        bus.publish("task_updated", task_id="t0000000001", status="idle")  # not terminal: no hook
        bus.publish("task_progress", task_id="t0000000001", tool_calls=1)  # not a hook event
        bus.publish("task_updated", task_id="t0000000001", status="failed", error="boom")
        bus.publish("run_started", run_id="r1", task_id="3f2a9c1d")
        bus.publish("missed", task_id="3f2a9c1d", count=2)
        bus.publish("expired", task_id="3f2a9c1d")
        await _settle(hooks, 6)
        await hooks.stop()
        assert (hooks.runs, hooks.failures) == (6, 0)

    run(main())
    seen = _seen(out)
    names = sorted(s["event"]["event"] for s in seen)
    assert names == sorted(
        ["task_created", "task_completed", "scheduled_task_fired", "scheduled_task_missed"]
        + ["scheduled_task_expired"] * 2
    )
    assert all(s["env"] == s["event"]["event"] and s["spawned"] == "1" for s in seen)
    completed = next(s["event"] for s in seen if s["event"]["event"] == "task_completed")
    assert completed["source"] == "task_updated"
    assert (completed["status"], completed["error"]) == ("failed", "boom")
    assert completed["task"] == {"id": "t0000000001", "prompt": "the whole record"}
    missed = next(s["event"] for s in seen if s["event"]["event"] == "scheduled_task_missed")
    assert (missed["source"], missed["count"], "at" in missed) == ("missed", 2, True)


def test_a_hanging_hook_is_killed_at_its_timeout_and_logged(tmp_path: Path, caplog):
    """A hook that ignores SIGTERM is killed after its timeout and grace; the next event's hook still runs."""
    recorder = write_script(tmp_path, "recorder", RECORDER)
    out = tmp_path / "events.jsonl"
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")

    async def main() -> None:
        bus = EventBus(FakeClock().now)
        hooks = LifecycleHooks(
            bus,
            {
                "task_created": (["sh", "-c", "trap '' TERM; sleep 600"], 0.3),
                "scheduled_task_fired": ([str(recorder), str(out)], 5.0),
            },
            kill_grace_s=0.2,
        )
        hooks.start()
        loop = asyncio.get_running_loop()
        began = loop.time()
        bus.publish("task_started", task_id="t0000000001")
        bus.publish("run_started", run_id="r1", task_id="3f2a9c1d")
        await _settle(hooks, 2)
        assert loop.time() - began < 10
        await hooks.stop()
        assert (hooks.runs, hooks.failures) == (2, 1)

    run(main())
    assert [s["event"]["event"] for s in _seen(out)] == ["scheduled_task_fired"]
    assert "the task_created hook sh failed: timed out after 0.3s (process group killed)" in caplog.text


def test_failing_and_missing_hooks_are_logged_and_never_raise(tmp_path: Path, caplog):
    """A non-zero exit (with its output) and a command that does not exist are warnings, nothing more."""
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")

    async def main() -> None:
        bus = EventBus(FakeClock().now)
        hooks = LifecycleHooks(
            bus,
            {
                "task_created": [
                    (["sh", "-c", "echo why it broke; exit 4"], 5.0),
                    (["/nonexistent/kairos-hook"], 5.0),
                ]
            },
        )
        hooks.start()
        bus.publish("task_started", task_id="t0000000001")
        await _settle(hooks, 2)
        await hooks.stop()
        assert hooks.failures == 2

    run(main())
    assert "the task_created hook sh failed: exit code 4 (output: why it broke)" in caplog.text
    assert "failed: command not found: /nonexistent/kairos-hook" in caplog.text


def test_stop_ends_hooks_still_running(tmp_path: Path):
    """stop() gives running hooks a grace period, then kills them; it returns in bounded time."""
    pidfile = tmp_path / "pid"

    async def main() -> None:
        bus = EventBus(FakeClock().now)
        hooks = LifecycleHooks(bus, {"task_created": (["sh", "-c", f"echo $$ > {pidfile}; exec sleep 600"], 600.0)})
        hooks.start()
        bus.publish("task_started", task_id="t0000000001")
        await until(lambda: pidfile.exists() and bool(pidfile.read_text().strip()), "the hook to start")
        loop = asyncio.get_running_loop()
        began = loop.time()
        await hooks.stop(grace_s=0.2)
        assert loop.time() - began < 5
        assert not hooks._running

    run(main())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"task_exploded": (["true"], 1.0)}, "no such hook event: 'task_exploded'"),
        ({"task_created": ([], 1.0)}, "argv must be a non-empty list"),
        ({"task_created": ("true", 1.0)}, "argv must be a non-empty list"),
        ({"task_created": (["true"], 0)}, "the timeout must be positive"),
    ],
)
def test_bad_hook_config_is_refused_up_front(config, message):
    """An unknown event or a malformed command is a ValueError at construction, before anything runs."""
    with pytest.raises(ValueError, match=message):
        LifecycleHooks(EventBus(FakeClock().now), config)


# ---- hook files another user could change are refused -------------------------------------------

# Leaves a marker file (its first argument): the proof that a hook ran.
MARKER = '#!/bin/sh\ntouch "$1"\n'


def _hook_folder(tmp_path: Path, mode: int = 0o700) -> Path:
    folder = tmp_path / "hooks"
    folder.mkdir(exist_ok=True)
    folder.chmod(mode)
    return folder


def _run_hook(argv: list[str]) -> LifecycleHooks:
    """Publish one task_started event to a task_created hook running ``argv``; wait until it ran or was refused."""

    async def main() -> LifecycleHooks:
        bus = EventBus(FakeClock().now)
        hooks = LifecycleHooks(bus, {"task_created": (argv, 5.0)})
        hooks.start()
        bus.publish("task_started", task_id="t0000000001")
        await until(lambda: hooks.runs + hooks.refused >= 1 and not hooks._running, "the hook to settle")
        await hooks.stop()
        return hooks

    return run(main())


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777])
def test_a_hook_others_can_write_is_refused_and_not_run(tmp_path: Path, caplog, mode):
    """A group- or world-writable hook script is not run; the warning names the file, why and the fix."""
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")
    script = write_script(_hook_folder(tmp_path), "notify", MARKER)
    script.chmod(mode)
    marker = tmp_path / "ran"

    hooks = _run_hook([str(script), str(marker)])

    assert not marker.exists()
    assert (hooks.runs, hooks.refused, hooks.failures) == (0, 1, 1)
    who = "others" if mode & 0o002 else "its group"
    assert f"the task_created hook {script} was not run: {script}: this file is writable by {who}" in caplog.text
    assert f"Fix it with: chmod go-w {script}" in caplog.text


def test_a_safe_hook_runs_and_a_fixed_one_runs_again(tmp_path: Path):
    """0755 runs; after `chmod go-w` a refused hook runs at the next event (the check is made at each run)."""
    script = write_script(_hook_folder(tmp_path), "notify", MARKER)
    marker = tmp_path / "ran"
    hooks = _run_hook([str(script), str(marker)])
    assert marker.exists()
    assert (hooks.runs, hooks.refused, hooks.failures) == (1, 0, 0)

    marker.unlink()
    script.chmod(0o775)

    async def main() -> LifecycleHooks:
        bus = EventBus(FakeClock().now)
        hooks = LifecycleHooks(bus, {"task_created": ([str(script), str(marker)], 5.0)})
        hooks.start()
        bus.publish("task_started", task_id="t0000000001")
        await until(lambda: hooks.refused == 1 and not hooks._running, "the refusal")
        assert not marker.exists()
        script.chmod(0o755)
        bus.publish("task_started", task_id="t0000000001")
        await until(lambda: hooks.runs == 1 and not hooks._running, "the run")
        await hooks.stop()
        return hooks

    run(main())
    assert marker.exists()


def test_a_hook_in_a_folder_its_group_can_write_is_refused_unless_sticky(tmp_path: Path, caplog):
    """Others could replace a safe file in a group-writable folder; a sticky folder (like /tmp) stops that."""
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")
    folder = _hook_folder(tmp_path)
    script = write_script(folder, "notify", MARKER)
    folder.chmod(0o770)
    marker = tmp_path / "ran"

    hooks = _run_hook([str(script), str(marker)])
    assert not marker.exists()
    assert hooks.refused == 1
    assert f"{folder}: this folder is writable by its group (mode 770)" in caplog.text
    assert f"chmod go-w {folder}" in caplog.text

    folder.chmod(0o1770)
    hooks = _run_hook([str(script), str(marker)])
    assert marker.exists()
    assert (hooks.runs, hooks.refused) == (1, 0)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_hook_owned_by_another_user_is_refused(tmp_path: Path, caplog):
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")
    script = write_script(_hook_folder(tmp_path), "notify", MARKER)
    os.chown(script, 65534, -1)
    marker = tmp_path / "ran"

    hooks = _run_hook([str(script), str(marker)])

    assert not marker.exists()
    assert hooks.refused == 1
    assert f"{script}: this file is owned by another user (uid 65534)" in caplog.text


def test_the_script_of_an_interpreter_hook_is_checked(tmp_path: Path, caplog):
    """["sh", SCRIPT]: sh itself is safe, but a group-writable script is refused all the same."""
    caplog.set_level(logging.WARNING, logger="kairosd.system.lifecycle")
    script = _hook_folder(tmp_path) / "notify.sh"
    script.write_text(MARKER)
    script.chmod(0o664)  # not executable: sh reads it
    marker = tmp_path / "ran"

    hooks = _run_hook(["sh", str(script), str(marker)])
    assert not marker.exists()
    assert hooks.refused == 1
    assert f"the task_created hook sh was not run: {script}: this file is writable by its group" in caplog.text

    script.chmod(0o644)
    hooks = _run_hook(["sh", str(script), str(marker)])
    assert marker.exists()


def test_a_hook_program_under_home_is_expanded_and_checked(tmp_path: Path, monkeypatch):
    """`~/...` in argv[0] is the file under $HOME, for the check and for the run."""
    monkeypatch.setenv("HOME", str(tmp_path))
    write_script(_hook_folder(tmp_path), "notify", MARKER)
    marker = tmp_path / "ran"
    hooks = _run_hook(["~/hooks/notify", str(marker)])
    assert marker.exists()
    assert hooks.runs == 1
