"""CLI round trip against a real kairosd, as a ratio to a bare interpreter start.

Starts a daemon in a temporary KAIROS_HOME, adds N tasks (default 1,000), then
times whole processes (median of R runs each):

    baseline      python3 -c pass                 (same interpreter)
    kairos list   the table, N tasks
    list --json   one JSON document, N tasks
    status        a small answer

and prints each as milliseconds and as a ratio to the baseline measured in the
same run. Goal (issue 3/8): `kairos list` median <= 5x the baseline.

    python bench/bench_cli.py [--tasks N] [--repeats R]
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

from _common import Row


def median_s(cmd: list[str], env: dict[str, str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=21)


def measure(args: argparse.Namespace) -> list[tuple[str, float]]:
    """(command, median seconds) for each row, the baseline first."""
    # An installed wheel ships compiled modules; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would recompile on every call. Measure the former.
    import compileall

    import kairos
    import kairosd

    for package in (kairos, kairosd):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)

    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbench"))
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    kairos_bin = shutil.which("kairos") or str(Path(sys.executable).with_name("kairos"))
    subprocess.run([kairos_bin, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        from kairos.client import Client

        client = Client(home / "run" / "kairosd.sock")
        for i in range(args.tasks):
            client.call("POST", "/tasks", {"prompt": f"bench task {i}", "cron": f"{i % 60} */2 * * *", "tz": "UTC"})
        rows = [
            ("python3 -c pass (baseline)", [sys.executable, "-c", "pass"]),
            (f"kairos list ({args.tasks} tasks)", [kairos_bin, "list"]),
            (f"kairos list --json ({args.tasks} tasks)", [kairos_bin, "list", "--json"]),
            ("kairos status", [kairos_bin, "status"]),
            ("kairos --version (no daemon call)", [kairos_bin, "--version"]),
        ]
        return [(name, median_s(cmd, env, args.repeats)) for name, cmd in rows]
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    """The rows for run_all: each command as a ratio to the bare interpreter."""
    (_, base), *rest = measure(args)
    rows = []
    for name, seconds in rest:
        is_list = name.startswith("kairos list (")
        rows.append(
            Row(
                "CLI round trip",
                name,
                seconds * 1e3,
                "ms",
                "python3 -c pass",
                base * 1e3,
                "<= 5x baseline" if is_list else "",
                seconds <= 5 * base if is_list else None,
            )
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    results = measure(args)
    baseline = results[0][1]
    print(f"{'command':42s} {'median ms':>10s} {'ratio':>7s}")
    for name, seconds in results:
        print(f"{name:42s} {seconds * 1000:10.1f} {seconds / baseline:7.2f}")
    print("goal: kairos list <= 5.00x the baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
