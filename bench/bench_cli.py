"""CLI round trip against a real kairosd, as a ratio to a bare interpreter start.

Starts a daemon in a temporary KAIROS_HOME, adds N tasks (default 1,000), times whole
processes, then adds tasks up to M (default 2,000) and times them again:

    baseline      python3 -c pass                 (same interpreter, timed in each phase)
    kairos list   the table
    list --json   one JSON document
    status        a small answer (first phase only)
    --version     no daemon call (first phase only)

Each repeat runs every command of a phase once, in turn, so a change in the machine's load
reaches the baseline and the commands alike; each figure is the median of R repeats and its
ratio is to the baseline of the same phase. Goals (issue 16): `kairos list` with N tasks and
`kairos list --json` with M tasks, each <= 3x the baseline.

    python bench/bench_cli.py [--tasks N] [--json-tasks M] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Row, precompile

GOAL_RATIO = 3.0


def interleaved_medians(cmds: list[list[str]], env: dict[str, str], repeats: int) -> list[float]:
    """Median seconds of each command, the commands run in turn ``repeats`` times."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeats):
        for cmd, spent in zip(cmds, times, strict=True):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=1000, help="tasks in the first phase")
    parser.add_argument("--json-tasks", type=int, default=2000, help="tasks in the second phase")
    parser.add_argument("--repeats", type=int, default=21)


def measure(args: argparse.Namespace) -> list[tuple[str, float, float, bool]]:
    """(command, median seconds, baseline seconds of its phase, whether it has a goal) for each row."""
    precompile()  # an installed wheel ships compiled modules; measure that, not recompiling
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbench"))
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    kairos_bin = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
    subprocess.run([kairos_bin, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    results: list[tuple[str, float, float, bool]] = []
    try:
        from kairos.client import Client

        client = Client(home / "run" / "kairosd.sock")
        added = 0
        phases = [
            (args.tasks, [("list", False, True), ("list --json", True, False), ("status", False, False)]),
            (args.json_tasks, [("list", False, False), ("list --json", True, True)]),
        ]
        for n, commands in phases:
            for i in range(added, n):
                body = {"prompt": f"bench task {i}", "cron": f"{i % 60} */2 * * *", "tz": "UTC"}
                client.call("POST", "/tasks", body)
            added = max(added, n)
            rows = [(f"kairos {verb}" + (f" ({n} tasks)" if verb != "status" else ""), goal)
                    for verb, _, goal in commands]  # fmt: skip
            cmds = [[sys.executable, "-c", "pass"], *([kairos_bin, *verb.split()] for verb, _, _ in commands)]
            if n == args.tasks:
                rows.append(("kairos --version (no daemon call)", False))
                cmds.append([kairos_bin, "--version"])
            base, *medians = interleaved_medians(cmds, env, args.repeats)
            results.extend((name, seconds, base, goal) for (name, goal), seconds in zip(rows, medians, strict=True))
        return results
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    """The rows for run_all: each command as a ratio to the bare interpreter of its phase."""
    return [
        Row(
            "CLI round trip",
            name,
            seconds * 1e3,
            "ms",
            "python3 -c pass",
            base * 1e3,
            f"<= {GOAL_RATIO:g}x baseline" if goal else "",
            seconds <= GOAL_RATIO * base if goal else None,
        )
        for name, seconds, base, goal in measure(args)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    print(f"{'command':42s} {'median ms':>10s} {'base ms':>8s} {'ratio':>7s}")
    for name, seconds, base, goal in measure(args):
        mark = f"  (goal <= {GOAL_RATIO:g}x)" if goal else ""
        print(f"{name:42s} {seconds * 1000:10.1f} {base * 1000:8.1f} {seconds / base:7.2f}{mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
