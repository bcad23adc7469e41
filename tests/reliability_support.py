"""Shared by the reliability suite: real kairosd processes in short homes, bounded waits, fakes.

Each :class:`Home` is a fresh KAIROS_HOME under /tmp (AF_UNIX socket paths are
at most 107 bytes, so pytest's deep tmp_path will not do). Every wait is a
bounded poll on a condition; nothing sleeps blindly.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kairos.client import ApiError, Client, DaemonNotRunning
from kairosd import __main__ as kairosd_main
from kairosd import testing
from kairosd.core.events import EventBus
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import Store, StoreState, read_folded
from kairosd.testing import FakeClock, FakeDelivery

WAIT_S = 30.0  # upper bound of every wait; the conditions hold far sooner


def wait_for(condition: Callable[[], Any], timeout: float = WAIT_S, what: str = "condition") -> Any:
    return testing.wait_for(condition, what, timeout)


def precompile() -> None:
    """Bytecode for kairos and kairosd, as an installed wheel has it (PYTHONDONTWRITEBYTECODE may be set)."""
    import compileall

    import kairos
    import kairosd

    for package in (kairos, kairosd):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)


class Home:
    """A KAIROS_HOME with its kairosd processes; :meth:`cleanup` kills what is left and removes it."""

    def __init__(self, prefix: str = "kr", root: Path | None = None, logs: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(dir=root or "/tmp", prefix=prefix))
        self.logs = logs or self.path  # elsewhere when the home's file system is meant to fill up
        self.env = {**os.environ, "KAIROS_HOME": str(self.path), "TZ": "UTC"}
        for var in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"):
            self.env.pop(var, None)
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def socket(self) -> Path:
        return self.path / "run" / "kairosd.sock"

    @property
    def state(self) -> Path:
        return self.path / "state"

    @property
    def store(self) -> Path:
        return self.state / "scheduled_tasks.json"

    @property
    def lock(self) -> Path:
        return self.state / "scheduled_tasks.lock"

    def client(self, timeout: float = 10.0) -> Client:
        return Client(self.socket, timeout=timeout)

    def log_path(self, proc: subprocess.Popen[bytes]) -> Path:
        return self.logs / f"kairosd-{proc.pid}.log"

    def log(self, proc: subprocess.Popen[bytes]) -> str:
        try:
            return self.log_path(proc).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def spawn(self, wrapper: Sequence[str] = ()) -> subprocess.Popen[bytes]:
        """Start kairosd (optionally behind ``wrapper`` argv) without waiting; its stderr goes to a file."""
        tmp = self.logs / f"kairosd-new-{len(self.procs)}.log"
        with open(tmp, "wb") as log:
            proc = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "kairosd"], env=self.env, stdout=subprocess.DEVNULL, stderr=log
            )
        tmp.rename(self.log_path(proc))
        self.procs.append(proc)
        return proc

    def answers(self) -> bool:
        try:
            self.client(timeout=5.0).call("GET", "/status")
        except (DaemonNotRunning, ApiError):
            return False
        return True

    def start(self, wrapper: Sequence[str] = (), timeout: float = WAIT_S) -> subprocess.Popen[bytes]:
        """Start kairosd and wait until it answers (fails with its log if it exits first)."""
        proc = self.spawn(wrapper)
        self.wait_ready(proc, timeout)
        return proc

    def wait_ready(self, proc: subprocess.Popen[bytes], timeout: float = WAIT_S) -> None:
        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"kairosd exited {proc.returncode} before answering:\n{self.log(proc)}")
            return self.socket.exists() and self.answers()

        wait_for(ready, timeout, "kairosd to answer")

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.client().call("GET", "/status")
        return result

    def read_store(self) -> StoreState:
        """Parse the store as kairosd would, its journal folded in (without the lock: nothing is changed)."""
        return read_folded(self.store)

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = WAIT_S) -> int:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout)

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(WAIT_S)

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT_S)
        shutil.rmtree(self.path, ignore_errors=True)


class Here:
    """``kairosd`` (its ``main``) in this process, with ``home`` as its KAIROS_HOME: what it prints and
    logs (stderr and its log records, as the process writes both to stderr) and how it exits.

    :meth:`start` runs it on this (the main) thread, as the process would; while it serves, another
    thread runs ``while_serving`` and then sends this process SIGTERM, which kairosd's own handler takes
    to stop it. Afterwards the collector is as it was (kairosd turns it off for its start and freezes
    what it made once it settled) and SIGTERM has its old handler back.
    """

    def __init__(self, home: Home, monkeypatch: pytest.MonkeyPatch, capsys: Any, caplog: Any) -> None:
        self.home, self.capsys, self.caplog = home, capsys, caplog
        for name, value in home.env.items():
            if os.environ.get(name) != value:
                monkeypatch.setenv(name, value)
        for name in set(os.environ) - set(home.env):
            monkeypatch.delenv(name)
        # configure_logging adds a stderr handler only to a root logger without one; pytest's capture
        # is there, so kairosd's records go to caplog. Any handler added anyway goes with the test.
        monkeypatch.setattr(logging.getLogger(), "handlers", list(logging.getLogger().handlers))
        caplog.set_level(logging.INFO)  # kairosd's level without -v (configure_logging)

    def log(self) -> str:
        """What kairosd has logged so far (``while_serving`` may wait on it)."""
        return str(self.caplog.text)

    def start(self, while_serving: Callable[[], Any] | None = None) -> tuple[int, str, Any]:
        """Run kairosd until it exits: its exit code, its stderr and log, and what ``while_serving`` returned
        (called once it answers; it is then stopped with SIGTERM)."""
        ended = threading.Event()
        got: list[Any] = []

        def serving() -> None:
            try:
                wait_for(lambda: ended.is_set() or self.home.answers(), what="kairosd to answer or exit")
            except AssertionError as exc:
                got.append(exc)
                return
            if ended.is_set():  # it exited (refused to start)
                return
            try:
                got.append(while_serving() if while_serving else None)
            except BaseException as exc:
                got.append(exc)
            finally:
                os.kill(os.getpid(), signal.SIGTERM)

        previous_term, thresholds = signal.getsignal(signal.SIGTERM), gc.get_threshold()
        self.caplog.clear()
        client = threading.Thread(target=serving, daemon=True)
        client.start()
        try:
            with pytest.raises(SystemExit) as exit_:
                kairosd_main.main([])
        finally:
            ended.set()
            client.join(60)
            signal.signal(signal.SIGTERM, previous_term)
            gc.enable()
            gc.unfreeze()
            gc.set_threshold(*thresholds)
        if got and isinstance(got[0], BaseException):
            raise got[0]
        code = exit_.value.code if isinstance(exit_.value.code, int) else 1
        return code, self.capsys.readouterr().err + self.caplog.text, got[0] if got else None


# ---- in-process pieces: a store that fails on demand, and a scheduler on a fake clock ------------------


class FlakyStore:
    """An in-memory store whose saves fail while ``broken`` is set (with that exception).

    With ``hold`` set to an Event, a save starts (``saving`` is set) and then waits for
    ``hold`` before it goes on: a test can change things while a write is under way."""

    def __init__(self, state: StoreState | None = None) -> None:
        self._state = (state or StoreState.empty()).model_copy(deep=True)
        self.broken: Exception | None = None
        self.saves = 0
        self.failures = 0
        self.hold: threading.Event | None = None
        self.saving = threading.Event()

    def load(self) -> StoreState:
        return self._state.model_copy(deep=True)

    def save(self, state: StoreState) -> None:
        self.saving.set()
        if self.hold is not None and not self.hold.wait(WAIT_S):
            raise AssertionError("the test never let the held save go on")
        if self.broken is not None:
            self.failures += 1
            raise self.broken
        self._state = state.model_copy(deep=True)
        self.saves += 1

    def task_ids(self) -> set[str]:
        return {t.id for t in self._state.tasks}


class SchedHarness:
    """A real Scheduler, TaskBook and ledgers (files in ``folder``) on a FakeClock, delivering to a FakeDelivery."""

    def __init__(self, folder: Path, store: Store, clock: FakeClock, **config: Any) -> None:
        self.folder = folder
        self.clock = clock
        self.store = store
        self.book = TaskBook(store, store.load())
        self.ledger = RunLedger(folder / "runs.jsonl", clock, keep_per_task=config.pop("keep_runs", 50))
        self.ledger.load()
        self.missed = MissedLedger(folder / "missed.jsonl", clock)
        self.missed.load()
        self.events = EventBus(clock.now)
        self.delivery = FakeDelivery("inbox", clock=clock, gate=config.pop("gate", None))
        self.sched = Scheduler(
            self.book, self.ledger, self.missed, {"inbox": self.delivery}, clock, self.events, SchedulerConfig(**config)
        )

    async def start(self) -> None:
        await self.sched.start()
        await self.sched.drain(5)

    async def tick(self) -> float:
        delay = await self.sched.tick()
        await self.sched.drain(5)
        return delay

    async def at(self, when: datetime) -> float:
        """Move both clocks to ``when`` (no suspend) and tick."""
        self.clock.advance((when - self.clock.now()).total_seconds())
        return await self.tick()

    def delivered(self, task_id: str | None = None) -> list[tuple[str, datetime]]:
        """(task id, scheduled_for) of every distinct run handed to the target, in order."""
        return [(j.task_id, j.scheduled_for) for j in self.delivery.handoffs if task_id in (None, j.task_id)]


class InProcessDaemon:
    """kairosd as :func:`kairosd.app.wiring.build_app` wires it (the real Api, Service, Scheduler,
    TaskBook, JsonStore, ledgers, inbox, registry, sessions...) behind a real UnixHttpServer, on an
    event loop in a background thread; the delivery targets that run something are fakes (a fuzzed
    shell task must never run) and the clock is a FakeClock that nobody moves, so nothing fires by itself.

    ``files_digest()`` fingerprints every state and data file, to check that rejected requests
    change nothing.
    """

    def __init__(self, root: Path, clock: FakeClock, uid: int | None = None) -> None:
        import asyncio
        import threading

        self.root = root
        self.clock = clock
        self.uid = uid
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kairosd-loop", daemon=True)
        self.thread.start()
        self.run(self._build())

    @property
    def socket(self) -> Path:
        return self.root / "run" / "kairosd.sock"

    @property
    def shutdown_requested(self) -> bool:
        """``POST /v1/shutdown`` was accepted (nothing stops here: no run loop waits on it)."""
        return self.app.stop_event.is_set()

    def run(self, coro: Any, timeout: float = WAIT_S) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _build(self) -> None:
        from kairosd.api.server import UnixHttpServer
        from kairosd.app.wiring import build_app
        from kairosd.config import Config
        from kairosd.system.paths import Paths

        paths = Paths(self.root / "state", self.root / "run", self.root / "data", self.root / "config")
        fakes = {name: FakeDelivery(name) for name in ("inbox", "shell", "webhook", "agent")}
        self.app = app = build_app(
            Config(), paths=paths, clock=self.clock, environ={"TZ": "UTC"}, socket_path=self.socket, deliveries=fakes
        )
        self.store, self.book, self.scheduler, self.service = app.store, app.book, app.scheduler, app.service
        app.load()
        await app.start()
        self.server = UnixHttpServer(self.socket, app.api.handle, uid=self.uid)
        await self.server.start()

    def files_digest(self) -> str:
        import hashlib

        digest = hashlib.sha256()
        for folder in (self.root / "state", self.root / "data"):
            if not folder.exists():
                continue
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    digest.update(str(path.relative_to(self.root)).encode())
                    digest.update(path.read_bytes())
        return digest.hexdigest()

    def close(self) -> None:
        async def shutdown() -> None:
            self.app.release_waiters()
            await self.server.close(grace_s=1.0)
            await self.app.stop(grace_s=1.0)

        try:
            self.run(shutdown())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(WAIT_S)
            self.loop.close()


def raw_exchange(path: Path, data: bytes, timeout: float = WAIT_S) -> bytes:
    """Send ``data``, half-close, and return everything the server sends until it closes."""
    import socket as socketlib

    with socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(os.fspath(path))
        if data:
            # The server may answer early (and close); its answer is still there to read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                s.sendall(data)
        with contextlib.suppress(OSError):
            s.shutdown(socketlib.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def parse_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one HTTP/1.1 response; chunked bodies are decoded."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    assert sep, f"no complete response head in {raw[:200]!r}"
    lines = head.split(b"\r\n")
    version, status, *_ = lines[0].split(b" ", 2)
    assert version == b"HTTP/1.1", lines[0]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode()] = value.strip().decode()
    if headers.get("transfer-encoding") == "chunked":
        decoded = b""
        rest = body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            decoded += rest[:size]
            rest = rest[size + 2 :]
        body = decoded
    return int(status), headers, body
