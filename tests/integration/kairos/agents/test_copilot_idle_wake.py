"""Copilot CLI's opt-in idle wake: what ``kairos integrate copilot --idle-wake`` writes, and the extension.

The extension is run by node as Copilot runs it (an ES module importing
``@github/copilot-sdk/extension``), with a stand-in SDK (``tests/fixtures/copilot/copilot-sdk-stub``)
whose session events the test sends, against a real kairosd and the real ``kairos hook copilot wait``.
The real Copilot CLI runs it in ``tests/compat/test_interactive.py``. Node tests skip without node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from cli_inprocess_support import kairos_here
from paths_support import TESTS
from session_support import call_hook, hook_home, hook_kd, wait_for

from kairos.integrations.settings import agents, copilot
from kairos.integrations.settings.agents import Context
from kairos.integrations.settings.merge import Refused
from kairosd.core.records import Outcome

FIXTURES = (hook_home, hook_kd)  # pytest knows them as ``home`` and ``kd``
NODE = shutil.which("node")
KAIROS = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
STUB = TESTS / "fixtures" / "copilot" / "copilot-sdk-stub"
SID = "5eb856c3-b40a-473f-840d-d0659d830224"
FAKE = "/opt/kairos/bin/kairos"


def plan_for(home: Path, **kw: Any) -> dict[str, Any]:
    """``{file name: plan}`` of ``integrate copilot`` for ``home``, and the notes under ``"notes"``."""
    plans, notes = copilot.plan(Context(home=home, kairos=kw.pop("kairos", FAKE), **kw))
    return {**{p.path.name: p for p in plans}, "notes": notes}


def extension_path(home: Path) -> Path:
    return home / ".copilot" / "extensions" / "kairos" / "extension.mjs"


# ---- what integrate writes ---------------------------------------------------------------------------


def test_opting_in_writes_the_extension_and_turns_on_experimental_mode_keeping_other_settings(tmp_path):
    plans = plan_for(tmp_path, idle_wake=True)
    assert plans["extension.mjs"].path == extension_path(tmp_path)
    text, _ = plans["extension.mjs"].transform(None)
    assert text is not None
    assert text.startswith(copilot.EXTENSION_HEADER)
    assert f"const KAIROS = {json.dumps(FAKE)}" in text
    assert "__KAIROS" not in text
    settings, _ = plans["settings.json"].transform(json.dumps({"model": "gpt-5", "theme": "dark"}))
    assert json.loads(settings or "") == {"model": "gpt-5", "theme": "dark", "experimental": True}
    already = json.dumps({"experimental": True})
    assert plans["settings.json"].transform(already) == (already, [])
    assert any("idle wake: a prompt that falls due" in n for n in plans["notes"])


def test_without_the_option_nothing_is_installed_and_integrate_says_how_to_opt_in(tmp_path):
    plans = plan_for(tmp_path)
    assert "settings.json" not in plans
    assert "extension.mjs" not in plans
    assert set(plans) == {p.path.name for p in agents.plan("copilot", Context(home=tmp_path, kairos=FAKE))[0]} | {
        "notes"
    }
    assert copilot.OPT_IN in plans["notes"]


def test_a_plain_rerun_refreshes_an_installed_extension_with_this_kairos(tmp_path):
    old = copilot.extension_text(Context(home=tmp_path, kairos="/old/kairos"))
    extension_path(tmp_path).parent.mkdir(parents=True)
    extension_path(tmp_path).write_text(old)
    plans = plan_for(tmp_path)
    text, _ = plans["extension.mjs"].transform(old)
    assert text is not None
    assert json.dumps(FAKE) in text
    assert "/old/kairos" not in text
    assert copilot.OPT_IN not in plans["notes"]
    assert "settings.json" not in plans  # experimental mode is the opt-in's business only


def test_no_idle_wake_and_uninstall_remove_kairos_extension_and_leave_experimental_mode(tmp_path):
    ours = copilot.extension_text(Context(home=tmp_path, kairos=FAKE))
    extension_path(tmp_path).parent.mkdir(parents=True)
    extension_path(tmp_path).write_text(ours)
    off = plan_for(tmp_path, idle_wake=False)
    assert off["extension.mjs"].transform(ours) == (
        None, ["idle wake for Copilot CLI is off again; experimental mode was left as it is"],
    )  # fmt: skip
    assert "settings.json" not in off
    gone = plan_for(tmp_path, install=False)
    assert gone["extension.mjs"].transform(ours)[0] is None
    assert "settings.json" not in gone
    assert "Copilot's experimental mode (settings.json) was left as it is" in gone["notes"]


def test_an_extension_of_that_name_that_is_not_kairos_is_refused_on_install_and_left_on_removal(tmp_path):
    theirs = 'import { joinSession } from "@github/copilot-sdk/extension"\nawait joinSession({})\n'
    extension_path(tmp_path).parent.mkdir(parents=True)
    extension_path(tmp_path).write_text(theirs)
    with pytest.raises(Refused, match="is not kairos' extension"):
        plan_for(tmp_path, idle_wake=True)["extension.mjs"].transform(theirs)
    for kw in ({"idle_wake": False}, {"install": False}, {}):
        assert plan_for(tmp_path, **kw)["extension.mjs"].transform(theirs) == (theirs, [])


def integrate(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("KAIROS_HOME", "COPILOT_HOME")}
    environ.update(HOME=str(home), PATH="/usr/bin:/bin")
    # In this process (tests/cli_inprocess_support.py): what it prints and writes is the test.
    return kairos_here("integrate", *args, "--kairos", FAKE, env=environ)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["claude", "--idle-wake"], "--idle-wake is for copilot only"),
        (["codex", "--no-idle-wake"], "--no-idle-wake is for copilot only"),
        (["copilot", "--uninstall", "--idle-wake"], "--uninstall removes kairos' extension too"),
        (["copilot", "--idle-wake", "--no-idle-wake"], "not allowed with argument"),
    ],
)
def test_idle_wake_options_that_make_no_sense_are_usage_errors(tmp_path, args, message):
    proc = integrate(tmp_path, *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / ".copilot").exists()


def test_integrate_copilot_idle_wake_round_trip_on_disk(tmp_path):
    settings = tmp_path / ".copilot" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"banner": "never"}\n')
    proc = integrate(tmp_path, "copilot", "--idle-wake")
    assert proc.returncode == 0, proc.stderr
    assert f"created {extension_path(tmp_path)} (idle-wake extension)" in proc.stdout
    assert json.loads(settings.read_text()) == {"banner": "never", "experimental": True}
    assert integrate(tmp_path, "copilot").returncode == 0
    assert extension_path(tmp_path).read_text().startswith(copilot.EXTENSION_HEADER)  # a re-run keeps the opt-in
    proc = integrate(tmp_path, "copilot", "--uninstall")
    assert proc.returncode == 0, proc.stderr
    assert not extension_path(tmp_path).exists()
    assert json.loads(settings.read_text()) == {"banner": "never", "experimental": True}


# ---- the extension, run by node ------------------------------------------------------------------------


class Extension:
    """kairos' extension in a node process with the stand-in SDK: send it session events, read its calls."""

    def __init__(self, root: Path, home: Path, project: Path, kairos: str = KAIROS) -> None:
        folder = root / "ext"
        sdk = folder / "node_modules" / "@github" / "copilot-sdk"
        shutil.copytree(STUB, sdk)
        path = folder / "extensions" / "kairos" / "extension.mjs"
        path.parent.mkdir(parents=True)
        path.write_text(copilot.extension_text(Context(home=home, kairos=kairos, environ={"KAIROS_HOME": str(home)})))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "FAKE_SESSION_ID": SID}
        self.proc = subprocess.Popen(
            [str(NODE), str(path)], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.closed: tuple[int, str] | None = None
        assert self.next_call()["call"] == "join"

    def next_call(self) -> dict[str, Any]:
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if not line:
            raise AssertionError("the extension stopped")
        call: dict[str, Any] = json.loads(line)
        return call

    def event(self, kind: str, **data: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"event": {"type": kind, "data": data}}) + "\n")
        self.proc.stdin.flush()
        assert self.next_call() == {"call": "dispatched", "type": kind}

    def close(self) -> tuple[int, str]:
        if self.closed is not None:
            return self.closed
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.closed = (self.proc.returncode, out)
        return self.closed


node_only = pytest.mark.skipif(NODE is None, reason="node is not installed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def ext(tmp_path: Path, home: Path, project: Path) -> Iterator[Extension]:
    driver = Extension(tmp_path, home, project)
    try:
        yield driver
    finally:
        driver.close()


def register(monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    """What Copilot's sessionStart hook (kairos' hooks file) does at the session's first prompt."""
    assert call_hook(monkeypatch, "copilot", "sessionStart", {"sessionId": SID, "cwd": str(project)}).code == 0


@node_only
@pytest.mark.slow
def test_an_idle_session_is_woken_and_a_typed_prompt_stops_the_waiter(kd, ext, project, monkeypatch):
    register(monkeypatch, project)
    ext.event("session.idle", mode="interactive")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the extension's waiter to long-poll")
    run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": SID}))
    sent = ext.next_call()
    assert sent["call"] == "send"
    assert "look at the deploy" in sent["prompt"]
    assert "carry out this scheduled task now" in sent["prompt"]
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED
    [session] = kd.sessions_view()
    assert (session["agent"], session["cwd"]) == ("copilot", str(project))

    ext.event("session.idle", mode="interactive")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "a new waiter")
    ext.event("user.message", content="what's next?")  # the person typed: no wake-up now
    wait_for(lambda: kd.call(lambda: not kd.hub._waiters), "the waiter to go")
    ext.event("session.idle", mode="interactive")
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "a waiter again")
    ext.event("session.shutdown", shutdownType="routine")
    wait_for(lambda: kd.call(lambda: not kd.hub._waiters), "the waiter to go at shutdown")
    code, stdout = ext.close()
    assert (code, stdout) == (0, "")  # stdout is Copilot's JSON-RPC channel: never written


@node_only
@pytest.mark.slow
def test_a_headless_run_starts_no_waiter(kd, ext, project, monkeypatch):
    register(monkeypatch, project)
    ext.event("session.idle", mode="prompt")  # `copilot -p`: it ends after its turn
    # The waiter is spawned inside the event's handler, before the stand-in reports the event dispatched.
    assert psutil.Process(ext.proc.pid).children() == []
    run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": SID}))
    assert kd.pending() == [run_id]  # it waits for the session's next turn
    ext.event("session.idle", mode="interactive")
    assert [" ".join(c.cmdline()[-5:]) for c in psutil.Process(ext.proc.pid).children()] == [
        "hook copilot wait --max-wait 86340"
    ]


@node_only
@pytest.mark.slow
def test_nothing_breaks_when_kairosd_is_down_or_kairos_is_missing(home, project, tmp_path):
    for n, kairos in enumerate((KAIROS, str(tmp_path / "no-such-kairos"))):
        root = tmp_path / f"run{n}"
        root.mkdir()
        driver = Extension(root, home, project, kairos)
        try:
            driver.event("session.idle", mode="interactive")
            driver.event("user.message", content="hi")
            driver.event("session.idle", mode="interactive")
        finally:
            code, stdout = driver.close()
        assert (code, stdout) == (0, "")
