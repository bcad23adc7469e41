"""Inbox put cost against inbox size: a put into an inbox of 0, 10,000 and 100,000 items.

For each size, a session's log is filled with that many items (written in one
append, before timing), half of them acknowledged, and an :class:`InboxStore`
loads it; then ``--puts`` items are put one at a time, each its own fsynced
append, as a delivery does. Reported: the median wall time of a put and the CPU
time per put (which leaves the disk out), each against the empty inbox measured
in the same run.

Goal (issue 28): a put with 100k items in the inbox costs <= 1.5x a put into an
empty one.

    python bench/bench_inbox.py [--sizes 0,10000,100000] [--puts 300]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import Row, bench_main


def put_cost(size: int, puts: int) -> tuple[float, float]:
    """Median seconds of wall time per put, and CPU seconds per put, with ``size`` items already there."""
    from kairosd.core.records import InboxItem
    from kairosd.store.inbox import InboxStore
    from kairosd.store.jsonlog import JsonLog
    from kairosd.testing import FakeClock

    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbinbox"))
    now = datetime.now(UTC)
    clock = FakeClock(now)

    def item(i: int) -> InboxItem:
        when = now - timedelta(seconds=size - i)
        return InboxItem(
            id=f"r{i:012x}", session="main", task_id=f"{i % 5000:08x}", prompt=f"bench task {i}: summarise the PRs",
            scheduled_for=when, delivered_at=when,
        )  # fmt: skip

    try:
        log = JsonLog(folder / "main.jsonl")
        log.append([item(i).model_dump(mode="json") for i in range(size)])
        log.append([{"ack": f"r{i:012x}", "at": now.isoformat()} for i in range(0, size, 2)])
        store = InboxStore(folder, clock)
        store.list("main")  # loaded before timing
        times = []
        cpu0 = time.process_time()
        for i in range(size, size + puts):
            t0 = time.perf_counter()
            store.put(item(i))
            times.append(time.perf_counter() - t0)
        cpu = (time.process_time() - cpu0) / puts
        return statistics.median(times), cpu
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace) -> list[Row]:
    base_wall, base_cpu = put_cost(0, args.puts)
    rows = []
    for size in args.sizes:
        wall, cpu = put_cost(size, args.puts)
        bench = f"inbox put, {size:,} items in the inbox"
        big = size >= 100_000
        rows += [
            Row(bench, "put (median wall)", wall * 1e3, "ms", "put into an empty inbox", base_wall * 1e3,
                "<= 1.5x empty" if big else "", wall <= 1.5 * base_wall if big else None),
            Row(bench, "put (CPU)", cpu * 1e3, "ms", "put into an empty inbox, CPU", base_cpu * 1e3),
        ]  # fmt: skip
        if args.verbose:
            print(f"  {bench}: {wall * 1e3:.3f} ms wall, {cpu * 1e3:.3f} ms CPU a put", file=sys.stderr)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[0, 10_000, 100_000])
    parser.add_argument("--puts", type=int, default=300)


if __name__ == "__main__":
    sys.exit(bench_main(__doc__, add_arguments, run))
