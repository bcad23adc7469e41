"""Bugs the reliability suite found, each pinned by the smallest request or file that showed it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from reliability_support import InProcessDaemon, parse_response, raw_exchange

from kairosd.core.clock import SystemClock
from kairosd.store.store import JsonStore


def post(d: InProcessDaemon, path: str, body: object) -> tuple[int, dict[str, object]]:
    data = json.dumps(body).encode()
    request = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data
    status, _, answer = parse_response(raw_exchange(d.socket, request))
    return status, json.loads(answer)


def test_head_request_gets_its_answer_without_a_body(daemon: InProcessDaemon, caplog: pytest.LogCaptureFixture):
    """HEAD used to make the server send a body h11 refuses for HEAD: no answer at all and an error logged."""
    caplog.set_level(logging.ERROR)
    raw = raw_exchange(daemon.socket, b"HEAD /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, body = parse_response(raw)
    assert status == 405
    assert body == b""
    assert int(headers["content-length"]) > 0  # what a GET-like answer would carry
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("tz", "code"),
    [("a" * 300, "invalid_time"), ("Europe/" + "x" * 255, "invalid_time"), (["UTC"], "usage"), ({"a": 1}, "usage")],
)
def test_unusable_zone_is_a_400_not_a_500(daemon: InProcessDaemon, tz: object, code: str):
    """A 300-character zone made ZoneInfo raise OSError (ENAMETOOLONG): a 500. A list was looked up by its repr."""
    for path, body in [
        ("/v1/tasks", {"prompt": "x", "cron": "0 9 * * *", "tz": tz}),
        ("/v1/import", {"data": '{"tasks": []}', "tz": tz}),
    ]:
        status, answer = post(daemon, path, body)
        assert status == 400, answer
        error = answer["error"]
        assert isinstance(error, dict)
        assert error["code"] == code


def test_store_with_an_unusable_zone_is_set_aside_not_a_crash(tmp_path: Path):
    """A hand-edited store with a 300-character zone crashed kairosd with a traceback; now that task is set aside."""
    path = tmp_path / "scheduled_tasks.json"
    task = {"id": "0000abcd", "prompt": "x", "cron": "0 9 * * *", "created_at": "2026-01-01T00:00:00Z"}
    path.write_text(json.dumps({"schema_version": 2, "tasks": [{**task, "tz": "a" * 300}]}))
    store = JsonStore(path, SystemClock())
    assert store.load().tasks == []
    (entry,) = store.quarantine.entries()
    assert "unknown time zone" in entry["reason"]
