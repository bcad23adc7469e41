"""``kairos history|missed``: what kairosd ran, and the fires it could not make on time.

Reads the daemon's run ledger and its missed records.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O; pydantic only inside the handlers
that read kairosd's answers as their models (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_wide_flag, make_parser, whole_number
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.runs import MissedView, RunView

MAX_HISTORY = 10_000
MIN_REASON = 20  # the narrowest REASON column of `kairos missed`


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
    from kairosd.core.wire.runs import HistoryDoc

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
    from kairosd.core.wire.runs import MissedDoc

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
