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
from kairosd.jobs.registry import StartSpec
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


# ---- issue 24, item 7: a --cmd not on the PATH and a webhook host that does not resolve ----------


def _shell_check(tmp_path: Path, target: ShellTarget, path: str, skip: bool = False) -> None:
    from kairosd.delivery.base import SKIP_LATER_CHECKS
    from kairosd.delivery.shell import ShellDelivery

    shell = ShellDelivery(tmp_path / "runs", FakeClock(), env={"PATH": path, "HOME": str(tmp_path)})

    async def main() -> None:
        token = SKIP_LATER_CHECKS.set(skip)
        try:
            await shell.check(target)
        finally:
            SKIP_LATER_CHECKS.reset(token)

    asyncio.run(main())


def test_a_command_not_on_the_path_it_runs_with_is_refused(tmp_path):
    """`--cmd nosuchprogram` was accepted and failed at every fire, while a missing agent CLI was refused."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    with pytest.raises(UsageError, match=r"shell target: nosuchprogram is not found on kairosd's PATH"):
        _shell_check(tmp_path, ShellTarget(argv=["nosuchprogram"]), str(bin_dir))
    # Found on the PATH the command runs with, not this process's: only then accepted.
    _shell_check(tmp_path, ShellTarget(argv=["tool", "arg"]), str(bin_dir))
    with pytest.raises(UsageError, match="tool is not found"):
        _shell_check(tmp_path, ShellTarget(argv=["tool"]), "/nonexistent")
    _shell_check(tmp_path, ShellTarget(argv=[str(tool)]), "/nonexistent")  # a full path needs no PATH
    _shell_check(tmp_path, ShellTarget(argv=["./tool"], cwd=str(bin_dir)), "/nonexistent")  # from its folder
    with pytest.raises(UsageError, match=r"./tool does not exist \(looked in"):
        _shell_check(tmp_path, ShellTarget(argv=["./tool"], cwd=str(tmp_path)), str(bin_dir))
    (tmp_path / "plain").write_text("")
    with pytest.raises(UsageError, match="is not executable"):
        _shell_check(tmp_path, ShellTarget(argv=[str(tmp_path / "plain")]), str(bin_dir))
    # --no-check: a program still to be installed is accepted; a missing folder still is not.
    _shell_check(tmp_path, ShellTarget(argv=["nosuchprogram"]), str(bin_dir), skip=True)
    with pytest.raises(UsageError, match="working directory does not exist"):
        _shell_check(tmp_path, ShellTarget(argv=["true"], cwd="/nonexistent"), str(bin_dir), skip=True)


async def _unresolvable(host: str, port: int) -> list[str]:
    if host == "slow.example":
        await asyncio.sleep(3600)
    raise OSError(-2, "Name or service not known")


@pytest.mark.parametrize("allow", [False, True])
def test_a_webhook_host_that_does_not_resolve_is_refused(allow):
    """A host that cannot be resolved was left to fire time, where every fire failed."""
    hook = WebhookDelivery(FakeClock(), secret=b"k", allow_non_loopback=allow, resolve=_unresolvable)
    with pytest.raises(UsageError, match=r"cannot resolve no-such-host.example \(Name or service not known\)"):
        asyncio.run(hook.check(WebhookTarget(url="http://no-such-host.example/k")))


def test_a_webhook_host_lookup_that_hangs_is_bounded(monkeypatch):
    import kairosd.delivery.webhook as webhook

    monkeypatch.setattr(webhook, "RESOLVE_CHECK_S", 0.05)
    hook = WebhookDelivery(FakeClock(), secret=b"k", allow_non_loopback=False, resolve=_unresolvable)
    with pytest.raises(UsageError, match=r"cannot resolve slow.example \(no answer within 0.05s\)"):
        asyncio.run(hook.check(WebhookTarget(url="http://slow.example/k")))


def test_no_check_lets_an_unresolvable_webhook_host_through_but_not_a_missing_key(tmp_path):
    """`kairos add --no-check` (check_target false), for when name lookups are down for now."""
    from kairosd.delivery.base import SKIP_LATER_CHECKS

    async def check(hook: WebhookDelivery) -> None:
        token = SKIP_LATER_CHECKS.set(True)
        try:
            await hook.check(WebhookTarget(url="http://no-such-host.example/k"))
        finally:
            SKIP_LATER_CHECKS.reset(token)

    asyncio.run(check(WebhookDelivery(FakeClock(), secret=b"k", allow_non_loopback=False, resolve=_unresolvable)))
    with pytest.raises(UsageError, match="no webhook key"):
        asyncio.run(check(WebhookDelivery(FakeClock(), secret=None, allow_non_loopback=False, resolve=_unresolvable)))
