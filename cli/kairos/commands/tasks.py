"""``kairos list|show|rm|pause|resume|run``: manage scheduled tasks through kairosd (``add`` is
:mod:`kairos.commands.add`).

``kairos.app`` imports the verb module on every call, so this module imports
only the CLI's own cheap helpers at the top (not argparse, not even typing:
``kairos list`` runs without a parser, see ``kairos.app``);
the client, the schedule math and everything else are imported inside the
handlers. Must not import asyncio or any kairosd module that does I/O (allowed: kairosd.core.protocol,
errors, paths, clock and the pure kairosd.core.schedule.*); pydantic only inside the handlers off the
list path, which read kairosd's answers as their models (:mod:`kairos.answers`: show, rm, pause,
resume, run).
"""

from __future__ import annotations

from kairos.commands.common import (
    ReadClient,
    add_wide_flag,
    client,
    make_parser,
    print_block,
    print_records,
    printed_json,
)
from kairos.output import fmt_seconds, fmt_time, print_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from kairosd.core.wire.tasks import ChangedTask, TaskView

# ---- helpers ----------------------------------------------------------------

ID_HELP = (
    "task id: 8 hex digits, or a unique prefix of 4 or more, any case (kairos list shows them); several may be given: "
    "each is handled in turn, one that fails is reported and the rest go on (exit 1 if any failed)"
)


def each_id(ids: list[str], act: Callable[[str], Any], json_key: str, as_json: bool) -> int:
    """Run ``act`` on each id in turn (a repeated id once); an id that fails is reported on stderr
    and the rest go on. Exit code: 0 if all went well, else the first failure's code.

    With ``as_json``, one id prints its answer as it is (``{"task": ...}``); several print one document,
    ``{json_key: [each answer's one value], "errors": [{"id", "code", "message"}]}``.
    """
    from kairos.output import error, print_json
    from kairosd.core.errors import KairosError

    results: list[Any] = []
    errors: list[dict[str, str]] = []
    code = 0
    for task_id in dict.fromkeys(ids):
        try:
            results.append(act(task_id))
        except KairosError as exc:
            if len(ids) == 1 and not as_json:
                raise
            error(f"{task_id}: {exc.message}")
            errors.append({"id": task_id, "code": exc.code, "message": exc.message})
            code = code or exc.exit_code
    if as_json:
        if len(ids) > 1 or errors:
            print_json({json_key: [next(iter(r.values())) for r in results], "errors": errors})
        else:
            print_json(results[0])
    return code


def task_path(task_id: str, action: str = "") -> str:
    from kairosd.core.protocol import route_path

    # Quoted: an id typed by a person must not be able to reach another route.
    return route_path(f"task_{action}" if action else "task", id=task_id)


# ---- registration ---------------------------------------------------------


def register(subparsers: Any) -> None:
    # app.VERBS maps each of our verbs to this module, so we may be called once per verb.
    if "list" in subparsers.choices:
        return

    lst = make_parser(
        subparsers,
        "list",
        "list tasks",
        "List every task with its next planned fire time (in your local zone), schedule, target and name or prompt.",
        """
        kairos list
        kairos ls --json | jq -r '.tasks[].id'
        kairos list --problems          # tasks kairos set aside at load, and why
        """,
        aliases=["ls"],
    )
    lst.add_argument(
        "--problems",
        action="store_true",
        help="list the stored tasks kairos could not use and set aside (scheduled_tasks.quarantine.json), "
        "with the reason",
    )
    add_wide_flag(lst)
    lst.set_defaults(handler=cmd_list)

    show = make_parser(
        subparsers,
        "show",
        "show one task in full",
        "Show every field of a task and its next five fire times.",
        "kairos show 3f2a9c1d\n  kairos show 3f2a 0b1c",
    )
    show.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    show.set_defaults(handler=cmd_show)

    rm = make_parser(
        subparsers,
        "rm",
        "remove tasks",
        "Remove one or more tasks. Each id is handled in turn; one that fails is reported and the "
        "rest go on (exit 1 if any failed).",
        "kairos rm 3f2a9c1d\n  kairos rm 3f2a9c1d 0b1c2d3e",
    )
    rm.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    rm.set_defaults(handler=cmd_rm)

    pause = make_parser(
        subparsers,
        "pause",
        "stop a task from firing",
        "Pause tasks: each keeps its schedule but does not fire until resumed. Pausing a paused task "
        "is not an error (exit 0, with a note).",
        "kairos pause 3f2a9c1d\n  kairos pause 3f2a 0b1c",
    )
    pause.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    pause.set_defaults(handler=cmd_pause)

    resume = make_parser(
        subparsers,
        "resume",
        "let a paused task fire again",
        "Resume paused tasks. Fires of a recurring task that fell in the pause are not counted as "
        "missed. A one-shot whose time passed in the pause follows its catch-up policy now: "
        "once fires it late (marked caught up), skip and surface record it in 'kairos missed'; "
        "the output says which. Resuming a running task is not an error (exit 0, with a note).",
        "kairos resume 3f2a9c1d\n  kairos resume 3f2a 0b1c",
    )
    resume.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    resume.set_defaults(handler=cmd_resume)

    run = make_parser(
        subparsers,
        "run",
        "fire a task now",
        "Fire a task now, outside its schedule (the schedule is unchanged). "
        "Prints the run id; see the outcome with 'kairos history ID'.",
        "kairos run 3f2a9c1d\n  kairos run 3f2a 0b1c",
    )
    run.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    run.set_defaults(handler=cmd_run)


def describe(task: TaskView) -> str:
    """``At 09:00 on Monday to Friday (Europe/Berlin)``, with ``once`` for one-shot crons."""
    text = task.explanation or task.schedule
    if task.cron and not task.recurring:
        text += ", once"
    return f"{text} ({task.tz})"


def fire_lines(task: TaskView) -> list[str]:
    """Planned fire times, with the scheduled time when jitter moved one."""
    lines = []
    for fire in task.next_fires:
        planned, scheduled = fire.planned_for, fire.scheduled_for
        line = fmt_time(planned)
        if scheduled != planned:
            nominal = fmt_time(scheduled)
            same_day = nominal[:10] == line[:10]
            line += f" (scheduled {nominal[11:19] if same_day else nominal})"
        lines.append(line)
    return lines


# ---- list / show ----------------------------------------------------------


def target_text(target: Any) -> str:
    if not isinstance(target, dict):
        return "?"
    if target.get("kind") == "inbox":
        return f"inbox:{target.get('session', 'default')}"
    if target.get("kind") == "shell":
        argv = target.get("argv") or ["?"]
        return f"shell:{str(argv[0]).rsplit('/', 1)[-1]}"
    if target.get("kind") == "agent":
        return f"agent:{target.get('agent', '?')}"
    if target.get("kind") == "webhook":
        return f"webhook:{_url_host(target.get('url'))}"
    if target.get("kind") == "session":
        return session_scope_text(target)
    return str(target.get("kind", "?"))


def session_scope_text(target: dict[str, Any]) -> str:
    """``session:ID``, ``project:PATH`` or ``user-session``, with ``/AGENT`` when one is named."""
    if target.get("session_id"):
        text = f"session:{target['session_id']}"
    elif target.get("project"):
        text = f"project:{target['project']}"
    else:
        text = "user-session"
    return text + (f"/{target['agent']}" if target.get("agent") else "")


def _url_host(url: Any) -> str:
    """The host[:port] of a URL, without its path (webhook paths often carry tokens)."""
    text = str(url or "?")
    rest = text.partition("://")[2] or text
    return rest.split("/", 1)[0].split("?", 1)[0] or "?"


def _next_text(task: dict[str, Any], zone: str) -> str:
    status = task.get("status")
    if status == "paused" or status == "done" or not task.get("planned_for"):
        return str(status or "done")
    return fmt_time(task["planned_for"], zone)


def _schedule_text(task: dict[str, Any], zone: str) -> str:
    text = str(task["cron"]) if task.get("cron") else "once"
    if task.get("cron") and not task.get("recurring", True):
        text += " (once)"
    if task.get("tz") and task["tz"] != zone:
        text += f" {task['tz']}"
    return text


def _safe(text: Any) -> str:
    """Untrusted text (a record's id, a reason quoting it) on one line, control characters escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def cmd_problems(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.output import cut_width, one_line, terminal_columns
    from kairosd.core.protocol import route_path
    from kairosd.core.wire.listing import ProblemsDoc, SetAside

    answer = client().call("GET", route_path("quarantine"))
    doc = read(ProblemsDoc, answer, "GET /v1/quarantine")
    if printed_json(args, answer):
        return 0
    width = cut_width(max(terminal_columns() - 40, 30))

    def row(e: SetAside, zone: str) -> list[str]:
        reason = one_line(_safe(e.reason or "-"), width)
        return [_safe(e.id or "-")[:20], fmt_time(e.quarantined_at, zone), reason]

    if not print_records(doc.entries, "no tasks set aside", ["ID", "SET ASIDE", "REASON"], row):
        return 0
    print(f"{len(doc.entries)} task(s) set aside in {doc.path}")
    print("to restore one: fix the record there and re-create it (kairos add, or move it into the store; see README)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if getattr(args, "problems", False):
        return cmd_problems(args)
    if args.json:
        return _print_list_json()
    from kairosd.core.protocol import route_path

    doc = ReadClient().call("GET", route_path("tasks"), query={"view": "summary"})
    tasks = doc.get("tasks") or []
    empty = "no tasks (add one with: kairos add '0 9 * * 1-5' PROMPT)"
    if not print_records(tasks, empty, ["ID", "NEXT", "SCHEDULE", "TARGET", "NAME/PROMPT"], _list_row):
        return 0
    if any(t.get("running") for t in tasks):
        print("* running now")
    for t in tasks:
        if t.get("paused_reason"):
            print(f"! {t['id']} paused by kairos: {_safe(t['paused_reason'])}")
    return 0


def _list_row(t: dict[str, Any], zone: str) -> list[str]:
    return [
        str(t["id"]),
        _next_text(t, zone) + (" *" if t.get("running") else ""),
        _schedule_text(t, zone),
        target_text(t.get("target")),
        t.get("name") or t.get("prompt") or "",
    ]


def _print_list_json() -> int:
    """``list --json``: kairosd's own bytes, as they arrive, when they are the document to print.

    kairosd answers ``GET /tasks`` with the compact document (``kairosd.scheduling.api``), which is what
    :func:`print_json` prints to a pipe: parsing and encoding it again took most of a
    ``kairos list --json`` (``bench/bench_cli.py``: 7.5x a bare interpreter with 2,000 tasks), and
    the answer is passed on piece by piece, never whole in memory (100,000 tasks: ~100 MB; issue 28).
    A terminal gets it indented, and an answer shaped otherwise (another server) is parsed.
    """
    import sys

    from kairos.client import parse_answer
    from kairos.output import print_json
    from kairosd.core.protocol import route_path

    pieces = ReadClient().call_pieces("GET", route_path("tasks"))
    head = b""
    for piece in pieces:
        head += piece
        if len(head) >= len(_LIST_HEAD):
            break
    out = getattr(sys.stdout, "buffer", None)
    if not sys.stdout.isatty() and out is not None and head.startswith(_LIST_HEAD):
        sys.stdout.flush()
        out.write(head)
        for piece in pieces:  # as bytes: decoding and encoding 1.3 MB again (2,000 tasks) took ~1.5 ms
            out.write(piece)
        out.flush()
        return 0
    print_json(parse_answer(head + b"".join(pieces)))
    return 0


_LIST_HEAD = b'{"tasks":['


def _expiry_text(task: TaskView) -> str:
    if not task.recurring:
        return "- (one-shot: removed after it fires)"
    if task.permanent:
        return "never (permanent)"
    days = task.expires_after_days
    return f"after {days} day(s)" if days else "never"


def _target_detail(target: Any) -> str:
    import shlex

    if isinstance(target, dict) and target.get("kind") == "session":
        return f"live session: {session_scope_text(target)}, fallback {target.get('fallback', 'inbox')}"
    if not isinstance(target, dict) or target.get("kind") not in ("shell", "agent", "webhook"):
        return target_text(target)
    if target["kind"] == "webhook":
        parts = [f"webhook: POST {target.get('url', '?')}"]
    elif target["kind"] == "agent":
        parts = [f"agent: {target.get('agent', '?')}" + (f" (model {target['model']})" if target.get("model") else "")]
    else:
        parts = [f"shell: {shlex.join(str(a) for a in target.get('argv') or [])}"]
    if target.get("cwd"):
        parts.append(f"in {target['cwd']}")
    elif target["kind"] != "webhook":
        parts.append("in ~ (no folder recorded: the home folder)")  # what kairosd runs it in
    if target.get("timeout_s") is not None:
        parts.append(f"timeout {fmt_seconds(target['timeout_s'])}")
    return ", ".join(parts)


def _jitter_text(task: TaskView) -> str:
    """The jitter as asked, and what it really is when half the period caps it (issue 24, item 4)."""
    import itertools
    from datetime import datetime

    from kairosd.core.schedule.durations import format_duration
    from kairosd.core.schedule.jitter import capped_jitter

    spec = task.jitter or "none"
    if not task.recurring or not spec.startswith("max:"):
        return spec
    try:
        times = [datetime.fromisoformat(f.scheduled_for) for f in task.next_fires]
    except ValueError:
        return spec
    gaps = [b - a for a, b in itertools.pairwise(times)]
    cap = capped_jitter(spec, gaps)
    if cap is None:
        return spec
    return (
        f"{spec}, capped at {format_duration(cap.total_seconds())} for this task "
        f"(half the {format_duration(min(gaps).total_seconds())} between its fires)"
    )


def cmd_show(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairosd.core.wire.tasks import TaskDoc

    api = ReadClient()
    shown = [0]

    def show(task_id: str) -> Any:
        doc = api.call("GET", task_path(task_id))
        task = read(TaskDoc, doc, "GET /v1/tasks/ID").task
        if not args.json:
            if shown[0]:
                print()
            _print_task(task)
            shown[0] += 1
        return doc

    return each_id(args.ids, show, "tasks", args.json)


def _print_task(task: TaskView) -> None:
    import json

    status = task.status + (", running now" if task.running else "")
    # A one-shot's schedule is its time: shown as every other time (seconds, the task's zone), not the ISO text.
    schedule = task.cron or fmt_time(task.schedule or task.at, task.tz) or "?"
    if task.paused_reason:
        status += f" by kairos: {_safe(task.paused_reason)}"
    fields = [
        ("id", task.id),
        ("name", task.name or "-"),
        ("status", status),
        ("schedule", schedule),
        ("meaning", describe(task)),
        ("target", _target_detail(task.target.model_dump())),
        ("jitter", _jitter_text(task)),
        ("catch-up", task.catch_up),
        ("overlap", task.overlap),
        ("expires", _expiry_text(task)),
        ("created", f"{fmt_time(task.created_at, task.tz)} by {task.created_by}"),
        ("last fired", fmt_time(task.last_fired_at, task.tz)),
    ]
    if task.meta:
        fields.append(("meta", json.dumps(task.meta, sort_keys=True)))
    print_fields(fields, 13)
    fires = fire_lines(task) or ["-"]
    print(f"{'next:':<12} " + ("\n" + " " * 13).join(fires))
    print_block("prompt", task.prompt)


# ---- rm / pause / resume / run --------------------------------------------


def cmd_rm(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairosd.core.wire.tasks import RemovedDoc

    api = client()
    removed: list[str] = []

    def remove(task_id: str) -> str:
        answer = read(RemovedDoc, api.call("DELETE", task_path(task_id)), "DELETE /v1/tasks/ID")
        full = (answer.removed or [task_id])[0]
        removed.append(full)
        if not args.json:
            print(f"removed {full}")  # the full id: the prefix typed may be shared by a task added later
        return full

    code = each_id(args.ids, remove, "removed", as_json=False)
    if args.json:
        from kairos.output import print_json

        print_json({"removed": removed})
    return code


def cmd_pause(args: argparse.Namespace) -> int:
    return _set_paused(args, "pause")


def cmd_resume(args: argparse.Namespace) -> int:
    return _set_paused(args, "resume")


def _set_paused(args: argparse.Namespace, action: str) -> int:
    from kairos.answers import read
    from kairosd.core.wire.tasks import PausedDoc

    api = client()

    def act(task_id: str) -> Any:
        doc = api.call("POST", task_path(task_id, action))
        task = read(PausedDoc, doc, f"POST /v1/tasks/ID/{action}").task
        if not args.json:
            print(paused_line(task, action))
        return doc

    return each_id(args.ids, act, "tasks", args.json)


def paused_line(task: ChangedTask, action: str) -> str:
    """What ``pause`` or ``resume`` did to one task, on one line."""
    if task.unchanged:
        state = "paused" if action == "pause" else "not paused"
        return f"{task.id} was already {state}: nothing to do"
    if action == "pause":
        return f"paused {task.id}"
    caught = task.caught_up
    if caught:
        slot = fmt_time(caught.scheduled_for)
        if caught.action == "fired":
            what = f"its time ({slot}) passed while paused: fired now, late (run {caught.run_id}, caught up)"
        elif caught.action == "missed":
            what = f"its time ({slot}) passed while paused: recorded as missed ({caught.reason}); see kairos missed"
        else:
            what = f"its time ({slot}) passed while paused: its catch-up policy decides at the next tick"
        return f"resumed {task.id}, {what}"
    planned = task.planned_for
    return f"resumed {task.id}" + (f", next: {fmt_time(planned)}" if planned else ", no fire time ahead")


def cmd_run(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairosd.core.wire.runs import RunDoc

    api = client()

    def fire(task_id: str) -> Any:
        doc = api.call("POST", task_path(task_id, "run"))
        run = read(RunDoc, doc, "POST /v1/tasks/ID/run").run
        if not args.json:
            line = f"dispatched run {run.run_id} of task {run.task_id}"
            if run.outcome:
                line += f": {run.outcome}" + (f" ({run.reason})" if run.reason else "")
            print(line)
        return doc

    return each_id(args.ids, fire, "runs", args.json)
