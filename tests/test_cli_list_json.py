"""``kairos list --json`` end to end, byte for byte, on a fixed store.

The daemon caches full task views and the CLI prints the document in one write;
neither may change a byte of what a script reads. The expected documents in
``tests/fixtures/list_json`` were written by the code before those changes
(``KAIROS_WRITE_GOLDEN=1`` writes them again). Each is checked twice in a row,
so the second answer comes from the daemon's caches, and again after changes
that must invalidate them: a pause, a resume, a removal, and the clock passing
planned fires that the (stopped) scheduler loop has not fired.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from environment_support import WRITE_GOLDEN
from session_support import Kairosd, hook_home

from kairos.app import run

GOLDEN = Path(__file__).parent / "fixtures" / "list_json"
WRITE = WRITE_GOLDEN

__all__ = ["hook_home"]  # the fixture `home`, used below

TASKS: list[dict[str, Any]] = [
    {"prompt": "summarise open PRs", "cron": "0 9 * * mon-fri", "tz": "Europe/Berlin", "name": "digest"},
    {"prompt": "check the CI of this branch", "every": "90m", "tz": "UTC"},
    {"prompt": "remind me to push", "in": "30m"},
    {"prompt": "stand-up notes", "at": "2026-11-02T08:00:00+00:00", "target": {"kind": "inbox", "session": "work"}},
    {"prompt": "run the migration dry-run", "cron": "30 12 * * *", "once": True, "tz": "America/New_York"},
    {
        "prompt": 'café ☕ "quoted"\nsecond line\ttab \\ backslash',
        "cron": "*/15 * * * *",
        "meta": {"k": "vä", "n": 1.5},
    },
    {"prompt": "x" * 450, "cron": "@daily", "jitter": "max:5m", "permanent": True},
    {
        "prompt": "write the summary",
        "cron": "0 16 * * *",
        "target": {"kind": "session", "project": "/tmp/proj", "fallback": "drop"},
        "catch_up": "all",
        "overlap": "queue",
        "expires_after_days": 3,
        "created_by": "mcp",
    },
    {"prompt": "hourly", "cron": "0 * * * *", "tz": "Asia/Kolkata"},
    {"prompt": "to pause", "cron": "5 4 * * *"},
]


@pytest.fixture(name="kd")
def fixed_kd(home: Path) -> Iterator[Kairosd]:
    """The harness daemon with TASKS added under fixed ids (ids seed the jitter, so they must not be random)."""
    ids = (f"{n:08x}" for n in itertools.count(0xA0))
    daemon = Kairosd(home).start()
    daemon.service.new_id = lambda: next(ids)
    try:
        for body in TASKS:
            daemon.run(daemon.service.add({"created_by": "cli", **body}))  # as kairos add sends it
        yield daemon
    finally:
        daemon.stop()


def _list_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tty: bool) -> str:
    with monkeypatch.context() as m:
        m.setattr(sys.stdout, "isatty", lambda: tty)
        code = run(["list", "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return out


def _check(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    for tty in (False, True):
        path = GOLDEN / f"{stage}{'.tty' if tty else ''}.json"
        first = _list_json(capsys, monkeypatch, tty)
        again = _list_json(capsys, monkeypatch, tty)
        if WRITE:
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(first.encode())
        assert first == again
        assert first.encode() == path.read_bytes(), f"kairos list --json differs from {path.name}"


def test_list_json_is_byte_identical_through_cache_changes(kd, capsys, monkeypatch):
    _check(capsys, monkeypatch, "1-added")
    kd.run(kd.service.set_paused("000000a9", True))
    kd.run(kd.service.remove(["000000a2"]))
    _check(capsys, monkeypatch, "2-paused-removed")
    # Past the first planned fires of several tasks; the scheduler loop is not running, so they stay due.
    kd.clock.advance(2.5 * 3600)
    _check(capsys, monkeypatch, "3-fires-due")
    kd.run(kd.service.set_paused("000000a9", False))
    _check(capsys, monkeypatch, "4-resumed")


def test_cached_views_follow_the_running_flag(kd):
    """A task that starts or stops running is listed with its new flag, as an uncached view shows it."""

    def listed() -> dict[str, bool]:
        return {v["id"]: v["running"] for v in kd.call(kd.service.list_tasks)}

    assert not any(listed().values())
    # The dispatcher's in-flight map is what `running` reads; a real run would need a delivery that hangs.
    kd.call(lambda: kd.scheduler._running.__setitem__("000000a1", "run-1"))
    assert [k for k, v in listed().items() if v] == ["000000a1"]
    fresh = kd.call(lambda: kd.service.view(kd.book.get("000000a1"), 1))
    assert next(v for v in kd.call(kd.service.list_tasks) if v["id"] == "000000a1") == fresh
    kd.call(lambda: kd.scheduler._running.pop("000000a1"))
    assert not any(listed().values())


@pytest.mark.parametrize("tty", [False, True])
def test_print_json_writes_what_json_dump_wrote(capsys, monkeypatch, tty):
    """print_json's one write equals the streaming json.dump it replaced, for every kind of value."""
    import json
    from datetime import UTC, datetime

    from kairos.output import print_json

    document = {
        "text": 'café ☕ "q"\n\t\\ \u2028 \x00',
        "numbers": [0, -1, 2**70, 1.5, -0.0, 1e16, 1e-7, float("inf"), float("nan")],
        "flags": [True, False, None],
        "nested": {"empty": {}, "list": [], "deep": [[{"a": [1, {"b": None}]}]]},
        1: "int key",
        2.5: "float key",
        "not json": datetime(2026, 1, 1, tzinfo=UTC),  # printed through default=str
    }
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    print_json(document)
    printed = capsys.readouterr().out
    kwargs: dict[str, Any] = {"indent": 2} if tty else {"separators": (",", ":")}
    json.dump(document, sys.stdout, default=str, **kwargs)
    sys.stdout.write("\n")
    assert printed == capsys.readouterr().out


@pytest.mark.parametrize("query", [{}, {"view": "summary"}])
def test_listed_body_is_the_whole_document_encoded_at_once(kd, query):
    """GET /tasks joins each view's cached JSON; the bytes must be what encoding the document in one go gives,
    also after a task changes (a stale piece would show the old state) or goes away."""
    from kairosd.http_types import EncodedJson, Request, compact_json

    def body_and_expected() -> tuple[bytes, bytes]:
        async def both() -> tuple[bytes, bytes]:
            request = Request("GET", "/v1/tasks", dict(query), None, 0)
            answer = await kd.api.handle(request)
            assert isinstance(answer.body, EncodedJson)
            views = kd.service.list_tasks(summary=bool(query))
            return answer.body.data, compact_json({"tasks": views})

        return kd.run(both())

    for change in (
        lambda: None,
        lambda: kd.run(kd.service.set_paused("000000a9", True)),
        lambda: kd.run(kd.service.remove(["000000a2"])),
        lambda: kd.clock.advance(2.5 * 3600),
    ):
        change()
        body, expected = body_and_expected()
        assert body == expected
        again, _ = body_and_expected()
        assert again == body
    assert b'"000000a2"' not in body
    assert b'"paused"' in body


def test_list_json_to_a_pipe_prints_the_daemons_bytes_unparsed(kd, capsys, monkeypatch):
    """Not parsed and encoded again (bench/bench_cli.py): the answer's bytes are the document."""
    import kairos.client

    def no_parsing(*_: Any) -> Any:
        raise AssertionError("list --json parsed the answer")

    monkeypatch.setattr(kairos.client, "_parse", no_parsing)
    printed = _list_json(capsys, monkeypatch, tty=False)
    assert printed.encode() == (GOLDEN / "1-added.json").read_bytes()
