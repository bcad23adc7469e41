"""What the composition root calls to add memory consolidation and the context board to kairosd.

    consolidation = build_consolidation(paths, clock, events, background.registry,
                                        user_config.consolidation, environ=environ, zone=default_tz)
    await background.start()                 # the registry recovers first
    await consolidation.start()              # then settles or re-adopts runs left by the last kairosd
    api.add_routes(consolidation.routes)     # it serves POST /v1/consolidate (build_sessions leaves it out)
    sessions.hub.context_board_for = consolidation.context_for_session   # SessionStart's context
    ...
    await consolidation.stop()               # at shutdown, before background.stop(); workers go on

Files: boards in ``<data dir>/boards/``, run requests and results in
``<state dir>/consolidation/runs/``, decisions in ``<state dir>/consolidation/requests.jsonl``,
worker logs are the task logs (``<data dir>/tasks/<id>.log``).

Must not import the scheduler, the store, the server's internals or the daemon module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from kairosd.api.router import RouteHandler
from kairosd.config import ConsolidationConfig
from kairosd.consolidation.api import consolidation_routes
from kairosd.consolidation.runs import ConsolidationDeps
from kairosd.consolidation.service import Consolidation
from kairosd.core.clock import Clock
from kairosd.core.events import EventBus
from kairosd.jobs.registry import Registry
from kairosd.system.paths import Paths


class ConsolidationParts(NamedTuple):
    service: Consolidation
    routes: list[tuple[str, dict[str, RouteHandler]]]
    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]
    # SessionStart's additional context for a session in ``cwd``: the board, rendered; None if empty.
    board_context: Callable[[str | None], str | None]
    # The same for the session hub's hook point (``SessionHub.context_board_for``): takes the session.
    context_for_session: Callable[[Any], Awaitable[str | None]]


def build_consolidation(
    paths: Paths,
    clock: Clock,
    events: EventBus,
    registry: Registry,
    config: ConsolidationConfig,
    *,
    environ: Mapping[str, str],
    zone: str = "UTC",
    python: str | None = None,
) -> ConsolidationParts:
    """Build the consolidation service, its routes and its hook points. ``python``: the
    interpreter for the worker (default: kairosd's own)."""
    service = Consolidation(ConsolidationDeps(paths, clock, events, registry, config, environ, zone, python))

    async def context_for_session(session: Any) -> str | None:
        cwd = getattr(session, "cwd", None)
        return await asyncio.to_thread(service.board_context, cwd if isinstance(cwd, str) else None)

    return ConsolidationParts(
        service,
        consolidation_routes(service),
        service.start,
        service.stop,
        service.board_context,
        context_for_session,
    )
