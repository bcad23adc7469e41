"""The daemon process: takes the store lock, serves the app :mod:`kairosd.app.wiring` builds, shuts down.

Start-up order: refuse folders and files another user could change
(:mod:`kairosd.system.trust`), read the config, take the store lock (one owner per store),
build the app (:func:`kairosd.app.wiring.build_app`, no I/O), load the store (refusing a
corrupt or newer one) and the ledgers (runs left in flight by a crash become failed
"interrupted"), start the parts (plan every task), then open the socket (or take the one
systemd passed by socket activation) and tell systemd READY=1. What was missed while
kairosd was down is handled after that, by the scheduler loop's first tick: its work is
bounded, but a start must never wait on it (issue 27). While it runs it pings systemd's
watchdog as long as the scheduler loop makes progress. Shutdown on SIGTERM/SIGINT or an
API request: STOPPING=1, stop accepting, let in-flight deliveries finish (bounded), record
the rest, write the store, remove the socket, release the lock. SIGHUP reads config.toml
again (:mod:`kairosd.app.reload`).
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
from pathlib import Path
from typing import Any

from kairosd import __version__
from kairosd.api.server import UnixHttpServer
from kairosd.app.wiring import App, build_app
from kairosd.config import load_config
from kairosd.core.clock import Clock, SystemClock
from kairosd.store.locking import StoreLock
from kairosd.system import fdlimit, trust
from kairosd.system.paths import Paths
from kairosd.system.sdnotify import (
    Notifier,
    forget_environment,
    is_unix_stream_listener,
    listen_sockets,
    logs_to_journal,
    watchdog_interval_s,
)

log = logging.getLogger("kairosd")

# How long after the first answer kairosd starts encoding each task's JSON (TaskBook.encode_ahead): the
# clients waiting on a start (`kairos daemon start`, a status poll) are answered first, and RSS when ready
# stays what the start itself holds (bench/bench_startup.py). A listing sooner encodes what it needs.
# It also waits for the scheduler loop's first tick, which decides what was missed while kairosd was
# down: encoding 10,000 tasks meanwhile only made that catch-up later (bench/bench_absence.py).
ENCODE_AHEAD_AFTER_S = 1.0

# The scheduler ticks at least every max_sleep_s (30 s); a tick counter that has not moved for this
# many of those means the loop hangs, and the watchdog pings stop. WatchdogSec= (90 s in the shipped
# unit) must be larger than max_sleep_s, or a healthy but idle loop would be killed.
STALE_AFTER_SLEEPS = 2.0


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


def socket_path(paths: Paths, listen_sock: socket.socket | None) -> Path:
    """Where clients reach us: the activated socket's file, else the configured path."""
    if listen_sock is None:
        return paths.socket
    bound = _bound_path(listen_sock)
    if bound is None:
        log.warning("the socket passed by systemd has no file name; clients find kairosd only through it")
        return paths.socket
    if bound != paths.socket:
        # The unit's ListenStream= and the CLI's idea of the socket (KAIROS_HOME, XDG_RUNTIME_DIR) differ.
        log.warning("serving on the socket systemd passed, %s; kairos looks in %s", bound, paths.socket)
    log.info("using the socket passed by systemd (socket activation)")
    return bound


async def run(
    app: App,
    *,
    notifier: Notifier | None = None,
    listen_sock: socket.socket | None = None,
    watchdog_s: float | None = None,
    ready: asyncio.Event | None = None,
    settled: asyncio.Event | None = None,
) -> int:
    """Serve ``app`` until it is asked to stop; the exit code. ``notifier``, ``listen_sock`` and
    ``watchdog_s`` come from systemd (default: not under it); ``ready`` is set once it answers,
    ``settled`` once it has also encoded each task's JSON (:meth:`TaskBook.encode_ahead`).

    Loads and starts the app, serves its API on the socket, runs the scheduler loop,
    then shuts down in order. The caller holds the store lock.
    """
    notifier = notifier or Notifier(None)
    # Before anything opens files or starts children: the limit bounds the connections served below.
    open_files = fdlimit.raise_open_files_limit()
    app.load()
    await app.start(defer_catch_up=True)  # missed fires: the loop's first tick, after READY=1
    scheduler, stop_event = app.scheduler, app.stop_event
    socket_file = app.socket_path
    limits = app.settings.limits
    max_connections, max_streams = fdlimit.fit_connections(limits.max_connections, limits.max_streams, open_files)
    server = UnixHttpServer(
        socket_file, app.api.handle, sock=listen_sock, max_connections=max_connections, max_streams=max_streams
    )
    await server.start()
    tasks = len(app.book)
    log.info("kairosd %s serving on %s with %d task(s)", __version__, socket_file, tasks)
    notifier.notify("READY=1", f"STATUS=serving {tasks} task(s) on {socket_file}")
    if ready is not None:
        ready.set()
    loop_task = asyncio.ensure_future(scheduler.run(stop_event))
    # Off the start's path: the JSON of each task, which listings and whole rewrites use (issue 28).
    encoding = asyncio.ensure_future(_encode_ahead(app, settled))
    stopper = asyncio.ensure_future(stop_event.wait())
    watchdog: asyncio.Future[None] | None = None
    if watchdog_s is not None:
        stale_after = STALE_AFTER_SLEEPS * scheduler.config.max_sleep_s
        watchdog = asyncio.ensure_future(watchdog_pings(notifier, lambda: scheduler.wakeups, watchdog_s, stale_after))
    try:
        await asyncio.wait({loop_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if loop_task.done() and loop_task.exception() is not None:
            log.error("the scheduler loop failed: %s", loop_task.exception())
            return 1
    finally:
        log.info("kairosd stopping")
        notifier.notify("STOPPING=1", "STATUS=stopping")
        if watchdog is not None:
            # Shutdown is bounded by TimeoutStopSec=, not by the watchdog.
            watchdog.cancel()
        app.release_waiters()
        encoding.cancel()
        await server.close()
        loop_task.cancel()
        await asyncio.gather(loop_task, encoding, return_exceptions=True)
        await app.stop()
        stopper.cancel()
    return 0


async def _encode_ahead(app: App, settled: asyncio.Event | None, after_s: float = ENCODE_AHEAD_AFTER_S) -> None:
    """Each task's JSON, once the start's first clients were served and the missed fires decided; then
    ``settled`` is set (also if cancelled)."""
    try:
        await asyncio.sleep(after_s)
        await app.scheduler.ticked.wait()
        await app.book.encode_ahead()
    finally:
        if settled is not None:
            settled.set()


def start_app(
    paths: Paths,
    clock: Clock,
    environ: Mapping[str, str],
    listen_sock: socket.socket | None,
) -> tuple[App, StoreLock]:
    """Check the folders, read the config, take the store lock and build the app; the caller
    runs it and releases the lock."""
    # Folders or files another user could change refuse the start before anything is read from them.
    trust.prepare(paths)
    # A bad config file refuses the start before anything else is touched (the file is kept).
    settings = load_config(paths, environ)
    lock = StoreLock(paths.lock, clock)
    takeover = lock.acquire()  # raises LockHeldError naming the live owner
    if takeover is not None and takeover.previous is not None:
        log.warning("took over the store lock from %s (%s)", takeover.previous.describe(), takeover.reason)
    try:
        app = build_app(
            settings, paths=paths, clock=clock, environ=environ, socket_path=socket_path(paths, listen_sock)
        )
    except BaseException:
        lock.release()
        raise
    return app, lock


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
    paths = paths or Paths.from_env()
    environ = dict(os.environ)

    async def main() -> int:
        started: list[App] = []

        def request_stop() -> None:
            # Runs on the event loop, so never before start_app (which awaits nothing) has returned.
            for app in started:
                app.request_stop()

        def request_reload() -> None:
            # SIGHUP (systemd's ExecReload=): read config.toml again, off the event loop; the result is logged.
            for app in started:
                reloads.add(loop.create_task(asyncio.to_thread(app.reload)))
                for task in list(reloads):
                    if task.done():
                        reloads.discard(task)

        reloads: set[asyncio.Task[Any]] = set()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, request_stop)
        loop.add_signal_handler(signal.SIGHUP, request_reload)
        settled = asyncio.Event()
        settle = asyncio.ensure_future(_settle_memory_when(settled))
        try:
            app, lock = start_app(paths, SystemClock(), environ, listen_sock)
            started.append(app)
            try:
                return await run(
                    app, notifier=notifier, listen_sock=listen_sock, watchdog_s=watchdog_s, settled=settled
                )
            finally:
                lock.release()
        finally:
            settle.cancel()

    try:
        return asyncio.run(main())
    finally:
        notifier.close()
        if not gc.isenabled():
            gc.enable()


# The cycle collector's thresholds once kairosd answers: a young collection every 50,000 new objects
# rather than 700, and older ones as often relative to it (20, 10) as CPython's default (10, 10) about.
# A herd of 10,000 fires makes some 100,000 short-lived records that live for its pass: at 700 they
# were swept hundreds of times and promoted to the oldest generation, whose full sweeps then walked
# the whole run history (tens of seconds over ten herds: bench/bench_herd.py). Garbage without
# cycles is freed at once whatever the thresholds; only cycles wait a little longer.
GC_THRESHOLDS = (50_000, 20, 10)


def settle_memory() -> None:
    """Turn the cycle collector on for the daemon's life: what exists now is frozen (later collections
    skip it), and collections come at :data:`GC_THRESHOLDS`."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


async def _settle_memory_when(settled: asyncio.Event) -> None:
    """Once kairosd answers and has encoded its tasks' JSON (``settled``): turn the cycle collector back
    on (``__main__`` turned it off for the start).

    What survived the start (modules, the loaded tasks, their JSON) lives as long as the
    daemon, so it is frozen: later collections skip it, and an idle daemon with
    10,000 tasks does not walk them all now and then. No collection first: it
    would walk everything (~50 ms with 10,000 tasks) just as the first clients
    are waiting, to free about a thousand start-up objects. Not before the JSON is made:
    with the collector on, the 100,000 new entries of a big store set off a full
    collection each time they grew by a quarter (1 s of 2.7 s at 300,000 tasks). See :func:`settle_memory`.
    """
    await settled.wait()
    settle_memory()
