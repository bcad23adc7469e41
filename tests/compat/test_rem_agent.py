"""Agent consolidation through the real Claude Code CLI: once ``kairos integrate claude`` has set it
up, an ended session is consolidated by ``claude -p`` with the rem-agent definition, against a fake
model that answers the ADD / REPLACE / CLOSE / NONE format as a capable model would.

Two sessions: the first adds a rule and a to-do; the second replaces the rule by its id, closes
the to-do by its id, adds a fact, and says one line kairos must reject. The scripted model reads
the board's ids from the prompt it is sent, as a real one would. Then a session whose answer is
unusable, so offline mode stands in and leaves guesses, and a last one in which the model keeps one
guess and drops the other by their ids.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from compat.conftest import World
from compat.fakemodel import Recorded, Reply, last_user_text

_ENTRY = re.compile(r"^(b[0-9a-f]{6}) (\w+): (.+)$", re.M)
_GUESS = re.compile(r"^(b[0-9a-f]{6}) (\w+) \(guessed\): (.+)$", re.M)


def capable(original: Any) -> Any:
    """The fake model's decide, with a scripted consolidation answer for the rem-agent's prompts."""

    def decide(rec: Recorded) -> Reply:
        text = last_user_text(rec) or ""
        if "Consolidate the context board" not in text:
            return original(rec)
        board = {m[3]: m[1] for m in _ENTRY.finditer(text)}
        guesses = {m[3]: m[1] for m in _GUESS.finditer(text)}
        if guesses:  # the last session: judge what offline mode guessed
            return Reply(text="\n".join(f"{'KEEP' if 'helm' in g else 'DROP'} {i}" for g, i in guesses.items()))
        if "helm" in text:  # the third session: an answer kairos cannot use
            return Reply(text="I am not sure what the board should hold.")
        if "not pnpm" not in text:  # the first session
            return Reply(text="ADD rule: Always use pnpm for installs.\nADD todo: Fix the IAM role of the deploy bot.")
        pnpm = board["Always use pnpm for installs."]
        iam = board["Fix the IAM role of the deploy bot."]
        lines = ["Sure, here are my decisions:", f"REPLACE {pnpm} correction: Use yarn for installs, not pnpm.",
                 f"- CLOSE {iam}", "ADD fact: The staging database is read-only."]  # fmt: skip
        return Reply(text="\n".join(lines))

    return decide


def transcript(world: World, name: str, turns: list[str]) -> Path:
    common = {"sessionId": name, "cwd": str(world.project), "version": "2.1.40", "isSidechain": False}
    lines = []
    for n, text in enumerate(turns):
        at = f"2026-11-20T10:{n:02d}:00.000Z"
        lines.append({"type": "user", "userType": "external", "timestamp": at, "uuid": f"u{name}{n}",
                      "message": {"role": "user", "content": text}, **common})  # fmt: skip
        reply = {"role": "assistant", "content": [{"type": "text", "text": "OK."}]}
        lines.append({"type": "assistant", "timestamp": at, "uuid": f"a{name}{n}", "message": reply, **common})
    path = world.sandbox.root / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def consolidate(world: World, name: str, turns: list[str]) -> dict[str, Any]:
    path = transcript(world, name, turns)
    args = ("consolidate", "--agent", "claude", "--session", name, "--transcript", str(path),
            "--cwd", str(world.project), "--wait", "--json")  # fmt: skip
    doc = world.kairos_json(*args)
    return dict(doc["result"])


@pytest.mark.feature("agent consolidation")
@pytest.mark.parametrize("cli", ["claude"])
def test_agent_consolidation_through_the_real_cli(cli, world_factory):
    world = world_factory(cli)
    config = world.sandbox.kairos_home / "config"
    config.mkdir(parents=True, exist_ok=True, mode=0o700)
    (config / "config.toml").write_text(
        textwrap.dedent(f"""\
        [agents.claude]
        binary = "{world.binary}"

        [consolidation]
        min_interval_minutes = 0
        """)
    )
    (config / "config.toml").chmod(0o600)
    world.start_daemon()
    said = world.integrate("--no-rewake").stdout
    assert "consolidation: when a claude session ends, kairos asks claude itself" in said
    world.model.decide = capable(world.model.decide)  # type: ignore[method-assign]

    first = consolidate(world, "s1", ["from now on always use pnpm for installs", "fix the iam role later", "ok"])
    assert (first["mode"], first["agent"], first["model"]) == ("agent", "claude", "haiku"), first
    second = consolidate(world, "s2", ["no, use yarn, not pnpm", "the iam thing is fixed", "staging db is read only"])
    assert second["mode"] == "agent", second
    assert [r.split(":")[0] for r in second["agent_rejected"]] == [
        "not a decision line (ADD, REPLACE, CLOSE, KEEP, DROP or NONE)"
    ]
    board = world.kairos_json("board", "show")["entries"]
    assert sorted(e["text"] for e in board) == [
        "The staging database is read-only.",
        "Use yarn for installs, not pnpm.",
    ]
    assert [e["text"] for e in second["merge"]["closed"]] == ["Fix the IAM role of the deploy bot."]
    asked = [r for r in world.model.requests if "Consolidate the context board" in (last_user_text(r) or "")]
    assert len(asked) == 2
    assert "no, use yarn, not pnpm" in json.dumps(asked[1].body)
    assert "You are rem-agent" in json.dumps(asked[1].body)  # the definition, as the system prompt

    third = consolidate(
        world, "s3", ["From now on, always deploy with helm.", "Always run the smoke tests first.", "ok"]
    )
    assert third["mode"] == "offline", third
    assert "without any ADD" in third["fallback"]
    guessed = {e["text"]: e["id"] for e in world.kairos_json("board", "show")["entries"] if e.get("guessed")}
    helm = next(i for t, i in guessed.items() if "helm" in t)
    smoke = next(i for t, i in guessed.items() if "smoke" in t)
    last = consolidate(world, "s4", ["morning", "looks fine, thanks", "that is all for today"])
    assert last["mode"] == "agent", last
    assert last["merge"]["confirmed"] == [helm]
    assert [e["id"] for e in last["merge"]["dropped"]] == [smoke]
    board = {e["id"]: e for e in world.kairos_json("board", "show")["entries"]}
    assert helm in board
    assert "guessed" not in board[helm]
    assert smoke not in board
