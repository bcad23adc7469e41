"""Start-up: time from spawning kairosd to its first answer, and its RSS then, with 0 and 10,000 tasks.

The store is written before each start; "ready" is the first successful
``GET /v1/status`` (polled every 10 ms). RSS is read with psutil right after.
Median of ``--repeats`` starts each.

Baselines, same run: a bare ``python -c pass`` (time) and a bare interpreter's
RSS, and the time to ``import kairosd.app.daemon`` alone (what any start pays; with
the cycle collector off, as ``kairosd`` imports it).

The floor, same run: the same spawn-to-answer and RSS of a bare asyncio server on the same
socket that answers any request with a fixed JSON document, alone and after importing pydantic
and building one model (what no Python daemon of this design can go below).

Goals (issue 16): with 0 tasks <= 250 ms and <= 30 MB; with 10,000 tasks <= 600 ms and <= 50 MB.

    python bench/bench_startup.py [--sizes 0,10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import psutil
from _common import Row, bench_main, daemon, median_run_s, precompile, python_start_s, wait_for, write_store


def bare_rss_mb() -> float:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        ps = psutil.Process(proc.pid)
        wait_for(lambda: ps.memory_info().rss > 0, 10, "the interpreter to start")
        time.sleep(0.2)
        return ps.memory_info().rss / 2**20
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()


def import_s(repeats: int) -> float:
    return median_run_s([sys.executable, "-c", "import gc; gc.disable(); import kairosd.app.daemon"], repeats)


FLOOR_SERVER = """
import asyncio, os
{extra}

async def answer(reader, writer):
    await reader.readuntil(b"\\r\\n\\r\\n")
    body = b'{{"floor": true}}'
    writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 16\\r\\n\\r\\n" + body)
    await writer.drain()
    writer.close()

async def main():
    path = os.path.join(os.environ["KAIROS_HOME"], "run", "kairosd.sock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    await asyncio.start_unix_server(answer, path)
    await asyncio.Event().wait()

asyncio.run(main())
"""
PYDANTIC_MODEL = "from pydantic import BaseModel\nclass M(BaseModel):\n    a: int = 0\nM()"


def floor_once(extra: str) -> tuple[float, float]:
    """Spawn-to-answer seconds and RSS (MB) of the bare asyncio server, after ``extra`` code."""
    with daemon("kbf") as d:
        seconds = d.start(argv=[sys.executable, "-c", FLOOR_SERVER.format(extra=extra)])
        assert d.proc is not None
        rss = psutil.Process(d.proc.pid).memory_info().rss / 2**20
    return seconds, rss


def start_once(n_tasks: int) -> tuple[float, float]:
    with daemon("kbs") as d:
        write_store(d.home, n_tasks)
        seconds = d.start()
        assert d.proc is not None
        rss = psutil.Process(d.proc.pid).memory_info().rss / 2**20
    return seconds, rss


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    base_s = python_start_s()
    base_rss = bare_rss_mb()
    imports = import_s(args.repeats)
    rows: list[Row] = []
    for what, extra in (("asyncio server", ""), ("asyncio server + pydantic model", PYDANTIC_MODEL)):
        results = [floor_once(extra) for _ in range(args.repeats)]
        bench = f"start-up floor: {what}"
        rows += [
            Row(bench, "spawn to first answer", statistics.median(r[0] for r in results) * 1e3, "ms",
                "python -c pass", base_s * 1e3),
            Row(bench, "RSS when ready", statistics.median(r[1] for r in results), "MB",
                "bare interpreter RSS", base_rss),
        ]  # fmt: skip
    for size in args.sizes:
        results = [start_once(size) for _ in range(args.repeats)]
        seconds = statistics.median(r[0] for r in results)
        rss = statistics.median(r[1] for r in results)
        bench = f"start-up, {size:,} tasks"
        goal_ms, goal_mb = (600, 50) if size >= 10_000 else (250, 30)
        rows += [
            Row(
                bench,
                "spawn to first answer",
                seconds * 1e3,
                "ms",
                "python -c pass",
                base_s * 1e3,
                f"<= {goal_ms} ms",
                seconds * 1e3 <= goal_ms,
            ),
            Row(
                bench,
                "RSS when ready",
                rss,
                "MB",
                "bare interpreter RSS",
                base_rss,
                f"<= {goal_mb} MB",
                rss <= goal_mb,
            ),
        ]
    rows.append(
        Row("start-up, 0 tasks", "import kairosd.app.daemon", imports * 1e3, "ms", "python -c pass", base_s * 1e3)
    )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[0, 10_000])
    parser.add_argument("--repeats", type=int, default=5)


def main() -> int:
    return bench_main(__doc__, add_arguments, run)


if __name__ == "__main__":
    raise SystemExit(main())
