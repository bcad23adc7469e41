"""``kairos inbox|watch``: prompts delivered to inbox sessions, and the daemon's event stream.

Lists, follows (reconnecting when kairosd restarts) and acknowledges inbox items;
``watch`` prints every event as a JSON line.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O; pydantic only inside the handlers
that read kairosd's answers as their models (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kairos.commands.common import make_parser
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.inbox import InboxItem

RECONNECT_S = 60.0  # how long `inbox --follow` waits for kairosd to come back after it closed the stream
RECONNECT_POLL_S = 0.5
STABLE_S = 5.0  # a connection that lasted this long was a real one: a later close starts a fresh wait


def register(subparsers: Any) -> None:
    # app.VERBS maps each of our verbs to this module, so we may be called once per verb.
    if "inbox" in subparsers.choices:
        return
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
            from kairosd.core.wire.inbox import InboxItem

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
    from kairosd.core.wire.inbox import InboxDoc

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
