"""``kairos timeline`` end to end against a real kairosd, as a ratio to ``kairos list --json``.

Starts a daemon in a temporary KAIROS_HOME, adds N tasks (default 1,000): a quarter hourly, a quarter
every 6 hours, half daily, one in five with jitter, in UTC, Europe/Berlin and America/New_York. Then
it times whole processes, each command once per repeat, in turn:

    kairos list --json                   the baseline (same store, same run)
    kairos timeline --days 7             the chart, plain (stdout is not a terminal), 120 columns:
                                         the past 7 days and the next 7 (52,500 planned fires)
    kairos timeline --days 7 --json      the data alone
    kairos timeline --days 7 --svg FILE  the picture

Figures are medians of R repeats. Goal (issue 26): 1,000 tasks over 7 days render in at most 0.5 s
end to end. The store holds no past runs (a fresh daemon): the planned fires are most of the work.

    python bench/bench_timeline.py [--tasks N] [--repeats R]
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

GOAL_S = 0.5
ZONES = ("UTC", "Europe/Berlin", "America/New_York")


def _cron(i: int) -> str:
    minute = i % 60
    if i % 4 == 0:
        return f"{minute} * * * *"
    if i % 4 == 1:
        return f"{minute} */6 * * *"
    return f"{minute} {i % 24} * * *"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=11)


def measure(args: argparse.Namespace) -> list[tuple[str, float, float, int]]:
    """(command, median seconds, baseline median seconds, planned fires drawn) for each timed command."""
    precompile()
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="ktl"))
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    kairos_bin = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
    subprocess.run([kairos_bin, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        from kairos.client import Client

        client = Client(home / "run" / "kairosd.sock", timeout=60.0)
        for i in range(args.tasks):
            body = {"prompt": f"bench task {i}", "cron": _cron(i), "tz": ZONES[i % 3], "name": f"bench-{i:04d}"}
            if i % 5 == 0:
                body["jitter"] = "max:5m"
            client.call("POST", "/tasks", body)
        doc = client.call("GET", "/timeline", query={"span": str(7 * 86400)})
        fires = sum(len(t["planned"]) for t in doc["tasks"])
        svg = home / "t.svg"
        cmds = [
            [kairos_bin, "list", "--json"],
            [kairos_bin, "timeline", "--days", "7"],
            [kairos_bin, "timeline", "--days", "7", "--json"],
            [kairos_bin, "timeline", "--days", "7", "--svg", str(svg)],
        ]
        times: list[list[float]] = [[] for _ in cmds]
        for _ in range(args.repeats):
            for cmd, spent in zip(cmds, times, strict=True):
                start = time.perf_counter()
                subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                spent.append(time.perf_counter() - start)
        base, *medians = (statistics.median(spent) for spent in times)
        names = ["timeline --days 7", "timeline --days 7 --json", "timeline --days 7 --svg FILE"]
        return [(f"kairos {name} ({args.tasks} tasks)", m, base, fires) for name, m in zip(names, medians, strict=True)]
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    """The rows for run_all: each timeline command against ``kairos list --json`` on the same store."""
    return [
        Row(
            "timeline",
            name,
            seconds * 1e3,
            "ms",
            "kairos list --json",
            base * 1e3,
            f"<= {GOAL_S * 1e3:g} ms",
            seconds <= GOAL_S,
        )
        for name, seconds, base, _ in measure(args)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    rows = measure(args)
    print(f"planned fires in the window: {rows[0][3]:,}")
    print(f"{'command':52s} {'median ms':>10s} {'list --json ms':>15s} {'ratio':>7s}  goal <= {GOAL_S * 1e3:g} ms")
    for name, seconds, base, _ in rows:
        met = "met" if seconds <= GOAL_S else "NOT MET"
        print(f"{name:52s} {seconds * 1000:10.1f} {base * 1000:15.1f} {seconds / base:7.2f}  {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
