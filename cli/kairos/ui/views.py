"""What each view of ``kairos ui`` shows: the request it makes, its columns and its rows, and which
events make it stale. Pure functions of kairosd's answers and a time (no Textual, no I/O), so the
rows are tested without a terminal and the app (:mod:`kairos.ui.app`) only lays them out.

Every request names a route of :mod:`kairosd.core.protocol`, the ones the CLI's verbs call, and the
actions (:data:`ACTIONS`) are the CLI's requests too: ``p`` is ``kairos pause``'s
``POST /v1/tasks/{id}/pause``. The timeline is ``kairos timeline``'s own chart (:mod:`kairos.timeline`).
May import :mod:`kairos.output`, :mod:`kairos.timeline` and ``kairosd.core`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kairos.output import fmt_seconds, fmt_time, one_line
from kairos.timeline.document import chart_query
from kairos.timeline.layout import layout, render_text
from kairosd.core.protocol import route_path

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


def countdown(planned: Any, now: datetime) -> str:
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
    if task.get("running"):
        return "running"
    if task.get("status") in ("paused", "done") or not task.get("planned_for"):
        return str(task.get("status") or "done")
    return countdown(task["planned_for"], now)


def task_rows(doc: Any, now: datetime, zone: str) -> list[tuple[str, list[str]]]:
    rows = []
    for t in _items(doc, "tasks"):
        schedule = str(t["cron"]) if t.get("cron") else "once"
        rows.append(
            (
                str(t["id"]),
                [
                    str(t["id"]),
                    task_next_in(t, now),
                    short_time(t.get("planned_for"), zone) if t.get("status") not in ("paused", "done") else "-",
                    schedule,
                    target_text(t.get("target")),
                    one_line(t.get("name") or t.get("prompt") or "", TEXT_WIDTH),
                ],
            )
        )
    return rows


def timeline_lines(doc: Any, width: int, now: datetime, zone: str) -> list[str]:
    """``kairos timeline``'s chart of ``doc`` (a ``GET /v1/timeline`` answer asked with
    :func:`kairos.timeline.document.chart_query` of this ``width``, and :func:`~kairos.timeline.document.cleaned`),
    with colour, in ``zone``: the same layout and text as the CLI's. ``now`` (the ui's clock) moves the now
    mark until the next answer comes."""
    if not isinstance(doc, dict) or "tasks" not in doc:
        return []
    start, end = datetime.fromisoformat(doc["from"]), datetime.fromisoformat(doc["to"])
    if start <= now <= end and now > datetime.fromisoformat(doc["now"]):
        doc = {**doc, "now": now.isoformat()}
    return render_text(layout(doc, width, zone), True)


def history_rows(doc: Any, zone: str) -> list[tuple[str, list[str]]]:
    rows = []
    for r in _items(doc, "runs"):
        outcome = str(r.get("outcome") or ("running" if not r.get("finished_at") else "?"))
        if r.get("catch_up"):
            outcome += " (catch-up)"
        reason = r.get("reason") or (f"exit {r['exit_code']}" if r.get("exit_code") is not None else "")
        rows.append(
            (
                str(r.get("run_id", "?")),
                [
                    str(r.get("run_id", "?")),
                    str(r.get("task_id", "?")),
                    short_time(r.get("scheduled_for"), zone),
                    outcome,
                    fmt_seconds(r.get("late_by_s")),
                    one_line(reason, TEXT_WIDTH),
                ],
            )
        )
    return rows


def missed_rows(doc: Any, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            f"{m.get('task_id', '?')}:{i}",
            [
                str(m.get("task_id", "?")),
                short_time(m.get("scheduled_for"), zone),
                str(m.get("count", 1)),
                one_line(m.get("reason", "-"), 40),
                str(m.get("action", "-")),
                one_line(m.get("task_name") or m.get("prompt") or "", TEXT_WIDTH),
            ],
        )
        for i, m in enumerate(_items(doc, "missed"))
    ]


def job_rows(doc: Any, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            str(j.get("id", "?")),
            [
                str(j.get("id", "?")),
                str(j.get("status", "?")),
                str(j.get("agent") or j.get("kind") or "?"),
                short_time(j.get("started_at") or j.get("created_at"), zone),
                one_line(j.get("prompt") or " ".join(str(a) for a in j.get("argv") or []), TEXT_WIDTH),
            ],
        )
        for j in _items(doc, "tasks")
    ]


def inbox_rows(doc: Any, zone: str) -> list[tuple[str, list[str]]]:
    return [
        (
            str(item.get("id", "?")),
            [
                str(item.get("id", "?")),
                str(item.get("task_name") or item.get("task_id", "?")),
                short_time(item.get("delivered_at") or item.get("scheduled_for"), zone),
                fmt_seconds(item.get("late_by_s")),
                one_line(item.get("prompt", ""), TEXT_WIDTH),
            ],
        )
        for item in _items(doc, "items")
    ]


def session_rows(doc: Any, zone: str) -> list[tuple[str, list[str]]]:
    """``kairos sessions``: each live agent session, whether it is in a turn, and what waits for it."""
    rows = []
    for s in _items(doc, "sessions"):
        sid = str(s.get("session_id") or "?")
        rows.append(
            (
                f"{s.get('agent', '?')}:{sid}",
                [
                    sid,
                    str(s.get("agent", "?")),
                    "in a turn" if s.get("in_turn") else "idle",
                    str(s.get("pending", 0)),
                    short_time(s.get("last_active"), zone),
                    str(s.get("cwd") or "-"),
                ],
            )
        )
    return rows


def board_rows(boards: list[tuple[str, Any, Any]]) -> list[tuple[str, list[str]]]:
    """Each project's entries under a line naming it, then what changed last (``board history``)."""
    rows: list[tuple[str, list[str]]] = []
    for project, board, history in boards:
        entries = _items(board, "entries")
        rows.append((f"project:{project}", ["", "", "", f"▸ {project}: {len(entries)} entries"]))
        for e in entries:
            by = ("you" if e.get("author") == "user" else "kairos") + (", pinned" if e.get("pinned") else "")
            rows.append((f"entry:{project}:{e.get('id')}", [str(e.get("id")), str(e.get("kind")), by, _text(e)]))
        for change in _items(history, "history"):
            rows.append((f"change:{project}:{len(rows)}", ["", "changed", "", one_line(_change_text(change), 70)]))
    return rows


def _text(entry: dict[str, Any]) -> str:
    text = one_line(entry.get("text", ""), 70)
    return text + (f"  (conflicts with {entry['conflicts_with']})" if entry.get("conflicts_with") else "")


def _change_text(change: Any) -> str:
    """One line of ``board history``: ``10-31 09:00 add b06b564 by user: use uv, not pip``."""
    if not isinstance(change, dict):
        return str(change)
    when = str(change.get("at") or "")[5:16].replace("T", " ")
    what = f"{change.get('action', '?')} {change.get('id', '')} by {change.get('by') or change.get('author') or '?'}"
    return f"{when} {what}: {change.get('text', '')}".strip()


def target_text(target: Any) -> str:
    """The TARGET column of ``kairos list`` (kairos.commands.tasks.target_text, not imported: no cycle)."""
    if not isinstance(target, dict):
        return "?"
    kind = target.get("kind")
    if kind == "inbox":
        return f"inbox:{target.get('session', 'default')}"
    if kind == "shell":
        argv = target.get("argv") or ["?"]
        return f"shell:{str(argv[0]).rsplit('/', 1)[-1]}"
    if kind == "agent":
        return f"agent:{target.get('agent', '?')}"
    if kind == "webhook":
        return "webhook"
    if kind == "session":
        return "session"
    return str(kind or "?")


def short_time(text: Any, zone: str) -> str:
    """``10-31 09:30`` in ``zone``: what 80 columns have room for (``kairos list`` prints it whole)."""
    shown = fmt_time(text, zone)
    return shown[5:16] if _parse(text) is not None and len(shown) >= 16 else shown


def _items(doc: Any, key: str) -> list[dict[str, Any]]:
    items = doc.get(key) if isinstance(doc, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _parse(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None
