"""What each route answers: :data:`RESPONSES`, a (route name, method) to the model of its JSON body.

Route names are :data:`kairosd.core.protocol.ROUTES`' keys. ``GET /v1/openapi.json`` shows these
models as the routes' responses, and ``tests/unit/kairos/test_wire_responses.py`` holds every handler's answer to
them. A route that answers a stream of JSON lines names the model of one line in :data:`STREAMS`
instead; :data:`UNTYPED` lists the answers not described yet, with why (a test keeps the three
tables covering every route the daemon serves).

Each handler builds its answer as that model, once (``kairosd.api.http_types.compact_json`` sends a
model as its keys); :data:`PLAIN` names the handlers that answer plain data instead, and why. The same
test holds their answers to the model over the socket.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from pydantic import BaseModel

from kairosd.core.wire import (
    board,
    consolidation,
    daemon,
    doctor,
    export,
    imports,
    inbox,
    listing,
    registry,
    runs,
    sections,
    sessions,
    status,
    tasks,
    timeline,
)

# A route whose answer has more than one shape (chosen by the query) names each, the default first.
Answer = type[BaseModel] | tuple[type[BaseModel], ...]

RESPONSES: dict[tuple[str, str], Answer] = {
    ("status", "GET"): status.StatusDoc,
    ("shutdown", "POST"): daemon.StoppingDoc,
    ("doctor", "GET"): doctor.DoctorAnswer,
    ("reload", "POST"): daemon.ReloadAnswer,
    ("tasks", "GET"): (tasks.ListDoc, listing.SummaryListDoc),  # view=summary: the second
    ("tasks", "POST"): tasks.AddDoc,
    ("task", "GET"): tasks.TaskDoc,
    ("task", "PATCH"): tasks.EditDoc,
    ("task", "DELETE"): tasks.RemovedDoc,
    ("task_pause", "POST"): tasks.PausedDoc,
    ("task_resume", "POST"): tasks.PausedDoc,
    ("task_run", "POST"): runs.RunDoc,
    ("runs", "GET"): runs.HistoryDoc,
    ("missed", "GET"): runs.MissedDoc,
    ("missed", "DELETE"): runs.ClearedDoc,
    ("timeline", "GET"): timeline.TimelineDoc,
    ("inbox", "GET"): inbox.InboxDoc,
    ("inbox_ack", "POST"): inbox.AckDoc,
    ("import", "POST"): imports.ImportDoc,
    ("quarantine", "GET"): listing.ProblemsDoc,
    ("export", "POST"): export.ExportDoc,
    ("sessions", "GET"): sessions.SessionsDoc,
    ("sessions", "POST"): sessions.SessionDoc,
    ("session_hook", "POST"): (sessions.HookAnswer, sessions.EndedDoc),  # event "end": the second
    ("session_ack", "POST"): inbox.AckDoc,
    ("session_end", "POST"): sessions.EndedDoc,
    ("session_next", "GET"): sessions.NextItemDoc,
    ("registry", "GET"): registry.BackgroundListDoc,
    ("registry", "POST"): registry.BackgroundTaskDoc,
    ("registry_task", "GET"): registry.BackgroundTaskDoc,
    ("registry_wait", "GET"): registry.SettledDoc,
    ("registry_logs", "GET"): registry.LogChunkDoc,
    ("registry_cancel", "POST"): registry.CancelledDoc,
    ("registry_send", "POST"): registry.BackgroundTaskDoc,
    ("registry_close", "POST"): registry.BackgroundTaskDoc,
    ("consolidate", "POST"): consolidation.ConsolidateDecisionDoc,
    ("consolidation", "GET"): sections.ConsolidationStatusDoc,
    ("consolidation_run", "GET"): consolidation.ConsolidationRunDoc,
    ("board", "GET"): board.BoardDoc,
    ("board", "POST"): board.BoardAddDoc,
    ("board_prune", "POST"): board.BoardPruneDoc,
    ("board_history", "GET"): board.BoardHistoryDoc,
    ("board_entry", "DELETE"): board.BoardRemovedDoc,
    ("board_entry", "POST"): board.BoardEntryDoc,
}

# Answers that are JSON lines: the model of one line (the route's plain answer, if any, is in RESPONSES).
STREAMS: dict[tuple[str, str], type[BaseModel]] = {
    ("inbox", "GET"): inbox.InboxItem,  # with follow=1
    ("registry_logs", "GET"): registry.LogLine,  # with follow=1
}

# Answers not described by a model yet, and why. Describe one rather than add a line here.
UNTYPED: dict[tuple[str, str], str] = {
    ("openapi", "GET"): "the OpenAPI document itself",
    ("events", "GET"): "a stream of events of many kinds (kairosd.core.events), one JSON line each",
}


# Handlers that answer plain data (the service's dicts) rather than build the model, and why.
PLAIN: dict[tuple[str, str], str] = {
    ("tasks", "GET"): "sent as pre-encoded pieces, cached per task (100,000 tasks are ~100 MB; issue 28)",
    ("timeline", "GET"): "a week of 1,000 tasks is 50,000 instants; kairos timeline --json pipes the bytes on",
    ("import", "POST"): "a batch is up to 5,000 task views, each validated again by the CLI that reads it",
    ("session_hook", "POST"): "kairos hook's answer, on every prompt of every agent: the hot path stays as measured",
    ("session_ack", "POST"): "kairos hook's acknowledgement, on the same hot path",
}


def models_of(answer: Answer) -> tuple[type[BaseModel], ...]:
    """The models of an answer in :data:`RESPONSES`, the default first."""
    return answer if isinstance(answer, tuple) else (answer,)
