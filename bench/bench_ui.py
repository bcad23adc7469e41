"""``kairos ui`` start with N tasks (default 1,000), as a ratio to ``kairos list`` in the same run.

Starts a real kairosd in a temporary KAIROS_HOME, adds N tasks, then times whole processes, in turn:

    baseline   kairos list                     the table of the same N tasks
    kairos ui  import Textual and kairos.ui, connect, fetch and draw the N rows, then exit
    timeline   the same, opened on the Timeline tab: kairos timeline's chart of the N tasks (the past
               24 hours and the next 24, at 80 columns), then exit

The ui runs headless (Textual's ``App.run(headless=True)``: the same app, compose, connection and
table, with no terminal to write to) and exits when the tasks table first holds N rows: that is the
moment a person would see the tasks. Each figure is the median of R repeats, run in turn with the
baseline so that the machine's load reaches both; the CPU seconds (user + system, from
``getrusage(RUSAGE_CHILDREN)``) are given too, as a loaded machine stretches the wall time of both.
Goal (issue 26): under a second.

    python bench/bench_ui.py [--tasks N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Row, precompile

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

# The same, shown the Timeline tab from the start, ended when its chart first holds a line per task.
FIRST_TIMELINE = """
import sys
from kairos.ui.app import KairosUI

expected = int(sys.argv[1])

class FirstTimeline(KairosUI):
    def _render(self, name):
        super()._render(name)
        if name == "timeline" and len(self.chart.lines) >= expected + 2:
            self.exit(0)

    def on_mount(self):
        super().on_mount()
        self.action_show("timeline")
        self.set_timer(30, lambda: self.exit(1))

app = FirstTimeline()
app.run(headless=True, size=(80, 24))
sys.exit(app.return_code or 0)
"""


def timed(cmds: list[list[str]], env: dict[str, str], repeats: int) -> list[tuple[float, float]]:
    """(median wall seconds, median CPU seconds) of each command, the commands run in turn."""
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeats):
        for cmd, wall, cpu in zip(cmds, walls, cpus, strict=True):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            wall.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus, strict=True)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=11)


def measure(args: argparse.Namespace) -> list[tuple[float, float]]:
    """[(wall, CPU) of `kairos list`, of the ui's first draw, of its Timeline tab's], medians in seconds."""
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
        cmds = [
            [kairos_bin, "list"],
            [sys.executable, "-c", FIRST_DRAW, str(args.tasks)],
            [sys.executable, "-c", FIRST_TIMELINE, str(args.tasks)],
        ]
        return timed(cmds, env, args.repeats)
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    (base, base_cpu), (ui, ui_cpu), (chart, _) = measure(args)
    baseline = f"kairos list ({args.tasks} tasks)"
    return [
        Row("kairos ui", f"start to first draw ({args.tasks} tasks)", ui * 1e3, "ms", baseline, base * 1e3,
            f"< {GOAL_S * 1e3:.0f} ms", ui < GOAL_S),
        Row("kairos ui", f"CPU to first draw ({args.tasks} tasks)", ui_cpu * 1e3, "ms", baseline + " CPU",
            base_cpu * 1e3),
        Row("kairos ui", f"start to the Timeline tab's chart ({args.tasks} tasks)", chart * 1e3, "ms", baseline,
            base * 1e3, f"< {GOAL_S * 1e3:.0f} ms", chart < GOAL_S),
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    (base, base_cpu), (ui, ui_cpu), (chart, chart_cpu) = measure(args)
    print(f"median of {args.repeats}, {args.tasks} tasks, load average {os.getloadavg()[0]:.1f}")
    print(f"kairos list:          {base * 1e3:6.0f} ms wall, {base_cpu * 1e3:6.0f} ms CPU")
    print(
        f"kairos ui first draw: {ui * 1e3:6.0f} ms wall, {ui_cpu * 1e3:6.0f} ms CPU: "
        f"{ui / base:.2f}x / {ui_cpu / base_cpu:.2f}x kairos list (goal < {GOAL_S:g} s)"
    )
    print(f"kairos ui timeline:   {chart * 1e3:6.0f} ms wall, {chart_cpu * 1e3:6.0f} ms CPU: "
          f"{chart / base:.2f}x / {chart_cpu / base_cpu:.2f}x kairos list (the Timeline tab's chart)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
