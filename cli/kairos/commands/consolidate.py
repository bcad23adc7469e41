"""``kairos consolidate``: distil an agent session into its project's context board.

It goes through kairosd: it applies the consolidation gates and runs the detached worker.
``--wait`` long-polls the run like ``kairos task wait`` (it is a background job of kind
``consolidation``), bounded by ``--timeout``, and at a terminal shows the run's state and the
time waited on stderr (:mod:`kairos.progress`).

Only argparse and typing are imported at the top (``kairos.app`` imports every verb module on
every call); the client and helpers load inside the handlers. Must not import asyncio or any kairosd
module that does I/O; pydantic only inside the handler, which reads kairosd's answers as their models
(:mod:`kairos.answers`) and with ``--json`` prints them as they came.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_quiet_flag, make_parser, seconds, user_path
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.consolidation import ConsolidationRunDoc

AGENTS = ("auto", "claude", "copilot", "codex", "gemini", "opencode", "generic")
DEFAULT_WAIT_S = 300.0


def register(subparsers: Any) -> None:
    parser = make_parser(
        subparsers,
        "consolidate",
        "distil a session into the project's context board",
        "Ask kairosd to consolidate an agent session: what the user said to always or never do, their "
        "corrections, decisions, open to-dos and the commands and files that mattered go into the project's "
        "context board (kairos board show). The gates apply (consolidation enabled, not a session kairos "
        "started, at least 3 human turns, the minimum interval per project, one run per project); the run "
        "is detached and survives this command, the agent and kairosd. Exit 0 if it started (or was "
        "coalesced into a running one), 1 if a gate stopped it; with --wait, 0 if the run completed.",
        """
        kairos consolidate --session-id 6c07 --transcript ~/.claude/projects/-home-me-app/6c07.jsonl --cwd ~/app
        kairos consolidate --agent codex --session-id 019a --transcript ROLLOUT.jsonl --cwd . --wait
        kairos consolidate --force --session-id 6c07 --transcript 6c07.jsonl   # again, before the interval
        kairos consolidate --agent opencode --session-id ses_4f1c --transcript "$(opencode db path)" --cwd .
        """,
    )
    # --session-id, not --session: every --session of kairos names a kairos (inbox) session (issue 24,
    # item 12). --session stays accepted, unlisted, for scripts that used it.
    parser.add_argument(
        "--session-id", "--session", dest="session", required=True, metavar="ID",
        help="the agent CLI's own session id (--session is its old name)",
    )  # fmt: skip
    parser.add_argument(
        "--transcript", required=True, metavar="PATH",
        help="the session's transcript file (opencode: its database, `opencode db path`)",
    )  # fmt: skip
    parser.add_argument("--cwd", default=".", metavar="DIR", help="the project folder (default: this one)")
    parser.add_argument("--agent", choices=AGENTS, default="auto", help="whose transcript (default: detect)")
    parser.add_argument("--reason", default="manual", metavar="TEXT", help="why (recorded with the decision)")
    parser.add_argument("--wait", action="store_true", help="wait for the run and print what it changed")
    parser.add_argument(
        "--force",
        action="store_true",
        help="consolidate even if this project was consolidated less than the minimum interval ago "
        "([consolidation] min_interval_minutes); the other gates still apply",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_WAIT_S,
        metavar="DURATION",
        help="give up waiting after this long (10m, 90s, 600)",
    )
    add_quiet_flag(parser)
    parser.set_defaults(handler=cmd_consolidate)


def build_consolidate_request(args: argparse.Namespace, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The POST /v1/consolidate body: the caller's markers decide gates 1 and 2 as the hook's would."""
    import os

    env = os.environ if environ is None else environ
    body: dict[str, Any] = {
        "agent": args.agent,
        "session_id": args.session,
        "transcript_path": user_path(args.transcript),
        "cwd": user_path(args.cwd),
        "reason": args.reason,
        "spawned": env.get("KAIROS_SPAWNED", "").strip() == "1",
    }
    if getattr(args, "force", False):
        body["force"] = True
    if env.get("KAIROS_CONSOLIDATE") is not None:
        body["consolidate"] = env["KAIROS_CONSOLIDATE"]
    return body


def cmd_consolidate(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairos.output import error, print_json
    from kairosd.core.errors import UsageError
    from kairosd.core.wire.consolidation import ConsolidateDecisionDoc, ConsolidationRunDoc

    if args.timeout is not None and args.timeout < 0:
        raise UsageError("--timeout must be 0 or more seconds")
    answer = Client().call("POST", route_path("consolidate"), build_consolidate_request(args))
    decision = read(ConsolidateDecisionDoc, answer, "POST /v1/consolidate")
    run = decision.run if decision.status in ("started", "coalesced") else None  # a run to wait for
    if run is None or not args.wait:
        if args.json:
            print_json(answer)
        elif run is not None:
            verb = "started" if decision.status == "started" else "coalesced into the running"
            print(f"{verb} consolidation {run.id} of {decision.project}")
        else:
            error(f"not consolidated ({decision.gate or decision.status}): {decision.reason}")
        return 0 if run is not None else 1
    from kairos.commands.jobs import wait_for
    from kairos.progress import on_stderr

    # The worker reports no phase while it runs (kairosd.consolidation.runs): the line shows the run's
    # state and the time waited, and names the project.
    joined = "" if decision.status == "started" else "the running "
    with on_stderr(args.quiet) as progress:
        what = f"waiting for {joined}consolidation {run.id} of {decision.project}"
        _, settled = wait_for(run.id, args.timeout, None, progress, what)
    path = route_path("consolidation_run", id=run.id)
    got = Client().call("GET", path)
    info = read(ConsolidationRunDoc, got, "GET /v1/consolidation/runs/ID")
    if args.json:
        print_json({**got, "decision": answer, "timed_out": settled.timed_out})
    else:
        _print_run(info, settled.timed_out)
    return 0 if not settled.timed_out and settled.task.status == "completed" else 1


def _print_run(info: ConsolidationRunDoc, timed_out: bool) -> None:
    from kairos.output import error

    task, result = info.task, info.result
    if timed_out:
        error(f"consolidation {task.id} is still {task.status} (timed out waiting)")
        return
    if task.status != "completed":
        error(f"consolidation {task.id} {task.status}: {task.error or '-'}")
        return
    size = "?" if result is None or result.board_size is None else result.board_size
    print(f"{task.id} completed: {task.response}; the board has {size} entries")
    merge = result.merge if result is not None else None
    if merge is not None:
        # What a later session will and will not be told: added, replaced (by which), done, dropped.
        for entry in merge.added:
            beside = (
                f" (beside {entry.conflicts_with}: the next session asks which holds)" if entry.conflicts_with else ""
            )
            print(f"  + {entry.id} [{entry.kind}] {entry.text}{beside}")
        for replaced in merge.superseded:
            print(f"  ~ {replaced.id} [{replaced.kind}] {replaced.text} (replaced by {replaced.superseded_by})")
        for done in merge.closed:
            print(f"  x {done.id} [{done.kind}] {done.text} (said done)")
        for entry in merge.pruned:
            print(f"  - {entry.id} [{entry.kind}] {entry.text} (pruned to make room)")
        for entry in merge.dropped:
            print(f"  - {entry.id} [{entry.kind}] {entry.text} (an offline guess the rem-agent dropped)")
        if merge.confirmed:
            print(f"  = confirmed offline guesses: {', '.join(merge.confirmed)}")
    stats = result.transcript if result is not None else None
    if stats is not None and stats.malformed:
        print(f"  ({stats.malformed} malformed transcript line(s) skipped)")
