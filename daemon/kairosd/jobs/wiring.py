"""What the composition root calls to add the background job registry to kairosd.

    parts = build_registry(paths, clock, events, config.limits, adapter_for, hooks, ...)
    deliveries.update(parts.deliveries)     # before the Scheduler is built: the "agent" target
    await parts.start()                     # before the scheduler starts: recover, then hooks listen
    api.add_routes(parts.routes)
    ...
    await parts.stop()                      # at shutdown, after the server closed, before scheduler.shutdown

Files: records in ``<state dir>/registry/<id>.json``, logs in ``<data dir>/tasks/<id>.log``.

Must not import the scheduler, the store, the server's internals or the daemon module.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from kairosd.api.router import RouteHandler
from kairosd.config import Limits
from kairosd.core.clock import Clock
from kairosd.core.events import EventBus
from kairosd.delivery.base import Delivery
from kairosd.jobs.api import registry_routes
from kairosd.jobs.delivery import AgentDelivery
from kairosd.jobs.limits import RegistryLimits
from kairosd.jobs.model import view
from kairosd.jobs.persist import RecordStore
from kairosd.jobs.registry import AdapterFor, PolicyFor, Registry
from kairosd.system.lifecycle import HookConfig, LifecycleHooks
from kairosd.system.paths import Paths

log = logging.getLogger(__name__)


class RegistryParts(NamedTuple):
    registry: Registry
    routes: list[tuple[str, dict[str, RouteHandler]]]
    deliveries: dict[str, Delivery]
    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]
    hooks: LifecycleHooks


def build_registry(
    paths: Paths,
    clock: Clock,
    events: EventBus,
    config_limits: Limits | None,
    adapter_for: AdapterFor,
    hooks: HookConfig,
    *,
    policy_for: PolicyFor | None = None,
    environ: Mapping[str, str] | None = None,
) -> RegistryParts:
    """Build the registry, its routes, the ``agent`` delivery target and the lifecycle hooks.

    ``config_limits`` is the loaded config's ``[limits]`` (the environment already
    applied by the config loader); None means the defaults. ``hooks`` maps an event
    name to ``(argv, timeout_s)`` or a list of them. ``policy_for`` gives an agent's
    configured permission ceiling and default turn timeout. Raises ValueError for a
    bad hook, before anything runs.
    """
    limits = RegistryLimits.from_config(config_limits)
    registry = Registry(
        RecordStore(paths.state_dir / "registry"),
        paths.data_dir / "tasks",
        clock,
        events,
        adapter_for,
        limits,
        environ=environ,
        policy_for=policy_for,
    )

    def lookup(task_id: str) -> dict[str, Any] | None:
        try:
            return view(registry.get(task_id), turns=False)
        except LookupError:
            return None

    lifecycle = LifecycleHooks(events, hooks, environ=environ, lookup=lookup, kill_grace_s=limits.kill_grace_s)

    async def start() -> None:
        lifecycle.start()  # first: hooks hear everything the registry publishes from here on
        interrupted = await registry.recover()
        if interrupted:
            log.warning("%d background job(s) were interrupted by the previous stop", len(interrupted))
        log.info(
            "background job registry: %d record(s), at most %d running, depth limit %d, hooks for %s",
            len(registry.list_tasks()),
            limits.max_concurrent,
            limits.max_depth,
            ", ".join(lifecycle.configured) or "no events",
        )

    async def stop() -> None:
        await registry.stop()
        await lifecycle.stop()

    deliveries: dict[str, Delivery] = {"agent": AgentDelivery(registry, clock)}
    return RegistryParts(registry, registry_routes(registry), deliveries, start, stop, lifecycle)
