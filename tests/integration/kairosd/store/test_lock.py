"""The store lock: one owner at a time, a live owner named, stale records taken over."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import selectors
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest
from paths_support import REPO

from kairosd.core.errors import LockHeldError
from kairosd.store.locking import LockRecord, StoreLock, read_owner
from kairosd.testing import FakeClock

T0 = datetime(2026, 11, 21, 23, 15, 2, tzinfo=UTC)
DAEMON_DIR = REPO / "daemon"
WAIT_S = 20.0

CHILD = """
import sys
from pathlib import Path
from kairosd.core.clock import SystemClock
from kairosd.store.locking import StoreLock
lock = StoreLock(Path(sys.argv[1]), SystemClock())
lock.acquire()
print("locked", flush=True)
sys.stdin.read()
lock.release()
"""


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "scheduled_tasks.lock"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def _read_line(proc: subprocess.Popen[str], timeout: float = WAIT_S) -> str:
    """One line of the child's stdout, failing after ``timeout`` seconds instead of hanging."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"child printed nothing in {timeout}s")
    return proc.stdout.readline().strip()


@contextmanager
def _child_holding(lock_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A real process that holds the lock until its stdin is closed."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(DAEMON_DIR), os.environ.get("PYTHONPATH")])),
    }
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert _read_line(proc) == "locked"
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=WAIT_S)


def _exited_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait(timeout=WAIT_S)
    assert not psutil.pid_exists(child.pid)
    return child.pid


def _write_record(lock_path: Path, pid: int, proc_start: float) -> None:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    record = LockRecord(owner="kairosd", pid=pid, proc_start=proc_start, acquired_at=T0, host=socket.gethostname())
    lock_path.write_bytes(record.to_bytes())


def test_contention_between_two_processes(lock_path: Path, clock: FakeClock) -> None:
    """While a child holds the lock, acquire fails at once naming its pid; once it exits, acquire works."""
    with _child_holding(lock_path) as child:
        lock = StoreLock(lock_path, clock)
        started = time.monotonic()
        with pytest.raises(LockHeldError) as info:
            lock.acquire()
        assert time.monotonic() - started < 2.0
        message = str(info.value)
        assert f"pid {child.pid}" in message
        assert "kairosd is already running" in message
        assert "kairos daemon stop" in message
        assert "\n" not in message
        assert not lock.is_held
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=WAIT_S) == 0
    assert lock.acquire() is None  # the child cleared its record on release
    lock.release()


def test_failed_attempt_leaves_owner_record_intact(lock_path: Path, clock: FakeClock) -> None:
    """A losing acquire, from any process or instance, leaves the owner's record bytes as they were."""
    with _child_holding(lock_path) as child:
        before = lock_path.read_bytes()
        assert json.loads(before)["pid"] == child.pid
        for _ in range(3):
            with pytest.raises(LockHeldError):
                StoreLock(lock_path, clock).acquire()
        assert lock_path.read_bytes() == before


def test_second_instance_in_same_process_contends(lock_path: Path, clock: FakeClock) -> None:
    """Two StoreLock objects on one path exclude each other even within one process."""
    with StoreLock(lock_path, clock) as first:
        before = lock_path.read_bytes()
        with pytest.raises(LockHeldError, match=f"pid {os.getpid()}"):
            StoreLock(lock_path, clock).acquire()
        assert lock_path.read_bytes() == before
        assert first.is_held


def test_record_contents_after_acquire(lock_path: Path, clock: FakeClock) -> None:
    """The record has exactly owner, pid, procStart, acquiredAt, host, for this process; file is 0600."""
    with StoreLock(lock_path, clock, owner="kairosd-test"):
        doc = json.loads(lock_path.read_text())
        assert set(doc) == {"owner", "pid", "procStart", "acquiredAt", "host"}
        assert doc["owner"] == "kairosd-test"
        assert doc["pid"] == os.getpid()
        assert doc["procStart"] == pytest.approx(psutil.Process().create_time())
        assert doc["acquiredAt"] == "2026-11-21T23:15:02Z"
        assert isinstance(doc["host"], str)
        assert doc["host"]
        record = read_owner(lock_path)
        assert record is not None
        assert record.pid == os.getpid()
        assert stat.S_IMODE(lock_path.stat().st_mode) == 0o600


def test_release_clears_record_and_keeps_file(lock_path: Path, clock: FakeClock) -> None:
    """release empties the record but leaves the file (unlinking would split lockers across inodes)."""
    lock = StoreLock(lock_path, clock)
    lock.acquire()
    lock.release()
    assert lock_path.exists()
    assert lock_path.read_bytes() == b""
    assert read_owner(lock_path) is None
    lock.release()  # idempotent
    assert lock.acquire() is None
    lock.release()


def test_acquire_twice_on_one_instance_is_a_bug(lock_path: Path, clock: FakeClock) -> None:
    """Re-acquiring a held StoreLock is a programming error, not a silent reentry."""
    with StoreLock(lock_path, clock) as lock, pytest.raises(RuntimeError):
        lock.acquire()


def _takeover(lock_path: Path, clock: FakeClock) -> tuple[str, int | None]:
    """Take the lock and let it go: why it was taken over, and the pid of the record it replaced."""
    lock = StoreLock(lock_path, clock)
    info = lock.acquire()
    lock.release()
    assert info is not None
    return info.reason, info.previous.pid if info.previous is not None else None


def test_stale_lock_from_dead_pid(lock_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    """A record naming an exited process is taken over with reason 'dead' and a warning."""
    pid = _exited_pid()
    _write_record(lock_path, pid, proc_start=1.0)
    with caplog.at_level(logging.WARNING, logger="kairosd.store.locking"), StoreLock(lock_path, clock):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"taking over stale lock from pid {pid}: dead" in warnings


def test_takeover_info_for_dead_pid(lock_path: Path, clock: FakeClock) -> None:
    """acquire returns the previous record and the reason."""
    pid = _exited_pid()
    _write_record(lock_path, pid, proc_start=1.0)
    assert _takeover(lock_path, clock) == ("dead", pid)


def test_stale_lock_from_killed_owner(lock_path: Path, clock: FakeClock) -> None:
    """An owner killed by SIGKILL never releases; the kernel drops its lock; the next owner takes over."""
    with _child_holding(lock_path) as child:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=WAIT_S)
        pid = child.pid
    assert _takeover(lock_path, clock) == ("dead", pid)


def test_stale_lock_from_reused_pid(lock_path: Path, clock: FakeClock) -> None:
    """A record naming a live pid whose start time differs is 'reused_pid'."""
    _write_record(lock_path, os.getpid(), proc_start=psutil.Process().create_time() - 3600)
    assert _takeover(lock_path, clock)[0] == "reused_pid"


def test_stale_lock_released_by_live_process(lock_path: Path, clock: FakeClock) -> None:
    """A record naming a live process with the right start time, but no kernel lock, is 'released'."""
    _write_record(lock_path, os.getppid(), proc_start=psutil.Process(os.getppid()).create_time())
    assert _takeover(lock_path, clock)[0] == "released"


def test_unreadable_record_is_stale(lock_path: Path, clock: FakeClock) -> None:
    """Garbage or an invalid record in the lock file is stale ('unreadable') and replaced by ours."""
    for garbage in (b"\x00garbage{", b'{"pid": "x"}'):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_path.write_bytes(garbage)
        assert read_owner(lock_path) is None
        lock = StoreLock(lock_path, clock)
        info = lock.acquire()
        assert info is not None
        assert info.reason == "unreadable"
        assert info.previous is None
        record = read_owner(lock_path)
        assert record is not None
        assert record.pid == os.getpid()
        lock.release()


def test_record_from_other_host(lock_path: Path, clock: FakeClock) -> None:
    """A record written on another machine cannot be probed by pid; it is 'other_host'."""
    lock_path.parent.mkdir(parents=True)
    record = LockRecord(owner="kairosd", pid=os.getpid(), proc_start=1.0, acquired_at=T0, host="elsewhere")
    lock_path.write_bytes(record.to_bytes())
    assert _takeover(lock_path, clock)[0] == "other_host"


def test_held_lock_with_the_last_owners_record_does_not_name_the_dead_owner(lock_path: Path, clock: FakeClock) -> None:
    """The holder took the kernel lock but has not replaced the record a dead owner left: the refusal
    says the holder is starting, not that the dead pid is running (a race the racing-starts suite hit)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_record(lock_path, dead.pid, time.time() - 60)
    fd = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another open file description: StoreLock contends
        with pytest.raises(LockHeldError) as info:
            StoreLock(lock_path, clock).acquire()
        assert "has not written its owner record yet" in str(info.value)
        assert f"pid {dead.pid}" not in str(info.value)
    finally:
        os.close(fd)
