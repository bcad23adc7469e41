"""Issue 24, item 8: config.toml is read again on SIGHUP and ``kairos daemon reload``; what can change
live is applied, the rest is named as needing a restart, and ``doctor`` says when the file and the
settings in effect differ."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths_support import REPO
from scheduler_support import T0

from kairosd.api.http_types import compact_json
from kairosd.api.server import Request
from kairosd.app.api import doctor_routes
from kairosd.app.wiring import App, build_app
from kairosd.config import load_config
from kairosd.delivery.webhook import WebhookDelivery
from kairosd.store.store import StoreState
from kairosd.system.paths import Paths
from kairosd.testing import FakeClock, InMemoryStore

FIRST = """
[limits]
max_depth = 5
max_concurrent = 4

[consolidation]
enabled = false
min_interval_minutes = 10

[webhook]
timeout = "30s"
"""


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="kr"))
    monkeypatch.setenv("KAIROS_HOME", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _app(home: Path) -> tuple[App, Path]:
    paths = Paths.from_env()
    for folder in (paths.state_dir, paths.runtime_dir, paths.data_dir, paths.config_dir):
        folder.mkdir(parents=True, exist_ok=True)
    config = paths.config_dir / "config.toml"
    config.write_text(FIRST)
    environ = {"TZ": "UTC", "KAIROS_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    app = build_app(
        load_config(paths, environ),
        paths=paths,
        clock=FakeClock(T0),
        environ=environ,
        store=InMemoryStore(StoreState.empty()),
    )
    return app, config


def _doctor(app: App) -> dict:
    ((_, methods),) = doctor_routes(app.live, app.paths, app.environ)
    request = Request(method="GET", path="/v1/doctor", query={}, body=None, peer_uid=os.getuid())
    response = asyncio.run(methods["GET"](request, re.fullmatch("x", "x")))  # type: ignore[arg-type]
    return json.loads(compact_json(response.body))["doctor"]


def test_reload_applies_live_settings_and_names_the_rest(home: Path) -> None:
    app, config = _app(home)
    assert _doctor(app)["config"]["differs"] == []
    config.write_text(
        FIRST.replace("max_depth = 5", "max_depth = 2")
        .replace("max_concurrent = 4", "max_concurrent = 8")
        .replace("min_interval_minutes = 10", "min_interval_minutes = 1")
        .replace('timeout = "30s"', 'timeout = "5s"')
    )
    # Before the reload, doctor says the file is not what is in effect (it used to say "ok").
    stale = _doctor(app)
    assert not stale["ok"]
    assert "limits.max_depth" in stale["config"]["differs"]
    assert any("kairos daemon reload" in p for p in stale["problems"])

    async def reload() -> dict:
        return app.reload()

    result = asyncio.run(reload())
    assert result["ok"]
    assert result["applied"] == ["consolidation.min_interval_minutes", "limits.max_depth", "webhook.timeout"]
    assert result["needs_restart"] == ["limits.max_concurrent"]
    assert app.background.registry.limits.max_depth == 2
    assert app.consolidation.service.deps.config.min_interval_minutes == 1
    webhook = app.deliveries["webhook"]
    assert isinstance(webhook, WebhookDelivery)
    assert webhook._timeout_s == 5.0
    assert app.live.current.limits.max_concurrent == 4  # still in effect: sized at start
    after = _doctor(app)
    assert after["config"]["needs_restart"] == ["limits.max_concurrent"]
    assert [p for p in after["problems"] if "restart" in p]
    assert not [p for p in after["problems"] if "kairos daemon reload" in p]


def test_a_config_that_does_not_load_changes_nothing(home: Path) -> None:
    app, config = _app(home)
    config.write_text(FIRST.replace("max_depth = 5", "max_depth = 500"))
    result = app.reload()
    assert not result["ok"]
    assert "max_depth" in result["error"]
    assert app.background.registry.limits.max_depth == 5


def test_the_unit_reloads_with_sighup() -> None:
    unit = (REPO / "systemd" / "kairosd.service").read_text()
    assert "ExecReload=/bin/kill -HUP $MAINPID" in unit  # kairosd's SIGHUP: see test_e2e (reload)


def test_codex_idle_wake_is_named_as_needing_a_restart() -> None:
    from kairosd.app.reload import is_live

    assert is_live("agents.codex.model")
    assert not is_live("agents.codex.idle_wake")
    assert not is_live("limits.max_concurrent")


def test_limits_sized_at_start_stay_in_effect_beside_a_live_change(home: Path) -> None:
    """The run history's length, the sessions' expiry and the output cap are set at start: a reload that
    applies something else must not show them as in effect, and names them as needing a restart."""
    app, config = _app(home)
    config.write_text(
        FIRST.replace("max_depth = 5", 'max_depth = 2\nruns_per_task = 7\nsession_ttl = "2h"\nmax_output = "4KiB"')
    )
    result = app.reload()
    assert result["applied"] == ["limits.max_depth"]
    assert result["needs_restart"] == ["limits.max_output", "limits.runs_per_task", "limits.session_ttl"]
    limits = app.live.current.limits
    assert (limits.runs_per_task, limits.session_ttl, limits.max_output) == (50, 86400.0, 1 << 20)
