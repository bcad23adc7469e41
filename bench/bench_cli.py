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


def median_s(cmd: list[str], env: dict[str, str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()

    # An installed wheel ships compiled modules; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would recompile on every call. Measure the former.
    import compileall

    import kairos
    import kairosd

    for package in (kairos, kairosd):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)

    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbench"))
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    kairos = shutil.which("kairos") or str(Path(sys.executable).with_name("kairos"))
    subprocess.run([kairos, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        os.environ["KAIROS_HOME"] = str(home)
        from kairos.client import Client

        client = Client()
        for i in range(args.tasks):
            client.call("POST", "/tasks", {"prompt": f"bench task {i}", "cron": f"{i % 60} */2 * * *", "tz": "UTC"})
        rows = [
            ("python3 -c pass (baseline)", [sys.executable, "-c", "pass"]),
            (f"kairos list ({args.tasks} tasks)", [kairos, "list"]),
            (f"kairos list --json ({args.tasks} tasks)", [kairos, "list", "--json"]),
            ("kairos status", [kairos, "status"]),
            ("kairos --version (no daemon call)", [kairos, "--version"]),
        ]
        baseline = None
        print(f"{'command':42s} {'median ms':>10s} {'ratio':>7s}")
        for name, cmd in rows:
            seconds = median_s(cmd, env, args.repeats)
            baseline = baseline or seconds
            print(f"{name:42s} {seconds * 1000:10.1f} {seconds / baseline:7.2f}")
        print("goal: kairos list <= 5.00x the baseline")
    finally:
        subprocess.run([kairos, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
