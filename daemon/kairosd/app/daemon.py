"""The composition root: builds the real adapters, wires them, runs, shuts down.

Start-up order: refuse folders and files another user could change
(:mod:`kairosd.system.trust`), take the store lock (one owner per store), load the store
(refusing a corrupt or newer one), load the ledgers (runs left in flight by a
crash become failed "interrupted"), plan every task and handle what was
missed, then open the socket (or take the one systemd passed by socket
activation) and tell systemd READY=1. While it runs it pings systemd's watchdog
as long as the scheduler loop makes progress. Shutdown on SIGTERM/SIGINT or an
API request: STOPPING=1, stop accepting, let in-flight deliveries finish
(bounded), record the rest, write the store, remove the socket, release the lock.

This is the only module that knows every concrete class.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kairosd import __version__
from kairosd.api.server import UnixHttpServer
from kairosd.app.doctor import doctor_routes
from kairosd.config import Config, load_config
from kairosd.consolidation.wiring import build_consolidation
from kairosd.core.clock import Clock, SystemClock, local_zone_name
from kairosd.core.events import EventBus
from kairosd.core.records import InboxItem
from kairosd.delivery.base import Delivery
from kairosd.delivery.inbox import InboxDelivery
from kairosd.delivery.shell import ShellDelivery
from kairosd.delivery.webhook import WebhookDelivery
from kairosd.export.api import Exporter, export_routes
from kairosd.registry.registry import AgentPolicy
from kairosd.registry.wiring import build_registry
from kairosd.scheduling.api import Api
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.service import Service
from kairosd.scheduling.taskbook import TaskBook
from kairosd.sessions.wiring import build_sessions
from kairosd.store.inbox import InboxStore
from kairosd.store.locking import StoreLock
from kairosd.store.store import JsonStore
from kairosd.system import trust
from kairosd.system.paths import Paths
from kairosd.system.sdnotify import (
    Notifier,
    forget_environment,
    is_unix_stream_listener,
    listen_sockets,
    logs_to_journal,
    watchdog_interval_s,
)

if TYPE_CHECKING:
    from kairosd.agents.base import AgentAdapter

log = logging.getLogger("kairosd")

DISABLE_VARS = ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON")
SHUTDOWN_GRACE_S = 10.0
# The scheduler ticks at least every max_sleep_s (30 s); a tick counter that has not moved for this
# many of those means the loop hangs, and the watchdog pings stop. WatchdogSec= (90 s in the shipped
# unit) must be larger than max_sleep_s, or a healthy but idle loop would be killed.
STALE_AFTER_SLEEPS = 2.0


def disabled_reason(environ: Mapping[str, str]) -> str | None:
    for var in DISABLE_VARS:
        if environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{var}=1 is set in kairosd's environment: nothing fires (the API still answers)"
    return None


def agent_policy(config: Config, name: str, cwd: str | None) -> AgentPolicy:
    """What an agent run may do: its CLI's configured ceiling, narrowed by a named definition."""
    from kairosd.agents import catalog  # on first use: the agent modules are not needed to start

    resolved = catalog.resolve(name, config, cwd)  # UsageError for an unknown name
    ceiling = config.ceiling(resolved.cli)
    definition = resolved.definition
    return AgentPolicy(
        ceiling=ceiling,
        timeout_s=config.timeout_s(resolved.cli),
        cli=resolved.cli,
        agent_definition=definition.prompt if definition else None,
        model=definition.model if definition else None,
        restrictions=definition.permissions(ceiling) if definition else None,
    )


def _adapter(cli: str, config: Config) -> AgentAdapter:
    """The adapter for an agent CLI, as configured; its modules are imported on first use, not at start."""
    from kairosd.agents.adapters import adapter_for

    return adapter_for(cli, config)


def _int_env(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise SystemExit(f"kairosd: {name} must be a whole number from {low} to {high}, not {raw!r}")
    return int(raw)


async def watchdog_pings(
    notifier: Notifier,
    progress: Callable[[], int],
    interval_s: float,
    stale_after_s: float,
    now: Callable[[], float] | None = None,
) -> None:
    """Send ``WATCHDOG=1`` every ``interval_s`` while ``progress()`` keeps changing; runs until cancelled.

    A loop that sleeps (up to its cap) between ticks is healthy; one whose counter has not moved for
    ``stale_after_s`` is hung, so the pings stop and systemd restarts the service. A blocked event
    loop stops them too, since this task then never runs. ``now`` (monotonic seconds; the event
    loop's clock by default, real time since hangs are real) is for tests.
    """
    clock = now or asyncio.get_running_loop().time
    last_seen, last_change = progress(), clock()
    hung = False
    while True:
        now_s, seen = clock(), progress()
        if seen != last_seen:
            last_seen, last_change = seen, now_s
            if hung:
                log.warning("the scheduler loop is making progress again; pinging the watchdog")
                hung = False
        if now_s - last_change <= stale_after_s:
            notifier.notify("WATCHDOG=1")
        elif not hung:
            hung = True
            idle = now_s - last_change
            log.error("the scheduler loop made no progress for %.0fs; no longer pinging the watchdog", idle)
        await asyncio.sleep(interval_s)


def _bound_path(sock: socket.socket) -> Path | None:
    name = sock.getsockname()
    # An abstract or unnamed socket has no file; only a path string is a place clients can find.
    return Path(name) if isinstance(name, str) and name.startswith("/") else None


@dataclass
class Daemon:
    """The daemon. ``notifier``, ``listen_sock`` and ``watchdog_s`` come from systemd; defaults: not under it."""

    paths: Paths
    clock: Clock = field(default_factory=SystemClock)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    notifier: Notifier = field(default_factory=lambda: Notifier(None))
    listen_sock: socket.socket | None = None
    watchdog_s: float | None = None

    def __post_init__(self) -> None:
        self.stop_event: asyncio.Event | None = None
        self.server: UnixHttpServer | None = None
        self.scheduler: Scheduler | None = None

    def request_stop(self) -> None:
        if self.stop_event is not None:
            self.stop_event.set()

    async def run(self, ready: asyncio.Event | None = None) -> int:
        paths = self.paths
        self.stop_event = asyncio.Event()
        # Folders or files another user could change refuse the start before anything is read from them.
        trust.prepare(paths)
        # A bad config file refuses the start before anything else is touched (the file is kept).
        self.user_config = load_config(paths, self.environ)
        lock = StoreLock(paths.lock, self.clock)
        takeover = lock.acquire()  # raises LockHeldError naming the live owner
        if takeover is not None and takeover.previous is not None:
            log.warning("took over the store lock from %s (%s)", takeover.previous.describe(), takeover.reason)
        try:
            return await self._serve(lock, ready)
        finally:
            lock.release()

    async def _serve(self, lock: StoreLock, ready: asyncio.Event | None) -> int:
        paths, clock, environ = self.paths, self.clock, self.environ
        stop_event = self.stop_event
        assert stop_event is not None
        default_tz = local_zone_name(dict(environ))
        store = JsonStore(paths.store, clock, local_zone=default_tz)
        book = TaskBook(store, store.load())
        ledger = RunLedger(
            paths.state_dir / "runs.jsonl",
            clock,
            keep_per_task=_int_env(environ, "KAIROS_RUNS_PER_TASK", 50, 1, 100_000),
        )
        for run in ledger.load():
            log.warning("run %s of task %s was interrupted by a previous stop", run.run_id, run.task_id)
        missed = MissedLedger(paths.state_dir / "missed.jsonl", clock)
        missed.load()
        events = EventBus(clock.now)
        inbox = InboxStore(paths.data_dir / "inbox", clock)

        def on_item(item: InboxItem) -> None:
            events.publish("inbox_item", session=item.session, item=item.model_dump(mode="json"))

        user_config = self.user_config
        background = build_registry(
            paths,
            clock,
            events,
            user_config.limits.model_dump(),
            lambda cli: _adapter(cli, user_config),
            user_config.hooks.as_specs(),
            policy_for=lambda name, cwd: agent_policy(user_config, name, cwd),
            environ=environ,
        )
        consolidation = build_consolidation(
            paths, clock, events, background.registry, user_config.consolidation, environ=environ, zone=default_tz
        )
        deliveries: dict[str, Delivery] = {
            "inbox": InboxDelivery(inbox, clock, on_item),
            "shell": ShellDelivery(paths.data_dir / "runs", clock, kill_grace_s=user_config.limits.kill_grace),
            "webhook": WebhookDelivery.from_config(user_config.webhook, clock),
            **background.deliveries,
        }
        sessions = build_sessions(
            paths, clock, events, ledger, deliveries, default_tz=default_tz, closing=stop_event, environ=environ,
            serve_consolidate=False,
        )  # fmt: skip
        deliveries.update(sessions.deliveries)  # before the scheduler copies the dict
        config = SchedulerConfig(
            disabled_reason=disabled_reason(environ),
            max_concurrent=user_config.limits.max_concurrent,
        )
        scheduler = self.scheduler = Scheduler(book, ledger, missed, deliveries, clock, events, config)
        if config.disabled_reason:
            log.warning("%s", config.disabled_reason)
        # The registry first: catch-up fires at start-up may start agent runs.
        await background.start()
        await consolidation.start()  # settles or re-adopts runs a previous kairosd left
        await sessions.start()  # after the ledger is loaded: pending session runs are matched to items
        await scheduler.start()
        socket_path = self._socket_path()
        service = Service(
            scheduler,
            inbox,
            clock,
            events,
            default_tz,
            info={"socket": str(socket_path), "store": str(paths.store)},
            extra_status={
                "background": background.registry.status,
                "sessions": sessions.status,
                "consolidation": consolidation.service.status,
                "quarantine": store.quarantine.status,
            },
        )
        api = Api(service, self.request_stop)
        api.add_routes(background.routes)
        api.add_routes(consolidation.routes)  # it serves POST /v1/consolidate; the sessions' routes leave it out
        api.add_routes(sessions.routes)
        sessions.hub.context_board_for = consolidation.context_for_session  # SessionStart additional context
        api.add_routes(doctor_routes(user_config))
        api.add_routes(store.quarantine.routes())
        exporter = Exporter(
            lambda: book,
            lambda cli: _adapter(cli, user_config),
            lambda name, cwd: agent_policy(user_config, name, cwd),
            background.registry.limits.turn_timeout_s,
            clock.now,
            environ,
        )
        api.add_routes(export_routes(exporter))
        server = self.server = UnixHttpServer(socket_path, api.handle, sock=self.listen_sock)
        await server.start()
        log.info("kairosd %s serving on %s with %d task(s)", __version__, socket_path, len(book))
        self.notifier.notify("READY=1", f"STATUS=serving {len(book)} task(s) on {socket_path}")
        if ready is not None:
            ready.set()
        loop_task = asyncio.ensure_future(scheduler.run(stop_event))
        stopper = asyncio.ensure_future(stop_event.wait())
        watchdog: asyncio.Future[None] | None = None
        if self.watchdog_s is not None:
            stale_after = STALE_AFTER_SLEEPS * scheduler.config.max_sleep_s
            watchdog = asyncio.ensure_future(
                watchdog_pings(self.notifier, lambda: scheduler.wakeups, self.watchdog_s, stale_after)
            )
        try:
            await asyncio.wait({loop_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if loop_task.done() and loop_task.exception() is not None:
                log.error("the scheduler loop failed: %s", loop_task.exception())
                return 1
        finally:
            log.info("kairosd stopping")
            self.notifier.notify("STOPPING=1", "STATUS=stopping")
            if watchdog is not None:
                # Shutdown is bounded by TimeoutStopSec=, not by the watchdog.
                watchdog.cancel()
            stop_event.set()
            events.close()
            await server.close()
            loop_task.cancel()
            await asyncio.gather(loop_task, return_exceptions=True)
            await consolidation.stop()  # stops watching; detached workers keep running
            # Running agent turns end as "interrupted" at once rather than sit out the drain.
            await background.stop()
            await scheduler.shutdown(SHUTDOWN_GRACE_S)
            await sessions.stop()
            book.commit_sync()
            stopper.cancel()
        return 0

    def _socket_path(self) -> Path:
        """Where clients reach us: the activated socket's file, else the configured path."""
        if self.listen_sock is None:
            return self.paths.socket
        bound = _bound_path(self.listen_sock)
        if bound is None:
            log.warning("the socket passed by systemd has no file name; clients find kairosd only through it")
            return self.paths.socket
        if bound != self.paths.socket:
            # The unit's ListenStream= and the CLI's idea of the socket (KAIROS_HOME, XDG_RUNTIME_DIR) differ.
            log.warning("serving on the socket systemd passed, %s; kairos looks in %s", bound, self.paths.socket)
        log.info("using the socket passed by systemd (socket activation)")
        return bound


_PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4), (logging.INFO, 6))


class JournalFormatter(logging.Formatter):
    """Prefixes every line (tracebacks too) with a syslog priority ``<N>``, which journald strips and stores.

    No timestamp: the journal stamps each line itself.
    """

    def format(self, record: logging.LogRecord) -> str:
        level = next((prio for threshold, prio in _PRIORITIES if record.levelno >= threshold), 7)
        prefix = f"<{level}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines() or [""])


def configure_logging(verbose: bool = False, environ: Mapping[str, str] | None = None) -> None:
    """Log to stderr: ``<N>``-prefixed lines when stderr is the journal, timestamped lines otherwise."""
    handler = logging.StreamHandler(sys.stderr)
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        stderr_fd = -1  # replaced by something without a descriptor (a test's capture): not the journal
    if stderr_fd >= 0 and logs_to_journal(os.environ if environ is None else environ, stderr_fd):
        handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])


def _activated_listener() -> socket.socket | None:
    """The socket systemd passed (kairosd.socket), if any; extra or unusable ones are closed."""
    chosen: socket.socket | None = None
    for name, sock in listen_sockets(os.environ):
        if chosen is None and is_unix_stream_listener(sock):
            chosen = sock
        else:
            log.warning("ignoring passed socket %s (fd %d): kairosd serves one Unix stream socket", name, sock.fileno())
            sock.close()
    return chosen


def serve_forever(paths: Paths | None = None) -> int:
    """Run the daemon in the foreground until SIGTERM/SIGINT; the process exit code.

    Under systemd it takes the activated socket and the notify and watchdog settings from the
    environment, then removes those variables so the commands it runs do not inherit them.
    """
    listen_sock = _activated_listener()
    notifier = Notifier.from_environ(os.environ)
    watchdog_s = watchdog_interval_s(os.environ)
    forget_environment(os.environ)
    daemon = Daemon(paths or Paths.from_env(), notifier=notifier, listen_sock=listen_sock, watchdog_s=watchdog_s)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.request_stop)
        ready = asyncio.Event()
        settle = asyncio.ensure_future(_settle_memory_when(ready))
        try:
            return await daemon.run(ready)
        finally:
            settle.cancel()

    try:
        return asyncio.run(main())
    finally:
        notifier.close()
        if not gc.isenabled():
            gc.enable()


async def _settle_memory_when(ready: asyncio.Event) -> None:
    """Once kairosd answers: turn the cycle collector back on (``__main__`` turned it off for the start).

    What survived the start (modules, the loaded tasks) lives as long as the
    daemon, so it is frozen: later collections skip it, and an idle daemon with
    10,000 tasks does not walk them all now and then. No collection first: it
    would walk everything (~50 ms with 10,000 tasks) just as the first clients
    are waiting, to free about a thousand start-up objects.
    """
    await ready.wait()
    gc.freeze()
    gc.enable()
