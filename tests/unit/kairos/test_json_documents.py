"""Every verb's ``--json`` output against its model in :mod:`kairosd.core.wire.verbs` (issue 15, item 2).

The verbs run in-process against the harness kairosd (real service, scheduler,
inbox and server on a socket) or, for the verbs that need none, on their own. A
verb with ``--json`` must either have a model that its output is checked against
here, or be listed in NOT_CHECKED_YET with the reason.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from session_support import Kairosd, hook_home

from kairos.app import build_parser, run
from kairosd.core.wire import verbs as documents
from kairosd.scheduling.api import quarantine_routes
from kairosd.store.quarantine import Quarantine

__all__ = ["hook_home"]  # the fixture `home`, used below

# Verbs with --json whose output is not checked here yet, and why. Add a model rather than a line here.
NOT_CHECKED_YET = {
    "ls": "an alias of list",
    "task ls": "an alias of task list",
    "watch": "a stream of daemon events of many kinds (JSON lines)",
    "daemon run": "execs kairosd in the foreground; prints no document",
    "completion": "prints a shell script, not JSON",
    "mcp": "a stdio MCP server, not a document",
    "ui": "a full-screen terminal view, not a document: its --json is a usage error (test_ui.py)",
}  # fmt: skip


def _json_verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if any("--json" in a.option_strings for a in sub._actions):
                    yield " ".join((*path, name))
                yield from _json_verbs(sub, (*path, name))


def test_every_json_verb_has_a_model_or_a_reason():
    verbs = set(_json_verbs(build_parser()))
    assert verbs - set(documents.DOCUMENTS) - set(NOT_CHECKED_YET) == set()
    assert set(documents.DOCUMENTS) | set(NOT_CHECKED_YET) >= verbs


def _json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    assert run([*argv, "--json"]) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def kd(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kairosd]:
    monkeypatch.setenv("TZ", "UTC")
    daemon = Kairosd(home).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def test_daemon_verbs_print_their_documents(kd, capsys):
    checked: dict[str, Any] = {}

    def check(verb: str, *argv: str) -> Any:
        doc = _json(capsys, *verb.split(), *argv)
        documents.check(verb, doc)
        checked[verb] = doc
        return doc

    task_id = check("add", "0 9 * * *", "hello")["task"]["id"]
    assert check("add", "--every", "7m", "rounded")["task"]["note"]
    check("list")
    set_aside = Quarantine(kd.paths.state_dir / "scheduled_tasks.quarantine.json", kd.clock)
    kd.api.add_routes(quarantine_routes(set_aside))
    assert check("list", "--problems")["entries"] == []
    set_aside.add([({"id": "bad0bad0", "cron": "61 * * * *"}, "invalid cron"), ([1], "not an object")])
    assert [e["id"] for e in check("list", "--problems")["entries"]] == ["bad0bad0", None]
    check("show", task_id)
    check("pause", task_id)
    assert check("pause", task_id)["task"]["unchanged"] is True
    check("resume", task_id)
    other = check("add", "0 8 * * *", "another")["task"]["id"]
    many = check("show", task_id, other.upper())  # several ids, a prefix in upper case among them
    assert ([t["id"] for t in many["tasks"]], many["errors"]) == ([task_id, other], [])
    assert check("edit", other, "--cron", "0 7 * * *")["task"]["changed"] == ["schedule"]
    check("run", task_id)
    kd.run(kd.scheduler.drain(5))
    assert check("history")["runs"][0]["outcome"] == "delivered"
    assert check("timeline")["tasks"][0]["runs"][0]["outcome"] == "delivered"
    check("inbox")
    check("inbox", "--ack-all")
    check("status")
    status = check("daemon status")
    assert status["running"] is True  # not the count of running deliveries
    assert isinstance(status["deliveries_running"], int)
    check("daemon start")
    check("sessions")
    check("rm", task_id)
    kd.run(kd.service.add({"prompt": "gone", "at": "2026-10-31T09:00:30+00:00"}))
    kd.clock.advance(3600)
    kd.run(kd.scheduler.start())  # a start after the one-shot's time: surfaced as missed
    assert check("missed")["missed"]
    check("missed", "--clear")
    claude_store = kd.home / "scheduled_tasks.json"
    claude_store.write_text(json.dumps({"tasks": [
        {"id": "ee55ff66", "cron": "0 12 * * *", "recurring": True, "prompt": "p", "createdAt": 1761900000000},
        {"id": "bad", "cron": "0 1 * * *"},
        {"id": "ab12cd34", "cron": "0 1 * * *", "prompt": "q", "createdAt": 1761900000000, "color": "red"},
    ]}))  # fmt: skip
    assert check("import", str(claude_store), "--dry-run")["dry_run"] is True
    first = check("import", str(claude_store))
    assert ([t["id"] for t in first["imported"]], first["rejected"][0]["index"]) == (["ee55ff66", "ab12cd34"], 1)
    assert first["imported"][0]["on_import"]
    assert first["dropped"] == [{"id": "ab12cd34", "keys": ["color"]}]
    assert [s["id"] for s in check("import", str(claude_store))["skipped"]] == ["ee55ff66", "ab12cd34"]
    kd.run(kd.scheduler.drain(5))
    assert check("daemon reload")["ok"] is True
    # daemon stop: below; export: checked against a real kairosd in test_export_api.
    # task ...: test_json_documents_tasks; board ... and consolidate: test_json_documents_board.
    local = ("cron ", "doctor", "systemd", "integrate", "task ", "board ", "consolidate", "--version")
    assert set(checked) == {v for v in documents.DOCUMENTS if not v.startswith(local)} - {
        "daemon stop",
        "export",
    }


def test_daemon_status_and_stop_without_a_daemon(home, capsys):
    stopped = _json(capsys, "daemon", "status", code=3)
    assert stopped["running"] is False
    documents.check("daemon status", stopped)
    documents.check("daemon stop", _json(capsys, "daemon", "stop"))


def test_local_verbs_print_their_documents(home, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("PATH", str(tmp_path))  # no agent CLI, no systemctl, no loginctl
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    documents.check("cron next", _json(capsys, "cron", "next", "0 9 * * *", "-n", "2"))
    documents.check("cron explain", _json(capsys, "cron", "explain", "@daily"))
    documents.check("cron every", _json(capsys, "cron", "every", "90m"))
    documents.check("doctor", _json(capsys, "doctor"))
    kairosd = tmp_path / "kairosd"
    kairosd.write_text("#!/bin/sh\n")
    kairosd.chmod(0o755)
    documents.check("systemd install", _json(capsys, "systemd", "install", "--dry-run", "--kairosd", str(kairosd)))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kairos = tmp_path / "kairos"
    kairos.write_text("#!/bin/sh\n")
    kairos.chmod(0o755)
    integrate = ("integrate", "claude", "--kairos", str(kairos))
    dry = _json(capsys, *integrate, "--dry-run")
    documents.check("integrate", dry)
    assert (dry["dry_run"], dry["changes"][0]["action"]) == (True, "create")
    documents.check("integrate", _json(capsys, *integrate))
    removed = _json(capsys, *integrate, "--uninstall")
    documents.check("integrate", removed)
    assert removed["uninstall"] is True
    assert {c["action"] for c in removed["changes"]} <= {"update", "delete"}


# Keys whose type differs between documents on purpose.
SAME_NAME_OTHER_TYPE = {
    "tasks": "a count in status, the list itself in list; in task list, the list of background jobs",
    "task": "add's TaskView also carries the add's note (AddedTask); in task ..., a background task",
    "entries": "a list of objects in both: a board's entries in board show, the records set aside in list "
    "--problems (the quarantine file's own name for them)",
    "sessions": "the list of live sessions in sessions; in status, the sessions' section (counts)",
    "consolidation": "in status, consolidation's section (as GET /v1/consolidation); in integrate, the sentence "
    "saying how the agent's ended sessions are consolidated",
    "run": "the run the verb started, an object in both: a scheduled task's run in run, the consolidation run "
    "(a background task, as task list shows it) in consolidate",
}


def _type_name(annotation: Any) -> str:
    args = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return " | ".join(sorted(str(getattr(a, "__name__", a)) for a in args if a is not type(None)))


def test_one_key_one_type():
    """A key that two documents share has one type: the bug was "running" as a boolean and as a count."""
    seen: dict[str, set[str]] = {}
    models = [m for ms in documents.DOCUMENTS.values() for m in (ms if isinstance(ms, tuple) else (ms,))]
    for model in models:
        for name, field in model.model_fields.items():
            seen.setdefault(name, set()).add(_type_name(field.annotation))
    clashes = {name: types for name, types in seen.items() if len(types) > 1 and name not in SAME_NAME_OTHER_TYPE}
    assert clashes == {}


def test_an_import_report_of_the_wrong_shape_is_refused():
    report = {"dry_run": True, "imported": [], "skipped": [], "rejected": [], "dropped": []}
    documents.check("import", report)
    with pytest.raises(ValueError, match="index"):
        documents.check("import", {**report, "rejected": [{"index": "1", "id": None, "reason": "r"}]})
    with pytest.raises(ValueError, match="dry_run"):
        documents.check("import", {**report, "dry_run": "yes"})


def test_a_set_aside_record_without_its_reason_is_refused():
    entry = {"id": None, "reason": "r", "quarantined_at": "t", "record": [1]}
    documents.check("list", {"path": "/q", "entries": [entry]})
    with pytest.raises(ValueError, match="reason"):
        documents.check("list", {"path": "/q", "entries": [{**entry, "reason": None}]})


def test_a_count_where_a_boolean_belongs_is_refused():
    with pytest.raises(ValueError, match="running"):
        documents.check("daemon status", {"running": 0, "socket": "/s"})
