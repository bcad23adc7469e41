"""The wire protocol between kairosd and its clients: the only module both sides share.

HTTP/1.1 over the daemon's Unix socket, JSON bodies, one request per
connection (so ``curl --unix-socket`` works for scripts). Everything here is
plain data and small functions: no pydantic, no asyncio, so the CLI can import
it cheaply on the hook hot path.

Routes (all under ``/v1``):

    GET    /v1/status                      daemon state, why nothing fires (if so)
    GET    /v1/tasks?view=summary          list tasks (summary: only what a table shows)
    POST   /v1/tasks                       add a task (body: AddRequest)
    GET    /v1/tasks/{id}                  one task, with its next planned fires
    DELETE /v1/tasks/{id}                  remove
    POST   /v1/tasks/{id}/pause|resume|run pause, resume, fire now
    GET    /v1/runs?task=ID&limit=N        run ledger (history)
    GET    /v1/missed                      missed-run ledger; DELETE clears it
    GET    /v1/inbox?session=S&all=1       inbox items (unacknowledged unless all=1)
    POST   /v1/inbox/ack                   body {"session": S, "ids": [...]} or {"all": true}
    GET    /v1/events?types=a,b&session=S  JSON lines stream of events
    POST   /v1/import                      body {"data": "<claude json>", "tz": ZONE}
    POST   /v1/shutdown                    graceful stop (answered before exit)

Errors are ``{"error": {"code": CODE, "message": TEXT}}`` with the HTTP status
from :data:`ERROR_STATUS`; the CLI maps codes to exit codes with
:func:`exit_code_for`.

Must not import pydantic, asyncio or any kairosd module with I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypedDict

from kairosd.errors import EXIT_FAILURE, EXIT_USAGE

API_VERSION: Final = 1
PREFIX: Final = "/v1"
MAX_BODY_BYTES: Final = 1 << 20  # a prompt is text; a megabyte is plenty and bounds memory
MAX_HEADER_BYTES: Final = 16 << 10
REQUEST_TIMEOUT_S: Final = 10.0

ERROR_STATUS: Final[dict[str, int]] = {
    "usage": 400,
    "bad_request": 400,
    "cron_syntax": 400,
    "invalid_time": 400,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "lock_held": 409,
    "too_large": 413,
    "store": 500,
    "store_corrupt": 500,
    "store_version": 500,
    "internal": 500,
    "unavailable": 503,
}
_USAGE_CODES: Final = frozenset(
    {"usage", "bad_request", "cron_syntax", "invalid_time", "too_large", "method_not_allowed"}
)

EVENT_TYPES: Final = (
    "task_added",
    "task_changed",
    "task_removed",
    "run_started",
    "run_finished",
    "missed",
    "expired",
    "inbox_item",
)


class AddRequest(TypedDict, total=False):
    """Body of ``POST /v1/tasks``. Exactly one of cron, every, in, at."""

    prompt: str
    cron: str
    every: str  # /loop-style interval, e.g. "5m"
    in_: str  # sent as "in": a duration from now for a one-shot
    at: str  # ISO 8601 or HH:MM for a one-shot
    once: bool  # a cron expression that fires once, then the task is removed
    tz: str
    name: str
    target: dict[str, Any]  # {"kind": "inbox", "session": S} or {"kind": "shell", "argv": [...], ...}
    jitter: str
    expires_after_days: int | None
    permanent: bool
    catch_up: str
    overlap: str
    created_by: str
    meta: dict[str, Any]


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str) -> str:
    """Percent-encode everything but RFC 3986 unreserved characters (for a path
    segment or a query value). Here, not urllib.parse: the CLI saves ~4 ms."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def encode_query(query: Mapping[str, str]) -> str:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in query.items())


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def status_for(code: str) -> int:
    return ERROR_STATUS.get(code, 500)


def exit_code_for(code: str) -> int:
    """CLI exit code for an API error code: 2 for bad input, 1 for everything else."""
    return EXIT_USAGE if code in _USAGE_CODES else EXIT_FAILURE
