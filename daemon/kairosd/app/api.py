"""The routes the composition root serves itself: ``GET /v1/doctor``.

As in every other package, routes are built only in its api module (a test checks that).
"""

from __future__ import annotations

import asyncio
import re

from kairosd.api.router import RouteHandler
from kairosd.api.server import Request, Response
from kairosd.app.doctor import doctor_report
from kairosd.config import Config


def doctor_routes(config: Config) -> list[tuple[str, dict[str, RouteHandler]]]:
    """``GET /v1/doctor`` for :meth:`kairosd.api.router.Router.add_routes` (the report, from the daemon's side)."""

    async def get(req: Request, m: re.Match[str]) -> Response:
        # Probing binaries takes seconds; keep the event loop free meanwhile.
        report = await asyncio.to_thread(doctor_report, config)
        return Response(200, {"doctor": {**report, "checked_by": "kairosd"}})

    return [("doctor", {"GET": get})]
