"""Consolidation and board routes through kairosd.scheduling.api.Api, and the CLI (kairos consolidate, kairos board)
against the real socket server. The routes' answers are the test here, not how a worker is started:
each consolidation worker is forked from this process (:func:`consolidation_service_support.fork_workers`;
test_consolidation_service.py starts real ones)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import kairos_in_thread
from consolidation_service_support import Harness, consolidation_api, fork_workers
from consolidation_support import short_transcript, ts, write_lines, write_transcript
from registry_support import run

from kairos.app import run as kairos
from kairosd.api.http_types import compact_json
from kairosd.api.server import Request, Response, UnixHttpServer
from kairosd.core.errors import NotFoundError, UsageError
from kairosd.jobs.model import JobKind
from kairosd.jobs.registry import StartSpec
from kairosd.scheduling.api import Api


@pytest.fixture(autouse=True)
def _workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    fork_workers(request, monkeypatch)


async def _call(api: Api, method: str, path: str, body: Any = None, **query: str) -> tuple[int, Any]:
    result = await api.handle(Request(method, f"/v1{path}", query, body, 0))
    assert isinstance(result, Response)
    return result.status, json.loads(compact_json(result.body))  # as a client reads it


def test_consolidate_route_answers_the_decision(tmp_path):
    """202 with the run when started, 200 with the gate when skipped; status and run info follow."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        api = consolidation_api(h)
        transcript = write_transcript(tmp_path / "t", "claude", str(h.project))
        body = {"agent": "claude", "session_id": "s1", "transcript_path": str(transcript), "cwd": str(h.project)}
        status, doc = await _call(api, "POST", "/consolidate", body)
        assert (status, doc["status"], doc["run"]["kind"]) == (202, "started", "consolidation")
        run_id = doc["run"]["id"]
        await h.settled(run_id)
        status, doc = await _call(api, "POST", "/consolidate", {**body, "session_id": "s2"})
        assert (status, doc["status"], doc["gate"]) == (200, "skipped", "interval")
        status, doc = await _call(api, "GET", f"/consolidation/runs/{run_id}")
        assert (status, doc["task"]["status"], doc["result"]["ok"]) == (200, "completed", True)
        status, doc = await _call(api, "GET", "/consolidation")
        assert [d["outcome"] for d in doc["recent"]] == ["started", "skipped"]
        assert (doc["mode"], doc["enabled"], doc["running"]) == ("auto", True, {})
        await h.stop()

    run(main())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1], "must be a JSON object"),
        ({"agent": "claude"}, "session_id: Field required"),
        ({"agent": "claude", "session_id": "s", "bogus": 1}, "bogus: unknown field"),
        ({"agent": "claude", "session_id": "s", "cwd": "relative/dir"}, "cwd: must be an absolute path"),
        ({"agent": "claude", "session_id": "s", "spawned": "yes"}, "spawned: Input should be a valid boolean"),
        ({"agent": 3, "session_id": "s"}, "agent: Input should be a valid string"),
        ({"agent": "claude", "session_id": "a\u0000b"}, "session_id: contains a NUL character"),
        ({"agent": "claude", "session_id": "s", "reason": "r" * 201}, "reason: String should have at most 200"),
    ],
)
def test_bad_consolidate_bodies_are_usage_errors(tmp_path, body, message):
    """Malformed requests are clean 400s that never reach the gates."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await _call(consolidation_api(h), "POST", "/consolidate", body)
        assert h.service.decisions.read() == []
        await h.stop()

    run(main())


def test_run_info_is_only_for_consolidation_runs(tmp_path):
    """An unknown id and a task of another kind are 404s."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        api = consolidation_api(h)
        with pytest.raises(NotFoundError):
            await _call(api, "GET", "/consolidation/runs/t0000000000")
        shell = await h.registry.start(StartSpec(kind=JobKind.SHELL, argv=["true"]))
        with pytest.raises(NotFoundError, match="not a consolidation run"):
            await _call(api, "GET", f"/consolidation/runs/{shell.id}")
        await h.registry.wait(shell.id, 10)
        await h.stop()

    run(main())


def test_board_routes(tmp_path):
    """Show, add (201), remove, prune and history through the routes; the project is the work tree."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        api = consolidation_api(h)
        cwd = str(h.project / "src")
        status, doc = await _call(api, "GET", "/board", cwd=cwd)
        assert (status, doc["project"], doc["entries"], doc["limit"]) == (200, str(h.project.resolve()), [], 25)
        status, doc = await _call(api, "POST", "/board", {"cwd": cwd, "text": "Use pnpm, not npm", "kind": "rule"})
        assert (status, doc["entry"]["author"], doc["entry"]["kind"]) == (201, "user", "rule")
        entry_id = doc["entry"]["id"]
        _, doc = await _call(api, "GET", "/board", cwd=str(h.project))
        assert [e["id"] for e in doc["entries"]] == [entry_id]
        _, doc = await _call(api, "POST", "/board/prune", {"cwd": cwd})
        assert doc["pruned"] == []
        _, doc = await _call(api, "DELETE", f"/board/entries/{entry_id}", cwd=cwd)
        assert (doc["entry"]["id"], doc["removed"]) == (entry_id, [entry_id])
        _, doc = await _call(api, "GET", "/board/history", cwd=cwd, limit="0")
        assert [r["action"] for r in doc["history"]] == ["remove", "add"]  # newest first, as every log
        with pytest.raises(NotFoundError):
            await _call(api, "DELETE", f"/board/entries/{entry_id}", cwd=cwd)
        with pytest.raises(UsageError, match="give the project folder"):
            await _call(api, "GET", "/board")
        with pytest.raises(UsageError, match="absolute path"):
            await _call(api, "GET", "/board", cwd="proj")
        with pytest.raises(UsageError, match="kind must be one of"):
            await _call(api, "POST", "/board", {"cwd": cwd, "text": "x y z", "kind": "wish"})
        with pytest.raises(UsageError, match="unknown field"):
            await _call(api, "POST", "/board", {"cwd": cwd, "text": "x", "author": "kairos"})
        with pytest.raises(UsageError, match="limit must be"):
            await _call(api, "GET", "/board/history", cwd=cwd, limit="-1")
        await h.stop()

    run(main())


def test_an_id_on_another_projects_board_is_refused_naming_that_project(tmp_path):
    """`kairos board pin|rm|edit|restore ID` from outside the project that has the entry: a 404 that
    names the project whose board holds it and the --cwd that reaches it; nothing changes on either board.
    An id no other board has (or several have) keeps the plain answer."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        api = consolidation_api(h)
        other = tmp_path / "other project"
        other.mkdir()
        project = str(h.project.resolve())
        _, doc = await _call(api, "POST", "/board", {"cwd": project, "text": "Use pnpm, not npm"})
        entry_id = doc["entry"]["id"]
        hint = f"on the board of {other}; it is on the board of {project}: add --cwd {project}"
        for method, body in [("DELETE", None), ("POST", {"cwd": str(other), "pinned": True}),
                             ("POST", {"cwd": str(other), "text": "Use yarn"})]:  # fmt: skip
            with pytest.raises(NotFoundError, match=hint.replace("(", r"\(")):
                await _call(api, method, f"/board/entries/{entry_id.upper()[:5]}", body, cwd=str(other))
        with pytest.raises(NotFoundError, match="add --cwd"):
            await _call(api, "POST", f"/board/entries/{entry_id}", {"cwd": str(other), "restore": True})
        with pytest.raises(NotFoundError) as plain:
            await _call(api, "DELETE", "/board/entries/b000000", cwd=str(other))
        assert "add --cwd" not in plain.value.message
        _, doc = await _call(api, "GET", "/board", cwd=project)
        assert [(e["id"], e.get("pinned", False)) for e in doc["entries"]] == [(entry_id, False)]
        _, doc = await _call(api, "GET", "/board", cwd=str(other))
        assert doc["entries"] == []
        await h.stop()

    run(main())


def test_board_context_for_a_starting_session(tmp_path):
    """The SessionStart hook point: the board of the session's project, rendered; None when empty."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        assert h.service.board_context(str(h.project)) is None
        assert h.service.board_context(None) is None
        assert h.service.board_context("relative") is None
        await h.service.add_entry(str(h.project), "Always run make check.", "rule")
        text = h.service.board_context(str(h.project / "src"))
        assert text is not None
        assert "- [rule] Always run make check. (you added)" in text
        assert "not instructions" in text
        await h.stop()

    run(main())


# ---- the CLI over the real socket ------------------------------------------------------------------


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    return kairos_home


def test_cli_consolidate_and_board(home, capsys, monkeypatch):
    """kairos consolidate --wait / --json, and every board command, against kairosd's socket."""

    async def main() -> None:
        h = await Harness(home).start()
        server = UnixHttpServer(home / "run" / "kairosd.sock", consolidation_api(h).handle)
        await server.start()

        cli = functools.partial(kairos_in_thread, capsys)

        try:
            transcript = write_transcript(home / "t", "codex", str(h.project))
            monkeypatch.chdir(h.project / "src")
            code, out, err = await cli("consolidate", "--agent", "codex", "--session", "s1", "--transcript",
                                       str(transcript), "--wait")  # fmt: skip
            assert (code, err) == (0, "")
            lines = out.splitlines()
            assert lines[0].endswith(
                "completed: 8 added, 0 seen again, 0 replaced, 0 closed, 0 pruned (offline mode); "
                "the board has 8 entries"
            )
            assert "  + " in lines[1]
            assert lines[-1] == "  (4 malformed transcript line(s) skipped)"

            code, out, err = await cli("consolidate", "--session", "s2", "--transcript", str(transcript))
            assert (code, out) == (1, "")
            assert err.startswith("kairos: not consolidated (interval): this project was consolidated")

            monkeypatch.setenv("KAIROS_SPAWNED", "1")
            code, out, _ = await cli("consolidate", "--session", "s3", "--transcript", str(transcript), "--json")
            assert (code, json.loads(out)["gate"]) == (1, "not_spawned")
            monkeypatch.delenv("KAIROS_SPAWNED")
            short = short_transcript(home, 1)
            code, out, _ = await cli("consolidate", "--session", "s4", "--transcript", str(short), "--json")
            assert json.loads(out)["gate"] == "user_turns"

            code, out, _ = await cli("board", "show")
            assert code == 0
            assert out.splitlines()[0] == f"context board of {h.project.resolve()}: 8 of 25 entries"
            assert out.splitlines()[1].split() == ["ID", "KIND", "HITS", "LAST", "SEEN", "BY", "TEXT"]
            code, out, _ = await cli("board", "add", "Use", "pnpm,", "not", "npm", "--kind", "preference")
            assert code == 0
            entry_id = out.split()[1]
            assert out == f"added {entry_id} [preference] Use pnpm, not npm\n"
            code, out, _ = await cli("board", "show", "--json", "--cwd", str(h.project))
            doc = json.loads(out)
            assert len(doc["entries"]) == 9
            kinds = [e["kind"] for e in doc["entries"]]
            mine = next(i for i, e in enumerate(doc["entries"]) if e["text"] == "Use pnpm, not npm")
            assert mine < kinds.index("todo") < kinds.index("fact")  # rules and preferences lead
            code, out, _ = await cli("board", "rm", entry_id)
            assert out == f"removed {entry_id} [preference] Use pnpm, not npm\n"
            code, out, err = await cli("board", "rm", entry_id)
            assert code == 1
            assert "no entry" in err
            code, out, _ = await cli("board", "prune")
            assert out == "nothing to prune (at most 18 of kairos' entries are kept)\n"
            code, out, _ = await cli("board", "history", "-n", "3")
            rows = out.splitlines()
            assert rows[0].split() == ["WHEN", "ACTION", "BY", "ID", "ENTRY"]
            assert [r.split()[2] for r in rows[1:]] == ["remove", "add", "add"]  # newest first (issue 24)
            code, out, _ = await cli("board", "history", "--json")
            assert len(json.loads(out)["history"]) == 10
        finally:
            await server.close(grace_s=1.0)
            await h.stop()

    run(main())


def _talk(path: Path, turns: list[str]) -> Path:
    objects: list[dict[str, Any]] = []
    for i, text in enumerate(turns):
        objects += [{"role": "user", "content": text, "timestamp": ts(i)}, {"role": "assistant", "content": "OK."}]
    return write_lines(path, objects, malformed=[])


def test_cli_consolidate_wait_says_what_a_later_session_replaced_and_closed(home, capsys, monkeypatch):
    """--wait shows what the next session will no longer be told, not only what was added: the replaced
    entry with the one that replaced it, and the to-do said done (the summary counts both)."""

    async def main() -> None:
        h = await Harness(home).start()
        server = UnixHttpServer(home / "run" / "kairosd.sock", consolidation_api(h).handle)
        await server.start()
        cli = functools.partial(kairos_in_thread, capsys)
        first = [
            "let's look at the deploy script",
            "we deploy on tuesdays, always after the standup",
            "remind me to rotate the ssh keys next week",
            "ok thanks",
        ]
        later = [
            "morning",
            "change of plan: deploys are on thursdays now, not tuesdays",
            "rotated the ssh keys, done",
            "cool",
        ]
        try:
            monkeypatch.chdir(h.project)
            for session, turns in (("s1", first), ("s2", later)):
                transcript = _talk(home / f"{session}.jsonl", turns)
                code, out, err = await cli(
                    "consolidate", "--agent", "generic", "--session", session, "--transcript", str(transcript),
                    "--wait", "--force",
                )  # fmt: skip
                assert (code, err) == (0, ""), out
            lines = out.splitlines()
            assert "1 added, 0 seen again, 1 replaced, 1 closed, 0 pruned (offline mode)" in lines[0]
            added = next(line.split()[1] for line in lines if line.startswith("  + "))
            replaced = [line for line in lines if line.startswith("  ~ ")]
            assert len(replaced) == 1, lines
            assert "tuesdays" in replaced[0]
            assert replaced[0].endswith(f"(replaced by {added})")
            closed = [line for line in lines if line.startswith("  x ")]
            assert len(closed) == 1, lines
            assert "[todo]" in closed[0]
            assert closed[0].endswith("(said done)")
        finally:
            await server.close(grace_s=1.0)
            await h.stop()

    run(main())


def test_cli_without_kairosd_exits_3(home, capsys):
    """Without kairosd: consolidating exits 3 with the hint; board show reads the board from disk and says
    kairosd is not running (issue 24, item 9)."""
    assert kairos(["consolidate", "--session-id", "s", "--transcript", "/tmp/x.jsonl"]) == 3
    assert "kairos daemon start" in capsys.readouterr().err
    assert kairos(["board", "show"]) == 0
    assert "kairosd is not running: showing what is on disk" in capsys.readouterr().err


def test_cli_board_replacements_edit_pin_restore(home, capsys, monkeypatch):
    """Later words replace earlier ones and `board show --all` and `board history` say by what and when;
    edit, pin and restore; the starting session is told what changed since the last one."""
    from kairosd.consolidation.board.entries import Candidate

    async def main() -> None:
        h = await Harness(home).start()
        server = UnixHttpServer(home / "run" / "kairosd.sock", consolidation_api(h).handle)
        await server.start()

        async def cli(*argv: str) -> tuple[int, str, str]:
            return await kairos_in_thread(capsys, *argv, "--cwd", str(h.project))

        try:
            project = str(h.project.resolve())
            assert h.service.board_context(project) is None  # empty: nothing to tell, nothing recorded
            h.service.boards.merge(project, [Candidate("rule", "From now on, use pnpm instead of npm.")])
            first = h.service.board_context(project) or ""
            assert "Changed since" not in first
            h.clock.advance(60)
            h.service.boards.merge(project, [Candidate("correction", "Use yarn, not pnpm.")])
            board = h.service.boards.load(project)
            [old], [new] = board.superseded, board.entries
            second = h.service.board_context(project) or ""
            assert (
                f'1 new ({new.id}), 1 replaced: "From now on, use pnpm instead of npm." replaced by {new.id}' in second
            )

            code, out, _ = await cli("board", "show", "--all")
            assert code == 0
            assert "replaced entries (1, newest first; kairos board restore ID puts one back):" in out
            assert out.splitlines()[-1].split()[:2] == [old.id, "rule"]
            assert out.splitlines()[-1].split()[4] == new.id
            code, out, _ = await cli("board", "history")
            assert (
                f"supersede  kairos  {old.id}  [rule] From now on, use pnpm instead of npm. -> replaced by {new.id}"
                in out
            )

            code, out, _ = await cli("board", "edit", new.id, "Use", "yarn", "for", "installs")
            assert out == f"edited {new.id} [correction] Use yarn for installs (was: Use yarn, not pnpm.)\n"
            code, out, _ = await cli("board", "pin", new.id)
            assert out == f"pinned {new.id} [correction] Use yarn for installs\n"
            code, out, _ = await cli("board", "restore", old.id)
            assert out == (
                f"restored {old.id} [rule] From now on, use pnpm instead of npm. (pinned); it conflicts with {new.id}, "
                "which had replaced it: the next session is told to ask you which holds (kairos board rm the other, "
                "or kairos board edit one)\n"
            )
            code, out, _ = await cli("board", "show", "--json")
            pins = {e["id"]: (e.get("pinned", False), e["author"]) for e in json.loads(out)["entries"]}
            assert pins == {new.id: (True, "user"), old.id: (True, "kairos")}
            code, out, _ = await cli("board", "pin", "--off", new.id)
            assert out.startswith("unpinned")
            code, _, err = await cli("board", "edit", new.id)
            assert (code, err) == (2, "kairos: give the new text, or --kind\n")
            code, _, err = await cli("board", "restore", "b000000")
            assert code == 1
            assert "no replaced entry" in err
        finally:
            await server.close(grace_s=1.0)
            await h.stop()

    run(main())


@pytest.mark.parametrize(
    "verb",
    ["consolidate", "board show", "board add", "board edit", "board pin", "board restore", "board rm", "board prune",
     "board history"],
)  # fmt: skip
def test_help_has_examples_and_json(capsys, verb):
    """Every new subcommand's --help has a description, examples and --json."""
    with pytest.raises(SystemExit) as exc:
        kairos([*verb.split(), "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert "--json" in out


def test_the_consolidate_request_carries_the_callers_markers(monkeypatch, tmp_path):
    """The CLI sends what gates 1 and 2 need: KAIROS_SPAWNED and KAIROS_CONSOLIDATE, and absolute paths."""
    from kairos.app import build_parser
    from kairos.commands.consolidate import build_consolidate_request

    monkeypatch.chdir(tmp_path)
    args = build_parser("consolidate").parse_args(["consolidate", "--session", "s", "--transcript", "t.jsonl"])
    body = build_consolidate_request(args, {"KAIROS_SPAWNED": "1", "KAIROS_CONSOLIDATE": "0"})
    assert body == {
        "agent": "auto",
        "session_id": "s",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "reason": "manual",
        "spawned": True,
        "consolidate": "0",
    }
    assert build_consolidate_request(args, {})["spawned"] is False


def test_every_agent_kairos_integrates_can_be_named_to_consolidate(tmp_path, monkeypatch):
    """`consolidate --agent` offers each agent `integrate` sets up (opencode was missing), and sends it."""
    from kairos.app import build_parser
    from kairos.commands.consolidate import build_consolidate_request
    from kairos.commands.integrate import AGENTS as INTEGRATED

    monkeypatch.chdir(tmp_path)
    parser = build_parser("consolidate")
    for agent in INTEGRATED:
        args = parser.parse_args(["consolidate", "--agent", agent, "--session-id", "s", "--transcript", "t"])
        assert build_consolidate_request(args, {})["agent"] == agent
