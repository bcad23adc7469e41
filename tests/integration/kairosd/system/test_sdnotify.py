"""systemd's protocols without libsystemd: sd_notify, socket activation variables, the watchdog, journal logging.

The unit tests use real AF_UNIX sockets. The daemon tests run a real kairosd with a test
datagram socket as NOTIFY_SOCKET and assert READY=1, WATCHDOG=1 and STOPPING=1 arrive in
that order. Every wait is bounded; none is a blind sleep.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kairosd.app.daemon import GC_THRESHOLDS, JournalFormatter, _settle_memory_when, watchdog_pings
from kairosd.system.sdnotify import (
    SYSTEMD_VARS,
    Notifier,
    forget_environment,
    is_unix_stream_listener,
    logs_to_journal,
    watchdog_interval_s,
)

WAIT_S = 15.0


def _receiver(address: str | bytes) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(WAIT_S)
    return sock


# ---- Notifier -------------------------------------------------------------------------------------------


def test_notify_sends_one_datagram_to_a_socket_path(short_dir):
    """Several assignments travel as one newline-separated datagram to a path socket."""
    path = str(short_dir / "notify")
    with _receiver(path) as receiver:
        notifier = Notifier(path)
        assert notifier.enabled
        assert notifier.notify("READY=1", "STATUS=serving")
        assert receiver.recv(4096) == b"READY=1\nSTATUS=serving"
        notifier.close()


def test_notify_reaches_an_abstract_socket_written_with_an_at_sign():
    """NOTIFY_SOCKET=@name addresses the abstract socket "\\0name"."""
    name = f"kairos-test-{uuid.uuid4().hex}"
    with _receiver(b"\0" + name.encode()) as receiver:
        notifier = Notifier.from_environ({"NOTIFY_SOCKET": f"@{name}"})
        assert notifier.notify("WATCHDOG=1")
        assert receiver.recv(4096) == b"WATCHDOG=1"
        notifier.close()


def test_without_notify_socket_nothing_is_sent():
    """Outside systemd the notifier is disabled and notify() is a no-op."""
    notifier = Notifier.from_environ({})
    assert not notifier.enabled
    assert notifier.notify("READY=1") is False


def test_a_relative_notify_socket_is_ignored(caplog):
    """A NOTIFY_SOCKET that is neither absolute nor @abstract is ignored with a warning."""
    notifier = Notifier("relative/path")
    assert not notifier.enabled
    assert "ignoring NOTIFY_SOCKET" in caplog.text


def test_a_vanished_notify_socket_is_logged_not_raised(short_dir, caplog):
    """If nobody listens at NOTIFY_SOCKET, notify() returns False and the daemon goes on."""
    notifier = Notifier(str(short_dir / "gone"))
    with caplog.at_level(logging.WARNING):
        assert notifier.notify("READY=1") is False
    assert "could not notify systemd" in caplog.text
    notifier.close()


# ---- watchdog and environment -----------------------------------------------------------------------


def test_watchdog_interval_is_half_of_watchdog_usec():
    """WATCHDOG_USEC=2000000 means a ping every second; absent or for another pid means none."""
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000"}) == 1.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}) == 1.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}, pid=2) is None
    assert watchdog_interval_s({}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "soon"}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "0"}) is None


def test_forget_environment_removes_only_the_systemd_variables():
    """The activation, notify and watchdog variables go; everything else stays."""
    env = {var: "x" for var in SYSTEMD_VARS} | {"HOME": "/root", "JOURNAL_STREAM": "1:2"}
    forget_environment(env)
    assert env == {"HOME": "/root", "JOURNAL_STREAM": "1:2"}


async def _until(condition: Callable[[], bool], rounds: int = 1000) -> None:
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not met")


class _Recorder(Notifier):
    def __init__(self) -> None:
        super().__init__(None)
        self.sent: list[tuple[str, ...]] = []

    def notify(self, *assignments: str) -> bool:
        self.sent.append(assignments)
        return True


def test_watchdog_pings_stop_when_the_loop_stops_making_progress():
    """Pings go on while idle within the limit, stop once the tick counter is stale, resume on progress."""

    async def scenario() -> None:
        notifier, now, ticks = _Recorder(), [0.0], [0]
        task = asyncio.create_task(watchdog_pings(notifier, lambda: ticks[0], 0, 60.0, now=lambda: now[0]))
        try:
            await _until(lambda: len(notifier.sent) >= 2)
            now[0] = 59.0  # a healthy loop sleeps up to its cap between ticks
            sent = len(notifier.sent)
            await _until(lambda: len(notifier.sent) > sent)
            now[0] = 61.0  # no tick for longer than the limit: hung
            for _ in range(5):  # loop turns, not time: let a ping already under way go out
                await asyncio.sleep(0)
            sent = len(notifier.sent)
            for _ in range(50):  # that nothing is sent has no event to await: 50 turns of the loop say so
                await asyncio.sleep(0)
            assert len(notifier.sent) == sent
            ticks[0] += 1  # the loop ticks again
            await _until(lambda: len(notifier.sent) > sent)
            assert set(notifier.sent) == {("WATCHDOG=1",)}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(asyncio.wait_for(scenario(), WAIT_S))


# ---- journal logging --------------------------------------------------------------------------------


def test_logs_to_journal_only_when_journal_stream_matches_stderr(tmp_path):
    """JOURNAL_STREAM counts only if it names this fd's device and inode; INVOCATION_ID alone also counts."""
    with open(tmp_path / "log", "w") as log, open(tmp_path / "other", "w") as other:
        st = os.fstat(log.fileno())
        stream = f"{st.st_dev}:{st.st_ino}"
        assert logs_to_journal({"JOURNAL_STREAM": stream}, log.fileno())
        assert not logs_to_journal({"JOURNAL_STREAM": stream}, other.fileno())
        assert not logs_to_journal({"JOURNAL_STREAM": stream, "INVOCATION_ID": "abc"}, other.fileno())
        assert logs_to_journal({"INVOCATION_ID": "abc"}, other.fileno())
        assert not logs_to_journal({}, log.fileno())


def test_journal_formatter_prefixes_every_line_with_its_priority():
    """Each line, traceback lines included, starts with <N> (3 error, 4 warning, 6 info, 7 debug)."""
    formatter = JournalFormatter("%(name)s: %(message)s")

    def line(level: int, msg: str, exc: Any = None) -> str:
        return formatter.format(logging.LogRecord("kairosd", level, __file__, 1, msg, None, exc))

    assert line(logging.INFO, "hello") == "<6>kairosd: hello"
    assert line(logging.DEBUG, "detail") == "<7>kairosd: detail"
    assert line(logging.WARNING, "careful") == "<4>kairosd: careful"
    assert line(logging.CRITICAL, "dying") == "<2>kairosd: dying"
    try:
        raise ValueError("boom")
    except ValueError:
        text = line(logging.ERROR, "failed\nsecond line", sys.exc_info())
    lines = text.splitlines()
    assert len(lines) > 3
    assert all(item.startswith("<3>") for item in lines)
    assert lines[-1] == "<3>ValueError: boom"


def test_is_unix_stream_listener_accepts_only_listening_unix_stream_sockets(short_dir):
    """A listening AF_UNIX stream socket qualifies; an unbound one or a datagram socket does not."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(short_dir / "s"))
        listening.listen()
        assert is_unix_stream_listener(listening)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        assert not is_unix_stream_listener(idle)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dgram:
        assert not is_unix_stream_listener(dgram)


# ---- LISTEN_FDS in a child process --------------------------------------------------------------------

_CHILD = """
import fcntl, json, socket, sys
from kairosd.system.sdnotify import listen_sockets
import os
found = listen_sockets(os.environ)
print(json.dumps([
    {"name": name, "fd": s.fileno(), "family": int(s.family), "type": int(s.type),
     "cloexec": bool(fcntl.fcntl(s.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC)}
    for name, s in found
]))
"""


def _run_with_fds(env_extra: dict[str, str], socks: list[socket.socket], own_pid: bool = True) -> Any:
    """Run _CHILD with ``socks`` as fds 3, 4, ... and LISTEN_PID set to the child's pid (or its parent's)."""
    import json

    def place_fds() -> None:
        for index, sock in enumerate(socks):
            os.dup2(sock.fileno(), 3 + index)  # dup2 leaves the copy inheritable

    pid_expr = "$$" if own_pid else "$PPID"
    env = {**os.environ, **env_extra}
    out = subprocess.run(
        ["sh", "-c", f'LISTEN_PID={pid_expr} exec "$0" -c "$1"', sys.executable, _CHILD],
        env=env,
        pass_fds=tuple(range(3, 3 + len(socks))),
        preexec_fn=place_fds,  # only dup2 runs between fork and exec
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    return json.loads(out.stdout)


def test_listen_sockets_takes_passed_fds_from_3_with_their_names(short_dir):
    """LISTEN_FDS=2 for our pid yields fds 3 and 4 as sockets, named from LISTEN_FDNAMES, close-on-exec."""
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        stream.bind(str(short_dir / "api"))
        stream.listen()
        found = _run_with_fds({"LISTEN_FDS": "2", "LISTEN_FDNAMES": "kairosd.socket:extra"}, [stream, udp])
    assert [(f["name"], f["fd"], f["family"], f["type"]) for f in found] == [
        ("kairosd.socket", 3, int(socket.AF_UNIX), int(socket.SOCK_STREAM)),
        ("extra", 4, int(socket.AF_INET), int(socket.SOCK_DGRAM)),
    ]
    assert all(f["cloexec"] for f in found)


def test_listen_sockets_ignores_fds_meant_for_another_pid(short_dir):
    """LISTEN_PID of another process (an ancestor's inherited variables) means no sockets."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream:
        stream.bind(str(short_dir / "api"))
        stream.listen()
        assert _run_with_fds({"LISTEN_FDS": "1"}, [stream], own_pid=False) == []


# ---- a real kairosd ---------------------------------------------------------------------------------


def _kairosd_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in SYSTEMD_VARS and k not in ("JOURNAL_STREAM", "INVOCATION_ID")
    }
    env.update({"KAIROS_HOME": str(home), "TZ": "UTC"}, **extra)
    return env


def _messages(receiver: socket.socket, until: str, seen: list[str], deadline: float) -> None:
    """Receive datagrams into ``seen`` (one entry per assignment) until ``until`` arrives."""
    while until not in seen:
        receiver.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            seen.extend(receiver.recv(4096).decode().splitlines())
        except TimeoutError:
            raise AssertionError(f"no {until} within {WAIT_S}s; got {seen}") from None


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_daemon_sends_ready_watchdog_and_stopping_in_order(short_dir, kind):
    """kairosd under NOTIFY_SOCKET and WATCHDOG_USEC=2s sends READY=1, then WATCHDOG=1 pings, then STOPPING=1."""
    if kind == "path":
        address: str | bytes = str(short_dir / "notify")
        notify_socket = str(address)
    else:
        name = f"kairos-test-{uuid.uuid4().hex}"
        address, notify_socket = b"\0" + name.encode(), f"@{name}"
    log_path = short_dir / "kairosd.log"
    with _receiver(address) as receiver, open(log_path, "w") as log:
        env = _kairosd_env(short_dir, NOTIFY_SOCKET=notify_socket, WATCHDOG_USEC="2000000")
        proc = subprocess.Popen([sys.executable, "-m", "kairosd"], env=env, stdout=log, stderr=log)
        try:
            seen: list[str] = []
            deadline = time.monotonic() + WAIT_S
            _messages(receiver, "READY=1", seen, deadline)
            assert seen[0] == "READY=1", seen
            assert any(line.startswith("STATUS=serving") for line in seen)
            _messages(receiver, "WATCHDOG=1", seen, deadline)
            proc.send_signal(signal.SIGTERM)
            _messages(receiver, "STOPPING=1", seen, deadline)
            assert proc.wait(WAIT_S) == 0, log_path.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT_S)
    states = [line for line in seen if not line.startswith("STATUS=")]
    ready, stopping = states.index("READY=1"), states.index("STOPPING=1")
    assert ready < states.index("WATCHDOG=1") < stopping
    assert "WATCHDOG=1" not in states[stopping:]


@pytest.mark.slow
def test_daemon_without_systemd_variables_logs_plain_timestamped_lines(short_dir):
    """With no NOTIFY_SOCKET, JOURNAL_STREAM or INVOCATION_ID, kairosd runs as before and logs with timestamps."""
    lines = _log_of_one_run(short_dir, journal=False)
    assert all(line[:4].isdigit() and not line.startswith("<") for line in lines), lines


@pytest.mark.slow
def test_daemon_logs_with_priority_prefixes_when_stderr_is_the_journal(short_dir):
    """With JOURNAL_STREAM naming its stderr, every line kairosd logs starts with <N> and has no timestamp."""
    lines = _log_of_one_run(short_dir, journal=True)
    assert all(line[:3] in ("<6>", "<4>", "<7>") for line in lines), lines
    assert any(line.startswith("<6>kairosd: kairosd") and "serving on" in line for line in lines)


def _log_of_one_run(short_dir: Path, *, journal: bool) -> list[str]:
    """Start kairosd with its output in a file, stop it once it serves (it must exit 0): its log lines.
    ``journal``: JOURNAL_STREAM names that file, as systemd names the journal stream it connects."""
    log_path = short_dir / "kairosd.log"
    with open(log_path, "w") as log:
        st = os.fstat(log.fileno())
        extra = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"} if journal else {}
        env = _kairosd_env(short_dir, **extra)
        proc = subprocess.Popen([sys.executable, "-m", "kairosd"], env=env, stdout=log, stderr=log)
    try:
        _wait_for_log(log_path, "serving on", proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT_S)
    lines = log_path.read_text().splitlines()
    assert lines
    return lines


def _wait_for_log(path: Path, text: str, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + WAIT_S
    while text not in path.read_text():
        assert proc.poll() is None, path.read_text()
        assert time.monotonic() < deadline, f"no {text!r} in the log within {WAIT_S}s"
        time.sleep(0.05)


def test_the_cycle_collector_comes_back_frozen_once_kairosd_answers() -> None:
    """kairosd starts with the collector off; once ready it is on again, the start's survivors are
    frozen (later collections skip the loaded tasks), and young collections are rare enough that a
    herd's records die before they are swept (GC_THRESHOLDS). Before ready, it stays off."""

    async def main() -> None:
        ready = asyncio.Event()
        settle = asyncio.ensure_future(_settle_memory_when(ready))
        await asyncio.sleep(0)  # one turn for it to start; that it does nothing yet has no event to await
        assert not gc.isenabled()
        ready.set()
        await asyncio.wait_for(settle, 5)

    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.disable()
    try:
        asyncio.run(main())
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] >= 10_000  # CPython's 700 swept a 10k herd's records hundreds of times
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        (gc.enable if was_enabled else gc.disable)()
