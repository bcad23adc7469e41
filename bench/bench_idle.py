"""Idle cost: what kairosd spends while nothing is due, with 10,000 tasks, over 60 s.

kairosd starts on a store of ``--tasks`` yearly tasks (none due for months) and
is left to settle; then, over ``--seconds``:

    loop wakeups    the scheduler's own tick counter (``wakeups`` in /v1/status)
    CPU time        the daemon's on-CPU time, all threads (/proc/PID/task/*/schedstat, ns)
    context switches  the kernel's count of the daemon's voluntary switches (every real wakeup)

Baseline, in the same window: a bare asyncio loop that sleeps in 30 s steps
(kairosd's cap), its CPU time and context switches.

Goal (issue 8): <= 2 wakeups a minute and <= 5 ms of CPU a minute.

    python bench/bench_idle.py [--tasks 10000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from pathlib import Path

from _common import Row, bench_main, daemon, precompile, wait_for, write_store

BASELINE = r"""
import asyncio
async def main():
    while True:
        await asyncio.sleep(30)
asyncio.run(main())
"""


def cpu_ns(pid: int) -> int:
    """On-CPU nanoseconds of every thread of ``pid`` (schedstat is exact; /proc/PID/stat counts 10 ms ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((task / "schedstat").read_text().split()[0])
    return total


def ctx_switches(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total


def settle(pid: int, quiet_ns: int = 1_000_000, timeout: float = 30.0) -> None:
    """Wait until the process used less than ``quiet_ns`` of CPU in one second (start-up work is over)."""
    last = [cpu_ns(pid)]

    def quiet() -> bool:
        time.sleep(1.0)
        now = cpu_ns(pid)
        done = now - last[0] < quiet_ns
        last[0] = now
        return done

    wait_for(quiet, timeout, "kairosd to go quiet after start-up")


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    per_min = 60.0 / args.seconds
    with daemon("kbi") as d:
        write_store(d.home, args.tasks)
        d.start()
        assert d.proc is not None
        pid = d.proc.pid
        base = subprocess.Popen([sys.executable, "-c", BASELINE])
        try:
            settle(pid)
            settle(base.pid)
            client = d.client()
            w0 = client.call("GET", "/status")["wakeups"]
            c0, x0 = cpu_ns(pid), ctx_switches(pid)
            b0, bx0 = cpu_ns(base.pid), ctx_switches(base.pid)
            time.sleep(args.seconds)  # the measurement window: nothing may happen in it
            c1, x1 = cpu_ns(pid), ctx_switches(pid)
            b1, bx1 = cpu_ns(base.pid), ctx_switches(base.pid)
            w1 = client.call("GET", "/status")["wakeups"]
        finally:
            base.kill()
            base.wait()
    bench = f"idle, {args.tasks:,} tasks, {args.seconds:.0f} s"
    wakeups = (w1 - w0) * per_min
    cpu = (c1 - c0) / 1e6 * per_min
    base_cpu = (b1 - b0) / 1e6 * per_min
    base_switches = (bx1 - bx0) * per_min
    return [
        Row(
            bench,
            "loop wakeups / min",
            wakeups,
            "",
            "asyncio 30 s loop, switches",
            base_switches,
            "<= 2 / min",
            wakeups <= 2,
        ),
        Row(bench, "CPU ms / min", cpu, "ms", "asyncio 30 s sleep loop", base_cpu, "<= 5 ms / min", cpu <= 5),
        Row(bench, "context switches / min", (x1 - x0) * per_min, "", "asyncio 30 s loop, switches", base_switches),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0)


def main() -> int:
    return bench_main(__doc__, add_arguments, run)


if __name__ == "__main__":
    raise SystemExit(main())
