"""Output floods and the API: ``GET /v1/status`` while four background ``yes`` tasks run (issue 27).

The red-team case: four ``yes`` tasks pushed ``kairos status`` to 3.7 s, past the hooks' 3 s limit,
and their logs grew without bound. A real kairosd in a temporary KAIROS_HOME; one client:

    baseline   GET /v1/status, median / p99 / max of N requests, nothing running
    flood      the same while four `yes` background tasks run (started with POST /v1/registry)

the CPU kairosd uses in each phase (past the cap, output is read in 1 MiB chunks with a pause
between them, so a flood is slowed rather than burning a core), and the bytes the four task logs
hold at the end (each turn is capped at ``[limits] max_output``,
1 MiB by default). Goal: the flood's p99 stays far below the hooks' 3 s (within 10x the baseline's).

    python bench/bench_output_flood.py [--requests N] [--floods F]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Row, bench_main, daemon, median, percentile, precompile

BENCH = "output_flood"


def _latencies(client: object, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.call("GET", "/v1/status")  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
        time.sleep(0.02)  # as a person or a hook would: one request at a time, not back to back
    return times


def _cpu_s(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    with daemon("kf") as d:
        d.start()
        assert d.proc is not None
        client = d.client()
        cpu0, t0 = _cpu_s(d.proc.pid), time.perf_counter()
        base = _latencies(client, args.requests)
        idle_cpu = (_cpu_s(d.proc.pid) - cpu0) / (time.perf_counter() - t0)
        ids = []
        for _ in range(args.floods):
            doc = client.call("POST", "/v1/registry", {"kind": "shell", "argv": ["yes"], "timeout_s": 600.0})
            ids.append(doc["task"]["id"])
        time.sleep(1.0)  # let the floods get going
        cpu0, t0 = _cpu_s(d.proc.pid), time.perf_counter()
        flood = _latencies(client, args.requests)
        flood_cpu = (_cpu_s(d.proc.pid) - cpu0) / (time.perf_counter() - t0)
        for task_id in ids:
            client.call("POST", f"/v1/registry/{task_id}/cancel")
        logs = sum(f.stat().st_size for f in (d.home / "data" / "tasks").glob("*.log"))
    rows = []
    for name, pick in (("median", median), ("p99", lambda v: percentile(v, 99)), ("max", max)):
        value, baseline = pick(flood) * 1000, pick(base) * 1000
        goal = "p99 <= 10x" if name == "p99" else ""
        met = value <= 10 * baseline if name == "p99" else None
        rows.append(
            Row(
                BENCH,
                f"status {name}, {args.floods} yes tasks",
                value,
                "ms",
                f"status {name}, idle",
                baseline,
                goal,
                met,
            )
        )
    rows.append(
        Row(
            BENCH,
            f"kairosd CPU, {args.floods} yes tasks",
            flood_cpu * 100,
            "% core",
            "kairosd CPU, idle",
            max(idle_cpu * 100, 0.1),
        )
    )
    rows.append(
        Row(
            BENCH,
            f"bytes in {args.floods} task logs",
            logs,
            "B",
            "cap x tasks",
            float(args.floods << 20),
            "<= 1x",
            logs <= (args.floods << 20) + 4096 * args.floods,
        )
    )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=100, help="status requests per phase (default 100)")
    parser.add_argument("--floods", type=int, default=4, help="background yes tasks (default 4)")


def main() -> int:
    return bench_main(__doc__, add_arguments, run, "goal (issue 27): status p99 under floods <= 10x idle")


if __name__ == "__main__":
    sys.exit(main())
