"""Targets that would fail at every fire are refused when the task is added (issue 15, items 6 and 11).

Each check lives in the delivery that knows the target (``Delivery.check``), which
the scheduler asks for a new task only: a stored task whose agent disappears keeps
its other fires.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, run
from session_support import Kairosd, remove_home, short_home

from kairosd.core.errors import UsageError
from kairosd.core.models import ShellTarget, WebhookTarget
from kairosd.delivery.webhook import WebhookDelivery
from kairosd.registry.registry import StartSpec
from kairosd.testing import FakeClock


def test_an_agent_whose_cli_is_missing_is_refused_at_task_start(tmp_path):
    """kairos task start --agent claude with no claude installed: refused at once, naming what doctor knows."""
    adapter = FakeAdapter(tmp_path / "no-such-claude", name="claude")

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        with pytest.raises(UsageError, match=r"claude is not installed .*no-such-claude not found .*kairos doctor"):
            await reg.start(StartSpec(agent="claude", prompt="hi"))
        assert reg.list_tasks() == []
        await reg.stop()

    run(main())


def test_an_agent_on_path_is_found(tmp_path):
    binary = fake_agent(tmp_path)
    adapter = FakeAdapter(Path(binary.name), name="fake")  # a bare name, looked up on PATH

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        reg._environ = {"PATH": str(tmp_path)}
        await reg.check_agent("fake", None)
        reg._environ = {"PATH": "/nonexistent"}
        with pytest.raises(UsageError, match="not found on kairosd's PATH"):
            await reg.check_agent("fake", None)
        await reg.stop()

    run(main())


@pytest.fixture
def kd_agents(tmp_path):
    """A kairosd whose registry knows 'claude' (not installed) and 'fake' (installed)."""
    home = short_home()
    missing = FakeAdapter(tmp_path / "no-such-claude", name="claude")
    present = FakeAdapter(fake_agent(tmp_path), name="fake")
    daemon = Kairosd(home).start(agents=[missing, present])
    try:
        yield daemon
    finally:
        daemon.stop()
        remove_home(home)


def _add(kd: Kairosd, target: dict[str, object]) -> dict[str, object]:
    return kd.run(kd.service.add({"prompt": "p", "cron": "0 4 * * *", "tz": "UTC", "target": target}))


def test_add_refuses_an_agent_target_whose_cli_is_missing(kd_agents):
    with pytest.raises(UsageError, match="agent target: claude is not installed"):
        _add(kd_agents, {"kind": "agent", "agent": "claude"})
    assert kd_agents.call(kd_agents.service.list_tasks) == []
    assert _add(kd_agents, {"kind": "agent", "agent": "fake"})["id"]


def test_add_refuses_a_missing_cwd(kd_agents, tmp_path):
    with pytest.raises(UsageError, match="working directory does not exist: /nonexistent"):
        _add(kd_agents, {"kind": "agent", "agent": "fake", "cwd": "/nonexistent"})
    _add(kd_agents, {"kind": "agent", "agent": "fake", "cwd": str(tmp_path)})


def test_add_refuses_headless_fallback_without_an_agent(kd_agents):
    with pytest.raises(UsageError, match="--fallback headless needs an agent"):
        _add(kd_agents, {"kind": "session", "user": True, "fallback": "headless"})
    with pytest.raises(UsageError, match="claude is not installed"):
        _add(kd_agents, {"kind": "session", "user": True, "agent": "claude", "fallback": "headless"})
    _add(kd_agents, {"kind": "session", "user": True, "agent": "fake", "fallback": "headless"})
    _add(kd_agents, {"kind": "session", "session_id": "s1", "fallback": "headless"})  # the session's own agent


def test_a_stored_task_whose_agent_disappears_keeps_firing(kd_agents, tmp_path):
    """The check is for new tasks: a stored agent task whose CLI went away still fires (and fails, saying why)."""
    kd = kd_agents
    task_id = str(_add(kd, {"kind": "agent", "agent": "fake"})["id"])
    kd.registry._adapter_for = {"fake": FakeAdapter(tmp_path / "gone", name="fake")}.__getitem__  # type: ignore[assignment]
    run_id = kd.fire(task_id)
    record = kd.run_record(run_id)
    assert record.outcome is not None
    assert record.outcome.value == "failed"
    assert "fake is not installed" in str(record.reason)
    assert kd.call(kd.service.list_tasks)[0]["id"] == task_id


def test_add_refuses_a_missing_shell_cwd():
    from kairosd.delivery.shell import ShellDelivery

    shell = ShellDelivery(Path("/nonexistent-runs"), FakeClock())
    with pytest.raises(UsageError, match="shell target: working directory does not exist: /nonexistent"):
        asyncio.run(shell.check(ShellTarget(argv=["true"], cwd="/nonexistent")))
    asyncio.run(shell.check(ShellTarget(argv=["true"], cwd="/")))


async def _resolve(host: str, port: int) -> list[str]:
    return {"example.com": ["93.184.215.14"], "localhost": ["127.0.0.1", "::1"]}[host]


@pytest.mark.parametrize(
    ("secret", "allow", "url", "refusal"),
    [
        (None, False, "http://127.0.0.1:8765/k", "no webhook key"),
        (None, True, "http://example.com/", "no webhook key"),
        (b"k", False, "http://example.com/", "example.com resolves to 93.184.215.14, not a loopback address"),
        (b"k", False, "http://localhost:8765/", None),
        (b"k", True, "http://example.com/", None),
    ],
)
def test_webhook_targets_that_would_fail_are_refused(secret, allow, url, refusal):
    hook = WebhookDelivery(FakeClock(), secret=secret, allow_non_loopback=allow, resolve=_resolve)
    check = hook.check(WebhookTarget(url=url))
    if refusal is None:
        asyncio.run(check)
    else:
        with pytest.raises(UsageError, match=refusal):
            asyncio.run(check)
