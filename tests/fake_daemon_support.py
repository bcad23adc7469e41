"""A fake kairosd for the CLI tests: a threaded HTTP server on a Unix socket that answers canned routes.

The server records every request, so each test checks both what the CLI sent and what it printed.
A route is a method and a request target, and the target's query is part of it:
``("GET", "/v1/tasks?status=paused")`` matches only that query (pairs in any order),
``("GET", "/v1/tasks")`` only a request without one. A request that sends a filter the test did
not name gets a 404 and the CLI fails, so a wrong filter cannot pass. A route whose query is ``*``
(``"/v1/registry/ID/wait?*"``) takes any query, for a callable route that checks the query it is given.

Also the answers the fake gives most: a scheduled task's view (:func:`task_view`), a background
job's (:func:`job_view`), and a Claude Code scheduled-tasks file to import (:func:`claude_file`).
Used by tests/integration/kairos/test_cli_verbs.py, test_cli_jobs.py and tests/unit/kairos/test_cli_progress.py.
"""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

ZONE = "Europe/Berlin"


@dataclass
class Stream:
    """A JSON-lines answer: the lines, then the server closes the connection."""

    lines: list[Any]


@dataclass
class Recorded:
    method: str
    target: str  # the request target as sent: path and query, still percent-encoded
    body: Any

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The query's name=value pairs, decoded, in the order sent (a repeated name stays repeated)."""
        return parse_qsl(urlsplit(self.target).query, keep_blank_values=True)

    @property
    def query(self) -> dict[str, str]:
        """The query as kairosd reads it: a repeated name keeps its last value (route matching sees every pair)."""
        return dict(self.pairs)


ANY_QUERY = "*"


def _matches(route_target: str, req: Recorded) -> bool:
    path, _, query = route_target.partition("?")
    if path != req.path:
        return False
    return query == ANY_QUERY or sorted(parse_qsl(query, keep_blank_values=True)) == sorted(req.pairs)


Answer = tuple[int, Any] | Stream
Route = Answer | Callable[[Recorded], Answer]


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    fake: FakeDaemon


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # AF_UNIX has no client address to log
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        req = Recorded(self.command, self.path, json.loads(raw) if raw else None)
        fake = self.server.fake
        fake.requests.append(req)
        route = fake.route_for(req)
        if route is None:
            # kairosd's own answer for a path it does not know; a test's route with another query says so.
            known = any(m == req.method and t.partition("?")[0] == req.path for m, t in fake.routes)
            message = f"no route with this query: {req.target}" if known else f"no such endpoint: {req.path}"
            answer: Answer = (404, {"error": {"code": "not_found", "message": message}})
        else:
            answer = route(req) if callable(route) else route
        if isinstance(answer, Stream):
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            for line in answer.lines:
                self.wfile.write(json.dumps(line).encode() + b"\n")
            return  # HTTP/1.0 without a length: the body ends when the connection closes
        status, body = answer
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_PATCH = _handle


@dataclass
class FakeDaemon:
    home: Path
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return self.home / "run" / "kairosd.sock"

    def start(self) -> None:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.server = _Server(str(self.socket), _Handler)
        self.server.fake = self
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():
            # Unlink first, so a client never sees the file of a closed socket (as kairosd does).
            self.socket.unlink(missing_ok=True)
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(timeout=5)

    def route_for(self, req: Recorded) -> Route | None:
        """The route whose method, path and query all match ``req`` (a query-less route matches no query)."""
        for (method, target), route in self.routes.items():
            if method == req.method and _matches(target, req):
                return route
        return None

    def sent(self, method: str, path: str) -> list[Recorded]:
        """The requests of ``method`` to ``path``, whatever their query."""
        return [r for r in self.requests if r.method == method and r.path == path]


def fire(planned: str, scheduled: str | None = None) -> dict[str, str]:
    return {"scheduled_for": scheduled or planned, "planned_for": planned}


def task_view(**over: Any) -> dict[str, Any]:
    """A task view as GET /v1/tasks/{id} returns it."""
    task: dict[str, Any] = {
        "id": "3f2a9c1d",
        "prompt": "summarise open PRs",
        "cron": "0 9 * * 1-5",
        "at": None,
        "recurring": True,
        "tz": ZONE,
        "target": {"kind": "inbox", "session": "default"},
        "name": None,
        "created_at": "2026-11-20T08:00:00Z",
        "created_by": "cli",
        "last_fired_at": None,
        "last_scheduled_for": None,
        "paused": False,
        "paused_reason": None,
        "expires_after_days": None,
        "permanent": False,
        "catch_up": "once",
        "jitter": "none",
        "overlap": "skip",
        "meta": {},
        "status": "scheduled",
        "schedule": "0 9 * * 1-5",
        "explanation": "At 09:00 on Monday to Friday",
        "next_fires": [
            fire("2026-11-23T09:00:00+01:00"),
            fire("2026-11-24T09:00:00+01:00"),
            fire("2026-11-25T09:00:00+01:00"),
        ],
        "planned_for": "2026-11-23T09:00:00+01:00",
        "running": False,
    }
    task.update(over)
    return task


def claude_file(home: Path, n: int) -> tuple[Path, list[dict[str, Any]]]:
    tasks = [
        {"id": f"{i:08x}", "cron": "0 9 * * 1-5", "prompt": f"check the build of branch {i} ✓", "createdAt": 1.7e12}
        for i in range(n)
    ]
    path = home / "big.json"
    path.write_text(json.dumps({"tasks": tasks}))
    return path, tasks


JOB_ID = "t0a1b2c3d4e"


def job_turn(**over: Any) -> dict[str, Any]:
    turn: dict[str, Any] = {"number": 1, "prompt": "fix the build", "queued_at": "2026-11-20T08:00:00+00:00",
                            "started_at": "2026-11-20T08:00:00+00:00", "finished_at": None, "ok": None,
                            "response": None, "error": None, "exit_code": None, "session_id": None,
                            "tool_calls": 2}  # fmt: skip
    turn.update(over)
    return turn


def job_view(**over: Any) -> dict[str, Any]:
    """A background job as kairosd answers it (kairosd.core.wire.registry: task list and show read it typed)."""
    task: dict[str, Any] = {
        "id": JOB_ID,
        "kind": "agent",
        "agent": "claude",
        "cli": "claude",
        "argv": None,
        "prompt": "fix the build",
        "status": "running",
        "queued": False,
        "depth": 0,
        "parent_id": None,
        "cwd": "/src/app",
        "session": None,
        "model": None,
        "mode": "background",
        "multi_turn": True,
        "permissions": {"mode": "default", "allowed_tools": None, "denied_tools": []},
        "progress": {"tool_calls": 2, "intent": "reading the logs", "last_line": "looking at CI"},
        "turns": [job_turn()],
        "turns_done": 0,
        "response": None,
        "error": None,
        "exit_code": None,
        "log_path": "/data/tasks/t0a1b2c3d4e.log",
        "log_lines": 3,
        "created_at": "2026-11-20T08:00:00+00:00",
        "updated_at": "2026-11-20T08:00:01+00:00",
        "finished_at": None,
        "timeout_s": 3600.0,
        "agent_session_id": None,
        "pid": 4242,
        "pid_started": 1790000000.5,
        "detached": False,
        "scheduled_task_id": None,
        "run_id": None,
    }
    task.update(over)
    return task


def board_entry(**over: Any) -> dict[str, Any]:
    """A board entry as kairosd answers it (kairosd.core.wire.records.BoardEntry)."""
    entry: dict[str, Any] = {"id": "b1", "kind": "rule", "text": "use pnpm", "author": "user", "hits": 1,
                             "source_session": None, "source_agent": None, "created_at": "2026-11-20T08:00:00+00:00",
                             "last_seen_at": "2026-11-20T08:00:00+00:00"}  # fmt: skip
    entry.update(over)
    return entry
