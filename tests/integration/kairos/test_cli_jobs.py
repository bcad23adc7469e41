"""`kairos task ...` and `kairos add --agent` against a fake kairosd (tests/fake_daemon_support.py):
what each verb sends, what it prints, and its exit code. Also every listing verb and every follower, which
share one printer and one loop with `task list` and `task logs -f`."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_daemon_support import (
    ANY_QUERY,
    JOB_ID,
    FakeDaemon,
    Recorded,
    Stream,
    board_entry,
    job_turn,
    job_view,
    task_view,
)

from kairos.app import run


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(kairos_home)
    return kairos_home


@pytest.fixture
def fake(home) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(home)
    daemon.start()
    yield daemon
    daemon.stop()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = run(["task", *argv])
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# The registry's section of GET /v1/registry (kairosd.core.wire.registry.RegistryInfo).
REGISTRY = {"tasks": {"running": 1}, "slots": {"limit": 4, "in_use": 1, "waiting": 0, "lent": 0}, "max_depth": 3}


def _settled(**over: Any) -> tuple[int, dict[str, Any]]:
    return 200, {"task": job_view(status="idle", turns_done=1, response="fixed it", **over), "timed_out": False}


# ---- start ---------------------------------------------------------------------


def test_start_agent_sends_prompt_cwd_and_options(fake, capsys, home):
    """--agent NAME PROMPT... sends kind agent, the joined prompt, an absolute cwd and every option."""
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view()})
    code, out, err = _run(
        capsys, "start", "fix", "--agent", "claude", "the", "build", "--cwd", "sub", "--model", "opus",
        "--session", "work", "--timeout", "600", "--permission-mode", "plan", "--deny-tool", "Bash",
        "--allow-tool", "Read", "--allow-tool", "Grep",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out == f"started {JOB_ID} (agent: claude, depth 0)\n"
    (req,) = fake.sent("POST", "/v1/registry")
    assert req.body == {
        "kind": "agent",
        "agent": "claude",
        "prompt": "fix the build",
        "cwd": str(home / "sub"),
        "model": "opus",
        "session": "work",
        "timeout_s": 600.0,
        "permissions": {"mode": "plan", "allowed_tools": ["Grep", "Read"], "denied_tools": ["Bash"]},
        "mode": "background",
    }


def test_start_shell_takes_the_command_after_dashes(fake, capsys, home):
    """--shell: everything after -- is the argv (its options untouched); words before it are stdin."""
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view(kind="shell", agent=None, argv=["wc", "-c"])})
    code, out, _ = _run(capsys, "start", "--shell", "some", "input", "--", "wc", "-c", "--json-x")
    assert code == 0
    assert out == f"started {JOB_ID} (shell: wc -c, depth 0)\n"
    (req,) = fake.sent("POST", "/v1/registry")
    assert req.body == {
        "kind": "shell",
        "argv": ["wc", "-c", "--json-x"],
        "prompt": "some input",
        "cwd": str(home),
        "mode": "background",
    }


def test_start_inside_a_task_sends_its_parent(fake, capsys, monkeypatch):
    """KAIROS_TASK_ID and KAIROS_TASK_DEPTH in the environment make the new task a child."""
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view(parent_id="t9999999999", depth=3)})
    monkeypatch.setenv("KAIROS_TASK_ID", "t9999999999")
    monkeypatch.setenv("KAIROS_TASK_DEPTH", "2")
    code, out, _ = _run(capsys, "start", "--agent", "codex", "sub-task")
    assert (code, out) == (0, f"started {JOB_ID} (agent: claude, depth 3)\n")
    (req,) = fake.sent("POST", "/v1/registry")
    assert (req.body["parent_id"], req.body["parent_depth"]) == ("t9999999999", 2)


def test_a_depth_in_other_digits_is_not_sent(fake, capsys, monkeypatch):
    """Issue 27, finding 6: KAIROS_TASK_DEPTH="٣" was sent as depth 3 (isdigit and int read it)."""
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view(parent_id="t9999999999", depth=1)})
    monkeypatch.setenv("KAIROS_TASK_ID", "t9999999999")
    monkeypatch.setenv("KAIROS_TASK_DEPTH", "\u0663")
    assert _run(capsys, "start", "--agent", "codex", "sub-task")[0] == 0
    (req,) = fake.sent("POST", "/v1/registry")
    assert "parent_depth" not in req.body


def test_start_wait_long_polls_until_the_turn_ends(fake, capsys):
    """--wait sends mode sync, then long-polls /wait until it is not timed out; prints the response."""
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view()})
    answers = iter([(200, {"task": job_view(), "timed_out": True}), _settled()])
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?timeout=60.000")] = lambda req: next(answers)
    code, out, err = _run(capsys, "start", "--agent", "claude", "--wait", "go")
    assert (code, err) == (0, "")
    assert out == f"{JOB_ID} idle after turn 1\nfixed it\n"
    assert fake.sent("POST", "/v1/registry")[0].body["mode"] == "sync"
    polls = fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")
    assert [p.query for p in polls] == [{"timeout": "60.000"}] * 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["start", "hi"], "one of the arguments --agent --shell is required"),
        (["start", "--agent", "claude"], "give a prompt"),
        (["start", "--shell", "input"], "--shell needs the command after --"),
        (["start", "--agent", "claude", "hi", "--", "ls"], "a command after -- goes with --shell"),
        (["start", "--agent", "claude", "hi", "--timeout", "0"], "--timeout must be more than 0"),
        (["wait", JOB_ID, "--timeout", "-1"], "durations must be positive"),
        (["wait", JOB_ID, "--timeout", "soon"], "argument --timeout: 'soon' is not a duration"),
        (["list", "--status", "sleeping"], "invalid choice: 'sleeping'"),
    ],
)
def test_usage_errors_exit_2(fake, capsys, argv, message):
    """Bad arguments exit 2 with the reason on stderr and send nothing."""
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert message in err
    assert fake.requests == []


def test_no_daemon_exits_3(home, capsys):
    """Without kairosd every task verb exits 3 with the start hint."""
    code, _, err = _run(capsys, "list")
    assert code == 3
    assert "kairos daemon start" in err


def test_bare_task_prints_help_and_exits_2(home, capsys):
    """`kairos task` alone lists its commands."""
    code, out, _ = _run(capsys)
    assert code == 2
    assert "start" in out
    assert "cancel" in out


# ---- list / show -------------------------------------------------------------------


def test_list_table_and_status_filter(fake, capsys):
    """list prints a table newest first and passes --status; --json prints the document."""
    tasks = [
        job_view(status="running", queued=True),
        job_view(id="t1111111111", kind="shell", agent=None, argv=["make", "test"], status="failed", turns_done=1),
    ]
    fake.routes[("GET", "/v1/registry?status=running")] = (200, {"tasks": tasks, "registry": REGISTRY})
    fake.routes[("GET", "/v1/registry")] = (200, {"tasks": tasks, "registry": REGISTRY})
    code, out, _ = _run(capsys, "list", "--status", "running")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "WHAT", "TURNS", "CREATED", "PROMPT"]
    assert lines[1].startswith(f"{JOB_ID}  running (queued)  agent: claude")
    assert "shell: make test" in lines[2]
    assert fake.requests[0].query == {"status": "running"}
    code, out, _ = _run(capsys, "ls", "--json")
    assert json.loads(out)["tasks"][1]["id"] == "t1111111111"
    assert [r.target for r in fake.requests] == ["/v1/registry?status=running", "/v1/registry"]


def test_list_empty(fake, capsys):
    """No tasks: a friendly line."""
    fake.routes[("GET", "/v1/registry")] = (200, {"tasks": [], "registry": REGISTRY})
    assert _run(capsys, "list") == (0, "no background jobs\n", "")


def test_show_prints_fields_turns_and_response(fake, capsys):
    """show: status, what, parent and depth, permissions, progress, each turn, the response."""
    task = job_view(
        status="idle",
        parent_id="t9999999999",
        depth=1,
        permissions={"mode": "plan", "allowed_tools": ["Read"], "denied_tools": ["Bash"]},
        turns=[job_turn(finished_at="2026-11-20T08:05:00+00:00", ok=True)],
        response="fixed it\nin two places",
        agent_session_id="0cb916db-26aa-40f2-86b5-1ba81b225fd2",
    )
    fake.routes[("GET", f"/v1/registry/{JOB_ID}")] = (200, {"task": task})
    code, out, _ = _run(capsys, "show", JOB_ID)
    assert code == 0
    assert f"id:          {JOB_ID}" in out
    assert "session id:  0cb916db-26aa-40f2-86b5-1ba81b225fd2" in out
    assert "parent:      t9999999999 (depth 1)" in out
    assert "permissions: plan; allowed: Read; denied: Bash" in out
    assert "progress:    2 tool call(s); reading the logs" in out
    assert "turn 1 (ok): fix the build" in out
    assert out.endswith("response:\n  fixed it\n  in two places\n")


# ---- wait / logs / cancel / send / close ------------------------------------------------


def test_wait_exit_codes(fake, capsys):
    """wait exits 0 when the task ended idle or completed, 1 when it failed; --since-turn is passed on."""
    # What is left of --timeout 5 when the poll is sent is a little under 5 s: any query here, checked below.
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?{ANY_QUERY}")] = _settled()
    code, out, _ = _run(capsys, "wait", JOB_ID, "--since-turn", "0", "--timeout", "5")
    assert (code, out) == (0, f"{JOB_ID} idle after turn 1\nfixed it\n")
    (req,) = fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")
    assert sorted(name for name, _ in req.pairs) == ["since_turn", "timeout"]
    assert req.query["since_turn"] == "0"
    assert 4 < float(req.query["timeout"]) <= 5
    fake.requests.clear()
    # Issue 24, item 11: every other duration in kairos takes "5m"; --timeout said "invalid float value".
    assert _run(capsys, "wait", JOB_ID, "--timeout", "0.5m")[0] == 0
    (req,) = fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")
    assert 29 < float(req.query["timeout"]) <= 30
    failed = {"task": job_view(status="failed", turns_done=1, error="exit code 2"), "timed_out": False}
    del fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?{ANY_QUERY}")]
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?timeout=60.000")] = (200, failed)
    assert _run(capsys, "wait", JOB_ID) == (1, f"{JOB_ID} failed after turn 1: exit code 2\n", "")


def test_wait_timeout_is_one_poll_and_exit_1(fake, capsys):
    """--timeout 0 polls once with timeout 0 and reports the task still running."""
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?timeout=0.000")] = (200, {"task": job_view(), "timed_out": True})
    code, out, err = _run(capsys, "wait", JOB_ID, "--timeout", "0")
    assert (code, out) == (1, "")
    assert err == f"kairos: task {JOB_ID} is still running (timed out waiting)\n"
    assert [r.target for r in fake.requests] == [f"/v1/registry/{JOB_ID}/wait?timeout=0.000"]


def test_logs_reads_every_chunk(fake, capsys):
    """logs follows next_offset until the end of the file."""

    def chunk(req: Recorded) -> tuple[int, Any]:
        offset = int(req.query.get("offset", "0"))
        text = "first line\n" if offset == 0 else "second line\n"
        return 200, {"text": text, "offset": offset, "next_offset": offset + len(text), "size": 23, "status": "idle"}

    fake.routes[("GET", f"/v1/registry/{JOB_ID}/logs?{ANY_QUERY}")] = chunk
    assert _run(capsys, "logs", JOB_ID) == (0, "first line\nsecond line\n", "")
    assert [r.query for r in fake.requests] == [{"offset": "0"}, {"offset": "11"}]


def test_logs_follow_prints_lines_until_the_end_marker(fake, capsys):
    """-f streams the lines; the end marker prints nothing; --json prints each item."""
    items = [{"seq": 0, "line": "a"}, {"seq": 1, "line": "b"}, {"end": True, "status": "completed"}]
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/logs?follow=1")] = Stream(items)
    assert _run(capsys, "logs", "-f", JOB_ID) == (0, "a\nb\n", "")
    assert fake.requests[0].query == {"follow": "1"}
    _, out, _ = _run(capsys, "logs", "-f", "--json", JOB_ID)
    assert [json.loads(line) for line in out.splitlines()] == items


def test_cancel_names_descendants_and_refusal_exits_1(fake, capsys):
    """cancel prints what it cancelled; a terminal task's conflict is exit 1 with the daemon's message."""
    fake.routes[("POST", f"/v1/registry/{JOB_ID}/cancel")] = (
        200, {"task": job_view(status="cancelled"), "cancelled": [JOB_ID, "t2222222222"], "killed": [],
              "kill_grace_s": 10.0},
    )  # fmt: skip
    assert _run(capsys, "cancel", JOB_ID) == (0, f"cancelled {JOB_ID} and 1 descendant(s): t2222222222\n", "")
    conflict = {"error": {"code": "conflict", "message": f"task {JOB_ID} is already completed; nothing to cancel"}}
    fake.routes[("POST", f"/v1/registry/{JOB_ID}/cancel")] = (409, conflict)
    code, _, err = _run(capsys, "cancel", JOB_ID)
    assert (code, err) == (1, f"kairos: task {JOB_ID} is already completed; nothing to cancel\n")


def test_send_and_close(fake, capsys, monkeypatch):
    """send posts the message (or stdin for '-'); --wait waits for the turn; close prints the new status."""
    turns = [job_turn(), job_turn(number=2, prompt="add a test")]
    fake.routes[("POST", f"/v1/registry/{JOB_ID}/send")] = (202, {"task": job_view(turns=turns)})
    assert _run(capsys, "send", JOB_ID, "add", "a", "test") == (0, f"sent turn 2 to {JOB_ID}\n", "")
    assert fake.sent("POST", f"/v1/registry/{JOB_ID}/send")[0].body == {"message": "add a test"}
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n"))
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?timeout=60.000")] = _settled()
    code, out, _ = _run(capsys, "send", "--wait", JOB_ID, "-")
    assert (code, out) == (0, f"{JOB_ID} idle after turn 1\nfixed it\n")
    assert fake.sent("POST", f"/v1/registry/{JOB_ID}/send")[1].body == {"message": "from stdin\n"}
    fake.routes[("POST", f"/v1/registry/{JOB_ID}/close")] = (200, {"task": job_view(status="completed")})
    assert _run(capsys, "close", JOB_ID) == (0, f"closed {JOB_ID} (completed)\n", "")


# ---- kairos add --agent ----------------------------------------------------------------------


def _add(fake: FakeDaemon, capsys, *argv: str) -> tuple[int, str, dict[str, Any] | None]:
    task = task_view(cron=None, tz="UTC", explanation="once", next_fires=[], note=None)  # what is sent matters
    fake.routes[("POST", "/v1/tasks")] = (201, {"task": task})
    try:
        code = run(["add", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    _, err = capsys.readouterr()
    sent = fake.sent("POST", "/v1/tasks")
    return code, err, sent[-1].body if sent else None


def test_add_agent_target(fake, capsys, home):
    """--agent NAME implies the agent target; --model, --cwd (absolute) and --timeout go with it."""
    code, err, body = _add(fake, capsys, "--every", "1d", "--agent", "claude", "--model", "opus", "--cwd", "app",
                           "--timeout", "15m", "triage the issues")  # fmt: skip
    assert (code, err) == (0, "")
    assert body is not None
    assert body["target"] == {
        "kind": "agent",
        "agent": "claude",
        "model": "opus",
        "cwd": str(home / "app"),
        "timeout_s": 900.0,
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "agent"], "--target agent needs --agent NAME"),
        (["--agent", "claude", "--cmd", "ls"], "give --cmd (a shell target) or --agent (an agent target), not both"),
        (["--target", "agent", "--cmd", "ls"], "--cmd is for the shell target"),
        (["--agent", "claude", "--session", "s"], "--session is for the inbox target; the agent target has none"),
        # Issue 24, item 14: "--model only go(es) with --target shell or agent", though it is agent-only.
        (["--target", "inbox", "--model", "m"], "--model goes only with an agent target (--agent NAME); the inbox"),
        (["--cmd", "ls", "--model", "m"], "--model goes only with an agent target (--agent NAME)"),
        (
            ["--target", "inbox", "--cwd", ".", "--model", "m"],
            "--cwd goes only with a shell or agent target; --model goes only with an agent target",
        ),
    ],
)
def test_add_agent_target_usage_errors(fake, capsys, argv, message):
    """Mixed-up target options are usage errors (exit 2) and nothing is sent."""
    code, err, body = _add(fake, capsys, "--in", "1h", *argv, "x")
    assert (code, body) == (2, None)
    assert message in err


# ---- the listing verbs (one printer: kairos.commands.common.print_records) ------------------------

# argv, route, the list's key, one entry, the table it prints (zone UTC, 120 columns), the empty message
LISTINGS = [
    (
        ["task", "list"],
        "/v1/registry",
        "tasks",
        job_view(queued=True, turns_done=2, created_at="2026-11-23T09:00:00+00:00", prompt="check the build"),
        [
            "ID           STATUS            WHAT           TURNS  CREATED                    PROMPT",
            f"{JOB_ID}  running (queued)  agent: claude  2      2026-11-23 09:00:00+00:00  check the build",
        ],
        "no background jobs",
    ),
    (
        ["history"],
        "/v1/runs?limit=20",
        "runs",
        {"run_id": "r1", "task_id": "3f2a9c1d", "task_name": None, "scheduled_for": "2026-11-23T08:00:00+01:00",
         "planned_for": "2026-11-23T08:00:00+01:00", "dispatched_at": "2026-11-23T08:01:30+01:00",
         "started_at": None, "finished_at": "2026-11-23T08:01:31+01:00", "target": {"kind": "shell"},
         "output_path": None, "catch_up": False, "outcome": "failed", "manual": True, "late_by_s": 90.0,
         "exit_code": 2, "reason": "boom"},
        [
            "RUN  TASK      SCHEDULED                  OUTCOME          LATE   REASON/EXIT",
            "r1   3f2a9c1d  2026-11-23 07:00:00+00:00  failed (manual)  1m30s  exit 2; boom",
        ],
        "no runs yet",
    ),
    (
        ["missed"],
        "/v1/missed",
        "missed",
        {"task_id": "3f2a9c1d", "scheduled_for": "2026-11-23T09:00:00+00:00", "count": 3,
         "reason": "kairosd was not running", "action": "skipped", "task_name": "standup", "prompt": "p",
         "schedule": "0 9 * * *", "first_scheduled_for": None, "detected_at": "2026-11-23T10:00:00+00:00"},
        [
            "TASK      LAST MISSED                COUNT  REASON                   ACTION   NAME/PROMPT",
            "3f2a9c1d  2026-11-23 09:00:00+00:00  3      kairosd was not running  skipped  standup",
        ],
        "nothing missed",
    ),
    (
        ["sessions"],
        "/v1/sessions",
        "sessions",
        {"agent": "claude", "session_id": "s1", "last_active": "2026-11-23T10:00:00+01:00", "pending": 1,
         "cwd": "/src/app", "transcript_path": None, "registered_at": "2026-11-23T09:00:00+01:00",
         "expires_at": "2026-11-23T11:00:00+01:00", "in_turn": False},
        [
            "AGENT   SESSION  LAST ACTIVE                PENDING  CWD",
            "claude  s1       2026-11-23 10:00:00+01:00  1        /src/app",
        ],
        "no live sessions (agents register through kairos' hooks: see kairos integrate)",
    ),
    (
        ["board", "history"],
        "/v1/board/history?cwd={cwd}&limit=50",
        "history",
        {"at": "2026-11-23T09:00:00+00:00", "action": "added", "by": "kairos", "id": "b1", "kind": "fact",
         "text": "tests run with -m 'not slow'", "project": "/src/app"},
        [
            "WHEN                       ACTION  BY      ID  ENTRY",
            "2026-11-23 09:00:00+00:00  added   kairos  b1  [fact] tests run with -m 'not slow'",
        ],
        "no changes yet to the board of /src/app",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "route", "key", "entry", "table", "empty"), LISTINGS, ids=[" ".join(x[0]) for x in LISTINGS]
)
def test_a_listing_prints_a_table_a_message_when_empty_and_the_document_with_json(
    fake, capsys, argv, route, key, entry, table, empty
):
    # Whole answers as kairosd gives them: history, missed and sessions read theirs as their models.
    rest = {"registry": REGISTRY} if argv[0] == "task" else {"project": "/src/app"} if argv[0] == "board" else {}
    doc = {key: [entry], **rest}
    route = route.format(cwd=Path.cwd())  # the home: the fixture's working folder
    fake.routes[("GET", route)] = (200, doc)
    assert run(argv) == 0
    assert capsys.readouterr().out.splitlines() == table
    assert run([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc
    fake.routes[("GET", route)] = (200, {key: [], **rest})
    assert run(argv) == 0
    assert capsys.readouterr().out == empty + "\n"


def test_board_history_says_what_a_rem_agent_did_with_an_offline_guess(fake, capsys):
    """A guess the rem-agent dropped (DROP ID) or confirmed (KEEP ID) says so beside its entry."""
    made = {"at": "2026-11-23T09:00:00+00:00", "by": "kairos", "kind": "rule", "project": "/src/app"}
    history = [{"action": "drop", "id": "b1", "text": "kindly look", **made},
               {"action": "confirm", "id": "b2", "text": "use uv", **made}]  # fmt: skip
    fake.routes[("GET", f"/v1/board/history?cwd={Path.cwd()}&limit=50")] = (
        200,
        {"history": history, "project": "/src/app"},
    )
    assert run(["board", "history"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "2026-11-23 09:00:00+00:00  drop     kairos  b1  [rule] kindly look (an offline guess the rem-agent dropped)",
        "2026-11-23 09:00:00+00:00  confirm  kairos  b2  [rule] use uv (an offline guess the rem-agent confirmed)",
    ]


@pytest.mark.parametrize(
    ("argv", "route", "answer", "where"),
    [
        (["task", "list"], "/v1/registry", {"tasks": []}, "registry"),
        (["board", "history"], "/v1/board/history?cwd={cwd}&limit=50", {"history": []}, "project"),
        (
            ["board", "show"],
            "/v1/board?cwd={cwd}",
            {
                "project": "/src/app",
                "path": "/b.json",
                "limit": 25,
                "prune_to": 18,
                "updated_at": None,
                "entries": [{"id": "b1"}],
            },
            "entries.0.text",
        ),
    ],
    ids=["task list", "board history", "board show"],
)
def test_task_list_and_the_board_read_their_answers_typed(fake, capsys, argv, route, answer, where):
    """task list (commands/jobs.py) and board show/history (commands/board.py) read kairosd's answer as its
    model: an answer of another shape is one clear line, not a table of "?"."""
    route = route.format(cwd=Path.cwd())
    fake.routes[("GET", route)] = (200, answer)
    assert run(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    path = route.partition("?")[0]
    assert f"kairosd answered GET {path} in a shape this kairos does not know ({where}:" in err
    assert len(err.splitlines()) == 1


# Each verb's request, an answer of another shape, and the key it names (issue 25: every verb reads its answer
# typed). A whole answer, but for one key: what a kairosd of another version, or a bug, would send.
_BROKEN_TASK = {"task": job_view(queued=0)}
_BOARD = {"project": "/src/app"}
OTHER_SHAPES = [
    (["task", "start", "--agent", "claude", "hi"], ("POST", "/v1/registry"), _BROKEN_TASK, "task.queued"),
    (["task", "send", JOB_ID, "more"], ("POST", f"/v1/registry/{JOB_ID}/send"), _BROKEN_TASK, "task.queued"),
    (["task", "close", JOB_ID], ("POST", f"/v1/registry/{JOB_ID}/close"), _BROKEN_TASK, "task.queued"),
    (["task", "wait", JOB_ID], ("GET", f"/v1/registry/{JOB_ID}/wait?{ANY_QUERY}"), {"task": job_view()}, "timed_out"),
    (["task", "cancel", JOB_ID], ("POST", f"/v1/registry/{JOB_ID}/cancel"),
     {"task": job_view(), "cancelled": [JOB_ID], "killed": [], "kill_grace_s": "10"}, "kill_grace_s"),
    (["task", "logs", JOB_ID], ("GET", f"/v1/registry/{JOB_ID}/logs?{ANY_QUERY}"),
     {"text": "a line\n", "offset": 0, "next_offset": "7", "size": 7, "status": "idle"}, "next_offset"),
    (["board", "add", "use pnpm"], ("POST", "/v1/board"),
     {**_BOARD, "entry": {"id": "b1"}, "pruned": [], "superseded": []}, "entry.text"),
    (["board", "pin", "b1"], ("POST", "/v1/board/entries/b1"), {**_BOARD, "entry": job_view()}, "entry.text"),
    (["board", "rm", "b1"], ("DELETE", f"/v1/board/entries/b1?{ANY_QUERY}"), {**_BOARD, "removed": ["b1"]}, "entry"),
    (["board", "prune"], ("POST", "/v1/board/prune"), {**_BOARD, "pruned": [], "prune_to": None}, "prune_to"),
    (["consolidate", "--session-id", "s1", "--transcript", "t.jsonl"], ("POST", "/v1/consolidate"),
     {"status": "started", "gate": None, "reason": "ok", "project": None, "run": {"id": JOB_ID}}, "run.kind"),
    (["export", "--all", "--to", "systemd"], ("POST", "/v1/export"),
     {"engine": "systemd", "exports": [{"task_id": "a", "files": [], "warnings": None}], "refused": []},
     "exports.0.warnings"),
    (["doctor"], ("GET", "/v1/doctor"), {"doctor": {"ok": True}}, "doctor.problems"),
    (["list", "--problems"], ("GET", "/v1/quarantine"), {"path": "/q", "entries": [{"id": None, "reason": "x"}]},
     "entries.0.quarantined_at"),
    (["import", "claude.json"], ("POST", "/v1/import"),
     {"dry_run": True, "imported": [{"id": "aa11bb22"}], "skipped": [], "rejected": [], "dropped": []},
     "imported.0.prompt"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "route", "answer", "where"), OTHER_SHAPES, ids=[" ".join(x[0][:2]) for x in OTHER_SHAPES]
)
def test_every_verb_reads_its_answer_typed(fake, capsys, argv, route, answer, where):
    """The background job, board, consolidate, export, doctor, list --problems and import verbs read kairosd's
    answer as its model
    (kairosd.core.wire): an answer of another shape is one clear line naming the key, with or without
    --json, and nothing is printed on stdout."""
    fake.routes[route] = (200, answer)
    Path("claude.json").write_text('{"tasks": []}')  # what import reads (its dry run's answer is the broken one)
    method, path = route[0], route[1].partition("?")[0]
    for json_flag in ([], ["--json"]):
        assert run([*argv, *json_flag]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert f"kairosd answered {method} " in err
        assert " in a shape this kairos does not know (" in err
        assert f"({where}:" in err, err
        assert len(err.splitlines()) == 1
    assert fake.sent(method, path), "the verb did not ask kairosd"


def test_an_mcp_tool_reads_its_answer_typed(fake):
    """kairos mcp's tools read kairosd's answers as their models too: another shape is a tool error naming
    the key (the model sees one line), not a result of "?"."""
    import os

    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from kairos.integrations.mcptools import _Tools

    tools = _Tools(dict(os.environ))  # as build_server makes them: the fake's socket is in this environment
    fake.routes[("GET", f"/v1/registry/{JOB_ID}")] = (200, {"task": job_view()})
    status = anyio.run(tools.task_status, JOB_ID)
    assert status.splitlines()[0] == f"Task {JOB_ID}: running, agent claude, turns finished: 0."
    fake.routes[("GET", f"/v1/registry/{JOB_ID}")] = (200, _BROKEN_TASK)
    shape = rf"kairosd answered GET /v1/registry/{JOB_ID} in a shape this kairos does not know \(task.queued:"
    with pytest.raises(ToolError, match=shape):
        anyio.run(tools.task_status, JOB_ID)
    fake.routes[("POST", f"/v1/registry/{JOB_ID}/cancel")] = (200, {"task": job_view(), "cancelled": [JOB_ID]})
    with pytest.raises(ToolError, match=r"\(killed:"):
        anyio.run(tools.task_cancel, JOB_ID)


# ---- the following verbs (one loop: kairos.commands.common.print_each) -----------------------------


@pytest.mark.parametrize(
    ("argv", "route", "item"),
    [
        (["watch"], "/v1/events", {"type": "run_started", "run_id": "r1"}),
        (["inbox", "--follow", "--json"], "/v1/inbox?follow=1", {"session": "main", "prompt": "p"}),
        (["task", "logs", "-f", JOB_ID], f"/v1/registry/{JOB_ID}/logs?follow=1", {"seq": 0, "line": "a line"}),
    ],
    ids=["watch", "inbox --follow", "task logs -f"],
)
def test_a_follower_whose_reader_goes_away_exits_0_quietly(fake, argv, route, item):
    """`kairos watch | head -1`: each item arrives as it is printed, and the broken pipe is no error."""
    # Far more than a pipe holds, each new (inbox --follow prints an id once).
    fake.routes[("GET", route)] = Stream([{**item, "id": f"r{n}", "n": n} for n in range(20_000)])
    with subprocess.Popen(
        [sys.executable, "-m", "kairos", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader goes away while kairos still has thousands of lines to print
        code = proc.wait(timeout=30)
        err = proc.stderr.read()
    # task logs -f prints the bare line; watch and inbox --json print the item.
    assert first == b"a line\n" if argv[0] == "task" else json.loads(first)["n"] == 0
    assert (code, err) == (0, b"")


def test_board_show_prints_each_table_or_its_placeholder(fake, capsys):
    """board show: the entries' table (or how entries come), and with --all the replaced ones (or none)."""
    # Whole answers as kairosd gives them (kairosd.core.wire.board): board show reads its answer typed.
    made = {"source_session": None, "source_agent": None, "created_at": "2026-11-20T08:00:00+00:00"}
    entry = {
        "id": "b1",
        "kind": "rule",
        "hits": 2,
        "last_seen_at": "2026-11-23T09:00:00+00:00",
        "author": "user",
        "pinned": True,
        "text": "use pnpm",
        "conflicts_with": "b2",
        **made,
    }
    old = {"id": "b0", "kind": "rule", "superseded_at": "2026-11-22T08:30:00+00:00", "superseded_by": "b1",
           "text": "use npm", "hits": 1, "author": "kairos", "last_seen_at": "2026-11-21T08:00:00+00:00",
           **made}  # fmt: skip
    board = {"project": "/src/app", "path": "/data/boards/app.json", "limit": 25, "prune_to": 18,
             "updated_at": "2026-11-23T09:00:00+00:00"}  # fmt: skip
    route = ("GET", f"/v1/board?cwd={Path.cwd()}&all=1")
    # an offline guess a rem-agent dropped: no entry replaced it
    dropped = {k: v for k, v in old.items() if k != "superseded_by"} | {"id": "b9", "dropped_by": "rem-agent",
                                                                         "text": "kindly look at it"}  # fmt: skip
    fake.routes[route] = (200, {**board, "entries": [entry], "superseded": [old, dropped]})
    assert run(["board", "show", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "context board of /src/app: 1 of 25 entries",
        "ID  KIND  HITS  LAST SEEN   BY           TEXT",
        "b1  rule  2     2026-11-23  you, pinned  use pnpm (conflicts with b2)",  # the last column on one line
        "",
        "replaced entries (2, newest first; kairos board restore ID puts one back):",
        "ID  KIND  REPLACED AT                BY ENTRY                TEXT",
        "b0  rule  2026-11-22 08:30:00+00:00  b1                      use npm",  # to the second, with its offset
        "b9  rule  2026-11-22 08:30:00+00:00  (dropped by rem-agent)  kindly look at it",
    ]
    fake.routes[route] = (200, {**board, "entries": [], "superseded": []})
    assert run(["board", "show", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "context board of /src/app: 0 of 25 entries",
        "(empty: entries come from consolidated sessions, or kairos board add)",
        "",
        "replaced entries (0, newest first; kairos board restore ID puts one back):",
        "(none)",
    ]


def test_a_board_change_prints_the_entry_or_with_json_the_answer(fake, capsys):
    answer = {"project": "/src/app", "entry": board_entry(), "before": "use npm"}
    fake.routes[("POST", "/v1/board/entries/b1")] = (200, answer)
    for argv, line in [
        (["board", "pin", "b1"], "pinned b1 [rule] use pnpm"),
        (["board", "pin", "b1", "--off"], "unpinned b1 [rule] use pnpm"),
        (["board", "restore", "b1"], "restored b1 [rule] use pnpm (pinned)"),
        (["board", "edit", "b1", "--kind", "rule"], "edited b1 [rule] use pnpm (was: use npm)"),
    ]:
        assert run(argv) == 0
        assert capsys.readouterr().out == line + "\n"
        assert run([*argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == answer
    assert [r.body for r in fake.requests if r.method == "POST"][:4] == [
        {"cwd": str(Path.cwd()), "pinned": True},
        {"cwd": str(Path.cwd()), "pinned": True},
        {"cwd": str(Path.cwd()), "pinned": False},
        {"cwd": str(Path.cwd()), "pinned": False},
    ]


def test_cancel_waits_out_the_kill_grace_and_says_what_was_killed(fake, capsys, monkeypatch):
    """The red-team case: a task ignoring SIGTERM made cancel exit 1 after 10 s although it was cancelled.

    The daemon answers once every process is gone, after the kill grace (10 s by default, the
    client's ordinary timeout). Here the ordinary timeout is 0.2 s and the answer takes 0.6 s.
    """
    import time

    from kairos.client import Client

    monkeypatch.setattr(Client.__init__, "__defaults__", (None, 0.2, None))

    def slow(_req: Any) -> tuple[int, dict[str, Any]]:
        time.sleep(0.6)  # the kill grace, as the daemon sits it out
        body = {"task": job_view(status="cancelled"), "cancelled": [JOB_ID], "killed": [JOB_ID], "kill_grace_s": 10.0}
        return 200, body

    fake.routes[("POST", f"/v1/registry/{JOB_ID}/cancel")] = slow
    code, out, err = _run(capsys, "cancel", JOB_ID)
    assert (code, err) == (0, "")
    assert out == f"cancelled {JOB_ID}\n{JOB_ID} ignored SIGTERM: killed with SIGKILL after the 10s grace\n"
