"""``kairos board ... --json`` and ``kairos consolidate --json`` against :mod:`kairosd.core.wire.board`.

The verbs run in-process against the consolidation and registry routes behind the real socket
server (the offline consolidation mode: no agent), as ``test_consolidation_api`` does.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from consolidation_service_support import Harness, consolidation_api
from consolidation_support import write_transcript
from registry_support import run

from kairos.app import run as kairos
from kairosd.api.server import UnixHttpServer
from kairosd.consolidation.board.entries import Candidate
from kairosd.core.wire import verbs as documents


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    return kairos_home


def test_board_and_consolidate_print_their_documents(home, capsys, monkeypatch):
    checked: set[str] = set()

    async def main() -> None:
        h = await Harness(home).start()
        server = UnixHttpServer(home / "run" / "kairosd.sock", consolidation_api(h).handle)
        await server.start()

        async def check(verb: str, *argv: str, code: int = 0) -> Any:
            got = await asyncio.to_thread(kairos, [*verb.split(), *argv, "--json"])
            out, err = capsys.readouterr()
            assert got == code, err
            doc = json.loads(out)
            documents.check(verb, doc)
            checked.add(verb)
            return doc

        try:
            transcript = str(write_transcript(home / "t", "codex", str(h.project)))
            monkeypatch.chdir(h.project / "src")
            ran = await check(
                "consolidate", "--agent", "codex", "--session", "s1", "--transcript", transcript, "--wait"
            )
            assert (ran["task"]["status"], ran["decision"]["status"]) == ("completed", "started")
            assert ran["timed_out"] is False
            skipped = await check("consolidate", "--session", "s2", "--transcript", transcript, code=1)
            assert (skipped["gate"], "run" in skipped) == ("interval", False)
            other = await check("consolidate", "--session", "s3", "--transcript", transcript, "--cwd", str(home))
            assert other["run"]["kind"] == "consolidation"
            await h.settled(other["run"]["id"])

            assert len((await check("board show"))["entries"]) == 8
            added = (await check("board add", "Use", "pnpm", "--kind", "preference"))["entry"]
            assert (await check("board history", "-n", "3"))["history"][0]["id"] == added["id"]  # newest first
            assert (await check("board prune"))["pruned"] == []
            assert (await check("board rm", added["id"]))["removed"] == [added["id"]]

            project = str(h.project.resolve())
            h.service.boards.merge(project, [Candidate("rule", "From now on, use pnpm instead of npm.")])
            h.clock.advance(60)
            h.service.boards.merge(project, [Candidate("correction", "Use yarn, not pnpm.")])
            board = h.service.boards.load(project)
            old = next(e for e in board.superseded if e.text.startswith("From now on"))
            new = next(e for e in board.entries if e.text.startswith("Use yarn"))
            assert (await check("board show", "--all"))["superseded"]
            assert (await check("board edit", new.id, "Use", "yarn"))["before"] == "Use yarn, not pnpm."
            assert (await check("board pin", new.id))["entry"]["pinned"] is True
            assert "pinned" not in (await check("board pin", "--off", new.id))["entry"]
            assert (await check("board restore", old.id))["restored"] is True
        finally:
            await server.close(grace_s=1.0)
            await h.stop()

    run(main())
    assert checked == {v for v in documents.DOCUMENTS if v.startswith(("board ", "consolidate"))}


def _entry(**over: Any) -> dict[str, Any]:
    entry = {"id": "b0a1b2c", "text": "t", "kind": "rule", "author": "user", "source_session": None,
             "source_agent": None, "created_at": "t", "last_seen_at": "t", "hits": 1}  # fmt: skip
    return entry | over


def test_a_board_document_of_the_wrong_shape_is_refused():
    documents.check("board rm", {"project": "/p", "entry": _entry(), "removed": ["b0a1b2c"]})
    with pytest.raises(ValueError, match="removed"):
        documents.check("board rm", {"project": "/p", "removed": _entry()})  # the old shape: an entry
    with pytest.raises(ValueError, match="hits"):
        documents.check("board pin", {"project": "/p", "entry": _entry(hits="1")})
    with pytest.raises(ValueError, match="gate"):
        documents.check("consolidate", {"status": "skipped", "gate": 1, "reason": "r", "project": "/p"})
