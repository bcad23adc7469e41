"""The composition root: builds the real adapters, wires them, runs, shuts down.

Start-up order: take the store lock (one owner per store), load the store
(refusing a corrupt or newer one), load the ledgers (runs left in flight by a
crash become failed "interrupted"), plan every task and handle what was
missed, then open the socket. Shutdown on SIGTERM/SIGINT or an API request:
stop accepting, let in-flight deliveries finish (bounded), record the rest,
write the store, remove the socket, release the lock.

This is the only module that knows every concrete class.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kairosd import __version__
from kairosd.api import Api
from kairosd.clock import Clock, SystemClock, local_zone_name
from kairosd.delivery.base import Delivery
from kairosd.delivery.inbox import InboxDelivery
from kairosd.delivery.shell import ShellDelivery
from kairosd.events import EventBus
from kairosd.inbox import InboxStore
from kairosd.ledger import MissedLedger, RunLedger
from kairosd.locking import StoreLock
from kairosd.paths import Paths
from kairosd.records import InboxItem
from kairosd.scheduler import Scheduler, SchedulerConfig
from kairosd.server import UnixHttpServer
from kairosd.service import Service
from kairosd.store import JsonStore
from kairosd.taskbook import TaskBook

log = logging.getLogger("kairosd")

DISABLE_VARS = ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON")
SHUTDOWN_GRACE_S = 10.0


def disabled_reason(environ: Mapping[str, str]) -> str | None:
    for var in DISABLE_VARS:
        if environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{var}=1 is set in kairosd's environment: nothing fires (the API still answers)"
    return None


def _int_env(environ: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise SystemExit(f"kairosd: {name} must be a whole number from {low} to {high}, not {raw!r}")
    return int(raw)


@dataclass
class Daemon:
    paths: Paths
    clock: Clock = field(default_factory=SystemClock)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

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

        deliveries: dict[str, Delivery] = {
            "inbox": InboxDelivery(inbox, clock, on_item),
            "shell": ShellDelivery(paths.data_dir / "runs", clock),
        }
        config = SchedulerConfig(
            disabled_reason=disabled_reason(environ),
            max_concurrent=_int_env(environ, "KAIROS_MAX_CONCURRENT", 4, 1, 256),
        )
        scheduler = self.scheduler = Scheduler(book, ledger, missed, deliveries, clock, events, config)
        if config.disabled_reason:
            log.warning("%s", config.disabled_reason)
        await scheduler.start()
        service = Service(
            scheduler,
            inbox,
            clock,
            events,
            default_tz,
            info={"socket": str(paths.socket), "store": str(paths.store)},
        )
        api = Api(service, self.request_stop)
        server = self.server = UnixHttpServer(paths.socket, api.handle)
        await server.start()
        log.info("kairosd %s serving on %s with %d task(s)", __version__, paths.socket, len(book))
        if ready is not None:
            ready.set()
        loop_task = asyncio.ensure_future(scheduler.run(stop_event))
        stopper = asyncio.ensure_future(stop_event.wait())
        try:
            await asyncio.wait({loop_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if loop_task.done() and loop_task.exception() is not None:
                log.error("the scheduler loop failed: %s", loop_task.exception())
                return 1
        finally:
            log.info("kairosd stopping")
            stop_event.set()
            events.close()
            await server.close()
            loop_task.cancel()
            await asyncio.gather(loop_task, return_exceptions=True)
            await scheduler.shutdown(SHUTDOWN_GRACE_S)
            book.commit_sync()
            stopper.cancel()
        return 0


def configure_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def serve_forever(paths: Paths | None = None) -> int:
    """Run the daemon in the foreground until SIGTERM/SIGINT; the process exit code."""
    daemon = Daemon(paths or Paths.from_env())

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.request_stop)
        return await daemon.run()

    return asyncio.run(main())


def ensure_dirs(paths: Paths) -> None:
    for folder in (paths.state_dir, paths.runtime_dir, paths.data_dir):
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
