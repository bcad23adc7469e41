"""``kairos ui`` start with N tasks (default 1,000), as a ratio to ``kairos list`` in the same run.

Starts a real kairosd in a temporary KAIROS_HOME, adds N tasks, then times whole processes, in turn:

    baseline   kairos list                     the table of the same N tasks
    kairos ui  import Textual and kairos.ui, connect, fetch and draw the N rows, then exit

The ui runs headless (Textual's ``App.run(headless=True)``: the same app, compose, connection and
table, with no terminal to write to) and exits when the tasks table first holds N rows: that is the
moment a person would see the tasks. Each figure is the median of R repeats, run in turn with the
baseline so that the machine's load reaches both. Goal (issue 26): under a second.

    python bench/bench_ui.py [--tasks N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import Row, precompile
from bench_cli import interleaved_medians

GOAL_S = 1.0

# The app as `kairos ui` makes it, ended at its first draw of every task (exit 0), or after 30 s (exit 1).
FIRST_DRAW = """
import sys
from kairos.ui.app import KairosUI

expected = int(sys.argv[1])

class FirstDraw(KairosUI):
    def _render(self, name):
        super()._render(name)
        if name == "tasks" and self.table("tasks").row_count >= expected:
            self.exit(0)

    def on_mount(self):
        super().on_mount()
        self.set_timer(30, lambda: self.exit(1))

app = FirstDraw()
app.run(headless=True)
sys.exit(app.return_code or 0)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=11)


def measure(args: argparse.Namespace) -> tuple[float, float]:
    """(median seconds of the ui's first draw, median seconds of `kairos list`)."""
    precompile()
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbui"))
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    kairos_bin = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
    subprocess.run([kairos_bin, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        from kairos.client import Client

        client = Client(home / "run" / "kairosd.sock")
        for i in range(args.tasks):
            client.call("POST", "/tasks", {"prompt": f"bench task {i}", "cron": f"{i % 60} */2 * * *", "tz": "UTC"})
        cmds = [[kairos_bin, "list"], [sys.executable, "-c", FIRST_DRAW, str(args.tasks)]]
        base, ui = interleaved_medians(cmds, env, args.repeats)
        return ui, base
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    ui, base = measure(args)
    return [
        Row(
            "kairos ui",
            f"start to first draw ({args.tasks} tasks)",
            ui * 1e3,
            "ms",
            f"kairos list ({args.tasks} tasks)",
            base * 1e3,
            f"< {GOAL_S * 1e3:.0f} ms",
            ui < GOAL_S,
        )
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    ui, base = measure(args)
    print(f"kairos list ({args.tasks} tasks): {base * 1e3:.0f} ms (median of {args.repeats})")
    print(f"kairos ui first draw:        {ui * 1e3:.0f} ms, {ui / base:.2f}x kairos list (goal < {GOAL_S:g} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
