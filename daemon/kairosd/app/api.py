"""The routes the composition root serves itself: ``GET /v1/doctor`` and ``POST /v1/reload``.

As in every other package, routes are built only in its api module (a test checks that). The doctor's
module is imported at the first ``GET /v1/doctor``: a start does not need it (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from kairosd.api.router import RouteHandler
from kairosd.api.server import Request, Response
from kairosd.app.reload import LiveSettings
from kairosd.core.wire.daemon import ReloadAnswer
from kairosd.system.paths import Paths


def doctor_routes(
    live: LiveSettings, paths: Paths | None = None, environ: Mapping[str, str] | None = None
) -> list[tuple[str, dict[str, RouteHandler]]]:
    """``GET /v1/doctor`` for :meth:`kairosd.api.router.Router.add_routes` (the report, from the daemon's side).

    The report shows the settings in effect (``live``), and whether config.toml, read with kairosd's
    ``paths`` and ``environ`` (default: from the process's environment), still says the same.
    """
    env = os.environ if environ is None else environ
    where = paths or Paths.from_env(dict(env))

    def report() -> dict[str, Any]:
        from kairosd.app.doctor import doctor_report, in_effect

        found = doctor_report(live.current, env)
        return {**found, **in_effect(live, found, where, env)}

    async def get(req: Request, m: re.Match[str]) -> Response:
        # Probing binaries takes seconds; keep the event loop free meanwhile.
        found = await asyncio.to_thread(report)
        from kairosd.core.wire.doctor import DoctorAnswer  # with the doctor: at its first request

        return Response(200, DoctorAnswer.model_validate({"doctor": {**found, "checked_by": "kairosd"}}))

    return [("doctor", {"GET": get})]


def reload_routes(reload: Callable[[], dict[str, Any]]) -> list[tuple[str, dict[str, RouteHandler]]]:
    """``POST /v1/reload``: what the reload did (``ok``, ``error``, ``applied``, ``needs_restart``)."""

    async def post(req: Request, m: re.Match[str]) -> Response:
        # Reading and checking the file is blocking I/O; keep the event loop free meanwhile.
        return Response(200, ReloadAnswer.model_validate({"reload": await asyncio.to_thread(reload)}))

    return [("reload", {"POST": post})]
