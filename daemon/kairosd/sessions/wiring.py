"""What the composition root calls to add live sessions and hooks to kairosd.

    sessions = build_sessions(paths, clock, events, ledger, deliveries, default_tz=default_tz,
                              closing=stop_event, ttl=timedelta(seconds=config.limits.session_ttl))
    deliveries.update(sessions.deliveries)   # before the Scheduler is built: the "session" target
    await sessions.start()                   # after the ledger is loaded, before scheduler.start()
    api.add_routes(sessions.routes)
    Service(..., extra_status={..., "sessions": sessions.status})
    ...
    await sessions.stop()                    # at shutdown, after scheduler.shutdown()

``deliveries`` is the composition root's own dict: the session target's
fallbacks look up ``inbox`` and (for ``headless``) ``agent`` in it when they run,
so the background job registry may be added to it before or after this call.
``closing`` is the event the daemon sets as it begins to stop: long-polling
waiters return at once, so closing the server does not wait on them.

Files: ``<state dir>/sessions.json``. ``ttl`` (``[limits] session_ttl`` or
``KAIROS_SESSION_TTL``, read by :func:`kairosd.config.load_config`; default 24 h) is how long a
session may go unseen before it expires.

Must not import the scheduler, the store, the server's internals or the daemon module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, NamedTuple

from kairosd.api.router import RouteHandler
from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.events import EventBus
from kairosd.delivery.base import Delivery
from kairosd.scheduling.ledger import RunLedger
from kairosd.sessions.api import session_routes
from kairosd.sessions.delivery import SessionDelivery
from kairosd.sessions.hub import SessionHub
from kairosd.sessions.routing import Waker
from kairosd.sessions.store import DEFAULT_TTL, SessionStore
from kairosd.system.paths import Paths

__all__ = ["SESSIONS_FILE", "SessionParts", "build_sessions"]

log = logging.getLogger(__name__)

SESSIONS_FILE = "sessions.json"


class SessionParts(NamedTuple):
    store: SessionStore
    hub: SessionHub
    routes: list[tuple[str, dict[str, RouteHandler]]]
    deliveries: dict[str, Delivery]
    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]
    status: Callable[[], dict[str, Any]]  # for Service(extra_status={"sessions": ...})


def build_sessions(
    paths: Paths,
    clock: Clock,
    events: EventBus,
    ledger: RunLedger,
    deliveries: Mapping[str, Delivery],
    *,
    default_tz: str = "UTC",
    closing: asyncio.Event | None = None,
    ttl: timedelta = DEFAULT_TTL,
    queue_limit: int = 10,
    max_sessions: int = defaults.MAX_SESSIONS,
    wakers: Mapping[str, Waker] | None = None,
) -> SessionParts:
    """Build the session store, the hub, the ``session`` delivery target and the routes."""
    store = SessionStore(paths.state_dir / SESSIONS_FILE, clock, ttl, max_sessions)
    hub = SessionHub(store, ledger, events, clock, deliveries, zone=default_tz, queue_limit=queue_limit, wakers=wakers)
    background: list[asyncio.Task[None]] = []

    async def watch_closing() -> None:
        assert closing is not None
        await closing.wait()
        hub.close_waiters()

    async def start() -> None:
        await hub.start()
        background.append(asyncio.ensure_future(hub.sweep_forever()))
        if closing is not None:
            background.append(asyncio.ensure_future(watch_closing()))

    async def stop() -> None:
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        background.clear()
        try:
            await hub.stop()
        except OSError as exc:
            log.error("could not write %s at shutdown: %s", store.path, exc)

    delivery = SessionDelivery(hub, deliveries)
    routes = session_routes(hub)
    return SessionParts(store, hub, routes, {"session": delivery}, start, stop, hub.status)
