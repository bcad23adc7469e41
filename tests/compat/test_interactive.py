"""Interactive sessions of the real CLIs under tmux: idle wake, and MCP tools called from a typed prompt.

Idle wake needs something that can start a turn while the session waits for the user: Claude Code's
``asyncRewake`` hook, opencode's kairos plugin (its TUI is in ``test_opencode_tui.py``), and for Codex
kairosd itself (``codex queue`` into the thread the shared app-server has loaded). The others deliver at
the next turn boundary.
"""

from __future__ import annotations

import contextlib
import json
import re
import time

import pytest
from environment_support import suite_setting

from compat.conftest import UNSUPPORTED, due_during_a_held_turn, wait_for
from compat.fakemodel import last_user_text, tool_names

NO_IDLE_WAKE = {
    # Checked against Gemini CLI 0.61 (issue 23): --acp starts a separate agent process, and an AfterAgent
    # hook that waits (to "deny" with a due prompt) shows the session busy and queues the user's own prompts.
    "gemini": (
        "Gemini CLI has no way into a live session: nothing outside the process reaches a running TUI "
        "(--acp starts a separate agent), and an AfterAgent hook that waits for a due prompt would hold up "
        "the user's own prompts for as long as it waits"
    ),
}


@pytest.mark.feature("idle wake")
@pytest.mark.parametrize("cli", ["claude", "copilot", *NO_IDLE_WAKE])
def test_a_prompt_due_while_the_session_is_idle_wakes_it(cli, world_factory):
    if cli in NO_IDLE_WAKE:
        pytest.skip(UNSUPPORTED + NO_IDLE_WAKE[cli])
    if cli == "copilot":
        copilot_idle_wake(world_factory(cli))
        return
    world = world_factory(cli)
    world.start_daemon()
    world.integrate("--rewake-lifetime", "60")  # the default install, with the waiter's lifetime shortened
    world.start_interactive([world.binary])
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 90)
    time.sleep(3)  # idle: nobody types from here on (the waiter armed at SessionStart is polling)
    assert not world.model.conversation()
    world.kairos("add", "--in", "5s", "--project", str(world.project), "--fallback", "drop", "SAY:woken")
    woken = wait_for(
        lambda: [r for r in world.model.conversation() if "SAY:woken" in (last_user_text(r) or "")],
        "the idle session to be woken",
        90,
    )
    assert "carry out this scheduled task now" in (last_user_text(woken[0]) or "")
    wait_for(lambda: "woken" in world.screen(), "the answer on screen", 30)
    runs = world.kairos_json("list")["tasks"]
    assert runs == [] or all(t.get("prompt") != "SAY:woken" or t.get("status") != "scheduled" for t in runs)


# What each TUI asks of a new folder (the user answers "1. Yes" / "1. Trust folder"), and how its prompt box
# looks once it is ready for typing.
TRUST = {"copilot": "Confirm folder trust"}
READY = {
    "claude": lambda screen: bool(re.search(r"❯|>", screen)),
    "copilot": lambda screen: "MCP Servers reloaded" in screen and "❯" in screen,
    # Gemini draws its prompt box before it asks about the folder, and restarts (a new banner) once it is
    # trusted: the box that counts is the one after the last banner, without the untrusted-folder notice.
    "gemini": lambda screen: (
        "Type your message" in (last := screen.split("Gemini CLI v")[-1]) and "untrusted folder" not in last
    ),
}


def start_tui(world) -> None:
    """Start the CLI's TUI and wait until it takes typing. A CLI that asks about a new folder (every world's
    folder is new) is answered first, as a user does; the dialog may come after the prompt box is drawn.
    Gemini's folder is trusted beforehand, as a user's answer leaves it (its dialog, answered under tmux,
    restarts the CLI at an unpredictable moment)."""
    if world.cli == "gemini":
        trusted = world.home / ".gemini" / "trustedFolders.json"
        trusted.parent.mkdir(parents=True, exist_ok=True)
        trusted.write_text(json.dumps({str(world.project): "TRUST_FOLDER"}))
    world.start_interactive([world.binary])
    if world.cli in TRUST:
        wait_for(lambda: TRUST[world.cli] in world.screen(), "the folder trust dialog", 90)

        def answered() -> bool:
            if TRUST[world.cli] in world.screen():
                world.tmux("send-keys", "-t", "cli", "Enter")
                time.sleep(1)
            return TRUST[world.cli] not in world.screen()

        wait_for(answered, "the trust dialog to close", 60)
    try:
        wait_for(lambda: READY[world.cli](world.screen()), "the prompt box", 90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{world.screen()}") from None


def copilot_idle_wake(world) -> None:
    """Copilot's opt-in: `integrate copilot --idle-wake` installs the extension; an idle session is woken."""
    world.start_daemon()
    world.integrate("--idle-wake")
    start_tui(world)
    world.type("SAY:hello")  # Copilot registers a session (sessionStart) at its first prompt
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 90)
    wait_for(lambda: "hello" in world.screen(), "the first answer on screen", 60)
    time.sleep(3)  # idle: nobody types from here on (the extension's waiter is polling)
    asked = len(world.model.conversation())
    world.kairos("add", "--in", "5s", "--project", str(world.project), "--fallback", "drop", "SAY:woken")
    woken = wait_for(
        lambda: [r for r in world.model.conversation()[asked:] if "SAY:woken" in (last_user_text(r) or "")],
        "the idle session to be woken",
        90,
    )
    assert "carry out this scheduled task now" in (last_user_text(woken[0]) or "")
    wait_for(lambda: "woken" in world.screen(), "the answer on screen", 30)
    [session] = world.kairos_json("sessions")["sessions"]
    assert session["agent"] == "copilot"
    assert session["cwd"] == str(world.project)


@pytest.mark.feature("turn-end delivery")
@pytest.mark.parametrize("cli", ["claude", "copilot", "gemini"])
def test_a_prompt_due_during_an_interactive_turn_is_the_next_request(cli, world_factory):
    """The TUI's turn end, as ``test_integrated`` checks it headless: a prompt due while a turn runs follows it."""
    world = world_factory(cli)
    world.start_daemon()
    world.integrate(*{"claude": ["--no-rewake"], "copilot": ["--no-idle-wake"]}.get(cli, []))
    start_tui(world)
    delivered = [due_during_a_held_turn(world, "HOLD SAY:first")]
    assert "carry out this scheduled task now" in delivered[0]
    wait_for(lambda: "second" in world.screen().split("HOLD SAY:first", 1)[-1], "the answer on screen", 60)


@pytest.mark.feature("MCP")
@pytest.mark.parametrize("cli", ["claude"])
def test_mcp_cron_create_from_an_interactive_session(cli, world_factory):
    world = world_factory(cli)
    world.start_daemon()
    world.integrate("--no-rewake")
    world.start_interactive([world.binary])
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 90)
    wait_for(lambda: re.search(r"❯|>", world.screen()), "the prompt box", 60)
    wait_for(world.mcp_server_up, "kairos mcp to start", 60)  # a user types seconds later, too

    def offered() -> bool:
        """The model was offered kairos' cron_create: the CLI had finished its MCP handshake."""
        return any(name.endswith("cron_create") for r in world.model.conversation() for name, _ in tool_names(r))

    made: list = []
    for _attempt in range(3):  # on a loaded machine the CLI may send the first turn before MCP is up
        asked = len(world.model.conversation())
        world.type('CALL:cron_create {"cron": "7 7 * * *", "prompt": "TYPED nightly", "recurring": true}', enter=False)
        wait_for(lambda: "TYPED nightly" in world.screen(), "the typed prompt on screen", 30)

        def submitted(asked: int = asked) -> bool:
            if len(world.model.conversation()) > asked:
                return True
            world.tmux("send-keys", "-t", "cli", "Enter")  # again: a TUI can take the first Enter as part of a paste
            time.sleep(2)
            return len(world.model.conversation()) > asked

        wait_for(submitted, "the typed prompt to reach the model", 60)
        if not offered():
            wait_for(lambda: "fake reply" in world.screen(), "the plain reply to a turn without the tool", 60)
            continue  # kairos' tools were not offered yet: a plain reply, as a real model would give; ask again
        try:
            made = wait_for(
                lambda: [t for t in world.kairos_json("list")["tasks"] if t.get("prompt") == "TYPED nightly"],
                "the task cron_create made",
                90,
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{world.screen()}") from None
        break
    assert made, f"kairos' tools were never offered to the model\n{world.screen()}"
    assert made[0]["created_by"] == "mcp"
    calls = [r for r in world.model.conversation() if "cron_create" in json.dumps(r.body)]
    assert calls


@pytest.mark.feature("consolidation")
@pytest.mark.parametrize("cli", ["claude", "copilot", "gemini"])
def test_session_end_consolidates_what_the_user_typed_interactively(cli, world_factory):
    """Claude counts only typed prompts as human turns (``claude -p`` prompts are ``promptSource: sdk``);
    Copilot's TUI registers its session at the first prompt; each ends it at its /exit (Gemini: /quit)."""
    world = world_factory(cli)
    world.start_daemon()
    world.integrate(*{"claude": ["--no-rewake"], "copilot": ["--no-idle-wake"]}.get(cli, []))
    if cli == "claude":
        world.start_interactive([world.binary])
        wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 90)
    else:
        start_tui(world)
    prompts = [
        "from now on always use pnpm for installs",
        "remember that the staging database is read only",
        "let's go with the blue theme",
    ]
    for n, prompt in enumerate(prompts, 1):
        world.type(prompt, enter=False)
        wait_for(lambda p=prompt: p in world.screen(), "the typed prompt on screen", 30)

        def answered(n: int = n) -> bool:
            if len(world.model.conversation()) >= n:
                return True
            world.tmux("send-keys", "-t", "cli", "Enter")
            time.sleep(2)
            return len(world.model.conversation()) >= n

        wait_for(answered, f"turn {n} to reach the model", 60)
        wait_for(lambda n=n: world.screen().count("fake reply") >= n, f"answer {n} on screen", 30)
    leave = "/quit" if cli == "gemini" else "/exit"
    world.type(leave, enter=False)
    wait_for(lambda: leave in world.screen(), f"{leave} typed", 30)
    world.tmux("send-keys", "-t", "cli", "Enter")

    def learned() -> list[dict[str, object]]:
        board = world.kairos_json("board", "show")
        items = board.get("entries", []) if isinstance(board, dict) else board
        return [e for e in items if "staging database" in json.dumps(e)]

    found = wait_for(learned, "consolidation to learn from the typed prompts", 90)
    assert found[0]["source_agent"] == cli


LONG_IDLE_S = 660  # past Claude Code's default 600 s hook timeout, which ended the old 540 s waiter


@pytest.mark.parametrize("cli", ["claude"])
def test_long_idle_wake_and_the_waiters_cost(cli, world_factory, capsys):
    """The long case (KAIROS_COMPAT_LONG=1, about 12 minutes): a prompt due 11 minutes into idleness wakes
    the session with the default integrate (lifetime a day), and the waiter's RSS and wakeups are printed."""
    import psutil

    if suite_setting("KAIROS_COMPAT_LONG") != "1":
        pytest.skip("the 12-minute idle case runs with KAIROS_COMPAT_LONG=1")
    world = world_factory(cli)
    world.start_daemon()
    world.integrate()  # the default: the waiter, for a day
    world.start_interactive([world.binary])
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 90)

    def waiter() -> psutil.Process | None:
        for proc in psutil.process_iter(["cmdline"]):
            cmd = proc.info["cmdline"] or []
            if "wait" in cmd and "hook" in cmd and any(c.endswith("kairos") for c in cmd):
                try:
                    if proc.environ().get("KAIROS_HOME") == str(world.sandbox.kairos_home):
                        return proc
                except psutil.Error:
                    continue
        return None

    proc = wait_for(waiter, "the waiter to start", 60)
    start_switches = proc.num_ctx_switches().voluntary
    seen: dict[str, float] = {}
    world.kairos("add", "--in", f"{LONG_IDLE_S}s", "--project", str(world.project), "--fallback", "drop", "SAY:late")

    def woken() -> bool:
        try:  # the waiter's cost while it waits (it exits when it wakes the session)
            seen["rss_mb"] = max(seen.get("rss_mb", 0.0), proc.memory_info().rss / 1e6)
            seen["switches"] = proc.num_ctx_switches().voluntary - start_switches
        except psutil.Error:
            pass
        return any("SAY:late" in (last_user_text(r) or "") for r in world.model.conversation())

    wait_for(woken, "the session to be woken after 11 idle minutes", LONG_IDLE_S + 120)
    assert seen["rss_mb"] > 0
    with capsys.disabled():
        print(
            f"\nwaiter: peak RSS {seen['rss_mb']:.1f} MB; {seen['switches']:.0f} voluntary context switches "
            f"in {LONG_IDLE_S} s of idleness"
        )


def codex_tui(world_factory):
    """A Codex TUI (a client of Codex's shared app-server, the default) in an integrated sandbox, with kairosd
    running Codex's own binary for ``codex queue``; returns the world and the registered session id."""
    world = world_factory("codex")
    config = world.sandbox.kairos_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[agents.codex]\nbinary = "{world.binary}"\n')
    config.chmod(0o600)
    world.start_daemon()
    world.integrate()
    assert world.trust_codex_hooks() == 4
    world.start_interactive([world.binary])

    def prompt_box() -> bool:
        screen = world.screen()
        if re.search(r"trust this folder\?", screen, re.IGNORECASE):
            world.tmux("send-keys", "-t", "cli", "Enter")  # the first option: yes, trust it
            time.sleep(1)
        return "Ask Codex to do anything" in screen

    def answered() -> bool:
        if world.model.conversation():
            return True
        world.tmux("send-keys", "-t", "cli", "Enter")  # again: a TUI can take the first Enter as part of a paste
        time.sleep(2)
        return bool(world.model.conversation())

    try:
        wait_for(prompt_box, "the Codex prompt box", 90)
        # Codex starts its thread (and runs SessionStart) with the first prompt.
        world.type("SAY:hello", enter=False)
        wait_for(lambda: "SAY:hello" in world.screen(), "the typed prompt on screen", 30)
        wait_for(answered, "the first prompt to reach the model", 60)
        wait_for(lambda: "hello" in world.screen().split("SAY:hello", 1)[-1], "the answer on screen", 30)
        sessions = wait_for(lambda: world.kairos_json("sessions")["sessions"], "the Codex session to register", 30)
    except AssertionError as exc:
        screen = world.screen()
        stop_codex_daemon(world)
        raise AssertionError(f"{exc}\n{screen}") from None
    return world, str(sessions[0]["session_id"])


def stop_codex_daemon(world) -> None:
    """Codex's shared app-server outlives the TUI: stop it (and what it started) by pid, as the user's is not ours."""
    import psutil

    world.run([world.binary, "app-server", "daemon", "stop"], timeout=60)
    mine = str(world.home) + "/"
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if cmdline and cmdline[0].startswith(mine):  # the daemon Codex installed under this sandbox's home
            with contextlib.suppress(psutil.Error):
                proc.kill()


@pytest.mark.feature("idle wake")
@pytest.mark.parametrize("cli", ["codex"])
def test_codex_idle_wake_through_codex_queue_and_quit_ends_the_session(cli, world_factory):
    """kairosd queues a due prompt into the idle Codex TUI (codex queue, the thread loaded in the shared
    app-server); /quit ends the session within 30 s (thread_unload_delay_secs = 0 from integrate), and a
    prompt due after the quit is not queued into the closed thread."""
    world, sid = codex_tui(world_factory)
    try:
        time.sleep(3)  # idle: nobody types
        asked = len(world.model.conversation())
        world.kairos("add", "--in", "3s", "--project", str(world.project), "--fallback", "drop", "SAY:woken")
        try:
            woken = wait_for(
                lambda: [r for r in world.model.conversation() if "SAY:woken" in (last_user_text(r) or "")],
                "the idle Codex session to be woken",
                90,
            )
        except AssertionError as exc:
            runs = world.kairos_json("history")
            raise AssertionError(f"{exc}\n{json.dumps(runs)[:3000]}\n{world.screen()}") from None
        assert "carry out this scheduled task now" in (last_user_text(woken[0]) or "")
        assert len(world.model.conversation()) > asked
        wait_for(lambda: "woken" in world.screen(), "the answer on screen", 30)
        runs = world.kairos_json("history")["runs"]
        assert any("codex queue" in str(r.get("reason")) and r.get("outcome") == "delivered" for r in runs), runs

        # Typed turns for consolidation to learn from once the TUI quits.
        for prompt in ("from now on always use pnpm for installs", "remember that the staging database is read only"):
            asked = len(world.model.conversation())
            world.type(prompt, enter=False)
            wait_for(lambda p=prompt: p in world.screen(), "the typed prompt on screen", 30)

            def answered(asked: int = asked) -> bool:
                world.tmux("send-keys", "-t", "cli", "Enter")
                time.sleep(2)
                return len(world.model.conversation()) > asked

            wait_for(answered, "the typed prompt to reach the model", 60)
        wait_for(lambda: not world.kairos_json("sessions")["sessions"][0]["in_turn"], "the turn to end", 60)

        world.type("/quit", enter=False)
        wait_for(lambda: "/quit" in world.screen(), "/quit typed", 30)
        world.tmux("send-keys", "-t", "cli", "Enter")
        wait_for(lambda: not world.kairos_json("sessions")["sessions"], "the quit session to end", 30)

        def learned() -> list[dict[str, object]]:
            board = world.kairos_json("board", "show")
            items = board.get("entries", []) if isinstance(board, dict) else board
            return [e for e in items if "staging database" in json.dumps(e)]

        found = wait_for(learned, "the quit session to be consolidated", 120)
        assert found[0]["source_agent"] == "codex"
        before = len(world.model.conversation())
        world.kairos("add", "--in", "1s", "--session-target", sid, "--fallback", "drop", "SAY:late")
        time.sleep(8)
        assert len(world.model.conversation()) == before
    finally:
        stop_codex_daemon(world)


@pytest.mark.feature("turn-end delivery")
@pytest.mark.parametrize("cli", ["codex"])
def test_codex_turn_end_delivery_in_the_tui(cli, world_factory):
    """The Codex TUI's turn end: a prompt due while a turn runs is the next request (its Stop hook)."""
    world, _sid = codex_tui(world_factory)
    try:
        delivered = [due_during_a_held_turn(world, "HOLD SAY:first")]
        assert "carry out this scheduled task now" in delivered[0]
        runs = wait_for(lambda: [r for r in world.kairos_json("history")["runs"] if r.get("outcome")], "the run")
        assert not any("codex queue" in str(r.get("reason")) for r in runs), runs  # the Stop hook, not a wake
    finally:
        stop_codex_daemon(world)
