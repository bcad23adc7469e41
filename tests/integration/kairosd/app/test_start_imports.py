"""The import budget of kairosd's start: the kairosd modules a start has imported when it tells systemd
READY=1 are pinned, so a later eager import fails here, by name.

A real kairosd starts on a store with a task of each target kind. The child records ``sys.modules`` as it
sends READY=1 (the moment ``kairos daemon start`` and systemd wait for), and again on SIGUSR1. What only a
few routes use (the doctor, export, the task answers' models, ...) is imported at their first request
(docs/performance.md, "The daemon"); a module added to :data:`AT_START` should be one that serving needs.
A module of such a route that cannot be imported fails that route with an error naming it, not the start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from cli_support import kairosd_answers, kairosd_get
from session_support import remove_home, short_home, wait_for

from kairos.client import ApiError, Client
from kairosd.core.clock import SystemClock
from kairosd.core.models import AgentTarget, ShellTarget, WebhookTarget, new_task
from kairosd.core.protocol import route_path
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState
from kairosd.system.paths import socket_path

# Every kairosd module a start imports by READY=1. Keep it short: a module here is paid for by every start
# (and by each of the ~115 kairosd processes the test gate starts).
_PINNED = """
    kairosd
    kairosd.__main__
    kairosd.agents kairosd.agents.base kairosd.agents.codexqueue
    kairosd.api kairosd.api.http_types kairosd.api.requests kairosd.api.router kairosd.api.server
    kairosd.api.throttle kairosd.api.unixsocket
    kairosd.app kairosd.app.api kairosd.app.daemon kairosd.app.reload kairosd.app.wiring
    kairosd.config
    kairosd.consolidation kairosd.consolidation.api kairosd.consolidation.gates kairosd.consolidation.request
    kairosd.consolidation.runs kairosd.consolidation.service kairosd.consolidation.spawn
    kairosd.consolidation.wiring
    kairosd.core kairosd.core.agentspec kairosd.core.bounds kairosd.core.clock kairosd.core.defaults
    kairosd.core.errors kairosd.core.events kairosd.core.ids kairosd.core.jsonsafe kairosd.core.lifecheck
    kairosd.core.models kairosd.core.plan kairosd.core.protocol kairosd.core.readonly kairosd.core.records
    kairosd.core.redact kairosd.core.reminder kairosd.core.schedule kairosd.core.schedule.counting
    kairosd.core.schedule.cron kairosd.core.schedule.durations kairosd.core.schedule.exact
    kairosd.core.schedule.explain kairosd.core.schedule.fires kairosd.core.schedule.jitter kairosd.core.wire
    kairosd.core.wire.base kairosd.core.wire.board kairosd.core.wire.consolidation kairosd.core.wire.daemon
    kairosd.core.wire.records kairosd.core.wire.registry kairosd.core.wire.sections kairosd.core.wire.sessions
    kairosd.core.wire.status
    kairosd.delivery kairosd.delivery.base kairosd.delivery.inbox kairosd.delivery.shell
    kairosd.delivery.webhook
    kairosd.jobs kairosd.jobs.api kairosd.jobs.book kairosd.jobs.cancel kairosd.jobs.delivery
    kairosd.jobs.detached kairosd.jobs.follow kairosd.jobs.joblog kairosd.jobs.limits kairosd.jobs.model
    kairosd.jobs.persist kairosd.jobs.recovery kairosd.jobs.registry kairosd.jobs.requests kairosd.jobs.rules
    kairosd.jobs.slots kairosd.jobs.turns kairosd.jobs.wiring
    kairosd.scheduling kairosd.scheduling.anchors kairosd.scheduling.api kairosd.scheduling.broken
    kairosd.scheduling.dispatch kairosd.scheduling.firing kairosd.scheduling.kept kairosd.scheduling.ledger
    kairosd.scheduling.requests kairosd.scheduling.scheduler kairosd.scheduling.service
    kairosd.scheduling.settle kairosd.scheduling.summaries kairosd.scheduling.taskbook
    kairosd.scheduling.timeline kairosd.scheduling.viewtails
    kairosd.sessions kairosd.sessions.api kairosd.sessions.core kairosd.sessions.delivery kairosd.sessions.hub
    kairosd.sessions.requests kairosd.sessions.routing kairosd.sessions.rules kairosd.sessions.store
    kairosd.sessions.waiters kairosd.sessions.wiring
    kairosd.store kairosd.store.inbox kairosd.store.journal kairosd.store.jsonlog kairosd.store.locking
    kairosd.store.migrations kairosd.store.quarantine kairosd.store.store
    kairosd.system kairosd.system.atomic kairosd.system.boundedread kairosd.system.fdlimit
    kairosd.system.filesafety kairosd.system.gcpause kairosd.system.lifecycle kairosd.system.outputcap
    kairosd.system.paths kairosd.system.procgroup kairosd.system.pydanticplugins kairosd.system.runner
    kairosd.system.sdnotify
    kairosd.system.trust
"""
AT_START = frozenset(_PINNED.split())

# Imported at their first use only, never by a start: a few routes', or a rare case's (each named in
# docs/performance.md or at its import).
NOT_AT_START = (
    "argparse",  # kairosd's arguments are read without it (kairosd/__main__.py)
    "cronsim",  # explain
    "importlib.metadata",  # pydantic's plugin scan, which kairosd skips (kairosd.system.pydanticplugins)
    "httpx",  # the webhook's first post
    "psutil",  # the lock record reads /proc
    "tomllib",  # only when a config file exists
    "kairosd.agents.adapters",  # the first agent run
    "kairosd.api.openapi",  # GET /v1/openapi.json
    "kairosd.app.doctor",  # GET /v1/doctor
    "kairosd.consolidation.board",  # the first board command or consolidation
    "kairosd.core.wire.doctor",  # the doctor's answer, with the doctor
    "kairosd.core.wire.tasks",  # the task answers, at the first request that makes one
    "kairosd.export",  # POST /v1/export
    "kairosd.store.claude_compat",  # a Claude store copied in
)

# Records sys.modules at READY=1 (through the Notifier every start calls) and on SIGUSR1, then runs
# kairosd's console script. Only os, signal and kairosd.system.sdnotify are imported before it.
SNAPSHOT = """
import os, signal, sys

out = sys.argv.pop(1)


def dump(path):
    fd = os.open(path + ".part", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, "\\n".join(sorted(sys.modules)).encode())
    os.close(fd)
    os.rename(path + ".part", path)


signal.signal(signal.SIGUSR1, lambda signum, frame: dump(out + ".later"))
for name in os.environ.get("BREAK_MODULES", "").split():
    sys.modules[name] = None  # "import of NAME halted": as a broken install would fail it

from kairosd.system import sdnotify

notify = sdnotify.Notifier.notify


def notify_and_dump(self, *assignments):
    if "READY=1" in assignments:
        dump(out + ".ready")
    return notify(self, *assignments)


sdnotify.Notifier.notify = notify_and_dump
sys.argv[:] = ["kairosd"]
from kairosd.__main__ import main

main()
"""


def _store(home: Path) -> None:
    """A task of each target kind, recurring and one-shot."""
    now = SystemClock().now() - timedelta(seconds=1)
    later = now + timedelta(days=30)
    tasks = [
        new_task(prompt="look at CI", created_at=now, tz="UTC", cron="0 4 * * *"),
        new_task(prompt="once", created_at=now, tz="Europe/Paris", at=later),
        new_task(prompt="sh", created_at=now, tz="UTC", cron="*/5 * * * *", target=ShellTarget(argv=["true"])),
        new_task(prompt="ag", created_at=now, tz="UTC", cron="0 9 * * 1-5", target=AgentTarget(agent="claude")),
        new_task(prompt="wh", created_at=now, tz="UTC", cron="@daily", target=WebhookTarget(url="https://x.test/h")),
    ]
    store = JsonStore(home / "state" / "scheduled_tasks.json", SystemClock())
    store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks))


class Started:
    def __init__(self, env: dict[str, str], proc: subprocess.Popen[bytes], out: Path) -> None:
        self.env, self.proc, self.out = env, proc, out

    def modules(self, when: str) -> set[str]:
        path = Path(f"{self.out}.{when}")
        wait_for(lambda: path.exists() or self.proc.poll() is not None, f"kairosd's modules ({when})")
        assert path.exists(), f"kairosd exited {self.proc.returncode}"
        return set(path.read_text().split("\n"))

    def later(self) -> set[str]:
        """The modules now (SIGUSR1): after what the test asked."""
        Path(f"{self.out}.later").unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        return self.modules("later")


@contextlib.contextmanager
def _started(broken: tuple[str, ...] = ()) -> Iterator[Started]:
    """A real kairosd on a short KAIROS_HOME with a task of each kind; the modules ``broken`` fail to
    import in it."""
    home = short_home("kb")
    _store(home)
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC", "BREAK_MODULES": " ".join(broken)}
    for name in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"):
        env.pop(name, None)
    out = home / "modules"
    log = (home / "kairosd.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", SNAPSHOT, str(out)], env=env, stdout=log, stderr=log)
    try:
        wait_for(lambda: kairosd_answers(env) or proc.poll() is not None, "kairosd to answer")
        assert proc.poll() is None, (home / "kairosd.log").read_text()
        yield Started(env, proc, out)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        remove_home(home)


@pytest.fixture
def start() -> Iterator[Started]:  # one kairosd per test: each start costs the gate ~0.5 s of CPU
    with _started() as started:
        yield started


def _kairosd(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "kairosd" or m.startswith("kairosd.")}


def _lazy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == lazy or m.startswith(lazy + ".") for lazy in NOT_AT_START))


def test_a_start_imports_the_pinned_kairosd_modules(start: Started) -> None:
    ready = start.modules("ready")
    assert "kairosd.app.wiring" in ready  # the snapshot is of a real start
    assert _lazy(ready) == []
    assert sorted(_kairosd(ready) - AT_START) == [], "imported at start: make it lazy, or pin it with a reason"
    assert sorted(AT_START - _kairosd(ready)) == [], "no longer imported at start: unpin it"

    # Spawn to first answer is the start's figure (bench/bench_startup.py): the status answer adds nothing.
    kairosd_get(start.env, "status")
    assert sorted(_kairosd(start.later() - ready)) == []

    # The check can fail: after GET /v1/doctor and POST /v1/export, their modules are in the process.
    kairosd_get(start.env, "doctor")
    Client(socket_path(start.env), timeout=30).call("POST", route_path("export"), {"to": "systemd", "all": True})
    assert {"kairosd.app.doctor", "kairosd.export"} <= set(_lazy(start.later()))


def test_a_module_that_cannot_be_imported_fails_its_route_not_the_start() -> None:
    with _started(broken=("kairosd.app.doctor", "kairosd.export.api")) as start:
        _only_the_routes_fail(start)


def _only_the_routes_fail(start: Started) -> None:
    assert kairosd_get(start.env, "status")["tasks"] == 5
    client = Client(socket_path(start.env), timeout=30)
    with pytest.raises(ApiError) as doctor:
        client.call("GET", route_path("doctor"))
    assert doctor.value.status == 500
    assert "GET /v1/doctor is unavailable: kairosd cannot import kairosd.app.doctor" in str(doctor.value)
    with pytest.raises(ApiError) as export:
        client.call("POST", route_path("export"), {"to": "systemd", "all": True})
    assert "POST /v1/export is unavailable: kairosd cannot import kairosd.export.api" in str(export.value)
    assert kairosd_get(start.env, "status")["tasks"] == 5  # the rest serves on
