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

from compat.conftest import World, wait_for
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


@pytest.mark.feature("rem-agent")
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


# ---- every other CLI: a real session's end, its own transcript, the rem-agent through the same CLI ----

EXTRA = {"codex": ("--strict-config",)}  # Codex refuses a config key it does not know
ENV = {"gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}


def judging(original: Any) -> Any:
    """The fake model's decide, answering the rem-agent's prompt as a capable model would: keep the
    guess about helm, drop the other guesses, and add the fact the session stated."""

    def decide(rec: Recorded) -> Reply:
        text = last_user_text(rec) or ""
        if "Consolidate the context board" not in text:
            return original(rec)
        lines = [
            f"{'KEEP' if 'helm' in g else 'DROP'} {i}" for g, i in {m[3]: m[1] for m in _GUESS.finditer(text)}.items()
        ]
        if "staging database is read only" in text:
            lines.append("ADD fact: The staging database is read-only.")
        return Reply(text="\n".join(lines) or "NONE")

    return decide


@pytest.mark.feature("rem-agent")
@pytest.mark.parametrize("cli", ["codex", "gemini", "copilot", "opencode"])
def test_a_sessions_end_is_consolidated_by_the_rem_agent_through_the_same_cli(cli, world_factory):
    """An earlier session offline mode read left two guesses. A real session of ``cli`` ends; kairos
    reads the transcript the CLI wrote and asks the rem-agent through that same CLI, whose answer adds
    what the session stated, keeps one guess and drops the other."""
    from kairosd.agents.adapters import BUILTIN
    from kairosd.agents.base import TurnRequest
    from kairosd.agents.common import AdapterSettings

    world = world_factory(cli)
    config = world.sandbox.kairos_home / "config"
    config.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Gemini runs only in a folder it trusts: the setting its refusal names (a user trusts it in /permissions)
    trust = 'env = { GEMINI_CLI_TRUST_WORKSPACE = "true" }\n' if cli == "gemini" else ""
    agent = f'[agents.{cli}]\nbinary = "{world.binary}"\n{trust}'
    (config / "config.toml").write_text(f"{agent}\n[consolidation]\nmin_interval_minutes = 0\n")
    (config / "config.toml").chmod(0o600)
    world.start_daemon()
    world.integrate()
    if cli == "codex":
        assert world.trust_codex_hooks() == 4
    typed = ["From now on, always deploy with helm.", "Always run the smoke tests first.", "ok"]
    earlier = world.sandbox.root / "earlier.jsonl"
    earlier.write_text("".join(json.dumps({"role": "user", "content": t}) + "\n" for t in typed))
    args = ("--agent", "generic", "--session", "earlier", "--transcript", str(earlier), "--cwd", str(world.project))
    seeded = world.kairos_json("consolidate", *args, "--wait")["result"]
    assert seeded["mode"] == "offline", seeded
    guessed = {e["text"]: e["id"] for e in world.kairos_json("board", "show")["entries"] if e.get("guessed")}
    helm = next(i for t, i in guessed.items() if "helm" in t)
    smoke = next(i for t, i in guessed.items() if "smoke" in t)
    world.model.decide = judging(world.model.decide)  # type: ignore[method-assign]

    adapter = BUILTIN[cli](AdapterSettings(binary=world.binary, extra_args=EXTRA.get(cli, ()), env=ENV.get(cli, {})))
    session = None
    for prompt in ["let's look at the deploy script SAY:one", "remember that the staging database is read only SAY:two",
                   "thanks, that's it SAY:three"]:  # fmt: skip
        command = adapter.command(TurnRequest(prompt=prompt, cwd=str(world.project), resume_session=session))
        proc = world.run(command.argv, stdin=command.stdin, env=command.env)
        outcome = adapter.result(proc.stdout, proc.stderr, proc.returncode)
        assert outcome.ok, (outcome.error, proc.stderr[-1500:])
        session = outcome.session_id

    def consolidated() -> dict[str, Any] | None:
        board = {e["text"]: e for e in world.kairos_json("board", "show")["entries"]}
        return board if "The staging database is read-only." in board else None

    try:
        board = wait_for(consolidated, "the rem-agent's answer on the board", 120)
    except AssertionError as exc:  # say what consolidation did instead
        decisions = [p.read_text()[-2000:] for p in world.sandbox.kairos_home.rglob("requests.jsonl")]
        runs = [json.loads(line).get("run") for d in decisions for line in d.splitlines() if line.startswith("{")]
        logs = [world.kairos("task", "logs", r, check=False).stdout[-1500:] for r in runs if r]
        raise AssertionError(f"{exc}\ndecisions: {decisions}\nrun logs: {logs}") from None
    fact = board["The staging database is read-only."]
    assert fact["source_agent"] == cli
    assert "guessed" not in fact
    by_id = {e["id"]: e for e in board.values()}
    assert helm in by_id
    assert "guessed" not in by_id[helm]
    assert smoke not in by_id
    [dropped] = [e for e in world.kairos_json("board", "show", "--all")["superseded"] if e["id"] == smoke]
    assert dropped["dropped_by"] == "rem-agent"
    asked = [last_user_text(r) or "" for r in world.model.requests]
    asked = [t for t in asked if "Consolidate the context board" in t]
    assert asked, "the rem-agent's prompt never reached the model through the CLI"
    assert f"{smoke} rule (guessed): " in asked[-1]
    assert "remember that the staging database is read only" in asked[-1]
