"""``kairos timeline``: a chart of fires over time, one row per task (``GET /v1/timeline``).

The daemon computes the data (planned fires with its own schedule math, runs, missed fires, DST
changes, derived downtime); :mod:`kairos.timeline.layout` lays it out and :mod:`kairos.timeline.draw`
draws it as SVG or HTML. This module only parses the command line, asks, and prints or writes.

The verb is in ``kairos.app.RAW_VERBS`` (its colour codes must reach the terminal), so it cleans
every text that comes from a task (names) itself, with :func:`kairos.timeline.document.cleaned` (as
``kairos ui``'s Timeline view, which draws the same chart, does).

The chart's answer is laid out as parsed JSON, not validated into its model first (that was about half of
the command with 1,000 tasks: :mod:`kairos.timeline.document` has the figures); an answer the layout cannot
read is one clear error naming the key, which the model (``TimelineDoc``) tells only then. ``--json`` passes
kairosd's answer on as it came.

Only argparse and typing at the top (``kairos.app`` imports every verb module for ``--help``).
Must not import asyncio or any kairosd module that does I/O; pydantic only for an answer of another shape.
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import make_parser, whole_number

FILE_WIDTH = 120  # columns of an --svg or --html picture unless --width says otherwise
TARGET_KINDS = ("inbox", "session", "shell", "agent", "webhook")


def register(subparsers: Any) -> None:
    parser = make_parser(
        subparsers,
        "timeline",
        "a chart of fires over time, one row per task",
        "Draw the fires of each task over a window (default: the past 24 hours and the next 24): what will "
        "fire (planned times, jitter included) and what did, by outcome (delivered, failed, caught up late, "
        "skipped, missed while kairosd was down), with now, DST changes of each task's zone and the spans "
        "kairosd was down (derived from its missed fires: it does not record its downtime). A cell that holds "
        "several fires shows how many. Without colour (NO_COLOR, or a pipe) it uses plain symbols and a "
        "legend. --from/--to take ISO 8601 times (without an offset: your local zone); --days N makes the "
        "window N days either side of now, or N days from --from (before --to).",
        """
        kairos timeline
        kairos timeline --days 7 --name backup
        kairos timeline 3f2a9c1d --from 2026-03-28T00:00 --to 2026-03-30T00:00
        kairos timeline --project ~/src/app --svg timeline.svg
        kairos timeline --json | jq '.tasks[].planned | length'
        """,
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="only these tasks")
    parser.add_argument("--from", dest="start", metavar="TIME", help="the window's start (ISO 8601)")
    parser.add_argument("--to", dest="end", metavar="TIME", help="the window's end (ISO 8601)")
    parser.add_argument("--days", type=whole_number, metavar="N", help="N days either side of now (default 1)")
    parser.add_argument("--target", choices=TARGET_KINDS, help="only tasks with this kind of target")
    parser.add_argument("--project", metavar="DIR", help="only tasks delivered to or run in DIR (or below)")
    parser.add_argument("--name", metavar="TEXT", help="only tasks whose name contains TEXT (any case)")
    parser.add_argument("--cap", type=whole_number, metavar="N", help="at most N fires per task (default 2000)")
    parser.add_argument("--width", type=whole_number, metavar="COLS", help="columns to fit (default: the terminal)")
    parser.add_argument("--tz", metavar="ZONE", help="zone of the time axis (default: your local zone)")
    files = parser.add_mutually_exclusive_group()
    files.add_argument("--svg", metavar="FILE", help="write the picture as SVG to FILE")
    files.add_argument("--html", metavar="FILE", help="write the picture as an HTML page to FILE")
    parser.set_defaults(handler=cmd_timeline)


def _instant(text: str | None, zone: str, flag: str) -> str | None:
    """``text`` as an ISO 8601 instant with an offset (a time without one is in ``zone``)."""
    if text is None:
        return None
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from kairosd.core.errors import UsageError

    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"{flag} takes an ISO 8601 time such as 2026-03-29T08:00, not {text[:60]!r}") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=ZoneInfo(zone))
    return value.isoformat()


def query_for(args: argparse.Namespace, zone: str) -> dict[str, str]:
    """The ``GET /v1/timeline`` query for the command line."""
    import os

    from kairosd.core.errors import UsageError

    query: dict[str, str] = {}
    for key, value in (("from", _instant(args.start, zone, "--from")), ("to", _instant(args.end, zone, "--to"))):
        if value is not None:
            query[key] = value
    if args.days is not None:
        if not 1 <= args.days <= 62:
            raise UsageError(f"--days takes 1 to 62, not {args.days}")
        if args.start is not None and args.end is not None:
            raise UsageError("--days with both --from and --to: give two of the three")
        query["span"] = str(args.days * 86400)
    if args.ids:
        query["ids"] = ",".join(args.ids)
    if args.target:
        query["target"] = args.target
    if args.project:
        query["project"] = os.path.abspath(os.path.expanduser(args.project))
    if args.name:
        query["name"] = args.name
    if args.cap is not None:
        query["cap"] = str(args.cap)
    return query


def use_colour() -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (any value) or TERM=dumb."""
    import os
    import sys

    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def cmd_timeline(args: argparse.Namespace) -> int:
    from kairos.commands.common import client, local_zone
    from kairos.output import print_json, terminal_columns, write_lines
    from kairosd.core.protocol import route_path

    zone = args.tz or local_zone()
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(zone)
    except (ValueError, KeyError, OSError):
        from kairosd.core.errors import UsageError

        raise UsageError(f"--tz: unknown zone {zone[:60]!r} (an IANA name such as Europe/Berlin)") from None
    query = query_for(args, zone)
    if args.json:
        import sys

        out = getattr(sys.stdout, "buffer", None)
        if sys.stdout.isatty() or out is None:
            print_json(client().call("GET", route_path("timeline"), query=query))
            return 0
        # To a pipe: kairosd's own compact (ASCII-escaped) document, as print_json would write it, without
        # parsing and encoding a week of 1,000 tasks' 50,000 instants again (as list --json does).
        from kairos.client import parse_answer

        data = client().call_raw("GET", route_path("timeline"), query=query)
        if not data.startswith(b'{"from":'):
            print_json(parse_answer(data))  # shaped otherwise (another server): parsed, then printed
            return 0
        sys.stdout.flush()
        out.write(data if data.endswith(b"\n") else data + b"\n")
        out.flush()
        return 0
    from kairos.timeline.document import chart, chart_query, cleaned
    from kairos.timeline.layout import render_text

    path = args.svg or args.html
    width = args.width or (FILE_WIDTH if path else terminal_columns())
    doc = cleaned(client().call("GET", route_path("timeline"), query=chart_query(width, query)))
    laid_out = chart(doc, width, zone)
    if path:
        from pathlib import Path

        from kairos.timeline.draw import render_html, render_svg

        Path(path).write_text((render_svg if args.svg else render_html)(laid_out), encoding="utf-8")
        from kairos.output import clean

        print(f"wrote {clean(path)} ({len(laid_out.rows)} task(s))")
        return 0
    write_lines(render_text(laid_out, use_colour()))
    return 0
