"""``kairos status``: whether kairosd fires (and why not), its tasks, the next fire, where it lives.

:func:`print_status` is shared with ``kairos daemon status``.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import pydantic, asyncio or any kairosd module that does I/O.
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import make_parser
from kairosd.core.protocol import route_path


def register(subparsers: Any) -> None:
    status = make_parser(
        subparsers,
        "status",
        "daemon status",
        "Show whether kairosd fires (and why not), its tasks, the next fire and where it lives.",
        "kairos status\n  kairos status --json | jq .next_fire",
    )
    status.set_defaults(handler=cmd_status)


def print_status(doc: dict[str, Any]) -> None:
    """The readable form of GET /v1/status (also used by `kairos daemon status`)."""
    from kairos.commands.common import local_zone
    from kairos.output import fmt_seconds, fmt_time

    if doc.get("disabled_reason"):
        print(f"NOT FIRING: {doc['disabled_reason']}")
    if doc.get("store_error"):
        print(f"STORE PROBLEM: {doc['store_error']}")
    state = "running" if doc.get("enabled", True) else "running, firing disabled"
    uptime = fmt_seconds(doc.get("uptime_s"))
    uptime = "<1s" if uptime == "-" else uptime
    print(f"kairosd {doc.get('version', '?')} {state} (pid {doc.get('pid', '?')}, up {uptime})")
    nxt = doc.get("next_fire")
    next_text = f"{fmt_time(nxt.get('planned_for'), local_zone())} (task {nxt.get('task_id')})" if nxt else "-"
    lines = [
        ("tasks", f"{doc.get('tasks', 0)} ({doc.get('paused', 0)} paused)"),
        ("running", f"{doc.get('deliveries_running', 0)} ({doc.get('queued', 0)} queued)"),
        ("next fire", next_text),
        ("zone", doc.get("default_tz", "-")),
        ("socket", doc.get("socket", "-")),
        ("store", doc.get("store", "-")),
    ]
    background = doc.get("background")
    if isinstance(background, dict):
        counts = background.get("tasks") or {}
        slots = background.get("slots") or {}
        busy = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s in ("running", "idle", "interrupted"))
        lines.append(
            ("background", f"{busy or 'nothing running'}; slots {slots.get('in_use', 0)}/{slots.get('limit', '?')}")
        )
    if doc.get("last_clock_jump"):
        lines.append(("clock jump", str(doc["last_clock_jump"])))
    quarantine = doc.get("quarantine")
    if isinstance(quarantine, dict) and quarantine.get("count"):
        where = f"{quarantine['count']} task(s) in {quarantine.get('path')} (kairos list --problems)"
        lines.append(("set aside", where))
    for label, value in lines:
        print(f"{label + ':':<11} {value}")


def cmd_status(args: argparse.Namespace) -> int:
    from kairos.commands.common import client
    from kairos.output import print_json

    doc = client().call("GET", route_path("status"))
    if args.json:
        print_json(doc)
    else:
        print_status(doc)
    return 0
