"""kairos' opencode plugin, run by node as opencode runs it, against a real kairosd and the real ``kairos hook``.

``tests/fixtures/opencode/driver.mjs`` loads the plugin file ``kairos integrate opencode`` writes and
calls its hooks as opencode 1.18.33 does, with a fake SDK ``client`` that records what the plugin asks
of opencode. Skipped where node is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from paths_support import TESTS
from session_support import hook_home, hook_kd, wait_for

from kairos.integrations.settings import opencode
from kairos.integrations.settings.agents import Context
from kairosd.core.records import Outcome

FIXTURES = (hook_home, hook_kd)  # pytest knows them as ``home`` and ``kd``
NODE = shutil.which("node")
KAIROS = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
DRIVER = TESTS / "fixtures" / "opencode" / "driver.mjs"
SID = "ses_de8df717effehKJ5bNDKZdhiTX"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(NODE is None, reason="node is not installed")]


class Opencode:
    """One opencode process with kairos' plugin loaded: send it steps, read what happened."""

    def __init__(self, home: Path, project: Path, kairos: str = KAIROS) -> None:
        folder = project.parent / "plugin"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"type": "module"}\n')  # Bun takes ESM .js as it is; node needs this
        plugin = folder / opencode.PLUGIN_NAME
        plugin.write_text(opencode.plugin_text(Context(home=home, kairos=kairos, environ={"KAIROS_HOME": str(home)})))
        self.db = project.parent / "data" / "opencode" / "opencode.db"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(project.parent), "XDG_DATA_HOME": str(project.parent / "data")}
        self.proc = subprocess.Popen(
            [str(NODE), str(DRIVER), str(plugin), str(project)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip

    def step(self, **step: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(step) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            raise AssertionError(f"the driver stopped: {self.proc.stderr.read()}")
        result: dict[str, Any] = json.loads(line)
        return result

    def hook(self, name: str, **input: Any) -> dict[str, Any]:
        return self.step(hook=name, input={"sessionID": SID, **input})

    def event(self, kind: str, **properties: Any) -> dict[str, Any]:
        return self.step(event={"type": kind, "properties": properties})

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def oc(home: Path, project: Path) -> Iterator[Opencode]:
    driver = Opencode(home, project)
    try:
        yield driver
    finally:
        driver.close()


def prompts(result: dict[str, Any], method: str) -> list[str]:
    return [part["text"] for c in result["calls"] if c["method"] == method for part in c["args"]["body"]["parts"]]


def test_board_at_start_then_a_due_prompt_joins_the_running_turn(kd, oc, project):
    async def board(session: Any) -> str:
        return f"kairos context board for {session.cwd}: BOARDNOTE use pnpm"

    kd.call(lambda: setattr(kd.hub, "context_board_for", board))
    oc.hook("chat.message", agent="build")
    [session] = kd.sessions_view()
    assert (session["agent"], session["session_id"], session["cwd"]) == ("opencode", SID, str(project))
    assert session["transcript_path"] == str(oc.db)
    system = oc.hook("experimental.chat.system.transform", model={})["output"]["system"]
    assert system == ["base", f"kairos context board for {project}: BOARDNOTE use pnpm"]

    first = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": SID}))
    second = kd.fire(kd.add("rotate the keys", {"kind": "session", "session_id": SID}))
    result = oc.hook("experimental.text.complete", messageID="msg_1", partID="prt_1")
    [sent] = [c for c in result["calls"] if c["method"] == "prompt"]
    assert sent["args"]["path"] == {"id": SID}
    assert sent["args"]["body"]["noReply"] is True
    [text] = prompts(result, "prompt")
    assert text.startswith("This is kairos, the scheduler the user set up")
    assert "look at the deploy" in text
    assert kd.run_record(first).outcome is Outcome.DELIVERED
    # The turn now goes on because of kairos: its next text ends without another prompt (as Claude's
    # stop_hook_active), and the board is still in every request of the session.
    result = oc.hook("experimental.text.complete", messageID="msg_2", partID="prt_2")
    assert prompts(result, "prompt") == []
    assert kd.pending() == [second]
    assert "BOARDNOTE" in oc.hook("experimental.chat.system.transform", model={})["output"]["system"][1]


def test_an_idle_session_is_woken_by_a_due_prompt_and_a_busy_one_stops_waiting(kd, oc):
    oc.hook("chat.message")
    oc.hook("experimental.text.complete", messageID="msg_1", partID="prt_1")  # nothing due: the turn ends
    oc.event("session.idle", sessionID=SID)
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the plugin's waiter to long-poll")
    run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": SID}))
    woke = wait_for(lambda: prompts(oc.step(calls=True), "promptAsync"), "the wake-up prompt")
    assert "look at the deploy" in woke[0]
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED

    oc.event("session.idle", sessionID=SID)
    wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "a new waiter")
    oc.event("session.status", sessionID=SID, status={"type": "busy"})  # the person typed: no wake-up now
    wait_for(lambda: kd.call(lambda: not kd.hub._waiters), "the waiter to go")


def test_exit_and_deletion_end_sessions_and_hand_them_over(kd, oc, project):
    oc.hook("chat.message")
    oc.step(hook="chat.message", input={"sessionID": "ses_other"})
    assert len(kd.sessions_view()) == 2
    oc.event("session.deleted", info={"id": "ses_other"})
    assert [s["session_id"] for s in kd.sessions_view()] == [SID]
    oc.step(dispose=True)
    assert kd.sessions_view() == []
    handed = {h["session_id"]: h for h in kd.handovers}
    assert handed[SID] == {
        "agent": "opencode", "session_id": SID, "transcript_path": str(oc.db), "cwd": str(project), "reason": "exit",
    }  # fmt: skip
    assert handed["ses_other"]["reason"] == "deleted"


def test_a_sub_agents_session_is_not_registered(kd, oc):
    oc.step(children=["ses_child"])
    oc.event("session.created", sessionID="ses_task", info={"id": "ses_task", "parentID": SID})
    oc.step(hook="chat.message", input={"sessionID": "ses_task"})
    oc.step(hook="chat.message", input={"sessionID": "ses_child"})  # resumed: no session.created; asked instead
    assert kd.sessions_view() == []


def test_nothing_breaks_when_kairosd_is_down_or_kairos_is_missing(home, project, tmp_path):
    for kairos in (KAIROS, str(tmp_path / "no-such-kairos")):
        oc = Opencode(home, project, kairos)
        try:
            assert oc.hook("chat.message")["calls"] == [{"method": "get", "id": SID}]
            assert oc.hook("experimental.chat.system.transform", model={})["output"]["system"] == ["base"]
            assert oc.hook("experimental.text.complete", messageID="m", partID="p")["calls"] == []
            assert oc.event("session.idle", sessionID=SID)["calls"] == []
            assert oc.step(dispose=True)["calls"] == []
        finally:
            oc.close()
        assert oc.proc.returncode == 0


def test_a_typed_prompt_claims_nothing_and_the_turn_end_delivers(kd, oc):
    """opencode's plugin does not read UserPromptSubmit's output: a prompt due then waits for the turn's end."""
    oc.hook("chat.message")
    run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": SID}))
    oc.hook("chat.message")
    assert kd.pending() == [run_id]
    result = oc.hook("experimental.text.complete", messageID="msg_1", partID="prt_1")
    assert "look at the deploy" in prompts(result, "prompt")[0]
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED
