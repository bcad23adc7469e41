"""``kairos history|missed``: what kairosd ran, and the fires it could not make on time.

Reads the daemon's run ledger and its missed records.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import pydantic, asyncio or any kairosd module that does I/O.
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import add_wide_flag, make_parser, whole_number
from kairosd.core.protocol import route_path

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


def _outcome(run: dict[str, Any]) -> str:
    text = str(run.get("outcome") or ("running" if run.get("started_at") else "dispatched"))
    flags = [f for f, on in (("manual", run.get("manual")), ("catch-up", run.get("catch_up"))) if on]
    return text + (f" ({', '.join(flags)})" if flags else "")


def _reason(run: dict[str, Any]) -> str:
    """The exit status and the reason, each said once: "exit 3; exit code 3" and a timeout shown as
    "exit -15" were what a run said before (issue 24, item 14)."""
    code, reason = run.get("exit_code"), str(run.get("reason") or "")
    status = None
    if isinstance(code, int) and not isinstance(code, bool):
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
    from kairos.commands.common import ReadClient, print_listing
    from kairosd.core.errors import UsageError

    if not 1 <= args.n <= MAX_HISTORY:
        raise UsageError(f"-n must be between 1 and {MAX_HISTORY}")
    query = {"limit": str(args.n)}
    if args.id:
        query["task"] = args.id
    doc = ReadClient().call("GET", route_path("runs"), query=query)
    empty = "no runs yet" + (f" of task {args.id}" if args.id else "")
    headers = ["RUN", "TASK", "SCHEDULED", "OUTCOME", "LATE", "REASON/EXIT"]
    return print_listing(args, doc, "runs", empty, headers, _run_row)


def _run_row(r: dict[str, Any], zone: str) -> list[str]:
    from kairos.output import fmt_seconds, fmt_time

    return [
        str(r.get("run_id", "?")),
        str(r.get("task_id", "?")),
        fmt_time(r.get("scheduled_for"), zone),
        _outcome(r),
        fmt_seconds(r.get("late_by_s")),
        _reason(r),
    ]


def cmd_missed(args: argparse.Namespace) -> int:
    from kairos.commands.common import ReadClient, client, print_listing
    from kairos.output import cut_width, fmt_time, one_line, print_json, terminal_columns

    # REASON can be 100 characters (a clock jump, a long stop): at a terminal, cut it to a share of it, so
    # that ACTION and NAME/PROMPT stay on the line; piped, with --wide or --json it is whole.
    reason_width = cut_width(max(MIN_REASON, terminal_columns() // 3))

    def row(m: dict[str, Any], zone: str) -> list[str]:
        return [
            str(m.get("task_id", "?")),
            fmt_time(m.get("scheduled_for"), zone),
            str(m.get("count", 1)),
            one_line(m.get("reason", "-"), reason_width),
            str(m.get("action", "-")),
            m.get("task_name") or m.get("prompt") or "",
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
    headers = ["TASK", "LAST MISSED", "COUNT", "REASON", "ACTION", "NAME/PROMPT"]
    return print_listing(args, doc, "missed", "nothing missed", headers, row)
