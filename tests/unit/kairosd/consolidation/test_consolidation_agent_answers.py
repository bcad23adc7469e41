"""Agent mode end to end through the (fake) claude CLI, answering as a capable model would: every
line kind, a replacement across sessions by id, a closed to-do, malformed lines; a long session in
chunks with nothing lost; which mode a run takes (auto, offline, agent) and the daily cap. What a run
computes is the test here, not how its worker is started: each worker is forked from this process
(:func:`consolidation_service_support.fork_workers`; test_consolidation_service.py starts real ones)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from consolidation_service_support import Harness, fork_workers
from consolidation_support import HUMAN, fake_calls, fake_claude, write_config, write_lines
from registry_support import run

from kairosd.consolidation import worker
from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.board.store import Board
from kairosd.consolidation.remagent.protocol import chunks, prompt_for
from kairosd.consolidation.transcripts.read import ReadStats
from kairosd.jobs.model import JobStatus

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    fork_workers(request, monkeypatch)


def agent(h: Harness, *answers: str, config: str = "", exit_code: int = 0) -> Path:
    """A fake claude answering ``answers`` (the Nth call the Nth; the last one after that)."""
    folder = h.root / "bin"
    binary = fake_claude(folder)
    for number, answer in enumerate(answers, 1):
        (folder / f"answer-{number}.txt").write_text(answer)
    (folder / "answer.txt").write_text(answers[-1] if answers else "NONE")
    (folder / "exit.txt").write_text(str(exit_code))
    write_config(h.root, f'[agents.claude]\nbinary = "{binary}"\n\n[consolidation]\n{config}\n')
    return folder


def integrate(h: Harness) -> None:
    """What `kairos integrate claude` leaves in the (test's) home: kairos' SessionEnd hook."""
    settings = h.root / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": "/usr/bin/kairos hook claude SessionEnd"}
    settings.write_text(json.dumps({"hooks": {"SessionEnd": [{"hooks": [hook]}]}}))


def transcript(h: Harness, name: str, turns: list[str]) -> Path:
    objects: list[dict[str, Any]] = []
    for minute, text in enumerate(turns):
        objects.append({"role": "user", "content": text, "timestamp": f"2026-11-20T10:{minute % 60:02d}:00Z"})
        objects.append({"role": "assistant", "content": "OK.", "timestamp": f"2026-11-20T10:{minute % 60:02d}:30Z"})
    return write_lines(h.root / "transcripts" / f"{name}.jsonl", objects, malformed=[])


async def consolidate(h: Harness, session: str, path: Path | None = None) -> dict[str, Any]:
    decision = await h.ask(session=session, transcript=path)
    record = await h.settled(decision["run"]["id"])
    assert record.status is JobStatus.COMPLETED
    info = await h.service.run_info(record.id)
    return dict(info["result"])


def texts(h: Harness) -> list[str]:
    return sorted(e["text"] for e in h.board())


def test_a_capable_answer_applies_every_line_kind(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        project = str(h.project.resolve())
        h.service.boards.merge(project, [Candidate("rule", "From now on, use pnpm instead of npm."),
                                         Candidate("todo", "Fix the IAM role of the deploy bot.")])  # fmt: skip
        h.service.boards.add_user(project, "The api runs on port 8443.", "fact")
        ids = {e.text: e.id for e in h.service.boards.load(project).entries}
        pnpm, iam = ids["From now on, use pnpm instead of npm."], ids["Fix the IAM role of the deploy bot."]
        mine = ids["The api runs on port 8443."]
        answer = "\n".join([
            "Here are my decisions:",  # prose: rejected, changes nothing
            "- ADD rule: Always run make check before you commit.",
            f"- REPLACE {pnpm} correction: Use yarn, not pnpm.",
            f"- CLOSE {iam}",
            f"- REPLACE {mine} fact: The api runs on port 9443.",  # the user's: added beside it, a conflict
            "- REPLACE bdeadbe decision: Ship on Thursdays.",  # unknown id: rejected
            "- ADD wish: a pony",  # unknown kind: rejected
            f"- REPLACE {iam} todo: Fix the IAM role by Friday.",  # a second decision on one id: rejected
        ])  # fmt: skip
        folder = agent(h, answer)
        await h.start()
        result = await consolidate(h, "s1")
        assert (result["mode"], result["agent"], result["chunks"]) == ("agent", "claude", 1)
        assert texts(h) == ["Always run make check before you commit.", "The api runs on port 8443.",
                            "The api runs on port 9443.", "Use yarn, not pnpm."]  # fmt: skip
        assert [r.split(":")[0] for r in result["agent_rejected"]] == [
            "not a decision line (ADD, REPLACE, CLOSE, KEEP, DROP or NONE)",
            "no entry bdeadbe on the board",
            "unknown kind 'wish'",
            f"a second decision on {iam}",
        ]
        assert [e["id"] for e in result["merge"]["closed"]] == [iam]
        assert [e["id"] for e in result["merge"]["superseded"]] == [pnpm]
        assert [e["conflicts_with"] for e in result["merge"]["conflicts"]] == [mine]
        actions = [r["action"] for r in h.service.boards.history(project)]
        assert "close" in actions
        assert "supersede" in actions
        [call] = fake_calls(folder)
        for turn in HUMAN:
            assert turn in call["stdin"]
        # offline mode put these two there: the prompt marks them as its guesses
        assert f"{pnpm} rule (guessed): From now on, use pnpm instead of npm." in call["stdin"]
        assert f"{iam} todo (guessed): Fix the IAM role of the deploy bot." in call["stdin"]
        await h.stop()

    run(main())


def test_the_rem_agent_judges_the_guesses_offline_mode_left(tmp_path: Path) -> None:
    """An earlier run offline mode stood in for left guesses; the next rem-agent run sees them marked,
    keeps what holds and drops what does not, and may judge nothing else."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        project = str(h.project.resolve())
        h.service.boards.merge(project, [Candidate("rule", "From now on, use pnpm instead of npm."),
                                         Candidate("rule", "Kindly go through the SettlementBatchJob class."),
                                         Candidate("todo", "Fix the IAM role of the deploy bot.")])  # fmt: skip
        h.service.boards.add_user(project, "The api runs on port 8443.", "fact")
        ids = {e.text: e.id for e in h.service.boards.load(project).entries}
        pnpm, junk = (
            ids["From now on, use pnpm instead of npm."],
            ids["Kindly go through the SettlementBatchJob class."],
        )
        iam, mine = ids["Fix the IAM role of the deploy bot."], ids["The api runs on port 8443."]
        answer = "\n".join(
            [f"KEEP {pnpm}", f"DROP {junk}", f"DROP {mine}", f"KEEP {pnpm}", "ADD rule: Run make check."]
        )
        folder = agent(h, answer)
        await h.start()
        record = await h.settled((await h.ask(session="s1"))["run"]["id"])
        summary = "1 added, 0 seen again, 0 replaced, 0 closed, 0 pruned, 1 offline guess confirmed, 1 dropped"
        assert record.response == f"{summary} (agent mode)"
        result = dict((await h.service.run_info(record.id))["result"])
        assert result["mode"] == "agent"
        assert result["merge"]["confirmed"] == [pnpm]
        [dropped] = result["merge"]["dropped"]
        assert (dropped["id"], dropped["dropped_by"]) == (junk, "rem-agent")
        assert [r.split(":")[0] for r in result["agent_rejected"]] == [
            f"{mine} is not marked guessed (DROP is for offline mode's guesses)",
            f"a second decision on {pnpm}",
        ]
        board = {e["text"]: e.get("guessed", False) for e in h.board()}
        assert board == {"From now on, use pnpm instead of npm.": False, "Fix the IAM role of the deploy bot.": True,
                         "The api runs on port 8443.": False, "Run make check.": False}  # fmt: skip
        [call] = fake_calls(folder)
        assert f"{junk} rule (guessed): Kindly go through the SettlementBatchJob class." in call["stdin"]
        assert f"{iam} todo (guessed): Fix the IAM role of the deploy bot." in call["stdin"]
        assert f"{mine} fact: The api runs on port 8443." in call["stdin"]
        await h.stop()

    run(main())


def test_a_replacement_across_sessions_by_id(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent", min_interval_minutes=0)
        folder = agent(h, "ADD rule: From now on, deploy on Tuesdays.")
        await h.start()
        first = transcript(h, "one", ["hi", "From now on, deploy on Tuesdays.", "thanks"])
        await consolidate(h, "s1", first)
        [tuesday] = h.board()
        # the next session: the model sees the board with its ids and replaces by id
        (folder / "answer.txt").write_text(f"REPLACE {tuesday['id']} decision: We deploy on Thursdays now.")
        second = transcript(h, "two", ["Change of plan: we deploy on Thursdays now, not Tuesdays.", "ok", "bye"])
        result = await consolidate(h, "s2", second)
        assert texts(h) == ["We deploy on Thursdays now."]
        [gone] = result["merge"]["superseded"]
        assert (gone["id"], gone["superseded_by"]) == (tuesday["id"], h.board()[0]["id"])
        second_prompt = fake_calls(folder)[1]["stdin"]
        assert f"{tuesday['id']} rule: From now on, deploy on Tuesdays." in second_prompt
        assert "Change of plan: we deploy on Thursdays now, not Tuesdays." in second_prompt
        await h.stop()

    run(main())


def test_a_long_session_goes_in_chunks_with_nothing_lost(tmp_path: Path) -> None:
    """Many long turns and one longer than a prompt: every character reaches the model, in order,
    and each chunk sees the board as the previous one left it."""

    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        turns = [
            f"Turn {i}: here is a pasted log line. " * 25 + f"Rule {i}: keep module m{i} small." for i in range(14)
        ]
        turns.insert(3, "A huge paste: " + "0123456789" * 600 + " From now on, always pin numpy to 1.26.")
        folder = agent(h, "ADD rule: Always pin numpy to 1.26.", "NONE", config="prompt_budget = 2000\nmax_chunks = 20")
        await h.start()
        result = await consolidate(h, "s1", transcript(h, "long", turns))
        calls = fake_calls(folder)
        assert result["chunks"] == len(calls) == len(chunks(turns, 2000)) > 5
        assert result["mode"] == "agent"
        assert "fallback" not in result
        seen = "".join(c["stdin"] for c in calls)
        for number, turn in enumerate(turns, 1):
            if len(turn) <= 2000:
                assert f"[turn {number} of {len(turns)}]\n{turn}\n" in seen
        huge = [c["stdin"] for c in calls if "turn 4 of 15, part" in c["stdin"]]
        assert len(huge) >= 3  # 6 000 characters in parts of at most 2 000
        assert "From now on, always pin numpy to 1.26." in huge[-1]
        assert "part 1 of 3 of the session" not in calls[0]["stdin"]  # parts of the turn, not of the session
        assert f"This is part 2 of {len(calls)} of the session" in calls[1]["stdin"]
        assert "rule: Always pin numpy to 1.26." in calls[1]["stdin"]  # the board after chunk 1
        assert texts(h) == ["Always pin numpy to 1.26."]
        await h.stop()

    run(main())


def test_every_turn_of_a_session_reaches_the_model_not_only_the_last_ones(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        turns = [f"Note {i}: the module m{i} belongs to team t{i % 7}." for i in range(250)]
        folder = agent(h, "NONE")
        await h.start()
        result = await consolidate(h, "s1", transcript(h, "many", turns))
        [call] = fake_calls(folder)
        assert result["chunks"] == 1
        assert all(f"[turn {n} of 250]\n{t}\n" in call["stdin"] for n, t in enumerate(turns, 1))
        await h.stop()

    run(main())


def test_a_session_needing_more_chunks_than_allowed_is_consolidated_offline(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        folder = agent(h, "NONE", config="prompt_budget = 2000\nmax_chunks = 2")
        await h.start()
        result = await consolidate(h, "s1", transcript(h, "big", ["z" * 1500] * 3 + HUMAN))
        assert result["mode"] == "offline"
        assert result["fallback"].endswith("more than max_chunks = 2")
        assert fake_calls(folder) == []
        await h.stop()

    run(main())


def test_a_chunk_that_fails_leaves_the_rest_to_offline_mode(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        early = "Please always run `pnpm lint` before you push."
        late = "Please always run `make check` before you commit."
        turns = [early, "y" * 1990, late]
        agent(
            h,
            "ADD rule: Lint with pnpm lint before every push.",
            "I am not sure what to say.",
            config="prompt_budget = 2000",
        )
        await h.start()
        path = transcript(h, "fails", turns)
        result = await consolidate(h, "s1", path)
        assert result["mode"] == "agent"
        assert result["fallback"].endswith("(chunk 2 of 3; the first 1 were applied)")
        # chunk 1's decision, then offline mode on the turns from chunk 2 on (not on the early turn again)
        assert texts(h) == ["Always run `make check` before you commit.", "Lint with pnpm lint before every push."]
        offline_alone = worker._offline({"transcript": str(path), "project": "/p", "requested_at": NOW.isoformat()},
                                        ReadStats(), [])  # fmt: skip
        assert len(offline_alone.candidates) == 2  # offline mode alone would have taken the early turn too
        await h.stop()

    run(main())


# ---- which mode ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "integrated", "on_path", "expect", "why"),
    [
        ("auto", True, True, "agent", "auto: through claude"),
        ("auto", False, True, "offline", "claude is not integrated (no "),
        ("auto", True, False, "offline", "is not found (PATH); offline"),
        ("offline", True, True, "offline", "offline mode (the config's choice)"),
        ("agent", False, True, "agent", "agent: through claude"),
    ],
)
def test_the_mode_a_run_takes(tmp_path: Path, mode: str, integrated: bool, on_path: bool, expect: str, why: str):
    async def main() -> None:
        h = Harness(tmp_path, mode=mode)
        folder = agent(h, "ADD rule: Always write the test first.")
        if not on_path:
            write_config(h.root, '[agents.claude]\nbinary = "no-such-claude-here"\n')
        if integrated:
            integrate(h)
        await h.start()
        result = await consolidate(h, "s1")
        assert result["mode"] == expect
        assert why in result["mode_reason"] if mode != "offline" else "mode_reason" not in result
        assert bool(fake_calls(folder)) == (expect == "agent")
        if expect == "agent":
            assert texts(h) == ["Always write the test first."]
        else:
            assert len(h.board()) > 1  # offline mode's entries
        await h.stop()

    run(main())


def test_past_the_daily_cap_runs_are_offline_and_say_why(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, min_interval_minutes=0)  # auto, the default
        folder = agent(h, "NONE", config="max_agent_runs_per_day = 1")
        integrate(h)
        await h.start()
        first = await consolidate(h, "s1", transcript(h, "one", ["a", "b", "c"]))
        second = await consolidate(h, "s2", transcript(h, "two", ["Please always run `make check` first.", "b", "c"]))
        assert first["mode"] == "agent"
        assert second["mode"] == "offline"
        assert second["fallback"] == "1 agent run(s) today already, max_agent_runs_per_day = 1"
        assert len(fake_calls(folder)) == 1
        counted = json.loads((h.paths.state_dir / "consolidation" / "agent-runs.json").read_text())
        assert counted == {"day": h.clock.now().date().isoformat(), "runs": 1}
        await h.stop()

    run(main())


def test_an_unexpected_error_in_agent_mode_falls_back_to_offline_and_says_why(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        folder = agent(h, "ADD rule: Always write the test first.")
        (h.paths.state_dir / "consolidation" / "agent-runs.json.lock").mkdir(parents=True)  # the count cannot be taken
        await h.start()
        result = await consolidate(h, "s1")
        assert result["mode"] == "offline"
        assert result["fallback"].startswith("internal error in agent mode: IsADirectoryError(")
        assert fake_calls(folder) == []
        assert len(h.board()) > 1  # offline mode's entries
        await h.stop()

    run(main())


def test_the_configured_model_wins_over_the_cheap_default(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, mode="agent")
        folder = agent(h, "NONE", config='models = { claude = "sonnet" }')
        await h.start()
        result = await consolidate(h, "s1")
        argv = fake_calls(folder)[0]["argv"]
        assert (argv[argv.index("--model") + 1], result["model"]) == ("sonnet", "sonnet")
        await h.stop()

    run(main())


@pytest.mark.parametrize("fmt", ["claude", "codex", "copilot", "gemini"])
def test_every_corpus_session_reaches_agent_mode_as_typed(tmp_path: Path, fmt: str) -> None:
    """The corpus through agent mode's plumbing: the prompt carries exactly what the person typed in
    each session, in every format, whole, and none of what a CLI or kairos injected."""
    from consolidation_corpus import formats
    from consolidation_corpus.sessions import SESSIONS

    for index, session in enumerate(SESSIONS):
        turns = [(text, formats.at(index, step * 2)) for step, (_, text) in enumerate(session)]
        path = formats.write(tmp_path, fmt, turns, "/p", f"s{index}")
        typed: list[str] = []
        request = {"transcript": str(path), "agent": fmt, "project": "/p", "requested_at": NOW.isoformat()}
        worker._offline(request, ReadStats(), typed)
        assert typed == [text for _, text in session]
        [pieces] = chunks(typed, 60_000)
        prompt = prompt_for("/p", Board("/p"), pieces, total_turns=len(typed), ended_at=NOW, now=NOW)
        assert all(text.strip() in prompt for text in typed)
        assert "carry out this scheduled task now" not in prompt
        assert "session_context" not in prompt
        assert "kairos context board for" not in prompt


# ---- through each agent CLI's adapter ------------------------------------------------------------

HOOK_FILE = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json",
             "copilot": ".copilot/hooks/kairos.json"}  # fmt: skip


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "copilot"])
def test_auto_mode_runs_the_rem_agent_through_the_cli_whose_session_ended(tmp_path: Path, cli: str) -> None:
    """The fake CLIs parse the real flags strictly: each accepts the read-only run kairos builds (a
    tool list where the CLI has one; codex's read-only sandbox and gemini's plan mode where not),
    with the cheap model, and the answer lands on the board."""
    from consolidation_service_support import clean_environ
    from consolidation_support import write_transcript
    from fake_agents import write_fake_agents

    from kairosd.consolidation.remagent.modes import DEFAULT_MODELS

    async def main() -> None:
        bin_dir = tmp_path / "bin"
        write_fake_agents(bin_dir)
        log = tmp_path / "agents.log"
        environ = clean_environ(HOME=str(tmp_path / "home"), PATH=f"{bin_dir}:{clean_environ()['PATH']}",
                                FAKE_AGENT_TEXT="ADD rule: Always write the test first.", FAKE_AGENT_TOOLS="0",
                                FAKE_AGENT_LOG=str(log))  # fmt: skip
        h = Harness(tmp_path, environ=environ)
        hooks = tmp_path / "home" / HOOK_FILE[cli]
        hooks.parent.mkdir(parents=True)
        event = "sessionEnd" if cli == "copilot" else "SessionEnd"
        hooks.write_text(json.dumps({"command": f"/usr/bin/kairos hook {cli} {event}"}))
        await h.start()
        path = write_transcript(tmp_path / "t", cli, str(h.project))
        result = await consolidate_as(h, cli, path)
        assert (result["mode"], result["agent"], result["model"]) == ("agent", cli, DEFAULT_MODELS[cli])
        assert result["mode_reason"].startswith(f"auto: through {cli} ")
        assert texts(h) == ["Always write the test first."]
        [called] = [json.loads(line) for line in log.read_text().splitlines()]
        argv = called["argv"]
        assert DEFAULT_MODELS[cli] in " ".join(argv)
        if cli == "codex":
            assert argv[argv.index("--sandbox") + 1] == "read-only"
        if cli == "gemini":
            assert "--approval-mode=plan" in argv
        await h.stop()

    run(main())


async def consolidate_as(h: Harness, cli: str, path: Path) -> dict[str, Any]:
    decision = await h.ask(session="s1", transcript=path, agent=cli)
    record = await h.settled(decision["run"]["id"])
    info = await h.service.run_info(record.id)
    return dict(info["result"])
