"""A kairosd-like harness for the session and hook tests, and helpers to run ``kairos hook``.

:class:`Kairosd` is kairosd as :func:`kairosd.app.wiring.build_app` builds it (the real ``Api``,
``Service``, ``Scheduler``, ledgers, inbox, sessions, registry and consolidation) behind a real
``UnixHttpServer`` on a socket under a short ``KAIROS_HOME``, on an event loop in a background
thread, so a blocking client (``kairos hook`` called in-process, or a real ``kairos`` process)
can talk to it from the test's thread. The store is in memory and the clock is a ``FakeClock``:
fires are made with ``kairos run`` (``Scheduler.run_now``), and expiry and claim leases move by
hand. Started with ``agents``, its registry runs those fake agents behind the ``agent`` target
and headless fallbacks.

:func:`call_hook` runs ``kairos.integrations.hook.main`` in-process with a payload on stdin and
captures what it writes, fast enough to run many per test.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from registry_support import FakeAdapter, adapters

from kairosd import testing
from kairosd.api.server import UnixHttpServer
from kairosd.app.wiring import build_app
from kairosd.config import Config, ConsolidationConfig, Limits, with_environment
from kairosd.consolidation.request import ConsolidationRequest
from kairosd.consolidation.service import Consolidation
from kairosd.core.events import EventBus
from kairosd.core.models import Task
from kairosd.core.records import Run
from kairosd.jobs.registry import AgentPolicy, Registry
from kairosd.store.store import StoreState
from kairosd.system.paths import Paths
from kairosd.testing import FakeClock, InMemoryStore

WAIT_S = 10.0  # the bound of every wait; passing runs take far less
T0 = datetime(2026, 10, 31, 9, 0, 0, tzinfo=UTC)
FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
T = TypeVar("T")


def fixture(agent: str, event: str, **changes: Any) -> dict[str, Any]:
    """A recorded hook input of ``agent`` for ``event`` (tests/fixtures/hooks), with ``changes`` applied."""
    payload: dict[str, Any] = json.loads((FIXTURES / agent / f"{event}.json").read_text())
    payload.update(changes)
    return payload


def session_of(payload: dict[str, Any]) -> str:
    return str(payload.get("session_id") or payload.get("sessionId"))


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    return testing.wait_for(condition, what, timeout)


class Kairosd:
    """kairosd as :func:`kairosd.app.wiring.build_app` wires it, serving on ``home``'s socket."""

    def __init__(self, home: Path, clock: FakeClock | None = None, **config: Any) -> None:
        self.home = home
        self.paths = Paths(home / "state", home / "run", home / "data", home / "config")
        self.clock = clock or FakeClock(T0)
        self.config = config
        self.published: list[tuple[str, dict[str, Any]]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kairosd-loop", daemon=True)
        self.thread.start()
        self.registry: Registry | None = None
        self.handovers: list[dict[str, Any]] = []  # POST /v1/consolidate bodies, as parsed

    # -- running things on the daemon's loop ------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = WAIT_S) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    # -- lifecycle ------------------------------------------------------------------------------

    def load_tasks(self, tasks: Iterable[Task]) -> None:
        """Put ``tasks`` in the store as kairosd would have them at a start, scheduled, and commit."""

        def load() -> None:
            for task in tasks:
                self.book.put(task)
                self.scheduler.schedule(task)

        self.call(load)
        self.run(self.book.commit())

    def start(self, *, agents: Sequence[FakeAdapter] = ()) -> Kairosd:
        """Build (with an in-memory store, the FakeClock, no config file), load, start and serve.

        With ``agents``, the registry runs those fake agents (found by name, with no configured
        ceiling) behind the ``agent`` target and headless fallbacks. Without, this kairosd has no
        ``agent`` target: the registry knows no agent and nothing routes to it.

        Consolidation is off (``[consolidation] enabled = false``): no worker ever starts, and each
        request ``POST /v1/consolidate`` hands over is recorded in :attr:`handovers` before the
        real service answers it (skipped, at the ``enabled`` gate).
        """

        async def build() -> None:
            for folder in (self.paths.state_dir, self.paths.runtime_dir, self.paths.data_dir):
                folder.mkdir(parents=True, exist_ok=True)
            environ = {
                "TZ": "UTC",
                "PATH": os.environ.get("PATH", ""),
                "CODEX_HOME": str(self.home / "codex"),  # never the real ~/.codex (Codex idle wake asks there)
                **self.config.get("environ", {}),
            }
            limits = Limits(max_concurrent=self.config.get("max_concurrent", 4), kill_grace=1.0)
            # The environment's overrides (KAIROS_RUNS_PER_TASK, ...) as kairosd's load_config applies them.
            settings = with_environment(
                Config(limits=limits, consolidation=ConsolidationConfig(enabled=False)), environ
            )
            self.app = app = build_app(
                settings,
                paths=self.paths,
                clock=self.clock,
                environ=environ,
                store=InMemoryStore(StoreState.empty()),
                adapter_for=adapters(*agents),
                policy_for=lambda name, cwd: AgentPolicy(),
            )
            if agents:
                self.registry = app.background.registry
            else:
                del app.deliveries["agent"]  # what the session target's fallbacks see
                del app.scheduler.deliveries["agent"]  # what tasks may target
            self._capture_events(app.events)
            self._record_handovers(app.consolidation.service)
            self.book, self.ledger, self.events, self.inbox = app.book, app.ledger, app.events, app.inbox
            self.deliveries, self.sessions, self.scheduler = app.deliveries, app.sessions, app.scheduler
            self.service, self.api, self.stop_event = app.service, app.api, app.stop_event
            app.load()
            await app.start()
            self.server = UnixHttpServer(self.paths.socket, app.api.handle)
            await self.server.start()

        self.run(build())
        return self

    def _capture_events(self, events: EventBus) -> None:
        """Every event published, in :attr:`published` too (at once, unlike a subscriber)."""
        publish = events.publish

        def capture(kind: str, **data: Any) -> None:
            self.published.append((kind, data))
            publish(kind, **data)

        events.publish = capture  # type: ignore[method-assign]
        # The capture listens as a `kairos watch` client would: code that builds no event when nobody
        # listens (a herd's run_pending/run_finished) must see a listener here too.
        self._listening = events.subscribe()

    def _record_handovers(self, service: Consolidation) -> None:
        """The real ``POST /v1/consolidate`` route parses the body and asks ``service``: record it first."""
        decide = service.request

        async def request(req: ConsolidationRequest) -> dict[str, Any]:
            self.handovers.append(req.model_dump(exclude_defaults=True))
            return await decide(req)

        service.request = request  # type: ignore[method-assign]

    def stop(self) -> None:
        async def teardown() -> None:
            self.app.release_waiters()  # as kairosd.app.daemon.run does first: closing the server is quick
            await self.server.close(grace_s=2.0)
            await self.app.stop(grace_s=2.0)

        try:
            self.run(teardown(), timeout=WAIT_S * 2)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(WAIT_S)
            self.loop.close()

    # -- conveniences ---------------------------------------------------------------------------

    @property
    def hub(self) -> Any:
        return self.sessions.hub

    def add(self, prompt: str, target: dict[str, Any], **fields: Any) -> str:
        """Add a task (a daily cron: it only fires when told to) and return its id."""
        body = {"prompt": prompt, "cron": "0 4 * * *", "tz": "UTC", "target": target, **fields}
        task: dict[str, Any] = self.run(self.service.add(body))
        return str(task["id"])

    def fire(self, task_id: str) -> str:
        """``kairos run``: fire now and wait until the target answered; returns the run id."""
        run: dict[str, Any] = self.run(self.service.run_now(task_id))
        self.run(self.scheduler.drain(WAIT_S))
        return str(run["run_id"])

    def run_record(self, run_id: str) -> Run:
        return self.call(lambda: self.ledger.get(run_id))

    def sessions_view(self) -> list[dict[str, Any]]:
        return self.call(self.hub.sessions)

    def pending(self) -> list[str]:
        return self.call(lambda: [i.run_id for s in self.hub.store for i in s.items])

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in list(self.published) if k == kind]


def short_home(prefix: str = "ks") -> Path:
    """A fresh folder short enough for an AF_UNIX socket path under it (about 107 bytes at most)."""
    return Path(tempfile.mkdtemp(dir="/tmp", prefix=prefix))


def remove_home(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)


# Fixtures of the hook tests: a test module imports them (``from session_support import hook_home,
# hook_kd``) and its tests ask for ``home`` and ``kd``.


@pytest.fixture(name="home")
def hook_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh short ``KAIROS_HOME``, without the variables that would change what a hook does: the
    suite may itself run inside a kairos task or under an agent that sets them."""
    path = short_home()
    monkeypatch.setenv("KAIROS_HOME", str(path))
    for name in ("KAIROS_SPAWNED", "KAIROS_CONSOLIDATE", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield path
    finally:
        remove_home(path)


@pytest.fixture(name="kd")
def hook_kd(home: Path) -> Iterator[Kairosd]:
    """The harness daemon, running on ``home`` for one test."""
    daemon = Kairosd(home).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@dataclass
class HookRun:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> Any:
        return json.loads(self.stdout) if self.stdout else None


class _BrokenStdout(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the agent closed the hook's stdout")


def call_hook(
    monkeypatch: Any,
    agent: str,
    event: str,
    payload: Any,
    *extra: str,
    broken_stdout: bool = False,
) -> HookRun:
    """Run ``kairos hook AGENT EVENT`` in this process with ``payload`` (JSON-encoded unless bytes) on stdin."""
    from kairos.integrations.hook import main

    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    stdout = _BrokenStdout() if broken_stdout else io.StringIO()
    stderr = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        m.setattr(sys, "stdout", stdout)
        m.setattr(sys, "stderr", stderr)
        code = main([agent, event, *extra])
    return HookRun(code, "" if broken_stdout else stdout.getvalue(), stderr.getvalue())
