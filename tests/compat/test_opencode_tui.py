"""opencode's TUI under tmux, with kairos' plugin: an idle session woken, and /exit consolidated.

opencode creates a session when the first message is sent, and the plugin registers it then; so each
test types a first prompt before it leaves the session idle.
"""

from __future__ import annotations

import json
import time

import pytest

from compat.conftest import World, due_during_a_held_turn, wait_for
from compat.fakemodel import last_user_text


def send(world: World, prompt: str, turns: int) -> None:
    """Type ``prompt``, Enter until the model has seen ``turns`` conversation requests in all."""
    world.type(prompt, enter=False)
    wait_for(lambda: prompt in world.screen(), "the typed prompt on screen", 60)

    def reached() -> bool:
        if len([r for r in world.model.conversation() if prompt in (last_user_text(r) or "")]):
            return True
        world.tmux("send-keys", "-t", "cli", "Enter")  # again: a TUI can take the first Enter as part of a paste
        time.sleep(2)
        return len([r for r in world.model.conversation() if prompt in (last_user_text(r) or "")]) > 0

    wait_for(reached, f"{prompt!r} to reach the model", 90)


def tui(world_factory) -> World:
    world = world_factory("opencode")
    world.start_daemon()
    world.integrate()
    world.start_interactive([world.binary])
    wait_for(lambda: "ctrl+p" in world.screen().lower() or "ask anything" in world.screen().lower(), "the TUI", 120)
    return world


@pytest.mark.feature("idle wake")
@pytest.mark.parametrize("cli", ["opencode"])
def test_a_prompt_due_while_the_tui_is_idle_wakes_it(cli, world_factory):
    world = tui(world_factory)
    send(world, "SAY:first", 1)
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 60)
    # The turn has ended and the plugin's waiter polls (session.idle): nobody types from here on.
    wait_for(lambda: not world.kairos_json("sessions")["sessions"][0]["in_turn"], "the turn to end", 90)
    before = len(world.model.conversation())
    world.kairos("add", "--in", "5s", "--project", str(world.project), "--fallback", "drop", "SAY:woken")
    woken = wait_for(
        lambda: [r for r in world.model.conversation()[before:] if "SAY:woken" in (last_user_text(r) or "")],
        "the idle session to be woken",
        120,
    )
    assert "carry out this scheduled task now" in (last_user_text(woken[0]) or "")
    wait_for(lambda: "woken" in world.screen(), "the answer on screen", 60)


@pytest.mark.feature("consolidation")
@pytest.mark.parametrize("cli", ["opencode"])
def test_exit_from_the_tui_consolidates_what_the_user_typed(cli, world_factory):
    world = tui(world_factory)
    prompts = [
        "from now on always use pnpm for installs",
        "remember that the staging database is read only",
        "let's go with the blue theme",
    ]
    for n, prompt in enumerate(prompts, 1):
        send(world, prompt, n)
        wait_for(lambda n=n: world.screen().count("fake reply") >= n, f"answer {n} on screen", 60)
    world.type("/exit", enter=False)
    wait_for(lambda: "/exit" in world.screen(), "/exit typed", 30)
    world.tmux("send-keys", "-t", "cli", "Enter")
    wait_for(lambda: not world.kairos_json("sessions")["sessions"], "the session to end", 60)

    def learned() -> list[dict[str, object]]:
        board = world.kairos_json("board", "show")
        items = board.get("entries", []) if isinstance(board, dict) else board
        return [e for e in items if "staging database" in json.dumps(e)]

    found = wait_for(learned, "consolidation to learn from the typed prompts", 120)
    assert found[0]["source_agent"] == "opencode"


@pytest.mark.feature("turn-end delivery")
@pytest.mark.parametrize("cli", ["opencode"])
def test_a_prompt_due_during_a_tui_turn_follows_it(cli, world_factory):
    """The TUI's turn end, as test_integrated checks ``opencode run``: a prompt due while a turn runs follows it."""
    world = tui(world_factory)
    send(world, "SAY:first", 1)
    wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 60)
    delivered = [due_during_a_held_turn(world, "HOLD SAY:held")]
    assert "carry out this scheduled task now" in delivered[0]
    wait_for(lambda: "second" in world.screen().split("HOLD SAY:held", 1)[-1], "the answer on screen", 60)
