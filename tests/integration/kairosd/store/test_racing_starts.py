"""Racing starts: kairosd started 100 times in racing pairs has exactly one owner each time; stale locks
(kill -9, a reused PID, a live process that does not hold the lock) are taken over at once."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import psutil
import pytest
from reliability_support import Home, wait_for
from sizes_support import sized

from kairosd.core.clock import SystemClock
from kairosd.store.locking import LockRecord, StoreLock

pytestmark = pytest.mark.slow

# 100 starts at full size (KAIROS_TEST_SIZE=full, .ci/run). By default 3 pairs (6 starts), the fewest that
# still race each way a pair can find the store: fresh (race 0), after an owner that stopped (race 1,
# whose winner is then killed), and after an owner killed with -9, its record left behind (race 2).
PAIRS = sized(50, 3)


def lock_record(home: Home) -> dict[str, object]:
    data = home.lock.read_bytes()
    return json.loads(data) if data.strip() else {}


def test_racing_pairs_have_exactly_one_owner(home: Home) -> None:
    """50 pairs started together (100 starts): one serves and holds the lock, the other exits 1 naming it."""
    for race in range(PAIRS):
        a, b = home.spawn(), home.spawn()

        def decided(a: subprocess.Popen[bytes] = a, b: subprocess.Popen[bytes] = b) -> bool:
            return (a.poll() is not None or b.poll() is not None) and home.answers()

        wait_for(decided, what=f"one of race {race}'s daemons to win")
        loser, winner = (a, b) if a.poll() is not None else (b, a)
        assert loser.wait(30) == 1, home.log(loser)
        assert winner.poll() is None, home.log(winner)
        message = home.log(loser)
        assert "kairosd: " in message
        assert f"pid {winner.pid}" in message or "has not written its owner record yet" in message, message
        assert home.status()["pid"] == winner.pid
        assert lock_record(home)["pid"] == winner.pid
        if race % 2:
            home.kill(winner)
        else:
            assert home.stop(winner) == 0


def test_stale_lock_from_kill_9_is_taken_over_within_a_second(home: Home) -> None:
    """A lock left by kill -9 is taken over at once (< 1 s); the next kairosd says whose and why."""
    first = home.start()
    home.kill(first)
    assert lock_record(home)["pid"] == first.pid  # the record outlives the process; the kernel lock does not

    t0 = time.monotonic()
    lock = StoreLock(home.lock, SystemClock(), owner="test")
    info = lock.acquire()
    took = time.monotonic() - t0
    lock.release()
    assert info is not None
    assert info.reason == "dead"
    assert took < 1.0

    home.kill(home.start())  # a real daemon too (its record is left behind again)
    second = home.start()
    record = lock_record(home)
    assert record["pid"] == second.pid
    assert "(dead)" in home.log(second)
    started = datetime.fromisoformat(str(record["acquiredAt"])).timestamp() - float(str(record["procStart"]))
    # From the process's birth (interpreter start and imports included) to holding the lock.
    assert started < 5.0, started
    assert home.stop(second) == 0


def _write_record(home: Home, pid: int, proc_start: float) -> None:
    home.state.mkdir(parents=True, exist_ok=True)
    record = LockRecord(
        owner="kairosd",
        pid=pid,
        proc_start=proc_start,
        acquired_at=datetime.now(UTC) - timedelta(hours=1),
        host=socket.gethostname(),
    )
    home.lock.write_bytes(record.to_bytes())


@pytest.mark.parametrize(("shift_s", "reason"), [(-3600.0, "reused_pid"), (0.0, "released")])
def test_lock_naming_a_live_unrelated_process_is_stale(home: Home, shift_s: float, reason: str) -> None:
    """A record naming a live non-kairosd process (reused PID, or not holding the flock) is stale."""
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as bystander:
        try:
            _write_record(home, bystander.pid, psutil.Process(bystander.pid).create_time() + shift_s)
            proc = home.start()
            assert f"({reason})" in home.log(proc)
            assert lock_record(home)["pid"] == proc.pid
            assert bystander.poll() is None  # nobody touched the bystander
            assert home.stop(proc) == 0
        finally:
            assert bystander.stdin is not None
            bystander.stdin.close()
            bystander.wait(30)
