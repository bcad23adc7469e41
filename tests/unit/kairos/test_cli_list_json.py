"""``kairos list --json`` end to end on a fixed store, against documents written by hand.

The expected documents below are written from the documented contract, not taken
from the code: the ``ListDoc``/``TaskView`` model in ``kairosd/core/wire/tasks.py``
(the README's "Commands" section points there) and the README's rules for what a
task becomes (schedules, intervals, one-shots, zones, DST, jitter, catch-up,
expiry, pause and resume). Each is derived in a comment beside it.

The daemon caches full task views; a cache must never change what a script reads.
So each stage is listed twice in a row (the second answer comes from the caches),
at a terminal and through a pipe, and again after changes that must invalidate the
caches: a pause, a removal, the clock passing planned fires the (stopped) scheduler
loop has not fired, and a resume. The comparison is of the parsed document, so it
holds however the CLI produces its bytes (re-encoding the daemon's answer, or
passing it through); the bytes only have to be one JSON document, compact on a pipe,
and the same on both reads.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from session_support import Kairosd, hook_home

from kairos.app import run

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

# ---- the expected documents, by hand ------------------------------------------------------------
#
# The harness clock starts at Saturday 2026-10-31 09:00:00 UTC (session_support.T0); its daemon's
# default zone is UTC. TASKS get the ids 000000a0, 000000a1, ... in order.

NOW = "2026-10-31T09:00:00Z"
INBOX = {"kind": "inbox", "session": "default"}


def _next(planned: str) -> dict[str, Any]:
    """A task's next fire: ``list`` shows one; no jitter moves it, so scheduled and planned are the same."""
    return {"next_fires": [{"scheduled_for": planned, "planned_for": planned}], "planned_for": planned}


def _task(task_id: str, prompt: str, cron: str | None, explanation: str, planned: str, **fields: Any) -> dict[str, Any]:
    """A TaskView of a recurring cron task added by ``kairos add`` now, with ``fields`` changed.

    The defaults are the README's: from the CLI a task never expires, recurring tasks catch up
    ``once``, jitter is off, overlap ``skip``s, the target is the inbox ``default``."""
    view: dict[str, Any] = {
        "id": task_id, "prompt": prompt, "cron": cron, "at": None, "recurring": True, "tz": "UTC",
        "target": INBOX, "name": None, "created_at": NOW, "created_by": "cli",
        "last_fired_at": None, "last_scheduled_for": None, "paused": False, "paused_reason": None,
        "expires_after_days": None, "permanent": False, "catch_up": "once", "jitter": "none", "overlap": "skip",
        "meta": {}, "status": "scheduled", "schedule": cron, "explanation": explanation, **_next(planned),
        "running": False,
    }  # fmt: skip
    return view | fields


def _one_shot(task_id: str, prompt: str, at: str, **fields: Any) -> dict[str, Any]:
    """A task for one exact second (``--in``, ``--at``): no cron; a miss is surfaced, not fired late."""
    exact = at  # the view writes UTC with Z, as the task's own fields are dumped
    return _task(task_id, prompt, None, "once, at the exact time", exact, at=at, recurring=False,
                 catch_up="surface", schedule=exact, **fields)  # fmt: skip


DIGEST = _task(
    "000000a0", "summarise open PRs", "0 9 * * mon-fri", "At 09:00 on Monday to Friday",
    # Saturday now: the next weekday is Monday 2 November, in Berlin's winter time (CET since 25 October).
    "2026-11-02T09:00:00+01:00", tz="Europe/Berlin", name="digest",
)  # fmt: skip
# --every 90m: cron cannot repeat every 90 minutes, so it is rounded to an interval it can (2h).
CI = _task("000000a1", "check the CI of this branch", "0 */2 * * *", "At minute 0 past every second hour",
           "2026-10-31T10:00:00Z")  # fmt: skip
PUSH = _one_shot("000000a2", "remind me to push", "2026-10-31T09:30:00Z")  # --in 30m
STANDUP = _one_shot("000000a3", "stand-up notes", "2026-11-02T08:00:00Z", target={"kind": "inbox", "session": "work"})
# --once: the first match of the cron expression, then removed; a one-shot, so its miss is surfaced.
# New York is still on summer time (EDT, -04:00) on 31 October 2026; it ends on 1 November.
MIGRATION = _task(
    "000000a4", "run the migration dry-run", "30 12 * * *", "At 12:30 every day", "2026-10-31T12:30:00-04:00",
    tz="America/New_York", recurring=False, catch_up="surface",
)  # fmt: skip
QUOTED = _task(
    "000000a5", 'café ☕ "quoted"\nsecond line\ttab \\ backslash', "*/15 * * * *", "Every 15th minute of every hour",
    "2026-10-31T09:15:00Z", meta={"k": "vä", "n": 1.5},
)  # fmt: skip
# max:5m jitter moves a fire by min(5m, period / 2) * int(id, 16) / 2**32, in whole milliseconds:
# 300,000 ms * 0xa6 / 2**32 = 0.0116 ms, so 0: the planned time is the scheduled one.
DAILY = _task("000000a6", "x" * 450, "@daily", "At 00:00 every day", "2026-11-01T00:00:00Z",
              jitter="max:5m", permanent=True)  # fmt: skip
SUMMARY = _task(
    "000000a7", "write the summary", "0 16 * * *", "At 16:00 every day", "2026-10-31T16:00:00Z",
    # A session target is stored with every scope field; those not given are null (or false).
    target={"kind": "session", "session_id": None, "project": "/tmp/proj", "user": False, "agent": None,
            "fallback": "drop"},
    created_by="mcp", expires_after_days=3, catch_up="all", overlap="queue",
)  # fmt: skip
# 09:00 UTC is 14:30 in Kolkata (+05:30): the next start of an hour there is 15:00.
HOURLY = _task("000000a8", "hourly", "0 * * * *", "At the start of every hour", "2026-10-31T15:00:00+05:30",
               tz="Asia/Kolkata")  # fmt: skip
TO_PAUSE = _task("000000a9", "to pause", "5 4 * * *", "At 04:05 every day", "2026-11-01T04:05:00Z")
# A paused task has no next fire; it is listed after every task that has one.
PAUSED = TO_PAUSE | {"paused": True, "status": "paused", "next_fires": [], "planned_for": None}

# Two and a half hours later (11:30 UTC) the next fires are after that instant; the fires passed
# meanwhile did not happen (the scheduler loop is stopped), so nothing else changes.
LATER = {
    "quoted": QUOTED | _next("2026-10-31T11:45:00Z"),
    "ci": CI | _next("2026-10-31T12:00:00Z"),
    "hourly": HOURLY | _next("2026-10-31T18:00:00+05:30"),  # 17:00 in Kolkata now
}
# Resumed at 11:30 UTC: the slots it was paused for are not missed (its anchor is now), and it is
# planned again from there.
RESUMED = TO_PAUSE | {"last_scheduled_for": "2026-10-31T11:30:00Z"}

# `list` orders by the instant of the next planned fire (ties by id), tasks without one last:
# 09:15Z, 09:30Z (a2, and a8 at 15:00+05:30), 10:00Z, 16:00Z, 16:30Z (12:30-04:00), 1 Nov 00:00Z,
# 04:05Z, 2 Nov 08:00Z (a0 at 09:00+01:00, and a3).
STAGES: dict[str, list[dict[str, Any]]] = {
    "added": [QUOTED, PUSH, HOURLY, CI, SUMMARY, MIGRATION, DAILY, TO_PAUSE, DIGEST, STANDUP],
    "paused and removed": [QUOTED, HOURLY, CI, SUMMARY, MIGRATION, DAILY, DIGEST, STANDUP, PAUSED],
    "fires due": [LATER["quoted"], LATER["ci"], LATER["hourly"], SUMMARY, MIGRATION, DAILY, DIGEST, STANDUP, PAUSED],
    "resumed": [LATER["quoted"], LATER["ci"], LATER["hourly"], SUMMARY, MIGRATION, DAILY, RESUMED, DIGEST, STANDUP],
}


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
    expected = {"tasks": STAGES[stage]}
    for tty in (False, True):
        first = _list_json(capsys, monkeypatch, tty)
        again = _list_json(capsys, monkeypatch, tty)
        assert first == again, f"{stage}: the cached answer differs from the first"
        assert first.endswith("}\n")
        if not tty:
            assert "\n" not in first[:-1], "on a pipe the document is one compact line"
        document = json.loads(first)
        for got, want in zip(document["tasks"], expected["tasks"], strict=False):
            assert got == want, f"{stage}: task {want['id']}"
        assert document == expected, stage


def test_list_json_is_the_documented_document_through_cache_changes(kd, capsys, monkeypatch):
    _check(capsys, monkeypatch, "added")
    kd.run(kd.service.set_paused("000000a9", True))
    kd.run(kd.service.remove(["000000a2"]))
    _check(capsys, monkeypatch, "paused and removed")
    # Past the first planned fires of several tasks; the scheduler loop is not running, so they stay due.
    kd.clock.advance(2.5 * 3600)
    _check(capsys, monkeypatch, "fires due")
    kd.run(kd.service.set_paused("000000a9", False))
    _check(capsys, monkeypatch, "resumed")


def test_the_expected_documents_fit_the_documented_model():
    """The hand-written documents are themselves valid ``kairos list --json`` documents (ListDoc)."""
    from kairosd.core.wire.tasks import ListDoc

    for tasks in STAGES.values():
        ListDoc.model_validate({"tasks": tasks})


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
def test_listed_body_is_the_whole_document_encoded_at_once(kd, query, monkeypatch):
    """GET /tasks sends each view's cached JSON piece by piece; joined, the bytes must be what encoding the
    document in one go gives, also after a task changes (a stale piece would show the old state) or goes away.
    A listing may be the last one's bytes, kept (kairosd.scheduling.kept): those too."""
    import kairosd.scheduling.api
    from kairosd.api.http_types import EncodedJson, JsonPieces, Request, Response, compact_json

    monkeypatch.setattr(kairosd.scheduling.api, "LIST_PIECE", 3)  # several pieces of views

    def body_and_expected() -> tuple[bytes, bytes]:
        async def both() -> tuple[bytes, bytes]:
            request = Request("GET", "/v1/tasks", dict(query), None, 0)
            answer = await kd.api.handle(request)
            if isinstance(answer, Response):  # the last listing, kept (kairosd.scheduling.kept)
                assert isinstance(answer.body, EncodedJson)
                pieces = [answer.body.data, b"\n"]  # the server ends the JSON with a newline
            else:
                assert isinstance(answer, JsonPieces)
                pieces = list(answer.pieces)
                assert len(pieces) > 3
            views = kd.service.list_tasks(summary=bool(query))  # built whole, from no cache
            return b"".join(pieces), compact_json({"tasks": views}) + b"\n"

        return kd.run(both())

    for change in (
        lambda: None,
        lambda: kd.run(kd.service.set_paused("000000a9", True)),
        lambda: kd.run(kd.service.remove(["000000a2"])),
        lambda: kd.clock.advance(2.5 * 3600),
        # An edit keeps the id: the task's JSON and its view fields must both be the new ones.
        lambda: kd.run(kd.service.edit("000000a1", {"prompt": "edited prompt", "cron": "45 7 * * *"})),
        lambda: kd.run(kd.service.edit("000000a9", {"tz": "Asia/Kolkata", "name": "renamed"})),
    ):
        change()
        body, expected = body_and_expected()
        assert body == expected
        again, _ = body_and_expected()
        assert again == body
    assert b'"000000a2"' not in body
    assert b'"paused"' in body
    assert b'"edited prompt"' in body
    assert b'"45 7 * * *"' in body
    assert b'"renamed"' in body


def test_list_json_to_a_pipe_prints_the_daemons_bytes_unparsed(kd, capsys, monkeypatch):
    """Not parsed and encoded again (bench/bench_cli.py): the answer's bytes are the document."""
    import kairos.client

    def no_parsing(*_: Any) -> Any:
        raise AssertionError("list --json parsed the answer")

    monkeypatch.setattr(kairos.client, "_parse", no_parsing)
    printed = _list_json(capsys, monkeypatch, tty=False)
    document = json.loads(printed)
    assert document == {"tasks": STAGES["added"]}
    assert printed == json.dumps(document, separators=(",", ":")) + "\n"  # what print_json prints to a pipe
