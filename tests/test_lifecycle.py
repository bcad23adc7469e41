"""Lifecycle hooks: user commands for task and schedule events, with the event as JSON on stdin, a timeout,
and failures that are logged and never stop anything."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

import pytest
from registry_support import run, until, write_script

from kairosd.events import EventBus
from kairosd.lifecycle import LifecycleHooks
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
    caplog.set_level(logging.WARNING, logger="kairosd.lifecycle")

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
    caplog.set_level(logging.WARNING, logger="kairosd.lifecycle")

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
