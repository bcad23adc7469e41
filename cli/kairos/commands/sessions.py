"""``kairos sessions``: live agent sessions; and the help entry of ``kairos hook``.

``kairos hook`` itself never comes through here: ``kairos.__main__`` hands it to
:mod:`kairos.integrations.hook` before argparse is imported. It is registered so that
``kairos --help`` and the shell completions list it.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O; pydantic only inside ``cmd_sessions``, which
reads kairosd's answer as its model (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_wide_flag, make_parser
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.sessions import SessionView


def register(subparsers: Any) -> None:
    # app.VERBS maps each of our verbs to this module, so we may be called once per verb.
    if "sessions" in subparsers.choices:
        return
    sessions = make_parser(
        subparsers,
        "sessions",
        "live agent sessions",
        "List the agent sessions kairosd knows are live (registered by their SessionStart hook, "
        "or seen by any hook within KAIROS_SESSION_TTL, default 24h), most recently active first, "
        "with the prompts waiting for their next turn. Tasks reach them with --session-target, "
        "--project or --user-session (see kairos add --help).",
        "kairos sessions\n  kairos sessions --json | jq -r '.sessions[].session_id'",
    )
    add_wide_flag(sessions)
    sessions.set_defaults(handler=cmd_sessions)

    hook = subparsers.add_parser(
        "hook",
        help="entry point for agent CLIs' hooks (JSON on stdin)",
        description="Called by agent CLIs' hooks with the hook's JSON on stdin; see README, 'Hooks'. "
        "AGENT: claude, copilot, codex, gemini. EVENT: the agent's own event name (SessionStart, "
        "UserPromptSubmit, Stop, SessionEnd; Copilot's sessionStart, userPromptSubmitted, agentStop, "
        "sessionEnd; Gemini's BeforeAgent, AfterAgent), or 'wait' for Claude Code's asyncRewake "
        "waiter. It exits 0 without output whenever anything goes wrong.",
        epilog="examples:\n  kairos hook claude Stop\n  kairos hook gemini AfterAgent\n"
        "  kairos hook claude wait --max-wait 540",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hook.add_argument(
        "agent",
        metavar="AGENT",
        choices=("claude", "copilot", "codex", "gemini"),
        help="the agent CLI calling the hook",
    )
    hook.add_argument(
        "event", metavar="EVENT", help="the hook event, in the agent's own name (Stop, SessionStart, ...)"
    )
    hook.add_argument("--max-wait", type=float, metavar="SECONDS", help="wait only: the waiter's lifetime")
    hook.set_defaults(handler=cmd_hook)


def cmd_hook(args: argparse.Namespace) -> int:
    # Only reached when app.run is called directly (tests, completion); the console script goes straight
    # to kairos.integrations.hook.
    from kairos.integrations.hook import main

    extra = ["--max-wait", str(args.max_wait)] if args.max_wait is not None else []
    return main([args.agent, args.event, *extra])


def cmd_sessions(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import client, print_records, printed_json
    from kairos.output import fmt_time
    from kairosd.core.wire.sessions import SessionsDoc

    def row(s: SessionView, zone: str) -> list[str]:
        # last_active as the daemon wrote it, not in the user's zone
        return [s.agent, s.session_id, fmt_time(s.last_active), str(s.pending), s.cwd or "-"]

    doc = client().call("GET", route_path("sessions"))
    sessions = read(SessionsDoc, doc, "GET /v1/sessions").sessions
    if not printed_json(args, doc):
        empty = "no live sessions (agents register through kairos' hooks: see kairos integrate)"
        print_records(sessions, empty, ["AGENT", "SESSION", "LAST ACTIVE", "PENDING", "CWD"], row)
    return 0
