"""``kairos history|missed|inbox|watch|status|import``: what kairosd did, delivered and missed.

Reads the daemon's ledgers and inbox, follows its event stream, shows its
status, and imports Claude Code's ``.claude/scheduled_tasks.json`` (at a terminal
showing on stderr how many of its tasks were sent so far: :mod:`kairos.progress`).

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O (but the import reads its file through
kairosd.system.boundedread, on that verb alone); pydantic only inside the handlers that read kairosd's
answers as their models (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_quiet_flag, add_wide_flag, make_parser, whole_number
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.daemon import StatusDoc
    from kairosd.core.wire.tasks import InboxItem, MissedView, RunView

MAX_HISTORY = 10_000
MIN_REASON = 20  # the narrowest REASON column of `kairos missed`
RECONNECT_S = 60.0  # how long `inbox --follow` waits for kairosd to come back after it closed the stream
RECONNECT_POLL_S = 0.5
STABLE_S = 5.0  # a connection that lasted this long was a real one: a later close starts a fresh wait
CLAUDE_FILE = (".claude", "scheduled_tasks.json")


def register(subparsers: Any) -> None:
    # app.VERBS maps each of our verbs to this module, so we may be called once per verb.
    if "history" in subparsers.choices:
        return
    history = make_parser(
        subparsers,
        "history",
        "runs, newest first",
        "Show the run ledger, newest first: when each run was scheduled, its outcome, "
        "how late it was, and why it failed or was skipped (or the exit code of a shell target).",
        "kairos history\n  kairos history 3f2a9c1d -n 5",
    )
    history.add_argument("id", nargs="?", metavar="ID", help="only this task's runs")
    history.add_argument("-n", type=whole_number, default=20, metavar="N", help="how many runs (default 20)")
    add_wide_flag(history)
    history.set_defaults(handler=cmd_history)

    missed = make_parser(
        subparsers,
        "missed",
        "fires that did not happen on time",
        "Show fires kairos could not make on time (daemon down, suspend, clock jumps, a one-shot paused "
        "past its time) and what it did about them, newest first: recorded or surfaced (not fired), or "
        "caught up (fired late: the run is in 'kairos history'). --clear forgets them.",
        "kairos missed\n  kairos missed --clear",
    )
    missed.add_argument("--clear", action="store_true", help="forget every missed record")
    add_wide_flag(missed)
    missed.set_defaults(handler=cmd_missed)

    inbox = make_parser(
        subparsers,
        "inbox",
        "prompts delivered to inbox sessions",
        "List unacknowledged inbox items (of every session unless --session), oldest first (a queue: "
        "in the order to handle them; logs such as history and missed are newest first), follow new "
        "ones as they arrive, or acknowledge them.",
        """
        kairos inbox
        kairos inbox --session work --follow
        kairos inbox --ack r1a2b3c4d5e6
        kairos inbox --session work --ack-all
        """,
    )
    inbox.add_argument("--session", metavar="S", help="only this session (default: all)")
    inbox.add_argument("--all", action="store_true", help="include acknowledged items")
    mode = inbox.add_mutually_exclusive_group()
    mode.add_argument("--follow", action="store_true", help="keep printing items as they arrive (Ctrl-C stops)")
    mode.add_argument("--ack", nargs="+", metavar="ID", help="acknowledge these items")
    mode.add_argument("--ack-all", action="store_true", help="acknowledge every item (of --session)")
    inbox.set_defaults(handler=cmd_inbox)

    watch = make_parser(
        subparsers,
        "watch",
        "stream daemon events as JSON lines",
        "Print kairosd's events (task_added, run_started, run_finished, missed, inbox_item, ...) "
        "as JSON lines until Ctrl-C. Output is always JSON lines.",
        "kairos watch\n  kairos watch --type run_finished --type missed | jq .",
    )
    watch.add_argument("--type", action="append", metavar="T", help="only this event type (repeatable)")
    watch.add_argument("--session", metavar="S", help="only events of this inbox session")
    watch.set_defaults(handler=cmd_watch)

    status = make_parser(
        subparsers,
        "status",
        "daemon status",
        "Show whether kairosd fires (and why not), its tasks, the next fire and where it lives.",
        "kairos status\n  kairos status --json | jq .next_fire",
    )
    status.set_defaults(handler=cmd_status)

    imp = make_parser(
        subparsers,
        "import",
        "import Claude Code's scheduled tasks",
        "Import the tasks of Claude Code's .claude/scheduled_tasks.json (PATH may be the file "
        "or a project folder). Only Claude's fields are read (id, cron, prompt, createdAt, lastFiredAt, "
        "recurring, permanent); any other key is dropped and reported, and every task goes to the inbox. "
        "Crons are read in --tz. Fires due before the import follow the task's catch-up policy, as after "
        "a restart (a past one-shot is surfaced in 'kairos missed', never delivered). Ids already known, "
        "and tasks imported before, are skipped. --dry-run shows all of this, with each prompt, and writes "
        "nothing. A prompt or name holding invisible or control characters (Unicode tags, zero-width, "
        "bidi controls, ...) is shown escaped and flagged HIDDEN; the import is refused unless "
        "--allow-hidden.",
        """
        kairos import --dry-run .
        kairos import .
        kairos import --project . .     # to a live session in this project, not the inbox
        kairos import ~/proj/.claude/scheduled_tasks.json --tz Europe/Berlin --json
        """,
    )
    imp.add_argument("path", metavar="PATH", help="the JSON file, or a folder containing .claude/")
    imp.add_argument("--tz", metavar="ZONE", help="zone the crons were written in (default: your local zone)")
    imp.add_argument("--dry-run", action="store_true", help="show what would be imported; change nothing")
    imp.add_argument(
        "--allow-hidden",
        action="store_true",
        help="import even tasks whose prompt or name holds invisible or control characters",
    )
    imp.add_argument(
        "--project",
        metavar="DIR",
        help="deliver to a live agent session working in DIR (made absolute; the inbox when none is live) "
        "instead of the inbox",
    )
    add_quiet_flag(imp)
    imp.set_defaults(handler=cmd_import)


# ---- history / missed -----------------------------------------------------


def _outcome(run: RunView) -> str:
    text = run.outcome or ("running" if run.started_at else "dispatched")
    flags = [f for f, on in (("manual", run.manual), ("catch-up", run.catch_up)) if on]
    return text + (f" ({', '.join(flags)})" if flags else "")


def _reason(run: RunView) -> str:
    """The exit status and the reason, each said once: "exit 3; exit code 3" and a timeout shown as
    "exit -15" were what a run said before (issue 24, item 14)."""
    code, reason = run.exit_code, run.reason or ""
    status = None
    if code is not None:
        status = f"exit {code}" if code >= 0 else _signal_text(-code)
        if f"exit code {code}" in reason or (code < 0 and "killed by" in reason):
            status = None  # the reason says it already
    return "; ".join(p for p in (status, reason) if p) or "-"


def _signal_text(number: int) -> str:
    import signal

    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"


def cmd_history(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import ReadClient, print_records, printed_json
    from kairosd.core.errors import UsageError
    from kairosd.core.wire.tasks import HistoryDoc

    if not 1 <= args.n <= MAX_HISTORY:
        raise UsageError(f"-n must be between 1 and {MAX_HISTORY}")
    query = {"limit": str(args.n)}
    if args.id:
        query["task"] = args.id
    doc = ReadClient().call("GET", route_path("runs"), query=query)
    runs = read(HistoryDoc, doc, "GET /v1/runs").runs
    if not printed_json(args, doc):
        empty = "no runs yet" + (f" of task {args.id}" if args.id else "")
        headers = ["RUN", "TASK", "SCHEDULED", "OUTCOME", "LATE", "REASON/EXIT"]
        print_records(runs, empty, headers, _run_row)
    return 0


def _run_row(r: RunView, zone: str) -> list[str]:
    from kairos.output import fmt_seconds, fmt_time

    return [r.run_id, r.task_id, fmt_time(r.scheduled_for, zone), _outcome(r), fmt_seconds(r.late_by_s), _reason(r)]


def cmd_missed(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import ReadClient, client, print_records, printed_json
    from kairos.output import cut_width, fmt_time, one_line, print_json, terminal_columns
    from kairosd.core.wire.tasks import MissedDoc

    # REASON can be 100 characters (a clock jump, a long stop): at a terminal, cut it to a share of it, so
    # that ACTION and NAME/PROMPT stay on the line; piped, with --wide or --json it is whole.
    reason_width = cut_width(max(MIN_REASON, terminal_columns() // 3))

    def row(m: MissedView, zone: str) -> list[str]:
        return [
            m.task_id,
            fmt_time(m.scheduled_for, zone),
            str(m.count),
            one_line(m.reason, reason_width),
            m.action,
            m.task_name or m.prompt,
        ]

    api = client()
    if args.clear:
        doc = api.call("DELETE", route_path("missed"))
        if args.json:
            print_json(doc)
        else:
            print(f"cleared {doc.get('cleared', 0)} missed record(s)")
        return 0
    doc = ReadClient().call("GET", route_path("missed"))
    missed = read(MissedDoc, doc, "GET /v1/missed").missed
    if not printed_json(args, doc):
        headers = ["TASK", "LAST MISSED", "COUNT", "REASON", "ACTION", "NAME/PROMPT"]
        print_records(missed, "nothing missed", headers, row)
    return 0


# ---- inbox / watch --------------------------------------------------------


def _print_item(item: InboxItem, zone: str) -> None:
    import textwrap

    from kairos.output import fmt_seconds, fmt_time

    task = item.task_id + (f" ({item.task_name})" if item.task_name else "")
    extras = []
    late = fmt_seconds(item.late_by_s)
    if late != "-":
        extras.append(f"late {late}")
    if item.catch_up:
        extras.append("catch-up")
    if item.acked_at:
        extras.append("acked")
    when = fmt_time(item.scheduled_for, zone) + (f" ({', '.join(extras)})" if extras else "")
    print(f"{item.id}  [{item.session}]  task {task}  {when}")
    print(textwrap.indent(item.prompt, "  "))


def _emit_lines(lines: Iterable[Any], as_json: bool, zone: str, closed: int | None = 1) -> int | None:
    """Print a stream until it ends (``closed``: by default exit 1, the daemon closed it) or Ctrl-C (exit 0)."""
    import sys

    from kairos.commands.common import print_each
    from kairos.output import error, json_line

    def show(item: Any) -> None:
        if as_json:
            # Exact JSON, yet no control, bidi or invisible character reaches the terminal raw.
            sys.stdout.write(json_line(item) + "\n")
        else:  # only the inbox's stream is shown as text (watch is JSON lines)
            from kairos.answers import read
            from kairosd.core.wire.tasks import InboxItem

            _print_item(read(InboxItem, item, "GET /v1/inbox?follow=1"), zone)

    try:
        print_each(lines, show)  # a reader that goes away (`| head -1`) is kairos.app's to quieten
    except KeyboardInterrupt:
        return 0
    if closed is None:
        return None
    error("kairosd closed the stream (did it stop?)")
    return closed


def _follow_inbox(api: Any, query: dict[str, str], as_json: bool, zone: str) -> int:
    """``inbox --follow``: print items as they arrive; when kairosd restarts, say so and reconnect.

    Each connection sends the unacknowledged backlog first, so items are deduplicated by
    id. Reconnecting gives up after RECONNECT_S without a connection that lasted or
    brought something new (kairosd stopped for good): exit 1.
    """
    import time

    from kairos.output import error
    from kairosd.core.errors import KairosError

    seen: set[str] = set()

    def fresh() -> Iterable[Any]:
        for item in api.stream(route_path("inbox"), query):
            key = str(item.get("id")) if isinstance(item, dict) else repr(item)
            if key not in seen:
                seen.add(key)
                yield item

    code = _emit_lines(fresh(), as_json, zone, closed=None)  # the first connection: errors are the verb's
    while code is None:
        error(f"kairosd closed the stream (restarting?); reconnecting for up to {RECONNECT_S:g}s (Ctrl-C stops)")
        deadline = time.monotonic() + RECONNECT_S
        while True:
            try:
                while not api.ping():
                    if time.monotonic() >= deadline:
                        error(f"kairosd did not come back within {RECONNECT_S:g}s")
                        return 1
                    time.sleep(RECONNECT_POLL_S)
            except KeyboardInterrupt:
                return 0
            error("reconnected to kairosd")
            connected, before = time.monotonic(), len(seen)
            try:
                code = _emit_lines(fresh(), as_json, zone, closed=None)
            except KairosError as exc:  # it went away again between the ping and the stream
                code = None
                if time.monotonic() >= deadline:
                    error(f"kairosd did not come back within {RECONNECT_S:g}s ({exc})")
                    return 1
            if code is not None:
                return code
            if len(seen) > before or time.monotonic() - connected >= STABLE_S:
                break  # a real connection: a later close is another restart, with a fresh wait
            if time.monotonic() >= deadline:
                error(f"kairosd did not come back within {RECONNECT_S:g}s")
                return 1
            time.sleep(RECONNECT_POLL_S)
    return code


def cmd_inbox(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import client, local_zone
    from kairos.output import print_json
    from kairosd.core.errors import UsageError
    from kairosd.core.wire.tasks import InboxDoc

    api = client()
    if args.ack or args.ack_all:
        if args.all:
            raise UsageError("--all lists acknowledged items too; it does not go with --ack/--ack-all")
        body: dict[str, Any] = {"all": True} if args.ack_all else {"ids": list(args.ack)}
        if args.session:
            body["session"] = args.session
        doc = api.call("POST", route_path("inbox_ack"), body)
        if args.json:
            print_json(doc)
        else:
            acked = doc.get("acked") or []
            if acked and args.ack:
                print(f"acked {', '.join(map(str, acked))}")  # the whole ids, when prefixes were given
            else:
                print(f"acked {len(acked)} item(s)" if acked else "nothing left to ack")
        return 0
    query = {"session": args.session} if args.session else {}
    if args.all:
        query["all"] = "1"
    if args.follow:
        return _follow_inbox(api, {**query, "follow": "1"}, args.json, local_zone())
    doc = api.call("GET", route_path("inbox"), query=query)
    items = read(InboxDoc, doc, "GET /v1/inbox").items
    if args.json:
        print_json(doc)
        return 0
    if not items:
        where = f" in session {args.session!r}" if args.session else ""
        print(f"inbox is empty{where}")
        return 0
    zone = local_zone()
    for item in items:
        _print_item(item, zone)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from kairos.commands.common import client

    query: dict[str, str] = {}
    if args.type:
        # --type a,b and --type a --type b both work.
        types = [t for value in args.type for t in value.split(",") if t]
        query["types"] = ",".join(dict.fromkeys(types))
    if args.session:
        query["session"] = args.session
    return _emit_lines(client().stream(route_path("events"), query), True, "UTC") or 0


# ---- status ---------------------------------------------------------------


def print_status(doc: StatusDoc) -> None:
    """The readable form of GET /v1/status (also used by `kairos daemon status`)."""
    from kairos.commands.common import local_zone
    from kairos.output import fmt_seconds, fmt_time

    if doc.disabled_reason:
        print(f"NOT FIRING: {doc.disabled_reason}")
    if doc.store_error:
        print(f"STORE PROBLEM: {doc.store_error}")
    state = "running" if doc.enabled else "running, firing disabled"
    uptime = fmt_seconds(doc.uptime_s)
    uptime = "<1s" if uptime == "-" else uptime
    print(f"kairosd {doc.version} {state} (pid {doc.pid}, up {uptime})")
    nxt = doc.next_fire
    next_text = f"{fmt_time(nxt.planned_for, local_zone())} (task {nxt.task_id})" if nxt else "-"
    counts, slots = doc.background.tasks, doc.background.slots
    busy = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s in ("running", "idle", "interrupted"))
    lines = [
        ("tasks", f"{doc.tasks} ({doc.paused} paused)"),
        ("running", f"{doc.deliveries_running} ({doc.queued} queued)"),
        ("next fire", next_text),
        ("zone", doc.default_tz),
        ("socket", doc.socket),
        ("store", doc.store),
        ("background", f"{busy or 'nothing running'}; slots {slots.in_use}/{slots.limit}"),
    ]
    if doc.last_clock_jump:
        jump = doc.last_clock_jump
        lines.append(("clock jump", str({"at": jump.at, "drift_s": jump.drift_s})))
    if doc.quarantine and doc.quarantine.count:
        where = f"{doc.quarantine.count} task(s) in {doc.quarantine.path} (kairos list --problems)"
        lines.append(("set aside", where))
    for label, value in lines:
        print(f"{label + ':':<11} {value}")


def cmd_status(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import client
    from kairos.output import print_json
    from kairosd.core.wire.daemon import StatusDoc

    doc = client().call("GET", route_path("status"))
    status = read(StatusDoc, doc, "GET /v1/status")
    if args.json:
        print_json(doc)
    else:
        print_status(status)
    return 0


# ---- import ---------------------------------------------------------------


# A file larger than one request can carry is sent in batches (each imported atomically); this
# bounds what the CLI reads at all. Issue 28: one request (1 MiB) held about 7,000 tasks.
IMPORT_FILE_MAX = 256 << 20


def cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kairos.commands.common import client, local_zone
    from kairos.output import print_json
    from kairosd.core.errors import KairosError

    path = Path(args.path).expanduser()
    if path.is_dir():
        # Accept the project folder or its .claude folder as well as the file.
        nested = path.joinpath(*CLAUDE_FILE)
        path = nested if nested.exists() else path / CLAUDE_FILE[-1]
    from kairos.progress import Silent, on_stderr
    from kairosd.system.boundedread import read_capped

    with on_stderr(args.quiet) as progress:
        # A file of 100,000 tasks takes seconds to read and split, before the first request.
        progress.update(f"reading {path}")
        try:
            # Bounded: a link to /dev/zero or a FIFO is refused at once, and a file larger than the CLI
            # splits is refused before it is read whole.
            data = read_capped(path, IMPORT_FILE_MAX).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KairosError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        body: dict[str, Any] = {"tz": args.tz or local_zone()}
        if args.project:
            body["project"] = str(Path(args.project).expanduser().absolute())
        batches = import_batches(data)
        api = client()
        counted = _BatchCounts(batches, data, counting=not isinstance(progress, Silent))
        if not args.dry_run and not args.allow_hidden:
            # What a person cannot read is not imported unasked: the same requests as a dry run first.
            hidden: list[tuple[str, str]] = []
            for number, (_, text) in enumerate(batches, start=1):
                progress.update(*counted.line("checking for hidden characters:", number))
                answer = api.call("POST", route_path("import"), {"data": text, **body, "dry_run": True})
                hidden += _hidden_tasks(answer)
            if hidden:
                ids = ", ".join(f"{task_id} ({what})" for task_id, what in hidden)
                raise KairosError(
                    f"not imported: {len(hidden)} task(s) in {path} hold characters a person cannot see but the "
                    f"agent would receive: {ids}. See them escaped with: kairos import --dry-run {path}; "
                    "import them anyway with --allow-hidden"
                )
        if args.dry_run:
            body["dry_run"] = True
        doc: dict[str, Any] = {}
        for number, (offset, text) in enumerate(batches, start=1):
            progress.update(*counted.line("dry run:" if args.dry_run else "importing", number))
            try:
                answer = api.call("POST", route_path("import"), {"data": text, **body})
            except KairosError as exc:
                if number == 1:
                    raise
                with progress.above():
                    _print_import(doc, path, batches=number - 1)
                exc.message = (
                    f"batch {number} of {len(batches)} failed: {exc.message} (batches 1-{number - 1} were "
                    "imported; run the same import again to import the rest: what is imported is skipped)"
                )
                raise
            _merge_import(doc, answer, offset)
            if len(batches) > 1 and not args.json:
                imported, skipped, rejected = (len(answer.get(k) or []) for k in ("imported", "skipped", "rejected"))
                with progress.above():
                    print(f"batch {number}/{len(batches)}: {imported} imported, {skipped} skipped, {rejected} rejected")
    if args.json:
        print_json(doc)
    else:
        _print_import(doc, path)
    hidden_now = _hidden_tasks(doc)
    if hidden_now:
        from kairos.output import error

        verb = "would hold" if doc.get("dry_run") else "hold"
        error(
            f"warning: {len(hidden_now)} imported task(s) {verb} invisible or control characters that the agent "
            f"receives as they are: {', '.join(task_id for task_id, _ in hidden_now)}"
        )
    return 0


class _BatchCounts:
    """How many tasks the batches of an import hold, for its progress line (only counted when one is shown:
    the file's last batch is parsed once more; the others' counts come from the offsets)."""

    def __init__(self, batches: list[tuple[int, str]], data: str, counting: bool) -> None:
        self.batches = batches
        self.total: int | None = None
        if counting:
            from kairos import cjson

            try:
                last = cjson.loads(batches[-1][1] if len(batches) > 1 else data)
                tasks = last.get("tasks") if isinstance(last, dict) else None
                self.total = batches[-1][0] + len(tasks) if isinstance(tasks, list) else None
            except (ValueError, RecursionError):
                pass  # the daemon says what is wrong with the file; the line says only what it waits for

    def line(self, doing: str, number: int) -> tuple[str, ...]:
        """The progress line's text while batch ``number`` (1-based) is sent: what, and the batch."""
        if self.total is None:
            return (f"{doing} tasks",)
        if len(self.batches) == 1:
            return (f"{doing} {self.total:,} task{'' if self.total == 1 else 's'}",)
        done = self.batches[number - 1][0]
        return (f"{doing} {done:,}/{self.total:,} tasks", f"batch {number}/{len(self.batches)}")


def import_batches(data: str) -> list[tuple[int, str]]:
    """``data`` as the texts of the requests that carry it: (index of the batch's first task, its text).

    A file that fits one request goes as it is. A larger one must be Claude's shape (an object with a
    ``tasks`` list); its tasks are sent in batches, each a ``{"tasks": [...]}`` that fits one request
    (each is imported atomically, and a task imported by an earlier batch is skipped if sent again).
    """
    from kairos import cjson
    from kairosd.core.errors import UsageError
    from kairosd.core.protocol import MAX_BODY_BYTES

    room = MAX_BODY_BYTES - (16 << 10)  # the request's other fields (zone, project)
    if len(cjson.dumps(data, compact=True)) <= room:
        return [(0, data)]
    try:
        doc = cjson.loads(data)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"not a Claude scheduled_tasks.json: invalid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise UsageError("not a Claude scheduled_tasks.json: expected an object with a 'tasks' list")
    batches: list[tuple[int, str]] = []
    items: list[str] = []
    size = first = 0
    for index, item in enumerate(doc["tasks"]):
        text = cjson.dumps(item, compact=True)
        cost = len(cjson.dumps(text, compact=True))  # as the request's JSON carries it (quotes escaped)
        if items and size + cost + 32 > room:
            batches.append((first, '{"tasks":[' + ",".join(items) + "]}"))
            items, size, first = [], 0, index
        items.append(text)
        size += cost + 1
    batches.append((first, '{"tasks":[' + ",".join(items) + "]}"))
    return batches


def _merge_import(doc: dict[str, Any], answer: dict[str, Any], offset: int) -> None:
    """Add one batch's answer to ``doc``; a rejected item's index becomes its index in the whole file."""
    doc["dry_run"] = answer.get("dry_run", False)
    for key in ("imported", "skipped", "dropped"):
        doc.setdefault(key, []).extend(answer.get(key) or [])
    doc.setdefault("rejected", [])  # every key of an import answer, even with nothing rejected (ImportDoc)
    for item in answer.get("rejected") or []:
        if isinstance(item.get("index"), int):
            item = {**item, "index": item["index"] + offset}
        doc.setdefault("rejected", []).append(item)


def _print_import(answer: dict[str, Any], path: Any, batches: int | None = None) -> None:
    import textwrap

    from kairos.answers import read
    from kairos.commands.tasks import describe
    from kairosd.core.invisible import describe_hidden
    from kairosd.core.wire.tasks import ImportDoc

    doc = read(ImportDoc, answer, "POST /v1/import")
    imported, skipped, rejected = doc.imported, doc.skipped, doc.rejected
    verb = "would import" if doc.dry_run else "imported"
    where = f" (the first {batches} batch(es))" if batches is not None else ""
    print(f"{verb} {len(imported)}, skipped {len(skipped)}, rejected {len(rejected)} from {path}{where}")
    for task in imported:
        name = f" ({task.name})" if task.name else ""
        print(f"  + {task.id}{name}: {describe(task)}")
        if task.on_import:
            print(f"      at import: {_safe(task.on_import)}")
        if doc.dry_run:
            # The whole prompt, as a block: what the agent will be asked is what the person reviews.
            print(textwrap.indent(task.prompt, "      | "))
        for field, text in (("prompt", task.prompt), ("name", task.name or "")):
            problem = describe_hidden(text)
            if problem:
                print(f"      HIDDEN: the {field} holds {problem}: kairos shows them escaped, the agent gets them")
    for skip in skipped:
        print(f"  = {skip.id}: {_safe(skip.reason)}")
    for reject in rejected:
        who = reject.id if reject.id is not None else f"#{reject.index}"
        print(f"  ! {_safe(who)}: {_safe(reject.reason)}")
    for dropped in doc.dropped:
        keys = ", ".join(_safe(k) for k in dropped.keys)
        print(f"  - {dropped.id}: dropped keys kairos does not import: {keys}")
    if doc.dry_run:
        print("nothing was changed (--dry-run)")


def _hidden_tasks(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, what is hidden where) of each task in an import answer whose prompt or name holds unsafe characters."""
    from kairosd.core.invisible import describe_hidden

    found = []
    for task in doc.get("imported") or []:
        problems = [
            f"the {field} holds {problem}"
            for field in ("prompt", "name")
            if (problem := describe_hidden(str(task.get(field) or "")))
        ]
        if problems:
            found.append((str(task.get("id")), "; ".join(problems)))
    return found


def _safe(text: Any) -> str:
    """Text from the imported file, on one line, control characters escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))
