"""``kairos ui`` end to end (issue 26, part 2): a real kairosd process, the real ``kairos`` CLI, and
``kairos ui`` in an 80x24 tmux window on a tmux server of the test's own (``tmux -S``).

A task added through the CLI appears on the screen (``capture-pane``), ``p`` pauses it, and the store
file says so. Waits are bounded polls, never blind sleeps.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import KairosCli, kairosd_answers

from kairosd import testing
from kairosd.system.paths import STORE_NAME

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    return testing.wait_for(condition, what, timeout, poll=0.1)


class World(KairosCli):
    cli_timeout_s = 30.0

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC", "TERM": "xterm-256color"}
        self.daemon: subprocess.Popen[str] | None = None

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        socket = str(self.home / "tmux.sock")
        return subprocess.run(["tmux", "-S", socket, *args], capture_output=True, text=True, check=check, timeout=30)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "ui", check=False).stdout

    def start_daemon(self) -> None:
        with open(self.home / "kairosd.log", "w") as log:
            self.daemon = subprocess.Popen(
                [sys.executable, "-m", "kairosd"], env=self.env, stdout=subprocess.DEVNULL, stderr=log, text=True
            )
        wait_for(lambda: kairosd_answers(self.env), "kairosd to answer")

    def start_ui(self) -> None:
        script = self.home / "ui.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env.items() if k.isidentifier())
        script.write_text(f"{exports}exec {shlex.quote(sys.executable)} -m kairos ui\n")
        self.tmux("new-session", "-d", "-s", "ui", "-x", "80", "-y", "24", "bash", str(script))

    def stored_task(self, task_id: str) -> dict[str, Any]:
        """The task as the store holds it: the file with its journal folded in (issue 28: the file alone
        lags the last changes until the journal is compacted into it)."""
        from kairosd.store.store import read_folded

        state = read_folded(self.home / "state" / STORE_NAME)
        return next(t.model_dump(mode="json") for t in state.tasks if t.id == task_id)

    def stop(self) -> None:
        self.tmux("kill-server", check=False)
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait(5)


@pytest.fixture
def world() -> Iterator[World]:
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kt"))
    w = World(home)
    try:
        yield w
    finally:
        w.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_a_task_added_by_the_cli_appears_and_p_pauses_it_in_the_store(world):
    world.start_daemon()
    world.start_ui()
    wait_for(lambda: "kairosd is up" in world.screen(), "the ui to connect")
    task_id = world.json("add", "0 9 * * *", "--name", "from-the-cli", "look at the deploy")["task"]["id"]
    wait_for(lambda: task_id in world.screen() and "from-the-cli" in world.screen(), "the task on the screen")
    assert all(len(line) <= 80 for line in world.screen().splitlines())
    world.tmux("send-keys", "-t", "ui", "p")
    wait_for(lambda: world.stored_task(task_id).get("paused"), "the pause in the store file")
    wait_for(lambda: "paused" in world.screen(), "the row to say paused")
    assert world.json("show", task_id)["task"]["status"] == "paused"
    world.tmux("send-keys", "-t", "ui", "q")
    wait_for(lambda: world.tmux("has-session", "-t", "ui", check=False).returncode != 0, "the ui to quit on q")
