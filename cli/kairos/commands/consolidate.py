"""``kairos consolidate`` and ``kairos board show|add|edit|pin|rm|restore|prune|history``: memory
consolidation and the context board.

Both go through kairosd: it applies the consolidation gates, runs the detached worker, and is
the one writer of the boards besides that worker (a board is per user, and two writers must
take the same lock). ``--wait`` long-polls the run like ``kairos task wait`` (it is a task of
kind ``consolidation``), bounded by ``--timeout``, and at a terminal shows the run's state and the
time waited on stderr (:mod:`kairos.progress`).

Only argparse and typing are imported at the top (``kairos.app`` imports every verb module on
every call); the client and helpers load inside the handlers. Must not import asyncio or any kairosd
module that does I/O; pydantic only inside ``board show`` and ``board history``, which read kairosd's
answers as their models (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_quiet_flag, add_wide_flag, local_zone, make_parser, seconds, whole_number
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from kairosd.core.wire.board import BoardChange

AGENTS = ("auto", "claude", "copilot", "codex", "gemini", "generic")
KINDS = ("rule", "preference", "correction", "decision", "todo", "fact")
DEFAULT_WAIT_S = 300.0
POLL_MARGIN_S = 15.0


BOARD_ID_HELP = "entry id: b and 6 hex digits, e.g. b3f2a1c (kairos board show lists them)"


def register(subparsers: Any) -> None:
    # app.VERBS maps both our verbs to this module, so we may be called once per verb.
    if "consolidate" in subparsers.choices:
        return
    _register_consolidate(subparsers)
    _register_board(subparsers)


def _register_consolidate(subparsers: Any) -> None:
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
        kairos consolidate --session 6c07 --transcript ~/.claude/projects/-home-me-app/6c07.jsonl --cwd ~/app
        kairos consolidate --agent codex --session-id 019a --transcript ROLLOUT.jsonl --cwd . --wait
        kairos consolidate --force --session-id 6c07 --transcript 6c07.jsonl   # again, before the interval
        """,
    )
    # --session-id, not --session: every --session of kairos names a kairos (inbox) session (issue 24,
    # item 12). --session stays accepted, unlisted, for scripts that used it.
    parser.add_argument(
        "--session-id", "--session", dest="session", required=True, metavar="ID",
        help="the agent CLI's own session id (--session is its old name)",
    )  # fmt: skip
    parser.add_argument("--transcript", required=True, metavar="PATH", help="the session's transcript file")
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


def _register_board(subparsers: Any) -> None:
    board = subparsers.add_parser(
        "board",
        help="the project's context board: what kairos remembers between sessions",
        description="The context board of a project (the Git work tree around --cwd, default: this folder): "
        "at most 25 notes kept from earlier sessions, which reach new sessions through the SessionStart hook. "
        "kairos prunes its own entries to 18 when the board is full; yours stay until you remove them. Later "
        "words replace earlier ones about the same subject (kept as history); an entry of yours or a pinned "
        "one is never replaced: the new one is added beside it and the conflict is shown.",
        epilog="examples:\n  kairos board show\n  kairos board show --all\n"
        "  kairos board add 'Use pnpm, not npm' --kind rule\n"
        "  kairos board edit b3f2a1c 'Use yarn, not pnpm'\n  kairos board pin b3f2a1c\n  kairos board rm b3f2a1c\n"
        "  kairos board restore b91c04e\n  kairos board history -n 20",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = board.add_subparsers(dest="board_verb", metavar="COMMAND")

    show = make_parser(
        verbs,
        "show",
        "list the entries",
        "List the board's entries, most worth keeping first. Later words replace earlier ones about the same "
        "subject; with --all, the replaced entries follow, each with what replaced it and when.",
        "kairos board show\n  kairos board show --all",
    )
    show.add_argument("--all", action="store_true", help="also list the entries later ones replaced")
    _cwd(show)
    add_wide_flag(show)
    show.set_defaults(handler=cmd_show)

    add = make_parser(
        verbs,
        "add",
        "add an entry of your own",
        "Add an entry of your own. kairos never prunes it; only 'kairos board rm' removes it.",
        "kairos board add 'Never push to main directly'\n  kairos board add --kind todo 'Migrate the CI to v2'",
    )
    add.add_argument("text", nargs="+", metavar="TEXT", help="the entry, one line")
    add.add_argument("--kind", choices=KINDS, default="rule", help="what it is (default: rule)")
    _cwd(add)
    add.set_defaults(handler=cmd_add)

    edit = make_parser(
        verbs,
        "edit",
        "change an entry's text or kind",
        "Change an entry's text or kind. The entry becomes yours: kairos never prunes or replaces it.",
        "kairos board edit b3f2a1c 'Use yarn, not pnpm'\n  kairos board edit b3f2a1c --kind decision",
    )
    edit.add_argument("id", metavar="ID", help=BOARD_ID_HELP)
    edit.add_argument("text", nargs="*", metavar="TEXT", help="the new text (left out: only --kind changes)")
    edit.add_argument("--kind", choices=KINDS, help="its new kind")
    _cwd(edit)
    edit.set_defaults(handler=cmd_edit)

    pin = make_parser(
        verbs,
        "pin",
        "keep an entry: never pruned, never replaced",
        "Pin an entry kairos must keep: it is never pruned, and a later entry that would replace it is added "
        "beside it, shown as a conflict. --off unpins it.",
        "kairos board pin b3f2a1c\n  kairos board pin --off b3f2a1c",
    )
    pin.add_argument("id", metavar="ID", help=BOARD_ID_HELP)
    pin.add_argument("--off", action="store_true", help="unpin it")
    _cwd(pin)
    pin.set_defaults(handler=cmd_pin)

    restore = make_parser(
        verbs,
        "restore",
        "put a replaced entry back",
        "Undo a wrong replacement: put an entry that a later one replaced back on the board, pinned (see "
        "'kairos board show --all'). The entry that replaced it stays, and the two are marked as in conflict, "
        "so the next session asks you which holds; remove the other with 'kairos board rm'.",
        "kairos board restore b91c04e",
    )
    restore.add_argument("id", metavar="ID", help=BOARD_ID_HELP)
    _cwd(restore)
    restore.set_defaults(handler=cmd_restore)

    rm = make_parser(verbs, "rm", "remove an entry", "Remove an entry by its id.", "kairos board rm b3f2a1c")
    rm.add_argument("id", metavar="ID", help=BOARD_ID_HELP)
    _cwd(rm)
    rm.set_defaults(handler=cmd_rm)

    prune = make_parser(
        verbs,
        "prune",
        "prune kairos' entries now",
        "Drop kairos' lowest-priority entries (facts before to-dos before rules; stale before frequent or "
        "recent) until at most 18 remain. Your own entries stay.",
        "kairos board prune",
    )
    _cwd(prune)
    prune.set_defaults(handler=cmd_prune)

    history = make_parser(
        verbs,
        "history",
        "what was learned and when",
        "Every change to the board, newest first (as every log kairos lists): additions, entries seen "
        "again, replacements (which entry "
        "replaced which), conflicts with your entries, edits, pins, restores, removals, prunes.",
        "kairos board history\n  kairos board history -n 0 --json",
    )
    history.add_argument(
        "-n", type=whole_number, default=50, metavar="N", help="the last N changes (0: all; default 50)"
    )
    _cwd(history)
    add_wide_flag(history)
    history.set_defaults(handler=cmd_history)

    board.set_defaults(handler=lambda _args: _help(board))


def _cwd(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", default=".", metavar="DIR", help="a folder of the project (default: this one)")


def _help(parser: argparse.ArgumentParser) -> int:
    from kairosd.core.errors import EXIT_USAGE

    parser.print_help()
    return EXIT_USAGE


def _abs(path: str) -> str:
    import os

    # kairosd's working directory is not the user's: resolve paths here.
    return os.path.abspath(os.path.expanduser(path))


# ---- consolidate ------------------------------------------------------------------------------


def build_consolidate_request(args: argparse.Namespace, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The POST /v1/consolidate body: the caller's markers decide gates 1 and 2 as the hook's would."""
    import os

    env = os.environ if environ is None else environ
    body: dict[str, Any] = {
        "agent": args.agent,
        "session_id": args.session,
        "transcript_path": _abs(args.transcript),
        "cwd": _abs(args.cwd),
        "reason": args.reason,
        "spawned": env.get("KAIROS_SPAWNED", "").strip() == "1",
    }
    if getattr(args, "force", False):
        body["force"] = True
    if env.get("KAIROS_CONSOLIDATE") is not None:
        body["consolidate"] = env["KAIROS_CONSOLIDATE"]
    return body


def cmd_consolidate(args: argparse.Namespace) -> int:
    from kairos.client import Client
    from kairos.output import error, print_json
    from kairosd.core.errors import UsageError

    if args.timeout is not None and args.timeout < 0:
        raise UsageError("--timeout must be 0 or more seconds")
    decision = Client().call("POST", route_path("consolidate"), build_consolidate_request(args))
    status = decision.get("status")
    run = decision.get("run") or {}
    if not args.wait or status not in ("started", "coalesced"):
        if args.json:
            print_json(decision)
        elif status in ("started", "coalesced"):
            verb = "started" if status == "started" else "coalesced into the running"
            print(f"{verb} consolidation {run.get('id', '?')} of {decision.get('project')}")
        else:
            error(f"not consolidated ({decision.get('gate') or status}): {decision.get('reason')}")
        return 0 if status in ("started", "coalesced") else 1
    from kairos.commands.agenttasks import wait_for
    from kairos.progress import on_stderr

    # The worker reports no phase while it runs (kairosd.consolidation.runs): the line shows the run's
    # state and the time waited, and names the project.
    joined = "" if status == "started" else "the running "
    with on_stderr(args.quiet) as progress:
        what = f"waiting for {joined}consolidation {run['id']} of {decision.get('project')}"
        doc = wait_for(str(run["id"]), args.timeout, None, progress, what)
    task = doc.get("task") or {}
    info = Client().call("GET", route_path("consolidation_run", id=str(run["id"])))
    info["decision"] = decision
    info["timed_out"] = bool(doc.get("timed_out"))
    if args.json:
        print_json(info)
    else:
        _print_run(info)
    return 0 if not doc.get("timed_out") and task.get("status") == "completed" else 1


def _print_run(info: dict[str, Any]) -> None:
    from kairos.output import error

    task = info.get("task") or {}
    result = info.get("result") or {}
    if info.get("timed_out"):
        error(f"consolidation {task.get('id', '?')} is still {task.get('status', '?')} (timed out waiting)")
        return
    if task.get("status") != "completed":
        error(f"consolidation {task.get('id', '?')} {task.get('status', '?')}: {task.get('error') or '-'}")
        return
    merge = result.get("merge") or {}
    print(f"{task.get('id')} completed: {task.get('response')}; the board has {result.get('board_size', '?')} entries")
    for entry in merge.get("added", []):
        print(f"  + {entry.get('id')} [{entry.get('kind')}] {entry.get('text')}")
    for entry in merge.get("pruned", []):
        print(f"  - {entry.get('id')} [{entry.get('kind')}] {entry.get('text')}")
    stats = result.get("transcript") or {}
    if stats.get("malformed"):
        print(f"  ({stats['malformed']} malformed transcript line(s) skipped)")


# ---- board ---------------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import ReadClient
    from kairos.output import print_json
    from kairosd.core.wire.board import BoardDoc

    query = {"cwd": _abs(args.cwd), **({"all": "1"} if args.all else {})}
    answer = ReadClient().call("GET", route_path("board"), query=query)
    doc = read(BoardDoc, answer, "GET /v1/board")
    if args.json:
        print_json(answer)
        return 0
    entries = doc.entries
    print(f"context board of {doc.project}: {len(entries)} of {doc.limit} entries")
    rows = [
        [
            e.id,
            e.kind,
            str(e.hits),
            e.last_seen_at[:10],
            ("you" if e.author == "user" else "kairos") + (", pinned" if e.pinned else ""),
            e.text + (f"  (conflicts with {e.conflicts_with})" if e.conflicts_with else ""),
        ]
        for e in entries
    ]
    _table_or(
        ["ID", "KIND", "HITS", "LAST SEEN", "BY", "TEXT"],
        rows,
        "(empty: entries come from consolidated sessions, or kairos board add)",
    )
    if args.all:
        old = doc.superseded or []
        print(f"\nreplaced entries ({len(old)}, newest first; kairos board restore ID puts one back):")
        from kairos.output import fmt_time

        zone = local_zone()
        rows = [
            # superseded_at as every time in a human view: to the second
            [e.id, e.kind, fmt_time(e.superseded_at, zone), e.superseded_by, e.text]
            for e in old
        ]
        _table_or(["ID", "KIND", "REPLACED AT", "BY ENTRY", "TEXT"], rows, "(none)")
    return 0


def _table_or(headers: list[str], rows: list[list[str]], empty: str) -> None:
    """The rows as a table, or the ``empty`` line when there are none."""
    from kairos.output import print_table

    if rows:
        print_table(headers, rows)
    else:
        print(empty)


def cmd_add(args: argparse.Namespace) -> int:
    from kairos.client import Client
    from kairos.output import print_json

    body = {"cwd": _abs(args.cwd), "text": " ".join(args.text), "kind": args.kind}
    doc = Client().call("POST", route_path("board"), body)
    if args.json:
        print_json(doc)
        return 0
    print(f"added {_entry(doc['entry'])}")
    for pruned in doc.get("pruned") or []:
        print(f"pruned {_entry(pruned)} (to make room)")
    for old in doc.get("superseded") or []:
        print(f"replaced {_entry(old)} (kairos board restore {old['id']} undoes it)")
    return 0


def _change(args: argparse.Namespace, body: dict[str, Any], said: Callable[[dict[str, Any]], str]) -> int:
    """Change entry ``args.id``; print kairosd's answer with --json, else ``said(answer)``."""
    from kairos.client import Client
    from kairos.output import print_json

    doc = Client().call("POST", route_path("board_entry", id=args.id), {"cwd": _abs(args.cwd), **body})
    if args.json:
        print_json(doc)
    else:
        print(said(doc))
    return 0


def _entry(entry: dict[str, Any]) -> str:
    return f"{entry['id']} [{entry['kind']}] {entry['text']}"


def cmd_edit(args: argparse.Namespace) -> int:
    from kairosd.core.errors import UsageError

    body: dict[str, Any] = {}
    if args.text:
        body["text"] = " ".join(args.text)
    if args.kind:
        body["kind"] = args.kind
    if not body:
        raise UsageError("give the new text, or --kind")
    return _change(args, body, lambda doc: f"edited {_entry(doc['entry'])} (was: {doc.get('before')})")


def cmd_pin(args: argparse.Namespace) -> int:
    verb = "unpinned" if args.off else "pinned"
    return _change(args, {"pinned": not args.off}, lambda doc: f"{verb} {_entry(doc['entry'])}")


def cmd_restore(args: argparse.Namespace) -> int:
    def said(doc: dict[str, Any]) -> str:
        rival = doc["entry"].get("conflicts_with")
        if not rival:
            return f"restored {_entry(doc['entry'])} (pinned)"
        return (
            f"restored {_entry(doc['entry'])} (pinned); it conflicts with {rival}, which had replaced it: the next "
            f"session is told to ask you which holds (kairos board rm the other, or kairos board edit one)"
        )

    return _change(args, {"restore": True}, said)


def cmd_rm(args: argparse.Namespace) -> int:
    from kairos.client import Client
    from kairos.output import print_json

    doc = Client().call("DELETE", route_path("board_entry", id=args.id), query={"cwd": _abs(args.cwd)})
    if args.json:
        print_json(doc)
    else:
        print(f"removed {_entry(doc['entry'])}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from kairos.client import Client
    from kairos.output import print_json

    doc = Client().call("POST", route_path("board_prune"), {"cwd": _abs(args.cwd)})
    if args.json:
        print_json(doc)
        return 0
    pruned = doc.get("pruned") or []
    if not pruned:
        print(f"nothing to prune (at most {doc.get('prune_to', 18)} of kairos' entries are kept)")
    for entry in pruned:
        print(f"pruned {_entry(entry)}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairos.commands.common import print_records, printed_json
    from kairos.output import fmt_time
    from kairosd.core.errors import UsageError
    from kairosd.core.wire.board import BoardHistoryDoc

    def row(r: BoardChange, zone: str) -> list[str]:
        return [
            fmt_time(r.at, zone),
            r.action,
            "you" if r.by == "user" else "kairos",
            r.id or "-",
            (f"[{r.kind}] {r.text or ''}" if r.kind else r.text or "") + _why(r),
        ]

    if args.n < 0:
        raise UsageError("-n must be 0 or more")
    answer = Client().call("GET", route_path("board_history"), query={"cwd": _abs(args.cwd), "limit": str(args.n)})
    doc = read(BoardHistoryDoc, answer, "GET /v1/board/history")
    if not printed_json(args, answer):
        empty = f"no changes yet to the board of {doc.project}"
        print_records(doc.history, empty, ["WHEN", "ACTION", "BY", "ID", "ENTRY"], row)
    return 0


def _why(record: BoardChange) -> str:
    """What a history line adds to its entry: what replaced it, what it conflicts with, what it was."""
    if record.superseded_by:
        return f" -> replaced by {record.superseded_by}"
    if record.with_:
        return f" (beside {record.with_}, yours: conflict)"
    if record.before:
        return f" (was: {record.before})"
    if record.replaced_by:
        return f" (back; {record.replaced_by} had replaced it)"
    return ""
