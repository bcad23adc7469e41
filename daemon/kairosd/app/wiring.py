"""The composition root's wiring: :func:`build_app` makes every part of kairosd and joins them.

    app = build_app(load_config(paths, environ), paths=paths, environ=environ, socket_path=socket_path)
    app.load()          # read the tasks and the run ledgers (the only step that reads them)
    await app.start()   # the registry recovers, consolidation re-adopts, sessions and the scheduler start
    ...                 # serve app.api.handle on a socket (kairosd.app.daemon.run does, and tests do)
    await app.stop()    # the orderly shutdown, after the server closed

:func:`build_app` does no I/O: no socket is bound and no file is read (the background job
registry makes its folder, which constructing it needs). The process around it (the store
lock, sockets, signals, systemd) is :mod:`kairosd.app.daemon`'s. Tests build the same app with
fakes in place of the store and of delivery targets.

One :class:`~kairosd.config.Config` holds every setting, the file's and the environment's
(:func:`kairosd.config.load_config` is the one place either is read); ``environ`` is only the
environment handed on to what kairosd runs, and the zone (``TZ``).

This is the only module that knows every concrete class.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairosd.api.router import Routes, on_first_request
from kairosd.app.api import doctor_routes, reload_routes
from kairosd.app.reload import LiveSettings
from kairosd.app.reload import reload as reload_config
from kairosd.config import Config
from kairosd.consolidation.wiring import ConsolidationParts, build_consolidation
from kairosd.core.clock import Clock, SystemClock, local_zone_name, tz_env_problem
from kairosd.core.events import EventBus
from kairosd.core.records import InboxItem
from kairosd.delivery.base import Delivery
from kairosd.delivery.inbox import InboxDelivery
from kairosd.delivery.shell import ShellDelivery
from kairosd.delivery.webhook import WebhookDelivery
from kairosd.jobs.registry import AdapterFor, AgentPolicy, PolicyFor
from kairosd.jobs.wiring import RegistryParts, build_registry
from kairosd.scheduling.api import Api, quarantine_routes
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
from kairosd.scheduling.service import Service
from kairosd.scheduling.settle import settle_written_items
from kairosd.scheduling.taskbook import TaskBook
from kairosd.sessions.routing import Waker
from kairosd.sessions.wiring import SessionParts, build_sessions
from kairosd.store.inbox import InboxStore
from kairosd.store.store import JsonStore, Store
from kairosd.system.paths import Paths

if TYPE_CHECKING:
    from kairosd.agents.base import AgentAdapter

log = logging.getLogger("kairosd")

SHUTDOWN_GRACE_S = 10.0


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


def _wakers(settings: Config, environ: Mapping[str, str]) -> dict[str, Waker]:
    """Idle wake that kairosd does itself at fire time: Codex through ``codex queue`` (unless
    ``[agents.codex]`` has ``enabled = false`` or ``idle_wake = false``)."""
    codex = settings.agents.codex
    if not (codex.enabled and codex.idle_wake):
        return {}
    from kairosd.agents.codexqueue import CodexQueue

    return {"codex": CodexQueue(codex.binary or "codex", {**environ, **codex.env})}


@dataclass
class App:
    """kairosd's parts, wired; :attr:`api` is what a socket server serves."""

    settings: Config
    paths: Paths
    socket_path: Path
    environ: Mapping[str, str]  # what runs inherit; a reload reads the config with it, as the start did
    store: Store
    book: TaskBook
    ledger: RunLedger
    missed: MissedLedger
    events: EventBus
    inbox: InboxStore
    deliveries: dict[str, Delivery]
    background: RegistryParts
    consolidation: ConsolidationParts
    sessions: SessionParts
    scheduler: Scheduler
    service: Service
    api: Api
    stop_event: asyncio.Event
    live: LiveSettings

    def reload(self) -> dict[str, Any]:
        """Read config.toml again and apply what can change live (SIGHUP, ``kairos daemon reload``)."""
        return reload_config(self.live, self.paths, self.environ)

    def request_stop(self) -> None:
        """What ``POST /v1/shutdown``, SIGTERM and SIGINT do: the run ends, in order."""
        self.stop_event.set()

    def load(self) -> None:
        """Read what the store and the ledgers hold (refusing a corrupt or newer store).

        Runs a crash left in flight become failed "interrupted" runs, except inbox runs whose item
        was written: those are delivered (:mod:`kairosd.scheduling.settle`). Run logs of runs the
        history no longer has are deleted.
        """
        self.book.load()
        interrupted = self.ledger.load()
        delivered = {run.run_id for run in settle_written_items(self.ledger, self.inbox, interrupted)}
        for run in interrupted:
            if run.run_id in delivered:
                log.info("run %s of task %s was delivered before a previous stop", run.run_id, run.task_id)
            else:
                log.warning("run %s of task %s was interrupted by a previous stop", run.run_id, run.task_id)
        self.missed.load()
        shell = self.deliveries.get("shell")
        if isinstance(shell, ShellDelivery):  # not a test's fake
            shell.sweep(self.ledger.knows)

    async def start(self, defer_catch_up: bool = False) -> None:
        """Start the parts, after :meth:`load`. Catch-up fires happen here, before anything is served,
        unless ``defer_catch_up``: then the scheduler loop's first tick handles them (the daemon does
        that, so it is ready, and says so, before any catch-up work)."""
        if self.scheduler.config.disabled_reason:
            log.warning("%s", self.scheduler.config.disabled_reason)
        # The registry first: catch-up fires at start-up may start agent runs.
        await self.background.start()
        await self.consolidation.start()  # settles or re-adopts runs a previous kairosd left
        await self.sessions.start()  # after the ledger is loaded: pending session runs are matched to items
        await self.scheduler.start(defer_catch_up)

    def release_waiters(self) -> None:
        """The first step of a shutdown, before the server closes: long polls and event streams end."""
        self.stop_event.set()
        self.events.close()

    async def stop(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """Stop the parts, after the server closed: let deliveries finish (``grace_s``), write the store."""
        self.release_waiters()
        await self.consolidation.stop()  # stops watching; detached workers keep running
        # Running agent turns end as "interrupted" at once rather than sit out the drain.
        await self.background.stop()
        await self.scheduler.shutdown(grace_s)
        await self.sessions.stop()
        self.book.commit_sync()


def build_app(
    settings: Config,
    *,
    paths: Paths | None = None,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    socket_path: Path | None = None,
    store: Store | None = None,
    deliveries: Mapping[str, Delivery] | None = None,
    adapter_for: AdapterFor | None = None,
    policy_for: PolicyFor | None = None,
) -> App:
    """Make and wire every part of kairosd from ``settings``; nothing is read, started or bound.

    The seams: ``paths`` (default: from ``environ``), ``clock`` (the system's), ``environ``
    (default ``os.environ``: what runs inherit, and the zone), ``socket_path`` (what ``/v1/status``
    reports; default ``paths.socket``). For tests: ``store`` (default: the JSON file at
    ``paths.store``) and ``deliveries`` (targets by name, in place of the real ones).
    ``adapter_for`` (an agent CLI's adapter) and ``policy_for`` (what a run of a named agent may
    do) are the agents the registry and export know; by default the configured CLIs and the agent
    definitions (``settings``).
    """
    environ = os.environ if environ is None else environ
    paths = paths or Paths.from_env(dict(environ))
    clock = clock or SystemClock()
    socket_path = socket_path or paths.socket
    live = LiveSettings(settings)
    # Agent CLIs and definitions are looked up at each run in the settings in effect, so a reload applies them.
    adapter_for = adapter_for or (lambda cli: _adapter(cli, live.current))
    policy_for = policy_for or (lambda name, cwd: agent_policy(live.current, name, cwd))
    default_tz = local_zone_name(dict(environ))
    zone_problem = tz_env_problem(dict(environ))
    if zone_problem:
        log.warning("%s", zone_problem)
    json_store: JsonStore | None = None
    if store is None:
        store = json_store = JsonStore(paths.store, clock, local_zone=default_tz)
    book = TaskBook(store)
    shell = ShellDelivery(
        paths.data_dir / "runs",
        clock,
        kill_grace_s=settings.limits.kill_grace,
        max_output=settings.limits.max_output,
    )
    # A run's output log goes when the run history lets the run go.
    ledger = RunLedger(
        paths.state_dir / "runs.jsonl", clock, keep_per_task=settings.limits.runs_per_task, on_evict=shell.forget_runs
    )
    missed = MissedLedger(paths.state_dir / "missed.jsonl", clock)
    events = EventBus(clock.now)
    inbox = InboxStore(paths.data_dir / "inbox", clock)
    stop_event = asyncio.Event()

    def on_item(item: InboxItem) -> None:
        if events.subscribers:  # else nobody to tell: the dump was 10,000 for nothing after a long stop
            events.publish("inbox_item", session=item.session, item=item.model_dump(mode="json"))

    background = build_registry(
        paths,
        clock,
        events,
        settings.limits,
        adapter_for,
        settings.hooks.as_specs(),
        policy_for=policy_for,
        environ=environ,
    )
    consolidation = build_consolidation(
        paths, clock, events, background.registry, settings.consolidation, environ=environ, zone=default_tz
    )
    targets: dict[str, Delivery] = {
        "inbox": InboxDelivery(inbox, clock, on_item),
        "shell": shell,
        "webhook": WebhookDelivery.from_config(settings.webhook, clock),
        **background.deliveries,
    }
    sessions = build_sessions(
        paths, clock, events, ledger, targets, default_tz=default_tz, closing=stop_event,
        max_sessions=settings.limits.max_sessions,
        ttl=timedelta(seconds=settings.limits.session_ttl),
        wakers=_wakers(settings, environ),
    )  # fmt: skip
    targets.update(sessions.deliveries)  # before the scheduler copies the dict
    targets.update(deliveries or {})  # a test's fakes; the session hub sees this dict too
    scheduler_config = SchedulerConfig(
        disabled_reason=settings.firing_disabled,
        max_concurrent=settings.limits.max_concurrent,
    )
    scheduler = Scheduler(book, ledger, missed, targets, clock, events, scheduler_config, compacting=[inbox])
    extra_status = {
        "background": background.registry.status,
        "sessions": sessions.status,
        "consolidation": consolidation.service.status,
    }
    if json_store is not None:
        extra_status["quarantine"] = json_store.quarantine.status
    service = Service(
        scheduler,
        inbox,
        clock,
        events,
        default_tz,
        info={"socket": str(socket_path), "store": str(paths.store)},
        extra_status=extra_status,
        remove_logs=shell.remove_task_logs,
    )
    api = Api(service, stop_event.set)
    api.add_routes(background.routes)
    api.add_routes(consolidation.routes)  # it serves POST /v1/consolidate; the sessions' routes leave it out
    api.add_routes(sessions.routes)
    sessions.hub.context_board_for = consolidation.context_for_session  # SessionStart additional context
    api.add_routes(doctor_routes(live, paths, environ))
    if json_store is not None:
        api.add_routes(quarantine_routes(json_store.quarantine))
    turn_timeout_s = background.registry.limits.turn_timeout_s

    def exporting() -> Routes:
        # Loaded at the first POST /v1/export: the renderers are not needed to start (docs/performance.md).
        from kairosd.export.api import Exporter, export_routes

        return export_routes(Exporter(lambda: book, adapter_for, policy_for, turn_timeout_s, clock.now, environ))

    api.add_routes(on_first_request({"export": ["POST"]}, exporting))
    live.appliers.extend(_appliers(background, consolidation, targets))
    app = App(
        settings, paths, socket_path, environ, store, book, ledger, missed, events, inbox, targets, background,
        consolidation, sessions, scheduler, service, api, stop_event, live,
    )  # fmt: skip
    api.add_routes(reload_routes(app.reload))
    return app


def _appliers(
    background: RegistryParts, consolidation: ConsolidationParts, targets: Mapping[str, Delivery]
) -> list[Callable[[Config], None]]:
    """How each part takes new settings on a reload (see :mod:`kairosd.app.reload` for what is live)."""
    registry = background.registry

    def limits(new: Config) -> None:
        registry.limits = dataclasses.replace(
            registry.limits, max_depth=new.limits.max_depth, keep_finished=new.limits.keep_finished
        )

    def webhook(new: Config) -> None:
        delivery = targets.get("webhook")
        if isinstance(delivery, WebhookDelivery):
            delivery.reconfigure(new.webhook)

    def consolidation_settings(new: Config) -> None:
        consolidation.service.deps.config = new.consolidation

    return [limits, webhook, consolidation_settings, lambda new: background.hooks.reconfigure(new.hooks.as_specs())]
