"""``kairos export``: a task rendered as another engine's native job (systemd, Kubernetes, GitHub Actions).

    rendered = render(job, "systemd", Options(), now)     # Rendered(files, warnings), or Refused

One module per engine (:mod:`.systemd`, :mod:`.kubernetes`, :mod:`.github`),
the pieces they share in :mod:`.common`. The daemon builds each :class:`Job`
(the task and the exact command kairos would run for it, from the agent
adapter) and serves the result (:mod:`kairosd.export.api`).

The renderers are pure: no I/O, no clock.

Imports: the renderers import only :mod:`kairosd.core`; :mod:`.api` (the route) also uses api,
agents, config and the background jobs' rules (:mod:`kairosd.jobs.rules`) to build a Job.
Must not import the store, scheduling, sessions or app.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from kairosd.core.errors import UsageError
from kairosd.export.common import ENGINES, Job, Options, Refused, Rendered

__all__ = ["ENGINES", "Job", "Options", "Refused", "Rendered", "render"]


def render(job: Job, engine: str, options: Options, now: datetime) -> Rendered:
    """The engine's files for ``job``; raises :class:`Refused` for what the engine cannot express."""
    renderer = _renderer(engine)
    if renderer is None:
        raise UsageError(f"unknown export engine {engine!r} (use {', '.join(ENGINES)})")
    return renderer(job, options, now)


def _renderer(engine: str) -> Callable[[Job, Options, datetime], Rendered] | None:
    # Each renderer is imported at its first export, not while kairosd starts (about 5 ms).
    if engine == "systemd":
        from kairosd.export import systemd

        return systemd.render
    if engine == "kubernetes":
        from kairosd.export import kubernetes

        return kubernetes.render
    if engine == "github-actions":
        from kairosd.export import github

        return github.render
    return None
