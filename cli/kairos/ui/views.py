"""What each view of ``kairos ui`` shows: the request it makes, the model of each answer, its columns and its
rows, and which events make it stale. Pure functions of kairosd's answers, read as their models
(:mod:`kairosd.core.wire`, :func:`read_answers`), and a time (no Textual, no I/O), so the rows are tested
without a terminal and the app (:mod:`kairos.ui.app`) only lays them out. Two answers stay parsed JSON, for
the time their model costs (:func:`answer_models` has the figures): the Tasks view's, read as ``kairos list``
reads the same answer, and the Timeline's, ``kairos timeline``'s own chart (:mod:`kairos.timeline`). Either
way an answer of another shape is :class:`kairos.answers.UnexpectedAnswer` naming the key
(:mod:`kairos.shape`), which the app shows on its message line.

Every request names a route of :mod:`kairosd.core.protocol`, the ones the CLI's verbs call, and the
actions (:data:`ACTIONS`) are the CLI's requests too: ``p`` is ``kairos pause``'s
``POST /v1/tasks/{id}/pause``.
May import :mod:`kairos.output`, :mod:`kairos.shape`, :mod:`kairos.answers` (lazily), :mod:`kairos.timeline`
and ``kairosd.core`` only; pydantic and the models are imported when a view that reads them is first fetched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kairos.output import fmt_seconds, fmt_time, one_line
from kairos.shape import SHAPE_ERRORS, unexpected
from kairos.timeline.document import chart, chart_query, cleaned
from kairos.timeline.layout import render_text
from kairosd.core.protocol import PREFIX, route_path

if TYPE_CHECKING:  # imported by answer_models, when a view is first fetched (see there)
    from pydantic import BaseModel

    from kairosd.core.wire.board import BoardChange, BoardDoc, BoardHistoryDoc
    from kairosd.core.wire.inbox import InboxDoc
    from kairosd.core.wire.records import BoardEntry
    from kairosd.core.wire.registry import BackgroundListDoc
    from kairosd.core.wire.runs import HistoryDoc, MissedDoc
    from kairosd.core.wire.sessions import SessionsDoc

# Lines of a job's log kept on screen.
LOG_LINES = 500
# A row's free text (a prompt, a reason) is cut to this many characters; the table scrolls for the rest.
TEXT_WIDTH = 60


@dataclass(frozen=True)
class Action:
    """One key: what it is called, the request it sends (method, route, body), and whether it asks first."""

    key: str
    label: str
    confirm: bool = False


@dataclass
class View:
    name: str
    title: str
    columns: tuple[str, ...]
    events: frozenset[str]
    actions: tuple[Action, ...] = ()
    rows: list[tuple[str, list[str]]] = field(default_factory=list)


# Which events make which view stale (the rest are refetched when one of theirs arrives).
VIEWS: dict[str, tuple[str, tuple[str, ...], frozenset[str], tuple[Action, ...]]] = {
    "tasks": (
        "Tasks",
        ("ID", "NEXT IN", "NEXT", "SCHEDULE", "TARGET", "NAME/PROMPT"),
        frozenset({"task_added", "task_changed", "task_removed", "run_started", "run_finished", "clock_jump"}),
        (
            Action("p", "pause"),
            Action("r", "resume"),
            Action("n", "run now"),
            Action("x", "remove", confirm=True),
        ),
    ),
    "timeline": (
        "Timeline",
        (),  # no table: kairos timeline's chart (kairos.ui.chart)
        # Not run_started: a fire is drawn once it has an outcome, and each event asks for the whole chart.
        frozenset({"task_added", "task_changed", "task_removed", "run_finished", "missed", "clock_jump"}),
        (),
    ),
    "history": (
        "Runs",
        ("RUN", "TASK", "SCHEDULED", "OUTCOME", "LATE", "REASON/EXIT"),
        frozenset({"run_started", "run_finished", "run_pending"}),
        (),
    ),
    "missed": (
        "Missed",
        ("TASK", "LAST MISSED", "COUNT", "REASON", "ACTION", "NAME/PROMPT"),
        frozenset({"missed", "expired", "clock_jump"}),
        (),
    ),
    "jobs": (
        "Jobs",
        ("ID", "STATUS", "AGENT", "STARTED", "PROMPT"),
        frozenset({"task_started", "task_updated", "task_notification"}),
        (Action("c", "cancel job", confirm=True),),
    ),
    "inbox": (
        "Inbox",
        ("ID", "TASK", "DELIVERED", "LATE", "PROMPT"),
        frozenset({"inbox_item", "run_finished"}),
        (Action("a", "acknowledge"),),
    ),
    "sessions": (
        "Agents",
        ("SESSION", "AGENT", "STATE", "PENDING", "LAST ACTIVE", "FOLDER"),
        frozenset({"session_started", "session_ended", "run_pending", "run_finished"}),
        (),
    ),
    "boards": (
        "Boards",
        ("ID", "KIND", "BY", "TEXT"),
        frozenset({"board_changed", "consolidation_finished"}),
        (Action("i", "pin/unpin"), Action("x", "remove", confirm=True)),
    ),
}


def stale_views(kind: str) -> list[str]:
    """The views an event of ``kind`` changes."""
    return [name for name, spec in VIEWS.items() if kind in spec[2]]


# ---- requests --------------------------------------------------------------------------------------


def requests(name: str, projects: list[str], width: int = 80) -> list[tuple[str, str, dict[str, str] | None]]:
    """The GETs (method, path, query) that view ``name`` needs; the boards need one pair per project, the
    timeline ``kairos timeline``'s own request for a chart ``width`` columns wide."""
    if name == "tasks":
        return [("GET", route_path("tasks"), {"view": "summary"})]
    if name == "timeline":
        return [("GET", route_path("timeline"), chart_query(width))]
    if name == "history":
        return [("GET", route_path("runs"), {"limit": "200"})]
    if name == "missed":
        return [("GET", route_path("missed"), None)]
    if name == "jobs":
        return [("GET", route_path("registry"), None)]
    if name == "inbox":
        return [("GET", route_path("inbox"), None)]
    if name == "sessions":
        return [("GET", route_path("sessions"), None)]
    if name == "boards":
        pairs: list[tuple[str, str, dict[str, str] | None]] = []
        for project in projects:
            pairs.append(("GET", route_path("board"), {"cwd": project}))
            pairs.append(("GET", route_path("board_history"), {"cwd": project, "limit": "5"}))
        return pairs
    raise KeyError(name)


def answer_models(name: str) -> tuple[type[BaseModel], ...]:
    """The model of each of view ``name``'s answers, in the order of its requests (the boards: a pair per
    project), imported here, in the worker that first fetches the view. None for two views, whose answers
    stay parsed JSON: the timeline's (:mod:`kairos.timeline.document` says why) and the tasks' (the view of
    the first draw: importing pydantic and building SummaryListDoc for 1,000 tasks made ``kairos ui``'s start
    to its first draw take about 1,020 ms instead of 710-770, ``bench/bench_ui.py``; docs/performance.md)."""
    if name in ("history", "missed", "inbox"):
        from kairosd.core.wire.inbox import InboxDoc
        from kairosd.core.wire.runs import HistoryDoc, MissedDoc

        return (HistoryDoc if name == "history" else MissedDoc if name == "missed" else InboxDoc,)
    if name == "jobs":
        from kairosd.core.wire.registry import BackgroundListDoc

        return (BackgroundListDoc,)
    if name == "sessions":
        from kairosd.core.wire.sessions import SessionsDoc

        return (SessionsDoc,)
    if name == "boards":
        from kairosd.core.wire.board import BoardDoc, BoardHistoryDoc

        return (BoardDoc, BoardHistoryDoc)
    if name in ("tasks", "timeline"):
        return ()
    raise KeyError(name)


def _summary_model() -> type[BaseModel]:
    from kairosd.core.wire.listing import SummaryListDoc

    return SummaryListDoc


def read_answers(name: str, asked: list[tuple[str, str, dict[str, str] | None]], answers: list[Any]) -> list[Any]:
    """kairosd's ``answers`` to view ``name``'s requests (``asked``, from :func:`requests`), each as its model
    (:func:`answer_models`); the tasks' as parsed, and the timeline's as parsed and
    :func:`~kairos.timeline.document.cleaned`.

    :class:`kairos.answers.UnexpectedAnswer`, naming the route and the key, for an answer of another shape."""
    if name == "timeline":
        return [cleaned(answers[0])]
    if name == "tasks":
        # Read as the view reads it, once here in the worker: a key it cannot read is named by the model.
        try:
            task_rows(answers[0], datetime(2000, 1, 1, tzinfo=UTC), "UTC")  # any time: only the keys matter
        except SHAPE_ERRORS as exc:
            raise unexpected(_summary_model, answers[0], f"GET {PREFIX}{asked[0][1]}", exc) from None
        return answers
    from kairos.answers import read

    models = answer_models(name)
    return [
        read(models[i % len(models)], answer, f"{method} {PREFIX}{path}")
        for i, ((method, path, _), answer) in enumerate(zip(asked, answers, strict=True))
    ]


def action_request(view: str, key: str, row: str, project: str = "") -> tuple[str, str, Any, dict[str, str] | None]:
    """The request (method, path, body, query) that key ``key`` sends for row ``row`` of ``view``: the CLI's."""
    if view == "tasks":
        if key == "x":
            return "DELETE", route_path("task", id=row), None, None  # kairos rm
        action = {"p": "pause", "r": "resume", "n": "run"}[key]
        return "POST", route_path(f"task_{action}", id=row), None, None  # kairos pause|resume|run
    if view == "inbox" and key == "a":
        return "POST", route_path("inbox_ack"), {"ids": [row]}, None  # kairos inbox --ack ID
    if view == "jobs" and key == "c":
        return "POST", route_path("registry_cancel", id=row), None, None  # kairos task cancel
    if view == "boards" and key == "x":
        return "DELETE", route_path("board_entry", id=row), None, {"cwd": project}  # kairos board rm
    raise KeyError((view, key))


def pin_request(row: str, project: str, pinned: bool) -> tuple[str, str, Any, dict[str, str] | None]:
    """``kairos board pin [--off] ID``: the opposite of what the entry is now."""
    return "POST", route_path("board_entry", id=row), {"cwd": project, "pinned": not pinned}, None


# ---- rows ------------------------------------------------------------------------------------------


def countdown(planned: str | None, now: datetime) -> str:
    """``in 4m05s``, ``in 3h12m``, ``in 2d04h``; ``due`` once the time has come."""
    when = _parse(planned)
    if when is None:
        return "-"
    left = int((when - now).total_seconds())
    if left <= 0:
        return "due"
    days, rest = divmod(left, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"in {days}d{hours:02d}h"
    if hours:
        return f"in {hours}h{minutes:02d}m"
    return f"in {minutes}m{seconds:02d}s"


def task_next_in(task: dict[str, Any], now: datetime) -> str:
    if task["running"]:
        return "running"
    if task["status"] in ("paused", "done") or not task["planned_for"]:
        return str(task["status"] or "done")
    return countdown(task["planned_for"], now)


def task_rows(doc: dict[str, Any] | None, now: datetime, zone: str) -> list[tuple[str, list[str]]]:
    """The Tasks view of ``GET /v1/tasks?view=summary``'s answer as parsed JSON (``kairos list``'s own answer,
    read as ``kairos list`` reads it: see :func:`read_answers`), each key its model requires taken as required."""
    rows = []
    for t in doc["tasks"] if doc is not None else []:
        rows.append(
            (
                str(t["id"]),
                [
                    str(t["id"]),
                    task_next_in(t, now),
                    short_time(t["planned_for"], zone) if t["status"] not in ("paused", "done") else "-",
                    str(t["cron"] or "once"),
                    target_text(t["target"]),
                    one_line(t["name"] or t["prompt"], TEXT_WIDTH),
                ],
            )
        )
    return rows


def timeline_lines(doc: dict[str, Any] | None, width: int, now: datetime, zone: str) -> list[str]:
    """``kairos timeline``'s chart of ``doc`` (a ``GET /v1/timeline`` answer asked with
    :func:`kairos.timeline.document.chart_query` of this ``width``, and :func:`~kairos.timeline.document.cleaned`),
    with colour, in ``zone``: the same layout and text as the CLI's. ``now`` (the ui's clock) moves the now
    mark until the next answer comes. The answer is the parsed JSON, as the layout takes it (see
    :mod:`kairos.timeline.layout`); one of another shape raises :class:`kairos.answers.UnexpectedAnswer`."""
    if doc is None:
        return []
    return render_text(chart(doc, width, zone, now), True)


def history_rows(doc: HistoryDoc | None, zone: str) -> list[tuple[str, list[str]]]:
    rows = []
    for r in doc.runs if doc else []:
        outcome = r.outcome or ("running" if not r.finished_at else "?")
        if r.catch_up:
            outcome += " (catch-up)"
        reason = r.reason or (f"exit {r.exit_code}" if r.exit_code is not None else "")
        rows.append(
            (
                r.run_id,
                [
                    r.run_id,
                    r.task_id,
                    short_time(r.scheduled_for, zone),
                    outcome,
                    fmt_seconds(r.late_by_s),
                    one_line(reason, TEXT_WIDTH),
                ],
            )
        )
    return rows


def missed_rows(doc: MissedDoc | None, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            f"{m.task_id}:{i}",
            [
                m.task_id,
                short_time(m.scheduled_for, zone),
                str(m.count),
                one_line(m.reason, 40),
                m.action,
                one_line(m.task_name or m.prompt, TEXT_WIDTH),
            ],
        )
        for i, m in enumerate(doc.missed if doc else [])
    ]


def job_rows(doc: BackgroundListDoc | None, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            j.id,
            [
                j.id,
                j.status,
                j.agent or j.kind,
                short_time(j.created_at, zone),
                one_line(j.prompt or " ".join(j.argv or []), TEXT_WIDTH),
            ],
        )
        for j in (doc.tasks if doc else [])
    ]


def inbox_rows(doc: InboxDoc | None, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            item.id,
            [
                item.id,
                item.task_name or item.task_id,
                short_time(item.delivered_at, zone),
                fmt_seconds(item.late_by_s),
                one_line(item.prompt, TEXT_WIDTH),
            ],
        )
        for item in (doc.items if doc else [])
    ]


def session_rows(doc: SessionsDoc | None, zone: str) -> list[tuple[str, list[str]]]:
    """``kairos sessions``: each live agent session, whether it is in a turn, and what waits for it."""
    return [
        (
            f"{s.agent}:{s.session_id}",
            [
                s.session_id,
                s.agent,
                "in a turn" if s.in_turn else "idle",
                str(s.pending),
                short_time(s.last_active, zone),
                s.cwd or "-",
            ],
        )
        for s in (doc.sessions if doc else [])
    ]


def board_rows(boards: list[tuple[str, BoardDoc, BoardHistoryDoc]]) -> list[tuple[str, list[str]]]:
    """Each project's entries under a line naming it, then what changed last (``board history``)."""
    rows: list[tuple[str, list[str]]] = []
    for project, board, history in boards:
        rows.append((f"project:{project}", ["", "", "", f"▸ {project}: {len(board.entries)} entries"]))
        for e in board.entries:
            by = ("you" if e.author == "user" else "kairos") + (", pinned" if e.pinned else "")
            rows.append((f"entry:{project}:{e.id}", [e.id, e.kind, by, _text(e)]))
        for change in history.history:
            rows.append((f"change:{project}:{len(rows)}", ["", "changed", "", one_line(_change_text(change), 70)]))
    return rows


def _text(entry: BoardEntry) -> str:
    text = one_line(entry.text, 70)
    return text + (f"  (conflicts with {entry.conflicts_with})" if entry.conflicts_with else "")


def _change_text(change: BoardChange) -> str:
    """One line of ``board history``: ``10-31 09:00 add b06b564 by user: use uv, not pip``."""
    when = change.at[5:16].replace("T", " ")
    return f"{when} {change.action} {change.id or ''} by {change.by}: {change.text or ''}".strip()


def target_text(target: dict[str, Any]) -> str:
    """The TARGET column of ``kairos list`` (kairos.commands.tasks.target_text, not imported: no cycle)."""
    kind = target["kind"]
    if kind == "inbox":
        return f"inbox:{target.get('session') or 'default'}"
    if kind == "shell":
        argv = target.get("argv") or ["?"]
        return f"shell:{str(argv[0]).rsplit('/', 1)[-1]}"
    if kind == "agent":
        return f"agent:{target.get('agent') or '?'}"
    if kind == "webhook":
        return "webhook"
    if kind == "session":
        return "session"
    return str(kind or "?")


def short_time(text: str | None, zone: str) -> str:
    """``10-31 09:30`` in ``zone``: what 80 columns have room for (``kairos list`` prints it whole)."""
    shown = fmt_time(text, zone)
    return shown[5:16] if _parse(text) is not None and len(shown) >= 16 else shown


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
