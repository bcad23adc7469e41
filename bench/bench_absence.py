"""Start-up after a long absence: 10,000 ``*/5`` tasks last handled 7 days ago, against nothing missed.

Each start spawns a real kairosd on a store written just before it. Two stores of
the same 10,000 ``*/5`` tasks (UTC, the default inbox target):

* **nothing missed** (the baseline): every task's last handled slot is the latest ``*/5`` slot;
* **7 days away**: every task's last handled slot is that slot minus 7 days (2,016 missed
  slots each, 20 million in all), with the catch-up policy ``once`` (the default: one catch-up
  fire per task) or ``skip`` (record only).

Figures, median of ``--repeats`` starts each (15 by default: on a shared 2-core VM the median of 3 or 5
starts of the nothing-missed baseline swung from 581 to 765 ms within one hour, and a fast baseline alone
could move the ratio by a third; the starts of the three kinds are interleaved, so each median sees the
same stretches of the machine's speed):

* spawn to first answer (kairosd answers once it has told systemd READY=1);
* spawn to caught up: to the ``caught_up_at`` kairosd stamps itself (``GET /v1/status``) once
  no fire planned before its start is left undecided: every missed fire was decided and
  recorded, and every task is planned again. With nothing missed that is as soon as the tasks
  are planned, just before the first answer. The bench asks for it every 0.25 s only (the time
  is kairosd's own, not the poll's): polling ``next_fire`` every 10 ms, as it did until round 4,
  took CPU from the daemon it measured (a connection and a status answer each time, on 2 cores);
* kairosd's CPU seconds (all threads) from spawn to caught up, from ``/proc/PID/stat`` sampled every
  10 ms by the bench (the daemon is not asked): on a loaded machine the wall times above stretch
  with the load, and this much less;
* RSS when caught up (psutil, at the poll that saw it) and the peak RSS of the whole run up
  to then (``VmHWM``).

Each start waits until at least 15 s remain before the next ``*/5`` slot, so no real slot
comes due during it. Goal (issue 27): caught up after 7 days away within 2x the
nothing-missed start, measured in the same run, and at most 100 MB.

    python bench/bench_absence.py [--tasks 10000] [--repeats 15] [--policies once,skip] [--method stamp|poll]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
from _common import Row, bench_main, daemon, precompile, wait_for

SLOT = timedelta(minutes=5)
AWAY = timedelta(days=7)
SAFE = timedelta(seconds=15)


def latest_slot(now: datetime) -> datetime:
    return now.replace(minute=now.minute - now.minute % 5, second=0, microsecond=0)


def wait_for_a_quiet_slot() -> None:
    """Sleep until the next */5 slot is at least SAFE away (a start must not meet a real slot)."""
    while True:
        now = datetime.now(UTC)
        remaining = latest_slot(now) + SLOT - now
        if remaining >= SAFE:
            return
        time.sleep(remaining.total_seconds() + 0.5)


def write_absent_store(home: Path, n_tasks: int, away: timedelta, policy: str) -> None:
    """``n_tasks`` */5 tasks whose last handled slot is the latest slot minus ``away``."""
    from kairosd.core.clock import SystemClock
    from kairosd.core.models import CatchUp, new_task
    from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState

    anchor = latest_slot(datetime.now(UTC)) - away
    tasks = [
        new_task(
            prompt=f"bench task {i}: summarise the open PRs",
            created_at=anchor - timedelta(minutes=1),
            tz="UTC",
            cron="*/5 * * * *",
            catch_up=CatchUp(policy),
            task_id=f"{0x10000000 + i:08x}",
        ).model_copy(update={"last_scheduled_for": anchor})
        for i in range(n_tasks)
    ]
    JsonStore(home / "state" / "scheduled_tasks.json", SystemClock()).save(
        StoreState(schema_version=SCHEMA_VERSION, tasks=tasks)
    )


# How often the bench asks whether kairosd caught up. The time it reports is kairosd's own stamp, so a
# coarse poll loses nothing and leaves the daemon's CPU to the catch-up it measures.
POLL_S = 0.25


def next_fire_ahead(status: dict[str, Any]) -> float | None:
    """Round 4's method (``--method poll``, for a kairosd without ``caught_up_at``): now, if the next
    planned fire is in the future, else None."""
    upcoming = status.get("next_fire")
    if upcoming is None or datetime.fromisoformat(upcoming["planned_for"]) <= datetime.now(UTC):
        return None
    return time.time()


def caught_up_at(status: dict[str, Any]) -> float | None:
    """When kairosd caught up (seconds since the epoch), from its status; None while it still catches up."""
    stamp = status.get("caught_up_at")
    if stamp is None:
        if "caught_up_at" not in status:
            raise RuntimeError("this kairosd does not say when it caught up (caught_up_at): too old for this bench")
        return None
    return datetime.fromisoformat(stamp).timestamp()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class CpuSamples:
    """kairosd's CPU seconds (all threads, ``/proc/PID/stat``) every 10 ms from its spawn, read from /proc
    by a thread of the bench (no request to the daemon); :meth:`at` gives them at a wall-clock time."""

    def __init__(self, d: Any) -> None:
        self._d, self._stop = d, threading.Event()
        self.samples: list[tuple[float, float]] = []
        self._tick = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            proc = self._d.proc
            if proc is not None:
                try:
                    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    return
                self.samples.append((time.time(), (int(fields[11]) + int(fields[12])) / self._tick))
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, when: float) -> float:
        """The CPU seconds of the last sample taken at or before ``when`` (the clock ticks 100 times a second)."""
        before = [cpu for t, cpu in self.samples if t <= when]
        return before[-1] if before else float("nan")


def start_once(n_tasks: int, away: timedelta, policy: str, method: str = "stamp") -> dict[str, float]:
    """One start: seconds to first answer and to caught up, kairosd's CPU seconds to caught up, RSS then and
    peak RSS (MB). ``method``: ``stamp`` (kairosd's own caught_up_at, asked every POLL_S) or ``poll``
    (next_fire every 10 ms)."""
    wait_for_a_quiet_slot()
    with daemon("kba") as d:
        write_absent_store(d.home, n_tasks, away, policy)
        cpu = CpuSamples(d)
        try:
            first = d.start(timeout=600)
            client = d.client()
            check, poll = (caught_up_at, POLL_S) if method == "stamp" else (next_fire_ahead, 0.01)
            when = wait_for(lambda: check(client.call("GET", "/v1/status")), 600, "kairosd to catch up", poll)
        finally:
            cpu.stop()
        done = when - d.spawned_at
        assert d.proc is not None
        pid = d.proc.pid
        return {
            "first": first,
            "done": done,
            "cpu": cpu.at(when),
            "rss": psutil.Process(pid).memory_info().rss / 2**20,
            "peak": peak_rss_mb(pid),
        }


def median_of(results: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    n = args.tasks
    # Interleaved, so load on the shared machine falls on both alike.
    plans = [("nothing missed", timedelta(0), "once")] + [
        (f"7 days away, catch-up {p}", AWAY, p) for p in args.policies
    ]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in plans}
    for _ in range(args.repeats):
        for name, away, policy in plans:
            results[name].append(start_once(n, away, policy, args.method))
            if args.verbose:
                print(name, results[name][-1], flush=True)
    base = results["nothing missed"]
    base_done = median_of(base, "done")
    base_peak = median_of(base, "peak")
    rows = [
        Row(f"start, {n:,} */5 tasks, nothing missed", "spawn to caught up", base_done * 1e3, "ms",
            "spawn to first answer", median_of(base, "first") * 1e3),
    ]  # fmt: skip
    for name, _, _ in plans[1:]:
        res = results[name]
        done, peak = median_of(res, "done"), median_of(res, "peak")
        bench = f"start, {n:,} */5 tasks, {name}"
        rows += [
            Row(bench, "spawn to first answer", median_of(res, "first") * 1e3, "ms",
                "nothing missed, spawn to first answer", median_of(base, "first") * 1e3),
            Row(bench, "spawn to caught up", done * 1e3, "ms", "nothing missed, spawn to caught up",
                base_done * 1e3, "<= 2x the baseline", done <= 2 * base_done),
            Row(bench, "kairosd CPU to caught up", median_of(res, "cpu") * 1e3, "ms",
                "nothing missed, CPU to caught up", median_of(base, "cpu") * 1e3),
            Row(bench, "RSS when caught up", median_of(res, "rss"), "MB", "nothing missed, RSS then",
                median_of(base, "rss")),
            Row(bench, "peak RSS (VmHWM)", peak, "MB", "nothing missed, peak RSS", base_peak,
                "<= 100 MB", peak <= 100),
        ]  # fmt: skip
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--policies", type=lambda s: s.split(","), default=["once", "skip"])
    parser.add_argument(
        "--method", choices=["stamp", "poll"], default="stamp",
        help="when kairosd caught up: its own caught_up_at, asked every 0.25 s (default), or round 4's "
        "first status poll (every 10 ms) with next_fire in the future",
    )  # fmt: skip


def main() -> int:
    return bench_main(__doc__, add_arguments, run)


if __name__ == "__main__":
    raise SystemExit(main())
