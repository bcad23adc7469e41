"""``kairos cron``: cron tools that need no daemon (next fire times, explain, intervals)."""

from __future__ import annotations

import argparse
from datetime import datetime
from itertools import islice, takewhile
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kairos.commands.common import whole_number
from kairos.output import print_json
from kairosd.core.clock import SystemClock, local_zone_name
from kairosd.core.errors import InvalidTimeError, UsageError

MAX_COUNT = 1000


def register(subparsers: Any) -> None:
    cron = subparsers.add_parser(
        "cron",
        help="cron tools (no daemon needed)",
        description="Check cron expressions the way kairosd will fire them. Needs no daemon.",
        epilog="examples:\n  kairos cron next '0 9 * * mon-fri' -n 3\n  kairos cron explain '*/15 9-17 * * 1-5'\n"
        "  kairos cron every 90m",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = cron.add_subparsers(dest="cron_verb", metavar="COMMAND")

    nxt = verbs.add_parser(
        "next",
        help="print the next fire times",
        description="Print the next N fire times of EXPR as ISO 8601 with UTC offsets, "
        "following Debian cron's day and DST rules in the given zone.",
        epilog="examples:\n  kairos cron next '0 9 * * mon-fri' -n 3\n"
        "  kairos cron next '30 2 * * *' --tz Europe/Berlin --after 2026-10-24T12:00\n"
        "  kairos cron next --every 90m",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nxt.add_argument("expr", nargs="?", metavar="EXPR", help="5-field cron expression or @macro")
    nxt.add_argument("--every", metavar="INTERVAL", help="a /loop-style interval (5m, 2h, 1d) instead of EXPR")
    nxt.add_argument("--tz", metavar="ZONE", help="IANA time zone (default: TZ or the system zone)")
    nxt.add_argument(
        "--after",
        metavar="ISO8601",
        help="start after this time (default: now; no offset = wall time in --tz)",
    )
    nxt.add_argument("-n", type=whole_number, default=5, metavar="N", help="how many fire times (default 5)")
    nxt.add_argument("--json", action="store_true", help="print one JSON document")
    nxt.set_defaults(handler=cmd_next)

    exp = verbs.add_parser(
        "explain",
        help="describe an expression in plain English",
        description="Describe EXPR (5 fields or an @macro) in plain English, or say what is wrong with it, "
        "naming the field and quoting the text.",
        epilog="examples:\n  kairos cron explain '0 9 * * 1-5'      # At 09:00 on Monday to Friday\n"
        "  kairos cron explain @weekly\n  kairos cron explain '0 0 13 * 5' --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument("expr", metavar="EXPR", help="5-field cron expression (quoted) or @macro")
    exp.add_argument("--json", action="store_true", help="print one JSON document")
    exp.set_defaults(handler=cmd_explain)

    every = verbs.add_parser(
        "every",
        help="turn an interval into cron",
        description="Turn a /loop-style interval (90s, 5m, 2h, 1d) into a cron expression. "
        "Intervals cron cannot repeat evenly are rounded to the nearest one it can, with a note.",
        epilog="examples:\n  kairos cron every 5m      # */5 * * * *\n"
        "  kairos cron every 90m     # 0 */2 * * * (rounded)\n  kairos cron every 1d --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    every.add_argument("interval", metavar="INTERVAL", help="a /loop-style interval: 90s, 5m, 2h, 1d, 1h30m")
    every.add_argument("--json", action="store_true", help="print one JSON document")
    every.set_defaults(handler=cmd_every)
    cron.set_defaults(handler=lambda _args: _help(cron))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _zone(name: str | None) -> ZoneInfo:
    zone_name = name or local_zone_name()
    try:
        return ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        from kairosd.core.bounds import zone_hint

        hint = zone_hint(zone_name) or " (use an IANA name such as Europe/Berlin)"
        raise InvalidTimeError(f"unknown time zone {zone_name!r}{hint}") from None


def _after(text: str | None, zone: ZoneInfo) -> datetime:
    """``--after`` as an aware time, inside the years kairos can compute fires from.

    Checked before any arithmetic: a start in 9999 (or in year 1 with an offset) made
    the search for the next fire overflow, and the user saw a traceback.
    """
    from kairosd.core.bounds import EARLIEST_TIME, LATEST_TIME

    if text is None:
        return SystemClock().now()
    try:
        if not (text.isascii() and text.isprintable()):  # fromisoformat skips a NUL, reads "٣" as 3
            raise ValueError(text)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidTimeError(f"--after {text[:40]!r} is not an ISO 8601 time") from None
    if not EARLIEST_TIME.year < parsed.year < LATEST_TIME.year:  # the years ``kairos add --at`` takes
        raise InvalidTimeError(
            f"--after {text[:40]!r} is outside the supported years {EARLIEST_TIME.year + 1}-{LATEST_TIME.year - 1}"
        )
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)


def cmd_next(args: argparse.Namespace) -> int:
    from kairosd.core.bounds import LATEST_STORED_TIME
    from kairosd.core.schedule.cron import parse_cron
    from kairosd.core.schedule.durations import every_to_cron
    from kairosd.core.schedule.explain import explain
    from kairosd.core.schedule.fires import iter_fires

    if (args.expr is None) == (args.every is None):
        raise UsageError("give exactly one of EXPR or --every INTERVAL")
    if not 1 <= args.n <= MAX_COUNT:
        raise UsageError(f"-n must be between 1 and {MAX_COUNT}")
    note = None
    text = args.expr
    if args.every is not None:
        interval = every_to_cron(args.every)
        text, note = interval.cron, interval.note
    expr = parse_cron(text)
    zone = _zone(args.tz)
    after = _after(args.after, zone)
    # Each search looks a century ahead at most, so stopping at LATEST_STORED_TIME keeps every one in range
    # (1,000 fires of the sparsest expression, February 29, from 2199 end near year 6300).
    in_range = takewhile(lambda fire: fire < LATEST_STORED_TIME, iter_fires(expr, after, zone))
    fires = [f.isoformat() for f in islice(in_range, args.n)]
    if args.json:
        print_json(
            {
                "expression": text,
                "normalized": expr.normalized,
                "explanation": explain(text),
                "tz": zone.key,
                "after": after.isoformat(),
                "fires": fires,
                "note": note,
            }
        )
        return 0
    if note:
        import sys

        sys.stderr.write(f"note: {note}\n")
    print("\n".join(fires) if fires else "(no fire time within 100 years)")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from kairosd.core.schedule.cron import parse_cron
    from kairosd.core.schedule.explain import explain

    expr = parse_cron(args.expr)
    text = explain(args.expr)
    if args.json:
        print_json({"expression": args.expr, "normalized": expr.normalized, "explanation": text})
    else:
        print(text)
    return 0


def cmd_every(args: argparse.Namespace) -> int:
    from kairosd.core.schedule.durations import every_to_cron

    interval = every_to_cron(args.interval)
    if args.json:
        print_json(
            {
                "interval": args.interval,
                "cron": interval.cron,
                "requested_s": interval.requested_s,
                "effective_s": interval.effective_s,
                "note": interval.note,
            }
        )
        return 0
    print(interval.cron)
    if interval.note:
        import sys

        sys.stderr.write(f"note: {interval.note}\n")
    return 0
