"""The router: a method and path served twice is refused when routes are wired, not shadowed silently."""

from __future__ import annotations

from typing import Any

import pytest

from kairosd.scheduling.api import Api
from kairosd.sessions.api import session_routes


async def _handler(*_: Any) -> Any:  # never called: only the table is under test
    raise AssertionError


def test_a_route_registered_twice_is_refused():
    api = Api(service=None, on_shutdown=lambda: None)  # type: ignore[arg-type]
    api.add_routes([("/consolidate", {"POST": _handler})])
    with pytest.raises(ValueError, match="POST /v1/consolidate is registered twice"):
        api.add_routes([("/consolidate", {"POST": _handler, "GET": _handler})])
    api.add_routes([("/consolidate/runs", {"GET": _handler})])  # another path is fine
    with pytest.raises(ValueError, match="GET /v1/status is registered twice"):
        api.add_routes([("/status", {"GET": _handler})])  # the core routes count too


def test_sessions_leave_consolidate_to_the_consolidation_service():
    """Both used to register POST /v1/consolidate; the first match won and the other was dead code."""
    paths = [p for p, _ in session_routes(hub=None, consolidate=False)]  # type: ignore[arg-type]
    assert "/consolidate" not in paths
    assert "/consolidate" in [p for p, _ in session_routes(hub=None)]  # type: ignore[arg-type]
