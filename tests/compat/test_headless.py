"""Headless runs through kairos' own adapters (``kairosd.agents``), against the real CLIs.

For each CLI: the argv the adapter builds runs in a fresh project folder the CLI has never seen;
the answer, the agent's session id and the exit status are what the adapter reports; a follow-up
turn resumes that session (the model sees the first turn again).
"""

from __future__ import annotations

import pytest

from compat import clis
from compat.conftest import World
from compat.fakemodel import last_user_text
from kairosd.agents.adapters import BUILTIN
from kairosd.agents.base import TurnRequest
from kairosd.agents.common import AdapterSettings

# What a user sets in kairos' config for a CLI that needs it (see README, compatibility).
CONFIGURED_ENV = {"gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}


def _turn(world: World, adapter, request: TurnRequest):
    command = adapter.command(request)
    proc = world.run(command.argv, stdin=command.stdin, env=command.env)
    return proc, adapter.result(proc.stdout, proc.stderr, proc.returncode)


@pytest.mark.feature("headless", "resume")
@pytest.mark.parametrize("cli", clis.CLIS)
def test_headless_turn_and_resume(cli, world_factory):
    world = world_factory(cli)
    adapter = BUILTIN[cli](AdapterSettings(binary=world.binary, env=CONFIGURED_ENV.get(cli, {})))

    proc, first = _turn(world, adapter, TurnRequest(prompt="first turn SAY:alpha", cwd=str(world.project)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert first.ok, first.error
    assert first.final_text == "alpha"
    assert first.session_id

    before = len(world.model.requests)
    proc, second = _turn(
        world,
        adapter,
        TurnRequest(prompt="second turn SAY:beta", cwd=str(world.project), resume_session=first.session_id),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert second.ok, second.error
    assert second.final_text == "beta"
    assert second.session_id == first.session_id
    resumed = [r for r in world.model.requests[before:] if "second turn" in (last_user_text(r) or "")]
    assert resumed, "the follow-up never reached the model"
    assert "first turn SAY:alpha" in world.model.texts()[-1], "the resumed turn does not carry the first one"


def test_gemini_untrusted_folder_says_what_to_do(world_factory):
    """Gemini refuses a folder the user has not trusted (exit 55); kairos keeps that check and says why."""
    world = world_factory("gemini")
    adapter = BUILTIN["gemini"](AdapterSettings(binary=world.binary))
    proc, outcome = _turn(world, adapter, TurnRequest(prompt="SAY:alpha", cwd=str(world.project)))
    assert proc.returncode == 55
    assert not outcome.ok
    assert outcome.error is not None
    assert "not trust" in outcome.error
    assert "GEMINI_CLI_TRUST_WORKSPACE" in outcome.error
