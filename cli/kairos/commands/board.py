"""``kairos board show|add|edit|pin|rm|restore|prune|history``: the project's context board.

Every change goes through kairosd, the one writer of the boards besides the consolidation
worker (a board is per user, and two writers must take the same lock).

Only argparse and typing are imported at the top (``kairos.app`` imports every verb module on
every call); the client and helpers load inside the handlers. Must not import asyncio or any kairosd
module that does I/O; pydantic only inside the handlers, which read kairosd's answers as their models
(:mod:`kairos.answers`) and with ``--json`` print each answer as it came.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_wide_flag, local_zone, make_parser, printed_json, user_path, whole_number
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from kairosd.core.wire.board import BoardChange, BoardEntryDoc
    from kairosd.core.wire.records import BoardEntry

KINDS = ("rule", "preference", "correction", "decision", "todo", "fact")
BOARD_ID_HELP = "entry id: b and 6 hex digits, e.g. b3f2a1c (kairos board show lists them)"


def register(subparsers: Any) -> None:
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


def cmd_show(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import ReadClient
    from kairos.output import print_json
    from kairosd.core.wire.board import BoardDoc

    query = {"cwd": user_path(args.cwd), **({"all": "1"} if args.all else {})}
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
            ("you" if e.author == "user" else "kairos")
            + (", pinned" if e.pinned else "")
            + (", guessed" if e.guessed else ""),
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
            [e.id, e.kind, fmt_time(e.superseded_at, zone), e.superseded_by or f"(dropped by {e.dropped_by})", e.text]
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
    from kairos.answers import read
    from kairos.client import Client
    from kairosd.core.wire.board import BoardAddDoc

    body = {"cwd": user_path(args.cwd), "text": " ".join(args.text), "kind": args.kind}
    answer = Client().call("POST", route_path("board"), body)
    doc = read(BoardAddDoc, answer, "POST /v1/board")
    if printed_json(args, answer):
        return 0
    print(f"added {_entry(doc.entry)}")
    for pruned in doc.pruned:
        print(f"pruned {_entry(pruned)} (to make room)")
    for old in doc.superseded:
        print(f"replaced {_entry(old)} (kairos board restore {old.id} undoes it)")
    return 0


def _change(args: argparse.Namespace, body: dict[str, Any], said: Callable[[BoardEntryDoc], str]) -> int:
    """Change entry ``args.id``; print kairosd's answer with --json, else ``said(answer)``."""
    from kairos.answers import read
    from kairos.client import Client
    from kairosd.core.wire.board import BoardEntryDoc

    answer = Client().call("POST", route_path("board_entry", id=args.id), {"cwd": user_path(args.cwd), **body})
    doc = read(BoardEntryDoc, answer, "POST /v1/board/entries/ID")
    if not printed_json(args, answer):
        print(said(doc))
    return 0


def _entry(entry: BoardEntry) -> str:
    return f"{entry.id} [{entry.kind}] {entry.text}"


def cmd_edit(args: argparse.Namespace) -> int:
    from kairosd.core.errors import UsageError

    body: dict[str, Any] = {}
    if args.text:
        body["text"] = " ".join(args.text)
    if args.kind:
        body["kind"] = args.kind
    if not body:
        raise UsageError("give the new text, or --kind")
    return _change(args, body, lambda doc: f"edited {_entry(doc.entry)} (was: {doc.before})")


def cmd_pin(args: argparse.Namespace) -> int:
    verb = "unpinned" if args.off else "pinned"
    return _change(args, {"pinned": not args.off}, lambda doc: f"{verb} {_entry(doc.entry)}")


def cmd_restore(args: argparse.Namespace) -> int:
    def said(doc: BoardEntryDoc) -> str:
        rival = doc.entry.conflicts_with
        if not rival:
            return f"restored {_entry(doc.entry)} (pinned)"
        return (
            f"restored {_entry(doc.entry)} (pinned); it conflicts with {rival}, which had replaced it: the next "
            f"session is told to ask you which holds (kairos board rm the other, or kairos board edit one)"
        )

    return _change(args, {"restore": True}, said)


def cmd_rm(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairosd.core.wire.board import BoardRemovedDoc

    answer = Client().call("DELETE", route_path("board_entry", id=args.id), query={"cwd": user_path(args.cwd)})
    doc = read(BoardRemovedDoc, answer, "DELETE /v1/board/entries/ID")
    if not printed_json(args, answer):
        print(f"removed {_entry(doc.entry)}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairosd.core.wire.board import BoardPruneDoc

    answer = Client().call("POST", route_path("board_prune"), {"cwd": user_path(args.cwd)})
    doc = read(BoardPruneDoc, answer, "POST /v1/board/prune")
    if printed_json(args, answer):
        return 0
    if not doc.pruned:
        print(f"nothing to prune (at most {doc.prune_to} of kairos' entries are kept)")
    for entry in doc.pruned:
        print(f"pruned {_entry(entry)}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairos.commands.common import print_records
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
    answer = Client().call("GET", route_path("board_history"), query={"cwd": user_path(args.cwd), "limit": str(args.n)})
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
    if record.action in ("drop", "confirm"):  # a rem-agent's word on an offline guess (KEEP / DROP)
        return f" (an offline guess the rem-agent {'dropped' if record.action == 'drop' else 'confirmed'})"
    return ""
