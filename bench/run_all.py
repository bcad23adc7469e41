"""Run every benchmark and print one table: each figure, its same-run baseline, the ratio, the goal.

    python bench/run_all.py                 # everything, ~6 minutes
    python bench/run_all.py --quick         # shorter windows and fewer repeats, ~2 minutes
    python bench/run_all.py --only fire,idle
    python bench/run_all.py --markdown      # also print the rows for BENCHMARKS.md

Benchmarks (see bench/README.md): fire (fire accuracy), idle (idle cost), startup,
adds (durable adds), cli (CLI round trip), hook (the Stop hook's round trip), next_fire (the cron engine),
consolidate, board_quality (the offline consolidator's precision and recall on the labeled corpus),
scale (adds, RSS after listing and list --json against store size, up to 300,000 tasks: ~15 minutes
alone; --quick keeps it to 1,000 and 10,000).
timeline (`kairos timeline` of 1,000 tasks over 7 days against `kairos list --json`).
Not part of the test run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence

from _common import Row, machine

BENCHES = {
    "fire": "bench_fire",
    "herd": "bench_herd",
    "inbox": "bench_inbox",
    "idle": "bench_idle",
    "startup": "bench_startup",
    "absence": "bench_absence",
    "adds": "bench_adds",
    "cli": "bench_cli",
    "completion": "bench_completion",
    "hook": "bench_hook",
    "next_fire": "bench_next_fire",
    "consolidate": "bench_consolidate",
    "board_quality": "bench_board_quality",
    "scale": "bench_scale",
    "timeline": "bench_timeline",
    "ui": "bench_ui",
}
# Arguments that make a benchmark short (--quick); each module's own defaults otherwise.
QUICK = {
    "fire": ["--fires", "300", "--window", "15", "--baseline-window", "5"],
    "idle": ["--seconds", "20"],
    "startup": ["--repeats", "3"],
    "absence": ["--repeats", "1"],
    "adds": ["--seconds", "5"],
    "cli": ["--repeats", "7"],
    "completion": ["--repeats", "7"],
    "hook": ["--repeats", "11"],
    "next_fire": ["--starts", "10", "--repeats", "3"],
    "consolidate": ["--repeats", "2"],
    "board_quality": [],
    "scale": ["--sizes", "1000,10000", "--list-sizes", "", "--seconds", "3"],
    "timeline": ["--repeats", "3"],
    "ui": ["--repeats", "3"],
}


def _fmt(value: float) -> str:
    if value != value:  # NaN
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def print_table(rows: Sequence[Row], file: object = None) -> None:
    out = file or sys.stdout
    header = ("benchmark", "figure", "value", "baseline", "base value", "ratio", "goal", "met")
    table = [header]
    for r in rows:
        met = "-" if r.met is None else ("yes" if r.met else "NO")
        table.append(
            (
                r.bench,
                r.figure,
                f"{_fmt(r.value)} {r.unit}",
                r.baseline_name,
                f"{_fmt(r.baseline)} {r.unit}",
                f"{r.ratio:.2f}x",
                r.goal or "-",
                met,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for n, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out)  # type: ignore[call-overload]
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)  # type: ignore[call-overload]


MARKDOWN_HEADER = (
    "| date | machine | load | benchmark | figure | value | baseline (same run) | ratio | goal | met |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def markdown(rows: Sequence[Row]) -> str:
    """Rows for the results table of BENCHMARKS.md (append them; keep the earlier ones)."""
    info = machine()
    where = f"{info['cores']} cores, {info['cpu']}, Python {info['python']}, Linux {info['kernel']}"
    lines = []
    for r in rows:
        met = "" if r.met is None else ("yes" if r.met else "**no**")
        lines.append(
            f"| {info['date']} | {where} | {info['load']} | {r.bench} | {r.figure} | {_fmt(r.value)} {r.unit} | "
            f"{r.baseline_name}: {_fmt(r.baseline)} {r.unit} | {r.ratio:.2f}x | {r.goal or '-'} | {met} |"
        )
    return MARKDOWN_HEADER + "\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated subset of {', '.join(BENCHES)}")
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    parser.add_argument("--markdown", action="store_true", help="also print rows for BENCHMARKS.md")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(BENCHES)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    info = machine()
    print(
        f"kairos benchmarks on {info['cores']} cores, {info['cpu']}, Python {info['python']}, "
        f"Linux {info['kernel']}, {info['date']}, load average {info['load']}",
        flush=True,
    )
    rows: list[Row] = []
    for name in chosen:
        module = importlib.import_module(BENCHES[name])
        sub = argparse.ArgumentParser()
        module.add_arguments(sub)
        sub.add_argument("-v", "--verbose", action="store_true")
        bench_args = sub.parse_args([*(QUICK[name] if args.quick else []), "-v"])
        t0 = time.perf_counter()
        print(f"== {name} ...", file=sys.stderr, flush=True)
        rows += module.run(bench_args)
        print(f"== {name} took {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    print()
    print_table(rows)
    if args.markdown:
        print()
        print(markdown(rows))
    missed = [r for r in rows if r.met is False]
    if missed:
        print(f"\n{len(missed)} goal(s) missed: " + "; ".join(f"{r.bench} {r.figure}" for r in missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
