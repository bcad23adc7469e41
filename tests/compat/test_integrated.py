"""``kairos integrate AGENT`` against the real CLIs: hooks run, the board arrives, prompts land at turn end.

Each test integrates kairos into a sandboxed HOME, runs kairosd, and drives the CLI headless (the
same hooks run as in an interactive session). Codex needs its hooks trusted first
(:meth:`World.trust_codex_hooks`, what a user does in ``/hooks``); Gemini needs the folder trusted
(``GEMINI_CLI_TRUST_WORKSPACE``). opencode gets kairos' plugin, which runs the same ``kairos hook`` calls.
"""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from compat.conftest import World, wait_for
from compat.fakemodel import last_user_text, tool_names
from kairosd.agents.adapters import BUILTIN
from kairosd.agents.base import TurnRequest
from kairosd.agents.common import AdapterSettings

HOOKED = ("claude", "codex", "gemini", "copilot")
EXTRA = {"codex": ("--strict-config",)}  # Codex refuses a config key it does not know
ENV = {"gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}


def integrated(world_factory, cli: str) -> World:
    world = world_factory(cli)
    world.start_daemon()
    world.integrate()
    if cli == "codex":
        assert world.trust_codex_hooks() == 4  # SessionStart, UserPromptSubmit, Stop, SessionEnd
    world.kairos("board", "add", "BOARDNOTE: use pnpm, not npm")
    return world


def argv(world: World, prompt: str, resume: str | None = None):
    adapter = BUILTIN[world.cli](
        AdapterSettings(binary=world.binary, extra_args=EXTRA.get(world.cli, ()), env=ENV.get(world.cli, {}))
    )
    return adapter, adapter.command(TurnRequest(prompt=prompt, cwd=str(world.project), resume_session=resume))


def turn(world: World, prompt: str):
    adapter, command = argv(world, prompt)
    proc = world.run(command.argv, stdin=command.stdin, env=command.env)
    return proc, adapter.result(proc.stdout, proc.stderr, proc.returncode)


def first_conversation_text(world: World, since: int) -> str:
    convo = [r for r in world.model.requests[since:] if r in world.model.conversation()]
    assert convo, "no conversation request reached the model"
    return json.dumps(convo[0].body)


@pytest.mark.feature("session-start context")
@pytest.mark.parametrize("cli", [*HOOKED, "opencode"])
def test_board_is_in_the_first_request_and_survives_a_second_integrate(cli, world_factory):
    world = integrated(world_factory, cli)
    proc, outcome = turn(world, "SAY:one")
    assert outcome.ok, (outcome.error, proc.stderr[-1500:])
    assert "BOARDNOTE" in first_conversation_text(world, 0)
    # Its SessionEnd hook deregistered it: an exited headless run is never picked as a live target.
    wait_for(lambda: not world.kairos_json("sessions")["sessions"], "the ended session to deregister", 30)

    # The CLI has written its own state by now (Codex: trust entries in config.toml); integrate again.
    world.integrate()
    if cli == "codex":
        config = tomllib.loads((world.home / ".codex" / "config.toml").read_text())
        assert len(config["hooks"]["state"]) == 4, "re-integrating dropped Codex's hook trust"
    before = len(world.model.requests)
    proc, outcome = turn(world, "SAY:two")
    assert outcome.ok, (outcome.error, proc.stderr[-1500:])
    assert "BOARDNOTE" in first_conversation_text(world, before), "hooks stopped running after a second integrate"

    world.kairos("integrate", cli, "--uninstall")
    if cli == "codex":
        assert not (world.home / ".codex" / "hooks.json").exists()
        config = tomllib.loads((world.home / ".codex" / "config.toml").read_text())
        assert "kairos" not in config.get("mcp_servers", {})
        assert len(config["hooks"]["state"]) == 4  # Codex's own state stays
    before = len(world.model.requests)
    proc, outcome = turn(world, "SAY:three")  # the CLI still accepts its files (Codex: --strict-config)
    assert outcome.ok, (outcome.error, proc.stderr[-1500:])
    assert "BOARDNOTE" not in first_conversation_text(world, before)


@pytest.mark.feature("turn-end delivery")
@pytest.mark.parametrize("cli", [*HOOKED, "opencode"])
def test_prompt_due_at_turn_end_becomes_the_next_request(cli, world_factory):
    world = integrated(world_factory, cli)
    adapter, command = argv(world, "HOLD SAY:first")
    world.model.hold()
    proc = subprocess.Popen(
        command.argv, env={**world.env, **command.env}, cwd=world.project, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdin is not None
        proc.stdin.write(command.stdin or "")
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() must not flush it
        assert world.model.held.wait(120), "the turn never reached the model"
        sessions = world.kairos_json("sessions")["sessions"]
        assert [s["agent"] for s in sessions] == [cli], sessions
        world.kairos("add", "--in", "1s", "--project", str(world.project), "--fallback", "drop", "SAY:second")
        wait_for(lambda: any(s.get("pending") for s in world.kairos_json("sessions")["sessions"]), "a pending prompt")
    finally:
        world.model.release()
    stdout, stderr = proc.communicate(timeout=180)
    outcome = adapter.result(stdout, stderr, proc.returncode)
    users = [last_user_text(r) or "" for r in world.model.conversation()]
    delivered = [u for u in users if "SAY:second" in u]
    assert delivered, f"the due prompt never reached the model: {users}"
    assert "carry out this scheduled task now" in delivered[0]
    assert outcome.ok, (outcome.error, stderr[-1500:])
    assert outcome.final_text == "second", stdout[-3000:]


CREATE = 'CALL:cron_create {"cron": "7 7 * * *", "prompt": "MCPMADE nightly", "recurring": true}'


@pytest.mark.feature("MCP")
@pytest.mark.parametrize("cli", [*HOOKED, "opencode"])
def test_mcp_cron_create_headless_creates_a_task(cli, world_factory):
    world = integrated(world_factory, cli)
    proc, outcome = turn(world, CREATE)
    tasks = world.kairos_json("list")["tasks"]
    made = [t for t in tasks if t.get("prompt") == "MCPMADE nightly"]
    calls = [r for r in world.model.conversation() if "cron_create" in json.dumps(r.body)]
    assert calls, "kairos' cron_create never reached the model as a tool"
    seen = [[n for n, _ in tool_names(r) if "cron" in n.lower() or "kairos" in n] for r in calls]
    assert made, (outcome.error, outcome.final_text, proc.stderr[-1500:], seen)
    assert outcome.ok, outcome.error


@pytest.mark.feature("consolidation")
@pytest.mark.parametrize("cli", ["codex", "gemini", "copilot", "opencode"])  # Claude: test_interactive
def test_session_end_consolidates_what_the_user_typed(cli, request, world_factory):
    world = integrated(world_factory, cli)
    session = None
    prompts = [
        "from now on always use pnpm for installs SAY:one",
        "remember that the staging database is read only SAY:two",
        "let's go with the blue theme SAY:three",
    ]
    for prompt in prompts:
        adapter, command = argv(world, prompt, resume=session)
        proc = world.run(command.argv, stdin=command.stdin, env=command.env)
        outcome = adapter.result(proc.stdout, proc.stderr, proc.returncode)
        assert outcome.ok, (outcome.error, proc.stderr[-1500:])
        session = outcome.session_id

    def learned() -> list[str]:
        for log in world.sandbox.kairos_home.rglob("requests.jsonl"):
            mine = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            mine = [r for r in mine if r.get("session_id") == session]
            # One request per run's SessionEnd: once the last run's is in and skipped, nothing will come.
            if len(mine) >= len(prompts) and mine[-1].get("gate") == "user_turns":
                raise AssertionError(f"consolidation skipped: {mine[-1].get('reason')}")
        entries = world.kairos_json("board", "show")
        items = entries.get("entries", entries) if isinstance(entries, dict) else entries
        return [json.dumps(e) for e in items if "staging database" in json.dumps(e)]

    found = wait_for(learned, "consolidation to learn from the transcript", 90)
    assert json.loads(found[0])["source_agent"] == cli
