"""``kairos mcp``: run the stdio MCP server that gives agents kairos' tools (see :mod:`kairos.integrations.mcptools`).

An agent CLI starts it from its MCP registration (``kairos integrate AGENT`` writes that) and speaks
MCP over stdin and stdout; a person never needs to run it. The ``mcp`` package is imported only here,
when the verb runs, never on the hook hot path.

Only argparse and typing are imported at the top (``kairos.app`` imports every verb module to build
the parser). Must not import pydantic or asyncio at the top.
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import make_parser


def register(subparsers: Any) -> None:
    mcp = make_parser(
        subparsers,
        "mcp",
        "run the MCP server (stdio) for agent CLIs",
        "Serve kairos' MCP tools over stdin/stdout: cron_create, cron_list, cron_delete, schedule_wakeup, "
        "inbox_list, inbox_ack, task_start, task_status, task_result and task_cancel. Agent CLIs start this "
        "themselves; register it with 'kairos integrate AGENT'. Jobs created through it are persisted by "
        "kairosd (created_by mcp: recurring ones expire after 7 days unless permanent).",
        """
        kairos integrate claude            # registers `kairos mcp` with Claude Code (and the hooks)
        claude mcp add --scope user kairos -- "$(command -v kairos)" mcp   # the same by hand
        """,
    )
    mcp.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    import sys

    if sys.stdin.isatty():
        from kairos.output import error

        # A person typing at an MCP server would only see JSON-RPC errors; say what it is for instead.
        error("kairos mcp speaks MCP on stdin/stdout for an agent CLI; register it with: kairos integrate AGENT")
    from kairosd.system.pydanticplugins import skip_plugin_scan

    skip_plugin_scan()  # before the mcp SDK builds its first validator (it would look for plugins then)
    from kairos.integrations.mcptools import run

    run()
    return 0
