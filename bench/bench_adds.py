"""Durable adds: tasks added per second at 10,000 tasks, each acknowledged only once it is on disk.

kairosd starts on a store of ``--tasks`` tasks; ``--clients`` threads then
POST /v1/tasks in a loop for ``--seconds``. A 201 is sent only after the write
that contains the task is fsynced and renamed into place (TaskBook group
commit: concurrent adds share one write). The same with one client shows what
group commit buys.

Baselines, same run: atomic rewrites per second of a file the size of the
store (temp file, fsync, rename, fsync the folder: one durable write, the most
adds a scheduler without group commit could acknowledge), and small
fsynced appends per second (the floor of any durable write here).

Goal (issue 8): >= 200 adds/s.

    python bench/bench_adds.py [--tasks 10000] [--clients 32] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from _common import Row, bench_main, daemon, precompile, write_store


def adds_per_s(client_factory, clients: int, seconds: float) -> float:  # type: ignore[no-untyped-def]
    counts = [0] * clients
    stop = threading.Event()

    def work(i: int) -> None:
        client = client_factory()
        n = 0
        while not stop.is_set():
            client.call("POST", "/tasks", {"prompt": f"durable add {i}-{n}", "cron": "0 9 * * 1-5", "tz": "UTC"})
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def rewrites_per_s(size: int, seconds: float) -> float:
    from kairosd.system.atomic import write_atomic

    data = os.urandom(size)
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="kba") as folder:
        path = Path(folder) / "scheduled_tasks.json"
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            write_atomic(path, data)
            n += 1
        return n / (time.perf_counter() - t0)


def appends_per_s(seconds: float) -> float:
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="kba") as folder:
        fd = os.open(Path(folder) / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            n = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                os.write(fd, b'{"add": "a task of about a hundred bytes, as a journal would write it"}\n')
                os.fsync(fd)
                n += 1
            return n / (time.perf_counter() - t0)
        finally:
            os.close(fd)


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    with daemon("kbd") as d:
        write_store(d.home, args.tasks)
        store_size = (d.home / "state" / "scheduled_tasks.json").stat().st_size
        d.start()
        many = adds_per_s(d.client, args.clients, args.seconds)
        one = adds_per_s(d.client, 1, args.seconds / 2)
    rewrites = rewrites_per_s(store_size, min(5.0, args.seconds / 2))
    appends = appends_per_s(min(3.0, args.seconds / 3))
    bench = f"durable adds, {args.tasks:,} tasks"
    name = f"atomic rewrite of {store_size / 2**20:.1f} MB"
    return [
        Row(bench, f"adds/s, {args.clients} clients", many, "/s", name, rewrites, ">= 200 / s", many >= 200),
        Row(bench, "adds/s, 1 client", one, "/s", name, rewrites),
        Row(bench, "adds/s, 1 client (vs journal)", one, "/s", "fsynced 100-byte appends", appends),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)


def main() -> int:
    return bench_main(__doc__, add_arguments, run)


if __name__ == "__main__":
    raise SystemExit(main())
