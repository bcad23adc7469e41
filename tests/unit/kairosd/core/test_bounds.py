"""Issue 13's values that the API accepted and that then killed kairosd (or answered 500), each pinned.

Every one is now a 400 naming the field and the limit, and nothing reaches the store.
"""

from __future__ import annotations

import json

import pytest
from reliability_support import InProcessDaemon, parse_response, raw_exchange

from kairosd.core import bounds


def exchange(d: InProcessDaemon, method: str, path: str, data: bytes = b"") -> tuple[int, dict[str, object]]:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode()
    status, _, answer = parse_response(raw_exchange(d.socket, head + data))
    return status, json.loads(answer)


def post(d: InProcessDaemon, path: str, body: object) -> tuple[int, dict[str, object]]:
    return exchange(d, "POST", path, json.dumps(body).encode())


def message(answer: dict[str, object]) -> str:
    error = answer["error"]
    assert isinstance(error, dict)
    return str(error["message"])


def task_count(d: InProcessDaemon) -> int:
    status, answer = exchange(d, "GET", "/v1/tasks")
    assert status == 200
    tasks = answer["tasks"]
    assert isinstance(tasks, list)
    return len(tasks)


def nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


ADD = {"prompt": "x", "cron": "* * * * *"}


@pytest.mark.parametrize(
    ("changes", "expect"),
    [
        ({"expires_after_days": 3_000_000}, "expires_after_days"),
        ({"cron": None, "in": "3000000d"}, "3650d limit"),
        ({"jitter": "max:99999999999999d"}, "limit"),
        ({"cron": None, "at": "9999-12-31T23:59:59", "tz": "Etc/GMT+12"}, "supported years"),
        ({"cron": None, "in": "9" * 400 + "d"}, "in: String should have at most 200 characters"),
        ({"cron": None, "in": "9" * 190 + "d"}, "3650d limit"),
        ({"meta": nested(300)}, "meta"),
        ({"meta": {"blob": "x" * (bounds.MAX_META_BYTES + 1)}}, "meta"),
        ({"prompt": "\udcff x"}, "prompt"),
        ({"name": "n" * (bounds.MAX_NAME_CHARS + 1)}, "name"),
        ({"target": {"kind": "shell", "argv": ["/bin/true"], "timeout_s": 10 * 86400}}, "timeout_s"),
        ({"target": {"kind": "shell", "argv": ["/bin/echo", "a\0b"]}}, "NUL"),
        ({"target": {"kind": "shell", "argv": [""]}}, "argv"),
        ({"surprise": 1}, "surprise: unknown field"),
        ({"once": "yes"}, "once"),
        ({"expires_after_days": "7"}, "expires_after_days"),
        ({"tz": "EST5EDT,M3.2.0,M11.1.0"}, "POSIX TZ rule string"),
        ({"tz": "<+03>-3"}, "POSIX TZ rule string"),
    ],
)
def test_out_of_range_add_is_a_400_naming_the_field(daemon: InProcessDaemon, changes: dict[str, object], expect: str):
    body = {**ADD, **changes}
    status, answer = post(daemon, "/v1/tasks", {k: v for k, v in body.items() if v is not None})
    assert status == 400, answer
    assert expect in message(answer)
    assert task_count(daemon) == 0


def test_json_constants_and_deep_bodies_are_400s(daemon: InProcessDaemon):
    for raw in (
        b'{"prompt": "x", "cron": "* * * * *", "target": {"kind": "shell", "argv": ["true"], "timeout_s": Infinity}}',
        b'{"prompt": "x", "cron": "* * * * *", "expires_after_days": NaN}',
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"prompt": "x", "cron": "* * * * *", "meta": nested(40)}).encode(),
    ):
        status, answer = exchange(daemon, "POST", "/v1/tasks", raw)
        assert status == 400, answer
    assert task_count(daemon) == 0


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        # Issue 27, finding 6: 1e999 was read as inf and the task saved with meta {"k": null}.
        (b'{"prompt": "x", "cron": "* * * * *", "meta": {"k": 1e999}}', "the number 1e999 is not finite"),
        (b'{"prompt": "x", "cron": "* * * * *", "meta": {"k": [-1e999]}}', "not finite"),
        # A clear line naming the limit, not "maximum recursion depth exceeded".
        (b'{"prompt": "x", "cron": "* * * * *", "meta": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested deeper than 32"),
        # fromisoformat ignores a NUL between date and time and after it.
        (b'{"prompt": "x", "at": "2099-01-01\\u000010:00"}', "not a time"),
        (b'{"prompt": "x", "at": "2099-01-01T10:00\\u0000"}', "not a time"),
    ],
)
def test_non_finite_numbers_deep_bodies_and_nuls_are_400s_that_say_why(daemon: InProcessDaemon, raw: bytes, says: str):
    status, answer = exchange(daemon, "POST", "/v1/tasks", raw)
    assert status == 400, answer
    assert says in message(answer)
    assert task_count(daemon) == 0


@pytest.mark.parametrize("limit", ["9" * 5000, "%C2%B2", "-1", "0", "10001", "1e3"])
def test_run_limit_out_of_range_is_a_400(daemon: InProcessDaemon, limit: str):
    status, answer = exchange(daemon, "GET", f"/v1/runs?limit={limit}")
    assert status == 400, answer
    assert "limit must be a whole number from 1 to" in message(answer)


def test_ack_body_is_typed(daemon: InProcessDaemon):
    assert post(daemon, "/v1/inbox/ack", {"ids": []})[0] == 400
    assert post(daemon, "/v1/inbox/ack", {"ids": [1]})[0] == 400
    assert post(daemon, "/v1/inbox/ack", {"all": True, "extra": 1})[0] == 400
    assert post(daemon, "/v1/inbox/ack", {"all": True})[0] == 200


def test_import_of_deeply_nested_data_is_a_400(daemon: InProcessDaemon):
    data = "[" * 100_000 + "]" * 100_000
    status, answer = post(daemon, "/v1/import", {"data": data})
    assert status == 400, answer
    assert task_count(daemon) == 0


def test_import_of_far_future_or_oddly_shaped_records_saves_nothing_bad(daemon: InProcessDaemon):
    """A lastFiredAt in year 9999 answered 500 yet saved the task, and every later start crashed."""
    tasks = [
        {"id": "aa11bb22", "cron": "0 9 * * *", "prompt": "p", "createdAt": 1_700_000_000_000,
         "lastFiredAt": 253_402_300_799_000, "recurring": True},
        {"id": "cc33dd44\n", "cron": "0 9 * * *", "prompt": "p", "createdAt": 1_700_000_000_000},
    ]  # fmt: skip
    status, answer = post(daemon, "/v1/import", {"data": json.dumps({"tasks": tasks})})
    assert status in (200, 400), answer
    assert task_count(daemon) == 0


def test_openapi_lists_every_route_and_the_typed_bodies(daemon: InProcessDaemon):
    status, doc = exchange(daemon, "GET", "/v1/openapi.json")
    assert status == 200
    paths = doc["paths"]
    assert isinstance(paths, dict)
    for path, verb in [("/v1/tasks", "post"), ("/v1/tasks/{id}", "get"), ("/v1/openapi.json", "get")]:
        assert verb in paths[path]
    body = paths["/v1/tasks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schemas = doc["components"]
    assert isinstance(schemas, dict)
    add = schemas["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert add["additionalProperties"] is False
    assert add["properties"]["expires_after_days"]["anyOf"][0]["maximum"] == bounds.MAX_EXPIRY_DAYS
    assert "in" in add["properties"]
