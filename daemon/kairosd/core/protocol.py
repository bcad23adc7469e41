"""The wire protocol between kairosd and its clients: routes, error codes and limits, shared by both sides.

What each route answers is a model in :mod:`kairosd.core.wire` (pydantic, so the hot paths do not
import it); this module stays plain so that ``kairos hook`` and ``kairos list`` can.

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
    GET    /v1/timeline?from=&to=&span=S&ids=a,b&target=K&project=DIR&name=S&cap=N&bins=N
                                           planned fires (jitter included), runs, missed fires, DST changes
                                           and derived downtime in a window (kairosd.scheduling.timeline);
                                           bins=N counts the planned fires in N slices instead of listing them
    GET    /v1/inbox?session=S&all=1       inbox items (unacknowledged unless all=1)
    POST   /v1/inbox/ack                   body {"session": S, "ids": [...]} or {"all": true}
    GET    /v1/events?types=a,b&session=S  JSON lines stream of events
    POST   /v1/import                      body {"data": "<claude json>", "tz": ZONE, "dry_run": BOOL,
                                           "project": ABS_PATH (a live session there, not the inbox)}
    GET    /v1/quarantine                  tasks set aside at load: {"path", "entries": [{id, reason, ...}]}
    POST   /v1/shutdown                    graceful stop (answered before exit)
    GET    /v1/doctor                      agent CLIs found and usable on kairosd's PATH, config state
    POST   /v1/export                      body {to, ids | all, image, secret_name, secret_env}: tasks as
                                           systemd, Kubernetes or GitHub Actions files (kairosd.export.api)

Background job registry (``kairos task``; see :mod:`kairosd.jobs.api`):

    GET    /v1/registry?status=S&parent=ID list background jobs, newest first
    POST   /v1/registry                    start one (body: StartRequest)
    GET    /v1/registry/{id}               one task with its turn history
    GET    /v1/registry/{id}/wait?timeout=S&since_turn=N&waiter=ID
                                           long-poll until it settles (timeout at most REGISTRY_MAX_WAIT_S);
                                           waiter: the asking task's KAIROS_TASK_ID, so a task waiting on
                                           its own descendant lends it its concurrency slot meanwhile
    GET    /v1/registry/{id}/logs?offset=N a chunk of its log; &follow=1 streams JSON lines
    POST   /v1/registry/{id}/cancel        cancel it and every descendant
    POST   /v1/registry/{id}/send          body {"message": TEXT}: a follow-up turn of an idle agent job
    POST   /v1/registry/{id}/close         end an idle multi-turn task

Live agent sessions (``kairos hook``, ``kairos sessions``; see :mod:`kairosd.sessions.api`):

    GET    /v1/sessions                    live sessions, most recently active first
    POST   /v1/sessions                    register one: {agent, session_id, cwd, transcript_path}
    POST   /v1/sessions/{id}/hook          a hook call (body: SessionHookRequest): touch or register the
                                           session and claim the items this event may deliver
    POST   /v1/sessions/{id}/ack           body {agent, claim, run_ids}: the hook wrote these items out
    POST   /v1/sessions/{id}/end           body {agent, reason}: deregister; pending items take their fallback
    GET    /v1/sessions/{id}/next?agent=A&timeout=S
                                           long-poll for the next item (the asyncRewake waiter); at most
                                           SESSION_MAX_WAIT_S, answers {"item": null} when nothing came
    POST   /v1/consolidate                 body {agent, session_id, transcript_path, cwd, reason}: 202

Memory consolidation and the context board (``kairos consolidate``, ``kairos board``; see
:mod:`kairosd.consolidation.api`, which serves ``POST /v1/consolidate`` when wired):

    POST   /v1/consolidate                 also {spawned, consolidate}: the gates decide; 202 started or
                                           coalesced (with the run), 200 skipped (with the gate and why)
    GET    /v1/consolidation               running and pending runs, the latest decisions
    GET    /v1/consolidation/runs/{id}     a run's task record and the worker's result
    GET    /v1/board?cwd=DIR               the project's context board; POST {cwd, text, kind} adds
    DELETE /v1/board/entries/{id}?cwd=DIR  remove an entry
    POST   /v1/board/prune                 body {cwd}: prune kairos' entries to 18
    GET    /v1/board/history?cwd=DIR&limit=N  the board's changes

Both sides take these paths from one table, :data:`ROUTES` (a name to a path
template after ``/v1``): the CLI formats a request's path with :func:`route_path`, the
daemon's router matches with :func:`route_regex`, and ``GET /v1/openapi.json``
lists the templates the daemon serves.

Errors are ``{"error": {"code": CODE, "message": TEXT}}`` with the HTTP status the error class
carries (``KairosError.http_status``); :data:`ERROR_STATUS` lists every code on the wire with its
status (the codes are stable; a test keeps the table and the classes in agreement). The CLI
maps codes to exit codes with :func:`exit_code_for`.

Must not import pydantic, asyncio or any kairosd module with I/O.
"""

from __future__ import annotations

from kairosd.core.errors import EXIT_FAILURE, EXIT_USAGE

# typing is for mypy only: the CLI does not import it (docs/performance.md). The responses' models are
# in kairosd.core.wire (pydantic, so off the CLI's hot paths); the requests' are each capability's own.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

API_VERSION: Final = 1
PREFIX: Final = "/v1"
MAX_BODY_BYTES: Final = 1 << 20  # a prompt is text; a megabyte is plenty and bounds memory
MAX_HEADER_BYTES: Final = 16 << 10
REQUEST_TIMEOUT_S: Final = 10.0
# A registry wait long-polls at most this long; clients loop for longer waits.
REGISTRY_MAX_WAIT_S: Final = 60.0
# A session waiter (GET /v1/sessions/{id}/next) long-polls at most this long per request.
SESSION_MAX_WAIT_S: Final = 300.0

# Every route the daemon serves: a name, and its path after PREFIX with ``{param}`` for a path
# parameter (one whole segment). The methods are the handlers' (see kairosd.api.router).
ROUTES: Final[dict[str, str]] = {
    "openapi": "/openapi.json",
    "status": "/status",
    "shutdown": "/shutdown",
    "doctor": "/doctor",
    "reload": "/reload",
    "tasks": "/tasks",
    "task": "/tasks/{id}",
    "task_pause": "/tasks/{id}/pause",
    "task_resume": "/tasks/{id}/resume",
    "task_run": "/tasks/{id}/run",
    "runs": "/runs",
    "missed": "/missed",
    "timeline": "/timeline",
    "inbox": "/inbox",
    "inbox_ack": "/inbox/ack",
    "events": "/events",
    "import": "/import",
    "quarantine": "/quarantine",
    "export": "/export",
    "registry": "/registry",
    "registry_task": "/registry/{id}",
    "registry_wait": "/registry/{id}/wait",
    "registry_logs": "/registry/{id}/logs",
    "registry_cancel": "/registry/{id}/cancel",
    "registry_send": "/registry/{id}/send",
    "registry_close": "/registry/{id}/close",
    "sessions": "/sessions",
    "session_hook": "/sessions/{id}/hook",
    "session_ack": "/sessions/{id}/ack",
    "session_end": "/sessions/{id}/end",
    "session_next": "/sessions/{id}/next",
    "consolidate": "/consolidate",
    "consolidation": "/consolidation",
    "consolidation_run": "/consolidation/runs/{id}",
    "board": "/board",
    "board_prune": "/board/prune",
    "board_history": "/board/history",
    "board_entry": "/board/entries/{id}",
}

ERROR_STATUS: Final[dict[str, int]] = {
    "usage": 400,
    "bad_request": 400,
    "cron_syntax": 400,
    "invalid_time": 400,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "limit": 409,
    "lock_held": 409,
    "unsafe_path": 403,
    "refused": 403,
    "too_large": 413,
    "store": 500,
    "store_corrupt": 500,
    "store_version": 500,
    "config": 500,
    "internal": 500,
    "unavailable": 503,
    "busy": 503,  # a connection or stream limit; try again later
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
    # background job registry: the whole record, then patches (changed fields only)
    "task_started",
    "task_updated",
    "task_progress",
    "task_notification",
    # live sessions: a run held for a session's next turn (settled later by run_finished)
    "run_pending",
    "session_started",
    "session_ended",
    # memory consolidation: each request's decision (the gate that stopped it), a run's end, board changes
    "consolidation_started",
    "consolidation_coalesced",
    "consolidation_skipped",
    "consolidation_failed",
    "consolidation_finished",
    "board_changed",
)


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str) -> str:
    """Percent-encode everything but RFC 3986 unreserved characters (for a path
    segment or a query value). Here, not urllib.parse (docs/performance.md)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def route_path(name: str, /, **params: str) -> str:
    """The path (after PREFIX) of route ``name`` with its ``{param}`` segments percent-encoded.

    ``route_path("task", id="t1")`` is ``"/tasks/t1"``. KeyError for an unknown route or a missing
    or extra parameter: a wrong name is a bug, not a request to send.
    """
    template = ROUTES[name]
    segments = template.split("/")
    wanted = {s[1:-1] for s in segments if s.startswith("{")}
    if wanted != params.keys():
        raise KeyError(f"route {name} takes {sorted(wanted)}, not {sorted(params)}")
    return "/".join(quote(params[s[1:-1]]) if s.startswith("{") else s for s in segments)


def route_regex(name: str) -> str:
    """The regex the router matches route ``name`` with (PREFIX included): each ``{param}`` a
    named group of one non-empty segment, the rest literal (a template is letters, ``_``, ``.``
    and ``/``, and only ``.`` needs escaping)."""
    segments = ROUTES[name].split("/")
    parts = (f"(?P<{s[1:-1]}>[^/]+)" if s.startswith("{") else s.replace(".", "\\.") for s in segments)
    return PREFIX + "/".join(parts)


def encode_query(query: Mapping[str, str]) -> str:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in query.items())


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def status_for(code: str) -> int:
    """The status of a code the server answers without an error object (busy, too_large)."""
    return ERROR_STATUS.get(code, 500)


def exit_code_for(code: str) -> int:
    """CLI exit code for an API error code: 2 for bad input, 1 for everything else."""
    return EXIT_USAGE if code in _USAGE_CODES else EXIT_FAILURE
