"""opencode's transcripts: one session read out of ``opencode.db`` (SQLite, WAL), typed turns only.

The databases are built here in opencode 1.18.33's schema (its ``session``, ``message`` and ``part``
tables, as ``sqlite_master`` shows them) and filled as opencode fills them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from kairosd.consolidation.transcripts import opencode as transcript_opencode
from kairosd.consolidation.transcripts.read import ReadStats, count_human_turns, read_file

SCHEMA = """
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text, `slug` text NOT NULL,
  `directory` text NOT NULL, `path` text, `title` text NOT NULL, `version` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL
);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`)
);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`)
);
"""
T0 = 1_795_684_340_000  # ms, as opencode stores times
SESSION = "ses_de8df717effehKJ5bNDKZdhiTX"
REMINDER = (
    "This is kairos, the scheduler the user set up with `kairos integrate`. At the user's standing instruction, "
    "carry out this scheduled task now (task t-1, scheduled for 09:00). The task: run the nightly report"
)


class Db:
    """An opencode database being written, as opencode writes it (WAL mode)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)
        self.n = 0

    def session(self, sid: str = SESSION, directory: str = "/home/me/project", parent: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO session VALUES (?, 'prj', NULL, ?, 'slug', ?, NULL, 'title', '1.18.33', ?, ?)",
            (sid, parent, directory, T0, T0),
        )

    def message(self, role: str, *parts: dict[str, object], sid: str = SESSION, raw: str | None = None) -> str:
        self.n += 1
        mid = f"msg_{self.n:06d}"
        data = raw if raw is not None else json.dumps({"role": role, "time": {"created": T0 + self.n}})
        self.conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, T0 + self.n * 1000, T0, data))
        for i, part in enumerate(parts):
            pid = f"prt_{self.n:06d}{i:03d}"
            body = part.pop("raw") if "raw" in part else json.dumps(part)
            self.conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, T0, T0, body))
        return mid


def text(value: str, **flags: object) -> dict[str, object]:
    return {"type": "text", "text": value, **flags}


def a_session(db: Db) -> None:
    db.session()
    db.message("user", text("from now on always use pnpm for installs"))
    db.message(
        "assistant",
        {"type": "step-start"},
        {"type": "reasoning", "text": "thinking about pnpm"},
        text("Noted."),
        {"type": "tool", "tool": "bash", "callID": "c1",
         "state": {"status": "completed", "input": {"command": "pnpm install"}, "output": "TOOL OUTPUT " * 1000}},
        {"type": "step-finish", "reason": "stop"},
    )  # fmt: skip
    # A file the person attached: opencode adds what it read as synthetic text.
    db.message("user", text("look at the config"), text("Called the Read tool: SECRET FILE BODY", synthetic=True))
    db.message("user", text("an ignored part", ignored=True))
    db.message("user", text(REMINDER))  # what kairos' plugin sent into the session (noReply)
    db.message("assistant", text("Running the report."))
    db.message("user", text("remember that the staging database is read only"))


@pytest.fixture
def db(tmp_path: Path) -> Db:
    return Db(tmp_path / "opencode.db")


def test_only_what_the_person_typed_counts_as_a_turn(db: Db):
    a_session(db)
    db.session("ses_other", "/elsewhere")
    db.message("user", text("another session's words"), sid="ses_other")
    stats = ReadStats()
    messages = list(read_file(db.path, "opencode", stats, session_id=SESSION))
    typed = [m.text for m in messages if m.human]
    assert typed == [
        "from now on always use pnpm for installs",
        "look at the config",
        "remember that the staging database is read only",
    ]
    assert not any("SECRET FILE BODY" in m.text or "TOOL OUTPUT" in m.text for m in messages)
    assert not any("thinking about pnpm" in m.text for m in messages)  # reasoning is not the answer
    [bash] = [t for m in messages for t in m.tools]
    assert (bash.kind, bash.command) == ("shell", "pnpm install")
    assert (stats.format, stats.session_id, stats.cwd) == ("opencode", SESSION, "/home/me/project")
    assert stats.human_turns == 3
    assert messages[0].at is not None
    assert messages[0].at.year == 2026


def test_the_newest_turns_in_the_wal_are_read_and_the_file_is_not_changed(db: Db):
    """Read-only but not immutable: rows not yet checkpointed into the main file are seen."""
    a_session(db)
    db.conn.execute("PRAGMA wal_autocheckpoint=0")
    db.message("user", text("let's go with the blue theme"))
    assert Path(str(db.path) + "-wal").stat().st_size > 0
    before = db.path.read_bytes()
    count, _ = count_human_turns(db.path, "opencode", session_id=SESSION)
    assert count == 4
    assert db.path.read_bytes() == before


def test_a_writer_holding_the_lock_is_waited_for_then_a_clear_error(db: Db):
    a_session(db)
    db.conn.close()
    # In WAL mode a writer keeps readers out only in exclusive locking mode (or while it recovers the WAL).
    writer = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("COMMIT")  # the lock stays with the connection until it closes
    try:
        with pytest.raises(transcript_opencode.DatabaseBusy, match=r"stayed locked for over 0\.2s"):
            list(transcript_opencode.read_session(db.path, SESSION, ReadStats(), busy_timeout_s=0.2))
        # A lock the writer lets go of within the busy timeout is waited for, not reported.
        commit = threading.Timer(0.3, writer.close)
        commit.start()
        read = transcript_opencode.read_session(db.path, SESSION, ReadStats(), busy_timeout_s=60)
        turns = [m for m in read if m.human]
        commit.join(60)
        assert len(turns) == 3
    finally:
        writer.close()


def test_malformed_rows_are_skipped_and_counted(db: Db):
    db.session()
    db.message("user", text("first words"))
    db.message("user", sid=SESSION, raw="{not json")
    db.message("user", {"raw": "[broken"}, text("second words"))
    stats = ReadStats()
    typed = [m.text for m in read_file(db.path, "opencode", stats, session_id=SESSION) if m.human]
    assert typed == ["first words", "second words"]
    assert stats.malformed == 2


def test_rows_read_are_capped(db: Db):
    db.session()
    for i in range(50):
        db.message("user", text(f"turn {i}"))
    stats = ReadStats()
    typed = [m for m in transcript_opencode.read_session(db.path, SESSION, stats, max_rows=30) if m.human]
    assert 0 < len(typed) < 30
    assert stats.truncated
    assert "only the first 30 rows" in stats.notes[0]


def test_what_is_not_a_regular_file_or_not_a_session_is_refused(tmp_path: Path, db: Db):
    a_session(db)
    with pytest.raises(OSError, match="session id is needed"):
        list(read_file(db.path, "opencode"))
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"not a regular file|FIFO"):
        list(transcript_opencode.read_session(fifo, SESSION, ReadStats()))
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    with pytest.raises(OSError, match="not an opencode database"):
        list(read_file(other, "opencode", session_id=SESSION))
    # An unknown session reads as empty: the turn gate then says there was nothing typed.
    assert count_human_turns(db.path, "opencode", session_id="ses_unknown")[0] == 0


def test_a_session_end_naming_the_database_and_the_session_consolidates_that_session(tmp_path: Path):
    """The plugin's hand-over: the gate counts that session's typed turns, the run learns only from them."""
    from consolidation_service_support import Harness
    from registry_support import run

    from kairosd.consolidation.request import ConsolidationRequest

    h = Harness(tmp_path)  # no `kairos integrate opencode` in its home: auto mode runs offline
    db = Db(tmp_path / "opencode.db")
    db.session(directory=str(h.project))
    db.session("ses_other", str(h.project))
    for i in range(3):
        db.message("user", text(f"Always keep module {i} small."))
        db.message("assistant", text("OK."))
        db.message("user", text(f"Always keep folder {i} tidy."), sid="ses_other")
    db.message("user", text(REMINDER))

    async def main() -> None:
        await h.start()
        short = ConsolidationRequest(agent="opencode", session_id="ses_unknown", transcript_path=str(db.path))
        decision = await h.service.request(short)
        assert decision["gate"] == "user_turns"
        assert decision["reason"] == "0 human turns in the transcript; at least 3 needed"
        request = ConsolidationRequest(agent="opencode", session_id=SESSION, transcript_path=str(db.path))
        decision = await h.service.request(request)  # no cwd: the session's directory in the database
        assert decision["status"] == "started", decision
        record = await h.settled(decision["run"]["id"])
        assert record.cwd == str(h.project.resolve())
        assert {e["text"] for e in h.board()} == {f"Always keep module {i} small." for i in range(3)}
        await h.stop()

    run(main())


def test_a_resumed_session_with_new_turns_in_the_wal_is_consolidated_again(tmp_path: Path):
    """opencode writes new turns into opencode.db-wal: the main file alone would look unchanged."""
    from consolidation_service_support import Harness
    from registry_support import run

    from kairosd.consolidation.request import ConsolidationRequest

    h = Harness(tmp_path)
    db = Db(tmp_path / "opencode.db")
    db.conn.execute("PRAGMA wal_autocheckpoint=0")  # as between two of opencode's checkpoints
    db.session(directory=str(h.project))
    for i in range(3):
        db.message("user", text(f"Always keep module {i} small."))
    request = ConsolidationRequest(agent="opencode", session_id=SESSION, transcript_path=str(db.path), reason="exit")

    async def main() -> None:
        await h.start()
        first = await h.service.request(request)
        await h.settled(first["run"]["id"])
        main_file = (db.path.stat().st_size, db.path.stat().st_mtime_ns)
        for i in range(3, 6):
            db.message("user", text(f"Always keep module {i} small."))
        assert (db.path.stat().st_size, db.path.stat().st_mtime_ns) == main_file
        h.clock.advance(3600)  # past the interval gate
        again = await h.service.request(request)
        assert again["status"] == "started", again
        await h.settled(again["run"]["id"])
        assert {e["text"] for e in h.board()} == {f"Always keep module {i} small." for i in range(6)}
        await h.stop()

    run(main())


def test_a_second_session_of_the_same_database_ending_during_a_run_follows_it(tmp_path: Path):
    """Every opencode session is in one database: a second session's end is not the same transcript again."""
    from consolidation_service_support import Harness
    from consolidation_support import fake_claude, write_config
    from registry_support import run, until

    from kairosd.consolidation.request import ConsolidationRequest
    from kairosd.jobs.model import JobStatus

    release = tmp_path / "release"
    h = Harness(tmp_path, mode="agent", min_interval_minutes=0)
    folder = tmp_path / "bin"
    binary = fake_claude(folder)  # it holds the first run until `release` exists; its answer is no use
    (folder / "wait-for").write_text(str(release))
    write_config(tmp_path, f'[agents.opencode]\nbinary = "{binary}"\n')
    db = Db(tmp_path / "opencode.db")
    for sid, word in ((SESSION, "module"), ("ses_other", "folder")):
        db.session(sid, str(h.project))
        for i in range(3):
            db.message("user", text(f"Always keep {word} {i} small."), sid=sid)

    def ended(sid: str) -> ConsolidationRequest:
        return ConsolidationRequest(agent="opencode", session_id=sid, transcript_path=str(db.path))

    async def main() -> None:
        await h.start()
        first = await h.service.request(ended(SESSION))
        assert first["status"] == "started", first
        other = await h.service.request(ended("ses_other"))
        assert other["status"] == "coalesced"
        assert "follows when it ends" in other["reason"]
        release.write_text("go")
        assert (await h.settled(first["run"]["id"])).status is JobStatus.COMPLETED
        await until(lambda: len(h.registry.list_tasks()) == 2, "the follow-up run to start")
        [follow_up] = [t for t in h.registry.list_tasks() if t.id != first["run"]["id"]]
        assert follow_up.session == "ses_other"
        await h.settled(follow_up.id)
        texts = {e["text"] for e in h.board()}
        assert {f"Always keep folder {i} small." for i in range(3)} <= texts
        await h.stop()

    run(main())


def test_auto_mode_runs_the_rem_agent_through_opencode_once_the_plugin_is_installed(tmp_path: Path):
    """``kairos integrate opencode``'s plugin is what auto mode looks for; the rem-agent then runs as
    ``opencode run`` (the fake one parses its real flags) with the prompt on stdin, and its answer lands."""
    from consolidation_service_support import Harness, clean_environ
    from fake_agents import write_fake_agents
    from registry_support import run

    from kairos.integrations.settings import opencode
    from kairos.integrations.settings.agents import Context
    from kairosd.consolidation.request import ConsolidationRequest

    bin_dir = tmp_path / "bin"
    write_fake_agents(bin_dir, ("opencode",))
    log = tmp_path / "agents.log"
    home = tmp_path / "home"
    environ = clean_environ(HOME=str(home), PATH=f"{bin_dir}:{clean_environ()['PATH']}",
                            FAKE_AGENT_TEXT="ADD rule: Always write the test first.", FAKE_AGENT_TOOLS="0",
                            FAKE_AGENT_LOG=str(log))  # fmt: skip
    environ.pop("XDG_CONFIG_HOME", None)
    h = Harness(tmp_path, environ=environ)
    db = Db(tmp_path / "opencode.db")
    db.session(directory=str(h.project))
    for i in range(3):
        db.message("user", text(f"Always keep module {i} small."))
    request = ConsolidationRequest(agent="opencode", session_id=SESSION, transcript_path=str(db.path))

    async def main() -> None:
        await h.start()
        for integrated in (False, True):
            if integrated:
                [plugin, _config] = opencode.plan(Context(home=home, kairos="/usr/bin/kairos"))[0]
                plugin.path.parent.mkdir(parents=True)
                plugin.path.write_text(plugin.transform(None)[0] or "")
                h.clock.advance(3600)
                db.message("user", text("Always keep module 3 small."))  # or it is the same session again
            decision = await h.service.request(request)
            record = await h.settled(decision["run"]["id"])
            result = (await h.service.run_info(record.id))["result"]
            if not integrated:
                assert result["mode"] == "offline"
                assert "opencode is not integrated" in result["mode_reason"]
                continue
            assert (result["mode"], result["agent"]) == ("agent", "opencode")
            assert result["mode_reason"].startswith("auto: through opencode ")
            [called] = [json.loads(line) for line in log.read_text().splitlines()]
            assert "Always keep module 2 small." in called["stdin"]
            assert "Always write the test first." in {e["text"] for e in h.board()}
        await h.stop()

    run(main())
