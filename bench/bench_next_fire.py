"""Benchmark: next fire time with kairos' cron engine vs cronsim 2.8 and croniter 7.0.0.

Run from the repository root with the project's virtualenv:

    python bench/bench_next_fire.py [--starts N] [--repeats R]

See bench/README.md for what each column means. Exits 0; takes well under a minute.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from _common import Row
from croniter import croniter
from cronsim import CronSim

from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.fires import iter_fires, next_fire

# ~20 representative expressions; names and ranges in the shared grammar of all three libraries.
EXPRESSIONS = [
    "* * * * *",  # every minute
    "*/5 * * * *",  # every five minutes
    "0 * * * *",  # hourly
    "0 */6 * * *",  # every six hours
    "0 9 * * *",  # daily 09:00
    "0 9 * * 1-5",  # weekdays
    "30 8 * * MON-FRI",  # weekdays, by name
    "*/15 9-17 * * 1-5",  # office hours
    "0 22 * * 1-5",  # weekday evenings
    "5 4 * * sun",  # weekly
    "0 0 1 * *",  # monthly
    "15 14 1 * *",  # monthly, afternoon
    "0 0 1 1 *",  # yearly
    "0 0 29 2 *",  # Feb 29 only (leap years)
    "0 0 13 * 5",  # both day fields: the 13th or a Friday
    "0 16 */2 * sat",  # star rule: odd days that are Saturdays
    "30 2 * * *",  # fixed time inside the DST gap/overlap (Berlin)
    "0,30 1-3 * * *",  # fixed times around DST changes
    "*/10 2 * * *",  # wildcard job in the DST hour
    "23 0-20/2 * * *",  # range with step
]
# Not in the headline rows, shown on their own: a wildcard job whose next fire is years away makes
# kairos probe the zone's offset week by week up to the candidate (see fires._first_change).
STRESS_EXPRESSIONS = ["*/30 * 29 2 *"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]
ITER_N = 10

Item = tuple[str, datetime, ZoneInfo]


def make_items(expressions: Sequence[str], n_starts: int, seed: int = 20260325) -> list[Item]:
    """Every expression in every zone, from ``n_starts`` random aware starts each (2020-2030)."""
    rng = random.Random(seed)
    span = int((datetime(2031, 1, 1) - datetime(2020, 1, 1)).total_seconds())
    items = []
    for zone_key in ZONES:
        zone = ZoneInfo(zone_key)
        for expr in expressions:
            for _ in range(n_starts):
                naive = datetime(2020, 1, 1) + timedelta(seconds=rng.randrange(span))
                start = naive.replace(microsecond=rng.randrange(1_000_000), tzinfo=zone)
                items.append((expr, start, zone))
    rng.shuffle(items)
    return items


# --- the measured operation, per library ---------------------------------------------------------


def ours_next(expr: str, start: datetime, zone: ZoneInfo) -> object:
    return next_fire(parse_cron(expr), start, zone)


def cronsim_next(expr: str, start: datetime, zone: ZoneInfo) -> object:
    return next(CronSim(expr, start))


def croniter_next(expr: str, start: datetime, zone: ZoneInfo) -> object:
    return croniter(expr, start, implement_cron_bug=True).get_next(datetime)


def ours_iter(expr: str, start: datetime, zone: ZoneInfo) -> object:
    return list(islice(iter_fires(parse_cron(expr), start, zone), ITER_N))


def cronsim_iter(expr: str, start: datetime, zone: ZoneInfo) -> object:
    return list(islice(CronSim(expr, start), ITER_N))


def croniter_iter(expr: str, start: datetime, zone: ZoneInfo) -> object:
    it = croniter(expr, start, implement_cron_bug=True)
    return [it.get_next(datetime) for _ in range(ITER_N)]


Op = Callable[[str, datetime, ZoneInfo], object]
LIBRARIES = ("kairos", "cronsim", "croniter")
MODES: dict[str, tuple[Op, Op, Op]] = {
    "next fire": (ours_next, cronsim_next, croniter_next),
    f"first {ITER_N} fires": (ours_iter, cronsim_iter, croniter_iter),
}


def time_op(op: Op, items: Sequence[Item], repeats: int) -> float:
    """Microseconds per call: the minimum over ``repeats`` runs of the whole item list."""
    for expr, start, zone in items[:50]:  # warm up (and fill parse caches: "an expression already seen")
        op(expr, start, zone)
    for expr in {item[0] for item in items}:
        parse_cron(expr)
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            for expr, start, zone in items:
                op(expr, start, zone)
            best = min(best, time.perf_counter() - t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best / len(items) * 1e6


def _row(label: str, timings: Sequence[float]) -> str:
    ours, *baselines = timings
    ratio = min(baselines) / ours
    cells = "".join(f"{t:>12.1f}" for t in timings)
    return f"{label:<22}{cells}{ratio:>12.2f}"


def _header(first: str) -> str:
    cols = "".join(f"{name + ' µs':>12}" for name in LIBRARIES)
    return f"{first:<22}{cols}{'ratio':>12}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--starts", type=int, default=25, help="random starts per expression and zone")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (minimum kept)")


def run(args: argparse.Namespace) -> list[Row]:
    """The rows for run_all: kairos' time per call next to the faster of cronsim and croniter."""
    items = make_items(EXPRESSIONS, args.starts)
    rows = []
    for mode, ops in MODES.items():
        ours, sim, iter_ = (time_op(op, items, args.repeats) for op in ops)
        name, base = ("cronsim", sim) if sim <= iter_ else ("croniter", iter_)
        rows.append(
            Row(
                "next fire (cron engine)",
                mode,
                ours,
                "µs",
                f"{name} (the faster)",
                base,
                "<= 1.00x (speed >= 1.0x the faster)",
                ours <= base,
            )
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    items = make_items(EXPRESSIONS, args.starts)
    print(
        f"{len(EXPRESSIONS)} expressions x {len(ZONES)} zones ({', '.join(ZONES)}) x {args.starts} starts"
        f" = {len(items)} calls per run; best of {args.repeats} runs; Python {sys.version.split()[0]}"
    )
    print()
    print(_header("operation"))
    for mode, ops in MODES.items():
        print(_row(mode, [time_op(op, items, args.repeats) for op in ops]))

    print()
    print(_header("next fire, by expr"))
    for expr in EXPRESSIONS:
        subset = [item for item in items if item[0] == expr]
        print(_row(expr, [time_op(op, subset, args.repeats) for op in MODES["next fire"]]))
    print()
    print(_header("stress (not above)"))
    stress = make_items(STRESS_EXPRESSIONS, max(1, args.starts // 5))
    for expr in STRESS_EXPRESSIONS:
        subset = [item for item in stress if item[0] == expr]
        print(_row(expr, [time_op(op, subset, args.repeats) for op in MODES["next fire"]]))
    print()
    print("ratio = fastest baseline / kairos (>= 1.0: kairos is at least as fast)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
