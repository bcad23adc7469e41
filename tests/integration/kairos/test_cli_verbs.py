"""The daemon-facing CLI verbs, run in-process through kairos.app.run against a fake kairosd.

The fake (tests/fake_daemon_support.py) is a tiny threaded HTTP server on a Unix socket under a
short temp dir ($KAIROS_HOME/run/kairosd.sock): it answers canned JSON per route, a route's query
included, and records every request, so each test checks both what the CLI sent and what it printed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_daemon_support import ZONE, Answer, FakeDaemon, Recorded, Stream, claude_file, fire, task_view

from kairos.app import run
from kairos.commands import daemon as daemon_cmd


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    # Short and under /tmp: AF_UNIX socket paths are limited to ~107 bytes.
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))
    monkeypatch.setenv("KAIROS_HOME", str(root))
    monkeypatch.setenv("TZ", ZONE)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def fake(home) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(home)
    daemon.start()
    yield daemon
    daemon.stop()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _added(fake: FakeDaemon, **over: Any) -> None:
    fake.routes[("POST", "/v1/tasks")] = (201, {"task": {**task_view(**over), "note": over.get("note")}})


def _add_body(fake: FakeDaemon, capsys, *argv: str) -> dict[str, Any]:
    _added(fake)
    code, _out, err = _run(capsys, "add", *argv)
    assert (code, err) == (0, "")
    (req,) = fake.sent("POST", "/v1/tasks")
    body = dict(req.body)
    assert body.pop("created_by") == "cli"  # the CLI says who it is; an API request without it is "api"
    return body


INBOX = {"kind": "inbox", "session": "default"}


# ---- add --------------------------------------------------------------------


def test_add_cron_sends_body_and_prints_three_fires(fake, capsys):
    """`add CRON PROMPT...` sends cron, joined prompt, local zone and inbox target; prints id and 3 fires."""
    _added(fake)
    code, out, err = _run(capsys, "add", "0 9 * * 1-5", "summarise", "open", "PRs")
    assert (code, err) == (0, "")
    (req,) = fake.sent("POST", "/v1/tasks")
    assert req.body == {
        "cron": "0 9 * * 1-5", "prompt": "summarise open PRs", "tz": ZONE, "target": INBOX, "created_by": "cli"
    }  # fmt: skip
    assert out.splitlines() == [
        "added 3f2a9c1d: At 09:00 on Monday to Friday (Europe/Berlin)",
        "  next: 2026-11-23 09:00:00+01:00",
        "        2026-11-24 09:00:00+01:00",
        "        2026-11-25 09:00:00+01:00",
    ]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--every", "5m", "check", "CI"], {"every": "5m", "prompt": "check CI"}),
        (["--in", "90s", "push"], {"in": "90s", "prompt": "push"}),
        (["--at", "2026-12-01T09:00", "demo"], {"at": "2026-12-01T09:00", "prompt": "demo"}),
        (["@daily", "digest"], {"cron": "@daily", "prompt": "digest"}),
        (["0 3 * * *", "--once", "dry", "run"], {"cron": "0 3 * * *", "once": True, "prompt": "dry run"}),
    ],
)
def test_add_schedule_kinds(fake, capsys, argv, expected):
    """--every/--in/--at make every positional the prompt; --once may sit between cron and prompt."""
    body = _add_body(fake, capsys, *argv)
    assert body == {**expected, "tz": ZONE, "target": INBOX}


def test_add_behaviour_options(fake, capsys):
    """--tz, --session, --jitter, --expires never, --permanent, --catch-up, --overlap and --name are sent."""
    body = _add_body(
        fake, capsys, "--every", "1h", "--tz", "UTC", "--session", "work", "--jitter", "max:90s",
        "--expires", "never", "--permanent", "--catch-up", "all", "--overlap", "queue", "--name", "tick", "tick",
    )  # fmt: skip
    assert body == {
        "every": "1h",
        "prompt": "tick",
        "tz": "UTC",
        "target": {"kind": "inbox", "session": "work"},
        "jitter": "max:1m30s",
        "expires_after_days": None,
        "permanent": True,
        "catch_up": "all",
        "overlap": "queue",
        "name": "tick",
    }


def test_add_expires_days(fake, capsys):
    """--expires DAYS is sent as a whole number of days."""
    assert _add_body(fake, capsys, "--every", "1h", "--expires", "7", "x")["expires_after_days"] == 7


def test_add_shell_target(fake, capsys, home, monkeypatch):
    """--target shell --cmd is split with shlex (no shell); --cwd is made absolute; --timeout is sent."""
    monkeypatch.chdir(home)
    body = _add_body(
        fake, capsys, "--in", "1h", "--target", "shell", "--cmd", "notify-send 'kairos tick'",
        "--cwd", "sub", "--timeout", "30", "tick",
    )  # fmt: skip
    assert body["target"] == {
        "kind": "shell",
        "argv": ["notify-send", "kairos tick"],
        "cwd": str(home / "sub"),
        "timeout_s": 30.0,
    }


@pytest.mark.parametrize(("given", "seconds"), [("30", 30.0), ("2.5", 2.5), ("5m", 300.0), ("1h30m", 5400.0)])
def test_add_timeout_takes_a_duration(fake, capsys, given, seconds):
    """Issue 24, item 11: `--timeout 5m` failed with argparse's "invalid float value"."""
    body = _add_body(fake, capsys, "--every", "1h", "--cmd", "true", "--timeout", given, "x")
    assert body["target"]["timeout_s"] == seconds


def test_add_no_check_is_sent(fake, capsys):
    """Issue 24, item 7: --no-check asks kairosd to skip the checks that may pass later."""
    assert _add_body(fake, capsys, "--every", "1h", "--cmd", "later", "--no-check", "x")["check_target"] is False
    fake.requests.clear()
    assert "check_target" not in _add_body(fake, capsys, "--every", "1h", "--cmd", "true", "x")


def test_add_cmd_implies_shell(fake, capsys, home, monkeypatch):
    """--cmd alone picks the shell target."""
    monkeypatch.chdir(home)
    body = _add_body(fake, capsys, "--every", "1h", "--cmd", "true", "x")
    assert body["target"] == {"kind": "shell", "argv": ["true"], "cwd": str(home)}


@pytest.mark.parametrize("argv", [["--cmd", "true"], ["--agent", "claude"]])
def test_add_without_cwd_records_the_folder_add_ran_in(fake, capsys, home, monkeypatch, argv):
    """Issue 24, item 1: without --cwd the task ran in kairosd's folder (/); it runs where `add` ran,
    as `kairos task start` does, and the folder is in the task."""
    work = home / "proj"
    work.mkdir()
    monkeypatch.chdir(work)
    body = _add_body(fake, capsys, "--every", "1h", *argv, "x")
    assert body["target"]["cwd"] == str(work)


def test_add_help_names_the_default_folder(capsys):
    with pytest.raises(SystemExit):
        run(["add", "--help"])
    assert "default: the folder you run add in" in " ".join(capsys.readouterr().out.split())


def test_show_gives_the_jitter_half_the_period_caps(fake, capsys):
    """Issue 24, item 4: `show` said max:1h for a */5 task whose fires move at most 2m30s."""
    fires = [fire(f"2026-11-23T09:{m:02d}:00+01:00") for m in (0, 5, 10, 15, 20)]
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (
        200, {"task": task_view(cron="*/5 * * * *", jitter="max:1h", next_fires=fires)}
    )  # fmt: skip
    code, out, _ = _run(capsys, "show", "3f2a9c1d")
    assert code == 0
    assert "jitter:      max:1h, capped at 2m30s for this task (half the 5m between its fires)\n" in out
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (200, {"task": task_view(jitter="max:1h")})  # days apart: as asked
    assert "jitter:      max:1h\n" in _run(capsys, "show", "3f2a9c1d")[1]


def test_show_names_the_folder_of_a_task_stored_without_one(fake, capsys):
    """A task stored without cwd (an old store, an API client) says where it runs: the home folder."""
    # As kairosd answers it: a target's every key, cwd null (kairosd.core.wire.tasks.AgentTargetView).
    target = {"kind": "agent", "agent": "claude", "cwd": None, "model": None, "timeout_s": None}
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (200, {"task": task_view(target=target)})
    code, out, _ = _run(capsys, "show", "3f2a9c1d")
    assert code == 0
    assert "target:      agent: claude, in ~ (no folder recorded: the home folder)\n" in out


def test_add_prompt_from_stdin_must_be_utf8(fake, capsys, monkeypatch):
    """Bytes that are not UTF-8 were accepted and failed at every fire (with an encoding traceback)."""

    class Stdin:
        buffer = io.BytesIO(b"\xff x")

    monkeypatch.setattr(sys, "stdin", Stdin())
    code, _, err = _run(capsys, "add", "--in", "2s", "-")
    assert code == 2
    assert "not UTF-8" in err
    assert fake.requests == []


def test_add_prompt_from_stdin(fake, capsys, monkeypatch):
    """A prompt of '-' is read from stdin."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("line one\nline two\n"))
    assert _add_body(fake, capsys, "--in", "1h", "-")["prompt"] == "line one\nline two"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["0 25 * * *", "x"], "hour: 25 is out of range"),
        (["check", "the", "build"], "is not a cron expression"),
        (["0", "9", "*", "*", "*", "x"], "quote the cron expression as one argument: kairos add '0 9 * * *'"),
        (["--every", "5m", "--in", "1h", "x"], "give only one schedule"),
        (["--every", "5m", "--once", "x"], "--once goes with a cron expression"),
        (["--every", "5m"], "non-empty prompt"),
        (["--every", "5m", "--target", "shell", "x"], "needs --cmd"),
        (["--every", "5m", "--target", "inbox", "--cmd", "true", "x"], "--cmd goes only with a shell target"),
        (["--every", "5m", "--expires", "soon", "x"], "--expires takes"),
        (["--every", "5m", "--jitter", "lots", "x"], "unknown jitter"),
        (["--every", "0m", "x"], "must be longer than zero"),
        (["* * * * *", "--expires", "3000000", "x"], "from 1 to 3650"),
        (["--every", "5m", "--expires", "٣", "x"], "--expires takes"),
        (["--in", "3000000d", "x"], "3650d limit"),
        (["--every", "5m", "--jitter", "max:99999999999999d", "x"], "limit"),
        (["--every", "5m", "bad \udcff prompt"], "not valid Unicode"),
        (["--every", "5m", "--name", "n" * 201, "x"], "the limit is 200"),
    ],
)
def test_add_usage_errors_are_local(fake, capsys, argv, message):
    """Bad schedules and options fail with exit 2 and a clear message before anything is sent."""
    code, out, err = _run(capsys, "add", *argv)
    assert code == 2
    assert out == ""
    assert message in err
    assert fake.requests == []


def test_add_shows_jitter_and_note(fake, capsys):
    """When jitter moves a fire the scheduled time is shown too; the interval note is printed."""
    _added(
        fake,
        name="tick",
        cron="*/6 * * * *",
        explanation="Every sixth minute of every hour",
        next_fires=[fire("2026-11-22T00:42:27+01:00", "2026-11-22T00:42:00+01:00")],
        note="cron cannot repeat every 7m evenly; using every 6m (*/6 * * * *)",
    )
    code, out, _ = _run(capsys, "add", "--every", "7m", "check")
    assert code == 0
    assert out.splitlines() == [
        "added 3f2a9c1d (tick): Every sixth minute of every hour (Europe/Berlin)",
        "  next: 2026-11-22 00:42:27+01:00 (scheduled 00:42:00)",
        "  note: cron cannot repeat every 7m evenly; using every 6m (*/6 * * * *)",
    ]


def test_add_json(fake, capsys):
    """`add --json` prints the daemon's answer as one JSON document."""
    _added(fake)
    code, out, _ = _run(capsys, "add", "@hourly", "x", "--json")
    assert code == 0
    assert json.loads(out)["task"]["id"] == "3f2a9c1d"


# ---- list / show / rm / pause / resume / run --------------------------------


def _at_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout (capsys's) answers as a terminal does: tables are cut to fit it only there."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def _route_four_tasks(fake: FakeDaemon) -> None:
    fake.routes[("GET", "/v1/tasks?view=summary")] = (
        200,
        {
            "tasks": [
                task_view(),
                task_view(id="0b1c2d3e", name="tick", cron="*/5 * * * *", tz="UTC", planned_for="2026-11-23T08:05:00Z"),
                task_view(id="aaaabbbb", status="paused", planned_for=None, prompt="a\nvery long prompt " * 20),
                task_view(
                    id="ccccdddd",
                    cron=None,
                    at="2026-11-22T22:59:00Z",
                    recurring=False,
                    target={"kind": "shell", "argv": ["/usr/bin/notify-send", "hi"]},
                    status="done",
                    planned_for=None,
                ),
            ]
        },
    )


def test_list_table(fake, capsys, monkeypatch):
    """`list` asks for the summary view and prints a table with next fire (or paused/done), schedule, target
    and name or prompt; at a terminal the long prompt is cut to fit."""
    _route_four_tasks(fake)
    _at_terminal(monkeypatch)
    code, out, err = _run(capsys, "ls")
    assert (code, err) == (0, "")
    assert [r.target for r in fake.requests] == ["/v1/tasks?view=summary"]
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "NEXT", "SCHEDULE", "TARGET", "NAME/PROMPT"]
    assert lines[1].split() == ["3f2a9c1d", "2026-11-23", "09:00:00+01:00", "0", "9", "*", "*", "1-5",
                                "inbox:default", "summarise", "open", "PRs"]  # fmt: skip
    assert "0b1c2d3e  2026-11-23 09:05:00+01:00  */5 * * * * UTC" in lines[2]
    assert lines[2].split()[-2:] == ["inbox:default", "tick"]
    assert lines[3].startswith("aaaabbbb  paused ")
    assert lines[3].endswith("…")
    assert len(lines[3]) <= 100
    assert "\n" not in lines[3]
    assert lines[4].startswith("ccccdddd  done ")
    assert "once" in lines[4]
    assert "shell:notify-send" in lines[4]


@pytest.mark.parametrize(("argv", "terminal"), [(["ls"], False), (["ls", "--wide"], True), (["ls", "--wide"], False)])
def test_list_cuts_nothing_when_piped_or_wide(fake, capsys, monkeypatch, argv, terminal):
    """`kairos list | cat` and `kairos list --wide` print the long prompt whole, on one line."""
    _route_four_tasks(fake)
    if terminal:
        _at_terminal(monkeypatch)
    code, out, err = _run(capsys, *argv)
    assert (code, err) == (0, "")
    row = out.splitlines()[3]
    assert row.startswith("aaaabbbb  paused ")
    assert not row.endswith("…")
    assert row.endswith(" ".join(("a\nvery long prompt " * 20).split()))


def test_list_json_and_empty(fake, capsys):
    """`list --json` asks for the full views (no query) and prints the daemon's document; an empty list says so."""
    fake.routes[("GET", "/v1/tasks")] = (200, {"tasks": []})
    fake.routes[("GET", "/v1/tasks?view=summary")] = (200, {"tasks": []})
    code, out, _ = _run(capsys, "list", "--json")
    assert (code, json.loads(out)) == (0, {"tasks": []})
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert out.startswith("no tasks")
    assert [r.target for r in fake.requests] == ["/v1/tasks", "/v1/tasks?view=summary"]


def test_show(fake, capsys):
    """`show ID` prints every field, the next fires and the prompt."""
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (
        200,
        {"task": task_view(target={"kind": "shell", "argv": ["echo", "a b"], "cwd": "/tmp", "timeout_s": 300})},
    )
    code, out, _ = _run(capsys, "show", "3f2a9c1d")
    assert code == 0
    assert "id:          3f2a9c1d\n" in out
    assert "schedule:    0 9 * * 1-5\n" in out
    assert "meaning:     At 09:00 on Monday to Friday (Europe/Berlin)\n" in out
    assert "target:      shell: echo 'a b', in /tmp, timeout 5m\n" in out
    assert "next:        2026-11-23 09:00:00+01:00\n             2026-11-24 09:00:00+01:00\n" in out
    assert out.endswith("prompt:\n  summarise open PRs\n")


def test_show_prints_a_one_shots_time_as_every_other_time(fake, capsys):
    """A one-shot's time (an ISO text with microseconds, from --in) is shown to the second, as created and next."""
    at = "2026-11-23T09:30:00.123456+01:00"
    one_shot = task_view(cron=None, at="2026-11-23T08:30:00.123456Z", recurring=False, schedule=at,
                     explanation="once, at the exact time",
                     next_fires=[{"scheduled_for": at, "planned_for": at}])  # fmt: skip
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (200, {"task": one_shot})
    code, out, _ = _run(capsys, "show", "3f2a9c1d")
    assert code == 0
    assert "schedule:    2026-11-23 09:30:00+01:00\n" in out
    assert "next:        2026-11-23 09:30:00+01:00\n" in out
    assert "created:     2026-11-20 09:00:00+01:00 by cli\n" in out
    assert ".123456" not in out


def test_a_task_kairos_paused_says_why_in_list_and_show(fake, capsys):
    """Issue #13: a task paused because it broke shows the reason (control characters escaped)."""
    reason = "kairos could not expire this task (OverflowError: date value out of range\x1b[31m); it was paused"
    paused = task_view(status="paused", paused=True, planned_for=None, next_fires=[], paused_reason=reason)
    fake.routes[("GET", "/v1/tasks?view=summary")] = (200, {"tasks": [paused]})
    fake.routes[("GET", "/v1/tasks/3f2a9c1d")] = (200, {"task": paused})
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert out.splitlines()[-1] == "! 3f2a9c1d paused by kairos: " + reason.replace("\x1b", "\\x1b")
    code, out, _ = _run(capsys, "show", "3f2a9c1d")
    assert "status:      paused by kairos: kairos could not expire this task (OverflowError" in out
    assert "\x1b" not in out


def test_list_problems_lists_the_quarantine(fake, capsys):
    """`list --problems` asks GET /v1/quarantine and prints id, when and reason; --json the document."""
    doc = {
        "path": "/state/scheduled_tasks.quarantine.json",
        "entries": [
            {"id": "bad0bad0\n", "reason": "invalid id: id must be 8 lowercase hex characters",
             "quarantined_at": "2026-11-20T08:00:00+00:00", "record": {"id": "bad0bad0\n"}},
        ],
    }  # fmt: skip
    fake.routes[("GET", "/v1/quarantine")] = (200, doc)
    code, out, _ = _run(capsys, "list", "--problems")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "SET", "ASIDE", "REASON"]
    assert lines[1].startswith("bad0bad0\\n  2026-11-20 09:00:00+01:00  invalid id:")
    assert "1 task(s) set aside in /state/scheduled_tasks.quarantine.json" in out
    code, out, _ = _run(capsys, "list", "--problems", "--json")
    assert json.loads(out) == doc
    fake.routes[("GET", "/v1/quarantine")] = (200, {"path": "/x", "entries": []})
    assert _run(capsys, "list", "--problems")[1] == "no tasks set aside\n"


def test_show_quotes_the_id(fake, capsys):
    """An id with a slash cannot reach another route: it is percent-encoded."""
    code, _, err = _run(capsys, "show", "../status")
    assert code == 1
    assert fake.requests[0].path == "/v1/tasks/..%2Fstatus"
    assert "no such endpoint" in err


def test_rm_several_goes_on_past_a_bad_id(fake, capsys):
    """`rm A B C` sends one DELETE per id in order; a bad id is reported and the rest go on (exit 1)."""
    fake.routes[("DELETE", "/v1/tasks/aaaaaaaa")] = (200, {"removed": ["aaaaaaaa"]})
    fake.routes[("DELETE", "/v1/tasks/bbbbbbbb")] = (200, {"removed": ["bbbbbbbb"]})
    code, out, _ = _run(capsys, "rm", "aaaaaaaa", "bbbbbbbb")
    assert (code, out) == (0, "removed aaaaaaaa\nremoved bbbbbbbb\n")
    fake.requests.clear()
    code, out, err = _run(capsys, "rm", "aaaaaaaa", "deadbeef", "bbbbbbbb")
    assert code == 1
    assert out == "removed aaaaaaaa\nremoved bbbbbbbb\n"
    assert "deadbeef" in fake.requests[1].path
    assert len(fake.requests) == 3
    assert err.startswith("kairos: deadbeef: ")


def test_rm_prints_the_full_id_not_the_prefix_typed(fake, capsys):
    fake.routes[("DELETE", "/v1/tasks/AAAA")] = (200, {"removed": ["aaaaaaaa"]})
    assert _run(capsys, "rm", "AAAA") == (0, "removed aaaaaaaa\n", "")


def test_pause_resume_run_show_take_many_ids_and_go_on_past_a_bad_one(fake, capsys):
    fake.routes[("POST", "/v1/tasks/aaaaaaaa/pause")] = (200, {"task": task_view(id="aaaaaaaa")})
    fake.routes[("POST", "/v1/tasks/bbbbbbbb/pause")] = (200, {"task": task_view(id="bbbbbbbb", unchanged=True)})
    code, out, err = _run(capsys, "pause", "aaaaaaaa", "deadbeef", "bbbbbbbb")
    assert code == 1
    assert out == "paused aaaaaaaa\nbbbbbbbb was already paused: nothing to do\n"
    assert err.startswith("kairos: deadbeef: ")
    for verb, route in (("resume", ("POST", "resume")), ("run", ("POST", "run")), ("show", ("GET", ""))):
        fake.requests.clear()
        _run(capsys, verb, "aaaaaaaa", "bbbbbbbb")
        assert [r.path for r in fake.requests] == [
            f"/v1/tasks/{t}" + (f"/{route[1]}" if route[1] else "") for t in ("aaaaaaaa", "bbbbbbbb")
        ], verb


def test_resume_says_what_the_catch_up_policy_did_with_a_one_shot(fake, capsys):
    caught = {"action": "fired", "scheduled_for": "2026-11-23T08:00:00Z", "run_id": "r1", "outcome": None,
              "reason": None}  # fmt: skip
    fake.routes[("POST", "/v1/tasks/aaaaaaaa/resume")] = (200, {"task": task_view(id="aaaaaaaa", caught_up=caught)})
    code, out, _ = _run(capsys, "resume", "aaaaaaaa")
    assert code == 0
    assert "fired now, late (run r1, caught up)" in out
    caught = dict(caught, action="missed", reason="the task was paused when it was due (1 fire surfaced)")
    fake.routes[("POST", "/v1/tasks/aaaaaaaa/resume")] = (200, {"task": task_view(id="aaaaaaaa", caught_up=caught)})
    code, out, _ = _run(capsys, "resume", "aaaaaaaa")
    assert code == 0
    assert "recorded as missed (the task was paused when it was due (1 fire surfaced))" in out


def test_rm_json(fake, capsys):
    """`rm --json` prints one document listing every removed id."""
    for tid in ("aaaaaaaa", "bbbbbbbb"):
        fake.routes[("DELETE", f"/v1/tasks/{tid}")] = (200, {"removed": [tid]})
    code, out, _ = _run(capsys, "rm", "aaaaaaaa", "bbbbbbbb", "--json")
    assert (code, json.loads(out)) == (0, {"removed": ["aaaaaaaa", "bbbbbbbb"]})


def test_pause_resume_run(fake, capsys):
    """pause/resume/run POST to the task's action and print what happened."""
    fake.routes[("POST", "/v1/tasks/3f2a9c1d/pause")] = (200, {"task": task_view(paused=True, status="paused")})
    fake.routes[("POST", "/v1/tasks/3f2a9c1d/resume")] = (200, {"task": task_view()})
    fake.routes[("POST", "/v1/tasks/3f2a9c1d/run")] = (
        202,
        {"run": _run_record(outcome=None, started_at=None, finished_at=None)},
    )
    assert _run(capsys, "pause", "3f2a9c1d")[:2] == (0, "paused 3f2a9c1d\n")
    assert _run(capsys, "resume", "3f2a9c1d")[:2] == (0, "resumed 3f2a9c1d, next: 2026-11-23 09:00:00+01:00\n")
    assert _run(capsys, "run", "3f2a9c1d")[:2] == (0, "dispatched run r0123456789ab of task 3f2a9c1d\n")
    assert [r.path for r in fake.requests] == [
        "/v1/tasks/3f2a9c1d/pause",
        "/v1/tasks/3f2a9c1d/resume",
        "/v1/tasks/3f2a9c1d/run",
    ]


# ---- ledgers ------------------------------------------------------------------


def _run_record(**over: Any) -> dict[str, Any]:
    """A run as GET /v1/runs lists it (kairosd.core.wire.runs.RunView: history reads it typed)."""
    record: dict[str, Any] = {
        "run_id": "r0123456789ab",
        "task_id": "3f2a9c1d",
        "task_name": None,
        "scheduled_for": "2026-11-23T08:00:00Z",
        "planned_for": "2026-11-23T08:00:00Z",
        "dispatched_at": "2026-11-23T08:00:00Z",
        "started_at": "2026-11-23T08:00:01Z",
        "finished_at": "2026-11-23T08:00:02Z",
        "outcome": "delivered",
        "reason": None,
        "target": {"kind": "inbox", "session": "default"},
        "output_path": None,
        "exit_code": None,
        "late_by_s": 0.0,
        "catch_up": False,
        "manual": False,
    }
    record.update(over)
    return record


def test_history(fake, capsys):
    """`history ID -n N` queries task and limit and prints a runs table."""
    fake.routes[("GET", "/v1/runs?task=3f2a9c1d&limit=5")] = (
        200,
        {
            "runs": [
                _run_record(outcome="failed", exit_code=2, reason="exited 2", late_by_s=125.0),
                _run_record(run_id="rbbbbbbbbbbbb", manual=True),
            ]
        },
    )
    code, out, _ = _run(capsys, "history", "3f2a9c1d", "-n", "5")
    assert code == 0
    assert fake.requests[0].query == {"task": "3f2a9c1d", "limit": "5"}
    lines = out.splitlines()
    assert lines[0].split() == ["RUN", "TASK", "SCHEDULED", "OUTCOME", "LATE", "REASON/EXIT"]
    assert lines[1].split() == ["r0123456789ab", "3f2a9c1d", "2026-11-23", "09:00:00+01:00", "failed", "2m5s",
                                "exit", "2;", "exited", "2"]  # fmt: skip
    assert "delivered (manual)" in lines[2]


@pytest.mark.parametrize(
    ("exit_code", "reason", "shown"),
    [
        (3, "exit code 3", "exit code 3"),  # was "exit 3; exit code 3"
        (-15, "killed by SIGTERM after the 5m timeout, with its process group", "killed by SIGTERM after the 5m"),
        (-15, None, "killed by SIGTERM"),  # was "exit -15"
        (-9, "cancelled", "killed by SIGKILL; cancelled"),
        (2, "agent job t0a1b2 failed", "exit 2; agent job t0a1b2 failed"),
    ],
)
def test_history_says_the_exit_once_and_names_a_signal(fake, capsys, exit_code, reason, shown):
    """Issue 24, item 14: `history` showed "exit 3; exit code 3", and a timeout as "exit -15"."""
    fake.routes[("GET", "/v1/runs?limit=20")] = (
        200, {"runs": [_run_record(outcome="failed", exit_code=exit_code, reason=reason)]}
    )  # fmt: skip
    line = " ".join(_run(capsys, "history")[1].splitlines()[1].split())
    assert line.split(" failed ", 1)[1].startswith(f"- {shown}")
    assert line.count("exit") <= 1


def test_history_empty_and_bad_n(fake, capsys):
    """No runs says so; -n out of range is a usage error."""
    fake.routes[("GET", "/v1/runs?limit=20")] = (200, {"runs": []})
    assert _run(capsys, "history")[:2] == (0, "no runs yet\n")
    assert fake.requests[0].query == {"limit": "20"}
    assert _run(capsys, "history", "-n", "0")[0] == 2


def _missed_record(**over: Any) -> dict[str, Any]:
    """A missed record as GET /v1/missed lists it (kairosd.core.wire.runs.MissedView: missed reads it typed)."""
    record: dict[str, Any] = {
        "id": "m1",
        "task_id": "3f2a9c1d",
        "task_name": None,
        "prompt": "summarise open PRs",
        "schedule": "0 9 * * 1-5",
        "scheduled_for": "2026-11-23T08:00:00Z",
        "first_scheduled_for": None,
        "count": 3,
        "detected_at": "2026-11-23T10:00:00Z",
        "reason": "daemon was not running",
        "action": "surfaced",
    }
    record.update(over)
    return record


def test_missed_and_clear(fake, capsys):
    """`missed` prints a table; `missed --clear` sends DELETE and prints the count."""
    fake.routes[("GET", "/v1/missed")] = (200, {"missed": [_missed_record()]})
    fake.routes[("DELETE", "/v1/missed")] = (200, {"cleared": 3})
    code, out, _ = _run(capsys, "missed")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["TASK", "LAST", "MISSED", "COUNT", "REASON", "ACTION", "NAME/PROMPT"]
    assert "3f2a9c1d  2026-11-23 09:00:00+01:00  3      daemon was not running  surfaced" in lines[1]
    assert _run(capsys, "missed", "--clear")[:2] == (0, "cleared 3 missed record(s)\n")
    assert _run(capsys, "missed", "--clear", "--json")[:2] == (0, '{"cleared":3}\n')
    fake.routes[("GET", "/v1/missed")] = (200, {"missed": []})
    assert _run(capsys, "missed")[:2] == (0, "nothing missed\n")


@pytest.mark.parametrize(
    ("verb", "path", "answer", "where"),
    [
        ("history", "/v1/runs?limit=20", {"runs": [{"run_id": "r1", "task_id": "t1"}]}, "runs.0.task_name"),
        ("missed", "/v1/missed", {"missed": [_missed_record(count="3")]}, "missed.0.count"),
        ("sessions", "/v1/sessions", {"sessions": [{"agent": "claude", "session_id": "s1"}]}, "sessions.0.cwd"),
    ],
)
def test_an_answer_of_another_shape_is_one_clear_error(fake, capsys, verb, path, answer, where):
    """A verb that reads kairosd's answer typed says which key is wrong, not a table of "?" (issue 25)."""
    fake.routes[("GET", path)] = (200, answer)
    code, out, err = _run(capsys, verb)
    assert (code, out) == (1, "")
    assert f"kairosd answered GET {path.partition('?')[0]} in a shape this kairos does not know ({where}:" in err
    assert len(err.splitlines()) == 1


def test_missed_cuts_a_long_reason_to_the_terminal(fake, capsys, monkeypatch):
    """A 100-character REASON is cut to a third of the terminal; ACTION and the prompt stay on the line."""
    reason = "clock jumped forward by 6d 3h 12m 5s (suspend?); " + "x" * 60
    record = _missed_record(count=1, reason=reason)
    fake.routes[("GET", "/v1/missed")] = (200, {"missed": [record]})
    monkeypatch.setenv("COLUMNS", "120")
    _at_terminal(monkeypatch)
    code, out, _ = _run(capsys, "missed")
    assert code == 0
    row = out.splitlines()[1]
    assert len(row) <= 120
    assert row.endswith("  clock jumped forward by 6d 3h 12m 5s (s…  surfaced  summarise open PRs")


@pytest.mark.parametrize("argv", [["missed"], ["missed", "--wide"]])
def test_missed_keeps_the_reason_whole_when_piped_or_wide(fake, capsys, monkeypatch, argv):
    reason = "clock jumped forward by 6d 3h 12m 5s (suspend?); " + "x" * 60
    record = _missed_record(count=1, reason=reason)
    fake.routes[("GET", "/v1/missed")] = (200, {"missed": [record]})
    monkeypatch.setenv("COLUMNS", "120")
    if "--wide" in argv:
        _at_terminal(monkeypatch)
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert out.splitlines()[1].endswith(f"  {reason}  surfaced  summarise open PRs")


def _item(**over: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": "r0123456789ab",
        "session": "work",
        "task_id": "3f2a9c1d",
        "task_name": "prs",
        "prompt": "summarise open PRs\nand CI",
        "scheduled_for": "2026-11-23T08:00:00Z",
        "delivered_at": "2026-11-23T08:00:01Z",
        "late_by_s": 0.0,
        "catch_up": False,
        "acked_at": None,
    }
    item.update(over)
    return item


def test_inbox_list(fake, capsys):
    """`inbox --session S --all` passes the query and prints each item with its full prompt."""
    fake.routes[("GET", "/v1/inbox?session=work&all=1")] = (200, {"items": [_item(catch_up=True, late_by_s=65)]})
    code, out, _ = _run(capsys, "inbox", "--session", "work", "--all")
    assert code == 0
    assert fake.requests[0].query == {"session": "work", "all": "1"}
    assert out == (
        "r0123456789ab  [work]  task 3f2a9c1d (prs)  2026-11-23 09:00:00+01:00 (late 1m5s, catch-up)\n"
        "  summarise open PRs\n  and CI\n"
    )
    fake.routes[("GET", "/v1/inbox")] = (200, {"items": []})
    assert _run(capsys, "inbox")[:2] == (0, "inbox is empty\n")
    assert fake.requests[-1].target == "/v1/inbox"  # no session and no all: the default inbox, unread only


def test_inbox_ack(fake, capsys):
    """--ack sends ids (and the session), --ack-all sends all: true; the count is printed."""
    fake.routes[("POST", "/v1/inbox/ack")] = (200, {"acked": ["r1", "r2"]})
    assert _run(capsys, "inbox", "--ack", "r1", "r2")[:2] == (0, "acked r1, r2\n")  # the ids acted on
    assert _run(capsys, "inbox", "--session", "work", "--ack-all")[:2] == (0, "acked 2 item(s)\n")
    assert [r.body for r in fake.requests] == [{"ids": ["r1", "r2"]}, {"all": True, "session": "work"}]
    assert _run(capsys, "inbox", "--ack", "r1", "--all")[0] == 2
    with pytest.raises(SystemExit) as exc:  # argparse's own usage errors exit from the parser
        run(["inbox", "--ack", "r1", "--follow"])
    assert exc.value.code == 2
    assert len(fake.requests) == 2


@pytest.fixture
def quick_reconnect(monkeypatch):
    from kairos.commands import inbox

    monkeypatch.setattr(inbox, "RECONNECT_S", 0.5)
    monkeypatch.setattr(inbox, "RECONNECT_POLL_S", 0.01)


def test_inbox_follow_json_lines(fake, capsys, quick_reconnect):
    """`inbox --follow --json` streams follow=1 and prints one JSON line per item."""
    fake.routes[("GET", "/v1/inbox?session=work&follow=1")] = Stream([_item(), _item(id="r2")])
    code, out, err = _run(capsys, "inbox", "--follow", "--session", "work", "--json")
    assert fake.requests[0].query == {"session": "work", "follow": "1"}
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["r0123456789ab", "r2"]
    # The fake ends every stream at once and brings nothing new: it is given up after RECONNECT_S, exit 1.
    assert code == 1
    assert "closed the stream" in err
    assert err.endswith("kairos: kairosd did not come back within 0.5s\n")


def test_inbox_follow_reconnects_when_kairosd_restarts(fake, capsys, quick_reconnect):
    """Issue 15, item 14: the stream closes (a restart); follow says so, reconnects, and prints each item once."""
    answers = iter([Stream([_item(id="r1")]), Stream([_item(id="r1"), _item(id="r2")])])

    def inbox(req: Recorded) -> Answer:
        return next(answers, (503, {"error": {"code": "unavailable", "message": "stopping"}}))

    fake.routes[("GET", "/v1/inbox?follow=1")] = inbox
    code, out, err = _run(capsys, "inbox", "--follow", "--json")
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["r1", "r2"]
    notices = err.splitlines()
    assert notices[0] == "kairos: kairosd closed the stream (restarting?); reconnecting for up to 0.5s (Ctrl-C stops)"
    assert notices[1] == "kairos: reconnected to kairosd"
    assert code == 1


def test_inbox_follow_ctrl_c_exits_0(fake, capsys, monkeypatch):
    """Ctrl-C while following ends with exit 0."""

    def interrupted(self, path, query=None):
        yield _item()
        raise KeyboardInterrupt

    monkeypatch.setattr("kairos.client.Client.stream", interrupted)
    code, out, _ = _run(capsys, "inbox", "--follow")
    assert code == 0
    assert out.startswith("r0123456789ab  [work]")


def test_watch(fake, capsys):
    """`watch --type a,b --type c --session S` passes types and session and prints JSON lines."""
    events = [{"type": "run_started", "run_id": "r1"}, {"type": "missed", "task_id": "3f2a9c1d"}]
    fake.routes[("GET", "/v1/events?types=run_started,missed&session=s")] = Stream(events)
    _code, out, _ = _run(capsys, "watch", "--type", "run_started,missed", "--type", "missed", "--session", "s")
    assert fake.requests[0].query == {"types": "run_started,missed", "session": "s"}
    assert [json.loads(line) for line in out.splitlines()] == events


STATUS = {
    "api_version": 1,
    "version": "0.1.0",
    "pid": 4242,
    "started_at": "2026-11-23T07:00:00Z",
    "uptime_s": 3725.0,
    "default_tz": ZONE,
    "socket": "/run/user/1000/kairos/kairosd.sock",
    "store": "/home/u/.local/state/kairos/scheduled_tasks.json",
    "enabled": True,
    "disabled_reason": None,
    "tasks": 3,
    "paused": 1,
    "deliveries_running": 0,
    "queued": 0,
    "next_fire": {"task_id": "3f2a9c1d", "planned_for": "2026-11-23T08:00:00Z"},
    "store_error": None,
    "last_clock_jump": None,
    "wakeups": 12,
    "overlap_default": "skip",
    "background": {"tasks": {"running": 1, "idle": 0}, "slots": {"limit": 4, "in_use": 1, "waiting": 0, "lent": 0},
                   "max_depth": 3},
    "sessions": {"live": 1, "pending": 0, "waiters": 0, "ttl_s": 86400.0},
    "consolidation": {"enabled": False, "mode": "auto", "min_interval_minutes": 10.0, "min_user_turns": 3,
                      "running": {}, "pending": {}, "recent": []},
}  # fmt: skip


def test_status(fake, capsys):
    """`status` prints version, pid, uptime, tasks, next fire (local time) and the socket."""
    fake.routes[("GET", "/v1/status")] = (200, STATUS)
    code, out, _ = _run(capsys, "status")
    assert code == 0
    assert out.splitlines() == [
        "kairosd 0.1.0 running (pid 4242, up 1h2m5s)",
        "tasks:      3 (1 paused)",
        "running:    0 (0 queued)",
        "next fire:  2026-11-23 09:00:00+01:00 (task 3f2a9c1d)",
        "zone:       Europe/Berlin",
        "socket:     /run/user/1000/kairos/kairosd.sock",
        "store:      /home/u/.local/state/kairos/scheduled_tasks.json",
        "background: 1 running; slots 1/4",
    ]
    assert json.loads(_run(capsys, "status", "--json")[1]) == STATUS


@pytest.mark.parametrize(
    ("drift", "shown"),
    [(3725.0, "forward 1h2m5s"), (-90.0, "back 1m30s")],
)
def test_status_says_the_last_clock_jump_in_words(fake, capsys, drift, shown):
    """The last jump reads as a direction, a duration and a local time, not a Python dict."""
    jump = {"at": "2026-11-23T07:00:00+00:00", "drift_s": drift}
    fake.routes[("GET", "/v1/status")] = (200, {**STATUS, "last_clock_jump": jump})
    lines = _run(capsys, "status")[1].splitlines()
    assert f"clock jump: {shown} at 2026-11-23 08:00:00+01:00 (suspend or clock change)" in lines


def test_status_disabled_reason_first(fake, capsys):
    """A disabled daemon says so on the first line."""
    reason = "KAIROS_DISABLE_CRON=1 is set in kairosd's environment: nothing fires (the API still answers)"
    fake.routes[("GET", "/v1/status")] = (200, {**STATUS, "enabled": False, "disabled_reason": reason})
    out = _run(capsys, "status")[1]
    assert out.splitlines()[0] == f"NOT FIRING: {reason}"


def test_import(fake, capsys, home):
    """`import DIR` finds .claude/scheduled_tasks.json, posts its text and zone, prints the outcome."""
    text = '{"tasks": []}'
    (home / "proj" / ".claude").mkdir(parents=True)
    (home / "proj" / ".claude" / "scheduled_tasks.json").write_text(text)
    fake.routes[("POST", "/v1/import")] = (
        200,
        {  # a whole answer (ImportDoc): the dry run's and the import's alike
            "dry_run": False,
            "imported": [task_view(on_import="")],
            "skipped": [{"id": "aaaabbbb", "reason": "a task with this id already exists"}],
            "rejected": [{"index": 2, "id": None, "reason": "missing 'cron'"}],
            "dropped": [],
        },
    )
    code, out, _ = _run(capsys, "import", str(home / "proj"), "--tz", "UTC")
    assert code == 0
    # A dry run first: an import whose prompts hide characters is refused before anything changes.
    preview, real = {"data": text, "tz": "UTC", "dry_run": True}, {"data": text, "tz": "UTC"}
    assert [request.body for request in fake.requests] == [preview, real]
    assert out.splitlines() == [
        f"imported 1, skipped 1, rejected 1 from {home}/proj/.claude/scheduled_tasks.json",
        "  + 3f2a9c1d: At 09:00 on Monday to Friday (Europe/Berlin)",
        "  = aaaabbbb: a task with this id already exists",
        "  ! #2: missing 'cron'",
    ]


def test_import_dry_run_shows_dropped_keys_and_rejects_by_id(fake, capsys, home):
    """--dry-run is sent as such and shows each prompt; rejected items are named by their (escaped) id,
    dropped keys by task."""
    (home / "s.json").write_text('{"tasks": []}')
    fake.routes[("POST", "/v1/import")] = (
        200,
        {
            "dry_run": True,
            "imported": [task_view() | {"on_import": "1 missed fire(s) surfaced, not delivered"}],
            "skipped": [],
            "rejected": [{"index": 1, "id": "aa11bb22\\n", "reason": "id: 'aa11bb22\\n' is not a Claude Code task id"}],
            "dropped": [{"id": "3f2a9c1d", "keys": ["target"]}],
        },
    )
    code, out, _ = _run(capsys, "import", "--dry-run", str(home / "s.json"), "--tz", "UTC", "--project", str(home))
    assert code == 0
    assert fake.requests[0].body == {"data": '{"tasks": []}', "tz": "UTC", "dry_run": True, "project": str(home)}
    assert out.splitlines() == [
        f"would import 1, skipped 0, rejected 1 from {home}/s.json",
        "  + 3f2a9c1d: At 09:00 on Monday to Friday (Europe/Berlin)",
        "      at import: 1 missed fire(s) surfaced, not delivered",
        "      | summarise open PRs",
        "  ! aa11bb22\\n: id: 'aa11bb22\\n' is not a Claude Code task id",
        "  - 3f2a9c1d: dropped keys kairos does not import: target",
        "nothing was changed (--dry-run)",
    ]


def test_import_missing_file(fake, capsys, home):
    """An unreadable file is exit 1 with its path, and nothing is sent."""
    code, _, err = _run(capsys, "import", str(home / "nope.json"))
    assert code == 1
    assert "cannot read" in err
    assert "nope.json" in err
    assert fake.requests == []


# ---- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["rm", "abcd1234"],
        ["status"],
        ["add", "--in", "1m", "x"],
        ["missed", "--clear"],
        ["inbox", "--follow"],
        ["watch"],
    ],
)
def test_no_daemon_exit_3(home, capsys, argv):
    """Without a daemon every verb but the read-only views (tests/integration/kairos/test_cli_offline_views.py) exits 3
    with one line that says how to start it."""
    code, out, err = _run(capsys, *argv)
    assert code == 3
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "kairos daemon start" in err


def test_api_errors_map_to_exit_codes(fake, capsys):
    """A 400 error answer exits 2, a 404 exits 1; the daemon's message is printed once."""
    fake.routes[("POST", "/v1/tasks")] = (400, {"error": {"code": "invalid_time", "message": "14:00 is past"}})
    assert _run(capsys, "add", "--at", "14:00", "x") == (2, "", "kairos: 14:00 is past\n")
    fake.routes[("GET", "/v1/tasks/deadbeef")] = (
        404,
        {"error": {"code": "not_found", "message": "no task with id 'deadbeef'"}},
    )
    assert _run(capsys, "show", "deadbeef") == (1, "", "kairos: no task with id 'deadbeef'\n")


@pytest.mark.parametrize(
    "verb",
    ["add", "list", "show", "rm", "pause", "resume", "run", "history", "missed", "inbox", "watch", "status",
     "import", "daemon start", "daemon stop", "daemon status", "daemon run"],
)  # fmt: skip
def test_help_has_examples_and_json(capsys, verb):
    """Every subcommand's --help has a description, examples and --json."""
    with pytest.raises(SystemExit) as exc:
        run([*verb.split(), "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert "--json" in out


# ---- daemon -------------------------------------------------------------------


def test_daemon_stop_not_running(home, capsys):
    """`daemon stop` without a daemon says so and exits 0."""
    assert _run(capsys, "daemon", "stop") == (0, "kairosd is not running\n", "")


def test_daemon_stop_running(fake, capsys):
    """`daemon stop` posts /shutdown and waits until the socket stops answering."""
    fake.routes[("GET", "/v1/status")] = (200, {"version": "0.1.0"})

    def shutdown(req: Recorded) -> Answer:
        threading.Thread(target=fake.stop).start()  # answer first, like kairosd
        return (202, {"stopping": True})

    fake.routes[("POST", "/v1/shutdown")] = shutdown
    code, out, _ = _run(capsys, "daemon", "stop")
    assert (code, out) == (0, "kairosd stopped (pid ?)\n")
    assert fake.sent("POST", "/v1/shutdown")
    assert not fake.socket.exists()


def test_daemon_status(fake, capsys, home):
    """`daemon status` prints the status, and exits 3 (with running: false in JSON) when there is none."""
    fake.routes[("GET", "/v1/status")] = (200, STATUS)
    code, out, _ = _run(capsys, "daemon", "status")
    assert code == 0
    assert out.startswith("kairosd 0.1.0 running (pid 4242")
    fake.stop()
    code, out, err = _run(capsys, "daemon", "status", "--json")
    assert code == 3
    assert json.loads(out) == {"running": False, "socket": str(home / "run" / "kairosd.sock")}
    assert "kairos daemon start" in err


def test_daemon_start_already_running(fake, capsys):
    """`daemon start` with a daemon answering says so and exits 0 without spawning."""
    fake.routes[("GET", "/v1/status")] = (200, STATUS)
    code, out, _ = _run(capsys, "daemon", "start")
    assert code == 0
    assert out.startswith("kairosd is already running (pid 4242)")


def test_daemon_start_child_exits_early(home, capsys, monkeypatch):
    """If the spawned daemon dies before answering, its log tail is shown and start exits 1."""
    script = "import sys; print('kairosd: the store is corrupt'); sys.exit(4)"
    monkeypatch.setattr(daemon_cmd, "daemon_argv", lambda verbose: [sys.executable, "-c", script])
    code, out, err = _run(capsys, "daemon", "start")
    assert code == 1
    assert out == ""
    assert "kairosd: the store is corrupt" in err
    assert "exited with code 4" in err
    log = home / "state" / "kairosd.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


# A stand-in daemon process: answers every GET with a status, exits on POST /v1/shutdown.
STUB_DAEMON = """
import json, os, socketserver, threading
from http.server import BaseHTTPRequestHandler
path = os.path.join(os.environ["KAIROS_HOME"], "run", "kairosd.sock")
os.makedirs(os.path.dirname(path), exist_ok=True)
class H(BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_GET(self): self.send({"pid": os.getpid(), "version": "stub"})
    def do_POST(self):
        self.send({"stopping": True})
        threading.Thread(target=server.shutdown).start()
    def send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
server = socketserver.UnixStreamServer(path, H)
print("stub serving", flush=True)
server.serve_forever(0.05)
server.server_close()
os.unlink(path)
"""


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # start leaves its child running on purpose
def test_daemon_start_then_stop(home, capsys, monkeypatch):
    """`daemon start` spawns the daemon detached and waits for it; `daemon stop` waits until it is gone."""
    monkeypatch.setattr(daemon_cmd, "daemon_argv", lambda verbose: [sys.executable, "-c", STUB_DAEMON])
    code, out, err = _run(capsys, "daemon", "start", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["started"] is True
    assert doc["socket"] == str(home / "run" / "kairosd.sock")
    pid = doc["pid"]
    try:
        assert "stub serving" in (home / "state" / "kairosd.log").read_text()
        assert os.getsid(pid) == pid  # a session of its own: no SIGHUP from this terminal
        code, out, _ = _run(capsys, "daemon", "stop")
        assert (code, out) == (0, f"kairosd stopped (pid {pid})\n")
        assert not (home / "run" / "kairosd.sock").exists()
    finally:
        if daemon_cmd._alive(pid):
            os.kill(pid, 9)


def test_cli_edit_sends_only_what_changes(fake, capsys) -> None:
    view = task_view(cron="30 8 * * 1-5", tz="UTC", explanation="At 08:30", next_fires=[],
                     changed=["jitter", "schedule"], note=None)  # fmt: skip
    fake.routes[("PATCH", "/v1/tasks/3f2a")] = (200, {"task": view})
    code = run(["edit", "3f2a", "--cron", "30 8 * * 1-5", "--jitter", "claude"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.startswith("edited 3f2a9c1d: jitter, schedule changed; At 08:30 (UTC)")
    assert fake.requests[-1].body == {"cron": "30 8 * * 1-5", "jitter": "claude"}
    assert run(["edit", "3f2a"]) == 2
    assert "nothing to change" in capsys.readouterr().err


def test_every_timeout_option_takes_a_duration():
    """Issue 24, item 11: `--timeout 5m` failed with "invalid float value"; every verb's --timeout takes
    the durations the rest of kairos takes (and plain seconds, as before)."""
    import argparse

    from kairos.app import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    walk(sub)
            elif "--timeout" in action.option_strings:
                found.append(parser.prog)
                assert action.type is not None, parser.prog
                assert action.type("5m") == 300.0, parser.prog
                assert action.type("600") == 600.0, parser.prog

    walk(build_parser())
    assert {"kairos add", "kairos task start", "kairos task wait", "kairos consolidate"} <= set(found)


def test_import_of_more_than_one_request_carries_goes_in_batches(fake, capsys, home):
    """Issue 28: one request (1 MiB) held ~7,000 tasks. A larger file goes in batches, each one request within
    the limit and imported atomically; every task is sent once, in order; rejected items keep their file index."""
    from kairosd.core.protocol import MAX_BODY_BYTES

    path, tasks = claude_file(home, 12_000)

    def answer(req: Any) -> tuple[int, dict[str, Any]]:
        rejected = [{"index": 0, "id": None, "reason": "first of its batch"}]
        return 200, {"imported": [], "skipped": [], "rejected": rejected}

    fake.routes[("POST", "/v1/import")] = answer
    code, out, _ = _run(capsys, "import", str(path), "--tz", "UTC", "--allow-hidden")
    assert code == 0
    sent = fake.sent("POST", "/v1/import")
    assert len(sent) >= 2
    assert all(len(json.dumps(r.body, separators=(",", ":"))) <= MAX_BODY_BYTES for r in sent)
    batches = [json.loads(r.body["data"])["tasks"] for r in sent]
    assert [t for batch in batches for t in batch] == tasks
    offsets = [sum(len(b) for b in batches[:i]) for i in range(len(batches))]
    lines = out.splitlines()
    assert lines[: len(sent)] == [
        f"batch {i}/{len(sent)}: 0 imported, 0 skipped, 1 rejected" for i in range(1, 1 + len(sent))
    ]
    assert lines[len(sent)] == f"imported 0, skipped 0, rejected {len(sent)} from {path}"
    assert [line.split(":")[0] for line in lines[len(sent) + 1 :]] == [f"  ! #{o}" for o in offsets]


def test_a_failed_batch_says_which_and_what_was_imported(fake, capsys, home):
    path, _ = claude_file(home, 12_000)
    calls = []

    def answer(req: Any) -> tuple[int, dict[str, Any]]:
        calls.append(req)
        if len(calls) == 2:
            return 500, {"error": {"code": "store", "message": "cannot write the store: No space left on device"}}
        return 200, {"imported": [], "skipped": [], "rejected": []}

    fake.routes[("POST", "/v1/import")] = answer
    code, out, err = _run(capsys, "import", str(path), "--tz", "UTC", "--allow-hidden")
    assert code != 0
    assert len(calls) == 2
    assert f"imported 0, skipped 0, rejected 0 from {path} (the first 1 batch(es))" in out
    assert "batch 2 of " in err
    assert "No space left on device" in err
    assert "batches 1-1 were imported" in err


def test_every_session_option_names_a_kairos_session():
    """Issue 24, item 12: --session meant an inbox name, an agent's session id or "the session the work is
    for", by verb. Every --session now names a kairos (inbox) session; consolidate takes the agent CLI's
    own id as --session-id (its old --session still parses, for scripts)."""
    import argparse

    from kairos.app import build_parser

    helps: dict[str, str] = {}

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    walk(sub)
            elif action.option_strings[:1] == ["--session"]:
                helps[parser.prog] = action.help or ""

    walk(build_parser())
    assert {"kairos add", "kairos inbox", "kairos watch", "kairos task start"} <= set(helps)
    assert all("session id" not in h for h in helps.values()), helps
    consolidate = build_parser("consolidate")
    assert consolidate.parse_args(["consolidate", "--session-id", "s1", "--transcript", "t"]).session == "s1"
    assert consolidate.parse_args(["consolidate", "--session", "s1", "--transcript", "t"]).session == "s1"


@pytest.mark.parametrize(
    ("argv", "path", "answer", "where"),
    [
        (["inbox"], "/v1/inbox", {"items": [_item(prompt=None)]}, "items.0.prompt"),
        (["inbox", "--all"], "/v1/inbox?all=1", {"items": [_item(session=3)]}, "items.0.session"),
        (["status"], "/v1/status", {**STATUS, "tasks": "3"}, "tasks"),
        (["daemon", "status"], "/v1/status", {**STATUS, "background": {}}, "background.tasks"),
    ],
)
def test_inbox_and_status_read_their_answers_typed(fake, capsys, argv, path, answer, where):
    """inbox, status and daemon status read kairosd's answer as its model (in their modules since the
    CLI split: commands/inbox.py, commands/status.py): a wrong key is one clear line, not a "?"."""
    fake.routes[("GET", path)] = (200, answer)
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (1, "")
    assert f"kairosd answered GET {path.partition('?')[0]} in a shape this kairos does not know ({where}:" in err
    assert len(err.splitlines()) == 1


def test_import_reads_its_answer_typed(fake, capsys, home):
    """import (commands/claudeimport.py) reads kairosd's answer as its model: a rejected task whose index is
    not a number is one clear line, not a "#?" in the report."""
    (home / "proj" / ".claude").mkdir(parents=True)
    (home / "proj" / ".claude" / "scheduled_tasks.json").write_text('{"tasks": []}')
    rejected = [{"index": "2", "id": None, "reason": "missing 'cron'"}]
    answer = {"dry_run": False, "imported": [], "skipped": [], "rejected": rejected, "dropped": []}
    fake.routes[("POST", "/v1/import")] = (200, answer)
    code, out, err = _run(capsys, "import", str(home / "proj"), "--tz", "UTC")
    assert (code, out) == (1, "")
    assert "kairosd answered POST /v1/import in a shape this kairos does not know (rejected.0.index:" in err
    assert len(err.splitlines()) == 1
