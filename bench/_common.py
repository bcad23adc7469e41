"""Shared helpers of the benchmarks: rows, the machine, a real kairosd in a temporary home.

Not a benchmark itself (the leading underscore keeps ``run_all`` from treating it as one).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One figure next to the baseline measured in the same run.

    ``ratio`` is value / baseline; ``goal`` says in words what is wanted and
    ``met`` whether this run met it (None when the issue sets no goal).
    """

    bench: str
    figure: str
    value: float
    unit: str
    baseline_name: str
    baseline: float
    goal: str = ""
    met: bool | None = None

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")


def machine() -> dict[str, str]:
    """Where the figures come from: cores, CPU model, Python, kernel, date."""
    model = platform.processor() or "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cores": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),  # other work on the machine (1, 5, 15 min)
    }


def precompile() -> None:
    """Write bytecode for kairos and kairosd, as an installed wheel would have it.

    The environment may set PYTHONDONTWRITEBYTECODE, and an editable checkout
    would then recompile every module in every process we time.
    """
    import compileall

    import kairos
    import kairosd

    for package in (kairos, kairosd):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100), nearest rank; ``values`` need not be sorted."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def wait_for(condition: Callable[[], Any], timeout: float, what: str, poll: float = 0.01) -> Any:
    from kairosd import testing

    return testing.wait_for(condition, what, timeout, poll=poll)


def far_future_cron(i: int) -> str:
    """A yearly cron that will not fire in the next day or so (1 January or 1 July, spread over the day)."""
    month = 7 if datetime.now(UTC).month < 4 or datetime.now(UTC).month > 9 else 1
    return f"{i % 60} {(i // 60) % 24} 1 {month} *"


def write_store(home: Path, n_tasks: int, extra: Sequence[Any] = ()) -> None:
    """Write a store with ``n_tasks`` idle yearly tasks (plus ``extra`` Task objects) before kairosd starts."""
    from kairosd.core.clock import SystemClock
    from kairosd.core.models import new_task
    from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState

    now = datetime.now(UTC) - timedelta(seconds=1)
    tasks = [
        new_task(
            prompt=f"bench task {i}: summarise the open PRs",
            created_at=now,
            tz="UTC",
            cron=far_future_cron(i),
            task_id=f"{0x10000000 + i:08x}",  # unique (10,000 random ids collide about 1% of the time)
        )
        for i in range(n_tasks)
    ]
    tasks.extend(extra)
    JsonStore(home / "state" / "scheduled_tasks.json", SystemClock()).save(
        StoreState(schema_version=SCHEMA_VERSION, tasks=tasks)
    )


class Daemon:
    """A real kairosd in its own short KAIROS_HOME under /tmp (AF_UNIX paths are at most 107 bytes)."""

    def __init__(self, prefix: str = "kb") -> None:
        self.home = Path(tempfile.mkdtemp(dir="/tmp", prefix=prefix))
        self.env = {**os.environ, "KAIROS_HOME": str(self.home), "TZ": "UTC"}
        for var in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON"):
            self.env.pop(var, None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_s = 0.0
        # The wall-clock time of the last spawn (seconds since the epoch): times kairosd stamps itself
        # (datetime.now, the same clock) are measured from it.
        self.spawned_at = 0.0

    @property
    def socket(self) -> Path:
        return self.home / "run" / "kairosd.sock"

    def client(self, timeout: float = 60.0) -> Any:
        from kairos.client import Client

        return Client(self.socket, timeout=timeout)

    def start(self, timeout: float = 60.0, argv: Sequence[str] = (sys.executable, "-m", "kairosd")) -> float:
        """Spawn kairosd (or ``argv``, a stand-in serving the same socket) and wait until its socket
        answers; the seconds that took."""
        from kairos.client import Client

        log = open(self.home / "kairosd.log", "ab")  # noqa: SIM115 - the child owns it
        t0, self.spawned_at = time.perf_counter(), time.time()
        self.proc = subprocess.Popen(list(argv), env=self.env, stdout=log, stderr=log)
        log.close()
        client = Client(self.socket, timeout=5.0)
        proc = self.proc

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"kairosd exited {proc.returncode}: {self.log()[-2000:]}")
            return self.socket.exists() and client.ping()

        wait_for(ready, timeout, "kairosd to answer")
        self.started_s = time.perf_counter() - t0
        return self.started_s

    def log(self) -> str:
        try:
            return (self.home / "kairosd.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


@contextlib.contextmanager
def daemon(prefix: str = "kb") -> Iterator[Daemon]:
    d = Daemon(prefix)
    try:
        yield d
    finally:
        d.cleanup()


def median_run_s(argv: Sequence[str], repeats: int) -> float:
    """Median wall time of running ``argv`` to its end, ``repeats`` times."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def python_start_s(repeats: int = 11) -> float:
    """Median wall time of ``python -c pass`` with this interpreter (the CLI/start-up baseline)."""
    return median_run_s([sys.executable, "-c", "pass"], repeats)


def bench_main(
    doc: str | None,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], list[Row]],
    goal: str = "",
) -> int:
    """A benchmark script's ``main``: its own arguments plus ``-v``, one run, the table (and the goal line)."""
    from run_all import print_table

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true")
    print_table(run(parser.parse_args()))
    if goal:
        print(goal)
    return 0
