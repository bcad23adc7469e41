"""``kairos status``: whether kairosd fires (and why not), its tasks, the next fire, where it lives.

:func:`print_status` is shared with ``kairos daemon status``.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O; pydantic only inside ``cmd_status``,
which reads kairosd's answer as its model (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import make_parser
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.status import StatusDoc


def register(subparsers: Any) -> None:
    status = make_parser(
        subparsers,
        "status",
        "daemon status",
        "Show whether kairosd fires (and why not), its tasks, the next fire and where it lives.",
        "kairos status\n  kairos status --json | jq .next_fire",
    )
    status.set_defaults(handler=cmd_status)


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
        direction = "forward" if jump.drift_s > 0 else "back"
        when = fmt_time(jump.at, local_zone())
        by = fmt_seconds(abs(jump.drift_s))
        lines.append(("clock jump", f"{direction} {by} at {when} (suspend or clock change)"))
    if doc.quarantine and doc.quarantine.count:
        where = f"{doc.quarantine.count} task(s) in {doc.quarantine.path} (kairos list --problems)"
        lines.append(("set aside", where))
    for label, value in lines:
        print(f"{label + ':':<11} {value}")


def cmd_status(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import client
    from kairos.output import print_json
    from kairosd.core.wire.status import StatusDoc

    doc = client().call("GET", route_path("status"))
    status = read(StatusDoc, doc, "GET /v1/status")
    if args.json:
        print_json(doc)
    else:
        print_status(status)
    return 0
