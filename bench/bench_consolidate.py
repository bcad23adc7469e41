"""Offline consolidation of a 10 MB transcript: time and peak memory, against a plain json line scan.

Two transcripts of about ``--mb`` MB each are made here:

- **claude**: a Claude Code session with what real ones carry: typed prompts (some stating rules,
  corrections, decisions, to-dos), assistant text, tool calls (Bash, Edit, Read, TodoWrite), large
  tool results (file contents), meta and command lines, a few malformed lines;
- **copilot, line-heavy**: a Copilot CLI ``events.jsonl`` of small events (~50,000 lines, about
  10,000 typed prompts, each different, half of them stating something to remember, streaming
  deltas, tool starts and completions): far more prompts than a real session has, the worst case.

Measured, each in a fresh process (so imports and peak RSS are the run's own), best of
``--repeats``:

- **baseline**: ``for line in file: json.loads(line)``, the least any reader must do;
- **consolidation**: ``python -m kairosd.consolidation.worker`` on the transcript, the real
  thing: read, extract, normalise, merge into a board (atomic write and history), write the result.

- **cautious reading**: the same worker with ``offline = "cautious"`` (a cue's entry kept only where the
  kinds model agrees, :mod:`kairosd.consolidation.offline.kinds`), against the broad reading (the
  consolidation above) measured in the same run; and in this process, the model's load (read, gunzip,
  parse, tables) against one broad reading of the transcript's typed turns, and its cost per sentence
  (:func:`kinds.top`) against the cues' (:func:`cues.read`) on the same sentences.

Time is wall time of the whole process (interpreter start-up included, for both); memory is the
process' peak RSS (``VmHWM``, which each process reports for itself as it ends: not ``ru_maxrss``,
because Linux carries a forking parent's high-water mark into the child across exec, so a child
of a big parent, such as ``run_all`` after the daemon benchmarks, would report the parent's size).

Goal (issue 6): <= 2 s and <= 100 MB for 10 MB.

    python bench/bench_consolidate.py [--mb 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import Row, bench_main, precompile

SCAN = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        try:
            json.loads(line)
        except ValueError:
            pass
        n += 1
print(n)
"""
# Runs ``-m MODULE ARGS`` or ``-c CODE ARGS`` as __main__, then writes its own peak RSS on stderr.
PEAK = r"""
import runpy, sys
kind, what = sys.argv[1], sys.argv[2]
sys.argv = [what, *sys.argv[3:]]
try:
    if kind == "-m":
        runpy.run_module(what, run_name="__main__", alter_sys=True)
    else:
        exec(compile(what, "<code>", "exec"), {"__name__": "__main__"})
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\n{PEAK_MARK} {peak}\n")
"""
PEAK_MARK = "kairos-bench-peak-kb"

PROMPTS = [
    "Please always run `make check` before you commit.",
    "No, use pnpm here, not npm.",
    "Let's go with Postgres for the job queue.",
    "Don't forget to update the migration guide tomorrow.",
    "Can you look at the flaky test in tests/test_runner.py?",
    "Refactor the retry loop so it backs off exponentially.",
    "Never push directly to main.",
    "I prefer small commits with clear messages.",
    "What does this function return when the queue is empty?",
    "Add a docstring and make the error message say what to do.",
]


def make_transcript(path: Path, megabytes: float, seed: int = 6) -> int:
    """A Claude Code transcript of about ``megabytes`` MB; the number of lines."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 20, 9, tzinfo=UTC)
    cwd = "/home/me/src/app"
    common = {
        "sessionId": "6c073d8e-2bb1-45cb-90bc-a28ce44da090",
        "cwd": cwd,
        "version": "2.1.40",
        "gitBranch": "main",
        "isSidechain": False,
        "userType": "external",
    }
    target = int(megabytes * 1_000_000)
    size = lines = 0
    minute = 0.0
    with open(path, "wb") as f:

        def write(obj: object) -> None:
            nonlocal size, lines
            data = json.dumps(obj).encode() + b"\n"
            f.write(data)
            size += len(data)
            lines += 1

        while size < target:
            minute += rng.uniform(0.2, 3)
            at = (start + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
            write(
                {
                    "type": "user",
                    "timestamp": at,
                    "uuid": f"u{lines}",
                    "message": {"role": "user", "content": rng.choice(PROMPTS)},
                    **common,
                }
            )
            for _ in range(rng.randint(1, 4)):
                tool = rng.choice(["Bash", "Edit", "Read", "Read", "TodoWrite"])
                arg: dict[str, object] = {
                    "Bash": {"command": rng.choice(["make check", "pytest -q", "git status", "ls -la src"])},
                    "Edit": {
                        "file_path": f"{cwd}/src/mod{rng.randint(1, 30)}.py",
                        "old_string": "a",
                        "new_string": "b",
                    },
                    "Read": {"file_path": f"{cwd}/src/mod{rng.randint(1, 30)}.py"},
                    "TodoWrite": {
                        "todos": [
                            {"content": f"step {i}", "status": rng.choice(["pending", "completed"])} for i in range(4)
                        ]
                    },
                }[tool]
                write(
                    {
                        "type": "assistant",
                        "timestamp": at,
                        "uuid": f"a{lines}",
                        "message": {
                            "role": "assistant",
                            "content": [
                                {"type": "text", "text": "Let me look at that. " * rng.randint(1, 20)},
                                {"type": "tool_use", "id": f"t{lines}", "name": tool, "input": arg},
                            ],
                        },
                        **common,
                    }
                )
                body = "\n".join(
                    f"{n:6}\u2192    value = compute(value, {n})  # line {n}" for n in range(rng.randint(5, 400))
                )
                write(
                    {
                        "type": "user",
                        "timestamp": at,
                        "uuid": f"r{lines}",
                        "message": {
                            "role": "user",
                            "content": [{"tool_use_id": f"t{lines}", "type": "tool_result", "content": body}],
                        },
                        "toolUseResult": {"type": "text"},
                        **common,
                    }
                )
            if rng.random() < 0.05:
                write(
                    {
                        "type": "user",
                        "isMeta": True,
                        "timestamp": at,
                        "message": {
                            "role": "user",
                            "content": "Caveat: The messages below were generated by the user while running "
                            "local commands.",
                        },
                        **common,
                    }
                )
            if rng.random() < 0.01:
                f.write(b"{not json at all\n")
                lines += 1
    return lines


def make_events(path: Path, megabytes: float, seed: int = 6) -> int:
    """A line-heavy Copilot CLI events.jsonl of about ``megabytes`` MB; the number of lines."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 20, 9, tzinfo=UTC)
    target = int(megabytes * 1_000_000)
    lines = 0
    with open(path, "w") as f:
        f.write(
            json.dumps(
                {
                    "type": "session.start",
                    "data": {"sessionId": "s", "context": {"cwd": "/home/me/src/app"}},
                    "id": "e0",
                    "timestamp": start.isoformat(),
                    "parentId": None,
                }
            )
            + "\n"
        )
        while f.tell() < target:
            lines += 1
            kind = rng.choice(
                [
                    "user.message",
                    "assistant.message",
                    "assistant.message_delta",
                    "tool.execution_start",
                    "tool.execution_complete",
                ]
            )
            data = {
                # Unique texts (no two prompts alike), so no cache can flatter the figure.
                "user.message": {"content": f"{rng.choice(PROMPTS)} Then look at module {lines} of the parser."},
                "assistant.message": {"messageId": f"m{lines}", "content": "Sure, doing that now. " * 5},
                "assistant.message_delta": {"messageId": f"m{lines}", "deltaContent": "tok"},
                "tool.execution_start": {
                    "toolCallId": f"c{lines}",
                    "toolName": "bash",
                    "arguments": {"command": rng.choice(["make check", "pytest -q", "ls"])},
                },
                "tool.execution_complete": {
                    "toolCallId": f"c{lines}",
                    "success": True,
                    "result": {"content": "ok " * 20},
                },
            }[kind]
            at = (start + timedelta(seconds=lines)).isoformat().replace("+00:00", "Z")
            f.write(
                json.dumps({"type": kind, "data": data, "id": f"e{lines}", "timestamp": at, "parentId": None}) + "\n"
            )
    return lines


def _timed(argv: list[str]) -> tuple[float, float]:
    """Run ``[python, "-m" or "-c", what, *args]``; (wall seconds, peak RSS in MB, as the process saw it)."""
    python, *rest = argv
    t0 = time.perf_counter()
    proc = subprocess.run(
        [python, "-c", PEAK.replace("{PEAK_MARK}", PEAK_MARK), *rest],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed with exit code {proc.returncode}: {err[-2000:]}")
    peak_kb = next(line.split()[1] for line in reversed(err.splitlines()) if line.startswith(PEAK_MARK))
    return elapsed, int(peak_kb) / 1024


def _request(folder: Path, transcript: Path, n: int, offline: str = "broad") -> Path:
    project = folder / "app"
    project.mkdir(parents=True, exist_ok=True)  # each run merges into the same board, as sessions of one project do
    request = {
        "version": 1,
        "run": f"t{n:010x}",
        "project": str(project),
        "transcript": str(transcript),
        "agent": "claude",
        "session_id": "bench",
        "mode": "offline",
        "agent_timeout_s": 60,
        "offline": offline,
        "zone": "UTC",
        "requested_at": datetime(2026, 11, 20, 18, tzinfo=UTC).isoformat(),
        "boards_dir": str(folder / "boards"),
        "result_path": str(folder / f"result-{offline}-{n}.json"),
        "pid_path": str(folder / f"pid-{n}"),
        "config_dir": str(folder / "config"),
        "state_dir": str(folder / "state"),
        "data_dir": str(folder / "data"),
        "runtime_dir": str(folder / "run"),
    }
    path = folder / f"request-{offline}-{n}.json"
    path.write_text(json.dumps(request))
    return path


def _measure(folder: Path, name: str, transcript: Path, args: argparse.Namespace) -> list[Row]:
    mb = transcript.stat().st_size / 1e6
    scans = [_timed([sys.executable, "-c", SCAN, str(transcript)]) for _ in range(args.repeats)]
    runs, cautious = [], []
    for n in range(args.repeats):  # interleaved: both readings see the same state of the machine
        request = _request(folder / name, transcript, n)
        runs.append(_timed([sys.executable, "-m", "kairosd.consolidation.worker", str(request)]))
        request = _request(folder / name / "cautious", transcript, n, "cautious")
        cautious.append(_timed([sys.executable, "-m", "kairosd.consolidation.worker", str(request)]))
    result = json.loads((folder / name / "result-broad-0.json").read_text())
    assert result["ok"], result
    careful = json.loads((folder / name / "cautious" / "result-cautious-0.json").read_text())
    assert careful["ok"], careful
    assert careful["offline_reading"] == "cautious", careful
    if args.verbose:
        print(name, json.dumps({k: result[k] for k in ("transcript", "extracted", "board_size")}), file=sys.stderr)
        print(f"{name}, cautious: {json.dumps({k: careful[k] for k in ('extracted', 'board_size')})}", file=sys.stderr)
    seconds, base_s = min(r[0] for r in runs), min(s[0] for s in scans)
    rss, base_rss = max(r[1] for r in runs), max(s[1] for s in scans)
    careful_s, careful_rss = min(r[0] for r in cautious), max(r[1] for r in cautious)
    bench = f"offline consolidation, {mb:.0f} MB {name}"
    reading = f"cautious reading, {mb:.0f} MB {name}"
    return [
        Row(
            reading,
            "wall time (process)",
            careful_s * 1e3,
            "ms",
            "broad reading",
            seconds * 1e3,
            "<= 2000 ms",
            careful_s <= 2,
        ),
        Row(reading, "peak RSS", careful_rss, "MB", "broad reading", rss, "<= 100 MB", careful_rss <= 100),
        Row(
            bench,
            "wall time (process)",
            seconds * 1e3,
            "ms",
            "json line scan",
            base_s * 1e3,
            "<= 2000 ms",
            seconds <= 2,
        ),
        Row(bench, "peak RSS", rss, "MB", "json line scan", base_rss, "<= 100 MB", rss <= 100),
    ]


def _model(transcript: Path, repeats: int) -> list[Row]:
    """In this process: the kinds model's load and its cost per sentence, against the broad reading's."""
    from kairosd.consolidation.offline import cues, kinds
    from kairosd.consolidation.offline import extract as extraction
    from kairosd.consolidation.offline.clauses import sentences
    from kairosd.consolidation.transcripts.read import ReadStats, read_file

    typed = [m.text for m in read_file(str(transcript), "claude", ReadStats()) if m.human]
    raw = (Path(kinds.__file__).parent / "data" / kinds.DATA).read_bytes()
    loads, reads = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = kinds.from_bytes(raw)
        loads.append(time.perf_counter() - t0)
        extraction.turn.cache_clear()
        t0 = time.perf_counter()
        for text in typed:
            extraction.signals(text, True)
        reads.append(time.perf_counter() - t0)
    said = [s for text in dict.fromkeys(typed) for s in sentences(text)] * 20
    t0 = time.perf_counter()
    for sentence in said:
        cues.read(sentence, after_agent=True, first=False)
    per_cue = (time.perf_counter() - t0) / len(said)
    t0 = time.perf_counter()
    for sentence in said:
        model.top(sentence)
    per_top = (time.perf_counter() - t0) / len(said)
    bench = f"cautious reading: the kinds model ({len(raw) / 1000:.0f} KB gzipped)"
    return [
        Row(
            bench,
            "load (read once per run)",
            min(loads) * 1e3,
            "ms",
            f"broad reading of {len(typed)} turns",
            min(reads) * 1e3,
        ),
        Row(bench, "per sentence (kinds.top)", per_top * 1e6, "us", "the cues (cues.read)", per_cue * 1e6),
    ]


def run(args: argparse.Namespace) -> list[Row]:
    precompile()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kbc") as tmp:
        folder = Path(tmp)
        for name, make in (("claude", make_transcript), ("copilot, line-heavy", make_events)):
            (folder / name).mkdir()
            transcript = folder / name / "transcript.jsonl"
            lines = make(transcript, args.mb)
            if args.verbose:
                print(f"{name}: {transcript.stat().st_size / 1e6:.1f} MB, {lines:,} lines", file=sys.stderr)
            rows += _measure(folder, name, transcript, args)
        rows += _model(folder / "claude" / "transcript.jsonl", args.repeats)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mb", type=float, default=10.0, help="transcript size in MB (default 10)")
    parser.add_argument("--repeats", type=int, default=5)


def main() -> int:
    return bench_main(__doc__, add_arguments, run)


if __name__ == "__main__":
    raise SystemExit(main())
