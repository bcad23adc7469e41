"""``kairos export``: a task rendered as another engine's native job (systemd, Kubernetes, GitHub Actions).

    rendered = render(job, "systemd", Options(), now)     # Rendered(files, warnings), or Refused

One module per engine (:mod:`.systemd`, :mod:`.kubernetes`, :mod:`.github`),
the pieces they share in :mod:`.common`. The daemon builds each :class:`Job`
(the task and the exact command kairos would run for it, from the agent
adapter) and serves the result (:mod:`kairosd.export.api`).

The renderers are pure: no I/O, no clock.

Imports: the renderers import only :mod:`kairosd.core`; :mod:`.api` (the route) also uses api,
agents, config and the registry's rules to build a Job. Must not import the store, scheduling,
sessions or app.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from kairosd.core.errors import UsageError
from kairosd.export.common import ENGINES, Job, Options, Refused, Rendered

__all__ = ["ENGINES", "Job", "Options", "Refused", "Rendered", "render"]


def render(job: Job, engine: str, options: Options, now: datetime) -> Rendered:
    """The engine's files for ``job``; raises :class:`Refused` for what the engine cannot express."""
    # On the first export, not at the daemon's start: the renderers cost ~4 ms of it (issue 16).
    from kairosd.export import github, kubernetes, systemd

    renderers: dict[str, Callable[[Job, Options, datetime], Rendered]] = {
        "systemd": systemd.render,
        "kubernetes": kubernetes.render,
        "github-actions": github.render,
    }
    renderer = renderers.get(engine)
    if renderer is None:
        raise UsageError(f"unknown export engine {engine!r} (use {', '.join(ENGINES)})")
    return renderer(job, options, now)
