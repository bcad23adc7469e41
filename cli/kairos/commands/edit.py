"""``kairos edit ID``: change a task in place (schedule, prompt, target, name, jitter, catch-up, overlap,
zone); its id and its runs in history stay. kairosd validates the new task as it does an added one and
replaces the old one in one step (``PATCH /v1/tasks/{id}``), or changes nothing.

The options are ``kairos add``'s, and checked here by the same helpers (:mod:`kairos.commands.add`).
Must not import pydantic, asyncio or any kairosd module that does I/O.
"""

from __future__ import annotations

import argparse

from kairos.commands.add import CATCH_UP, FALLBACKS, OVERLAP, TargetChoices
from kairos.commands.common import client, make_parser, seconds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TARGET_OPTIONS = (
    "target", "session", "cmd", "agent", "model", "cwd", "timeout",
    "session_target", "project", "user_session", "session_agent", "fallback",
)  # fmt: skip


def register(subparsers: Any) -> None:
    edit = make_parser(
        subparsers,
        "edit",
        "change a task in place",
        "Change a task's schedule, prompt, target, name, jitter, catch-up, overlap or zone. The task keeps "
        "its id and its history. Only what is given changes; a new schedule (--cron, --every, --in or --at) "
        "replaces the old one and counts from now (slots of the old one are not missed). A new target "
        "replaces the whole target (give all its options). The result is checked as 'kairos add' checks a "
        "new task, and nothing changes if it is refused.",
        """
        kairos edit 3f2a --cron '30 8 * * 1-5'
        kairos edit 3f2a --every 2h --jitter claude
        kairos edit 3f2a --prompt 'summarise open PRs and issues' --name triage
        kairos edit 3f2a --cmd 'make report' --cwd ~/proj --catch-up skip
        """,
    )
    edit.add_argument("id", metavar="ID", help="task id, or a unique prefix of it (at least 4 characters)")
    when = edit.add_argument_group("schedule (at most one)")
    when.add_argument("--cron", metavar="EXPR", help="a cron expression (quoted as one argument) or an @macro")
    when.add_argument("--every", metavar="INTERVAL", help="repeat: 90s, 5m, 2h, 1d")
    when.add_argument("--in", dest="in_", metavar="DURATION", help="once, this long from now")
    when.add_argument("--at", metavar="TIME", help="once, at HH:MM[:SS] (next such time) or ISO 8601")
    when.add_argument("--once", action="store_true", help="with --cron: fire once, then remove the task")
    when.add_argument("--tz", metavar="ZONE", help="IANA zone of the schedule")
    what = edit.add_argument_group("what and where")
    what.add_argument("--prompt", metavar="TEXT", help="the new prompt ('-': read it from stdin)")
    what.add_argument("--name", metavar="NAME", help="a short name shown instead of the prompt")
    what.add_argument("--target", metavar="KIND", choices=TargetChoices(), help="as in kairos add")
    what.add_argument("--session", metavar="NAME", help="inbox session")
    what.add_argument("--cmd", metavar="COMMAND", help="shell target: the command (implies --target shell)")
    what.add_argument("--agent", metavar="NAME", help="agent target (implies --target agent)")
    what.add_argument("--model", metavar="MODEL", help="agent target: the agent's model")
    what.add_argument("--cwd", metavar="DIR", help="shell or agent target: working directory")
    what.add_argument(
        "--timeout", type=seconds, metavar="DURATION", help="shell, agent or webhook target: give up after this long"
    )
    what.add_argument("--session-target", metavar="ID", help="a live agent session (as in kairos add)")
    what.add_argument("--project", metavar="PATH", help="any live session inside PATH (as in kairos add)")
    what.add_argument("--user-session", action="store_true", default=None, help="the most recently active session")
    what.add_argument("--session-agent", metavar="NAME", help="only sessions of this agent CLI")
    what.add_argument("--fallback", choices=FALLBACKS, help="when no such session is live (as in kairos add)")
    how = edit.add_argument_group("behaviour")
    how.add_argument("--jitter", metavar="none|claude|max:DUR", help="as in kairos add")
    how.add_argument("--catch-up", choices=CATCH_UP, help="as in kairos add (see kairos add --help)")
    how.add_argument("--overlap", choices=OVERLAP, help="as in kairos add")
    edit.set_defaults(handler=cmd_edit)


def build_edit_request(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body: only what was given, each checked as ``kairos add`` checks it."""
    from kairos.commands import add
    from kairosd.core.errors import UsageError

    body: dict[str, Any] = {}
    given = [k for k in ("cron", "every", "in_", "at") if getattr(args, k) is not None]
    if len(given) > 1:
        raise UsageError(f"give at most one schedule, not {', '.join('--' + k.rstrip('_') for k in given)}")
    if args.once and args.cron is None:
        raise UsageError("--once goes with --cron (--in and --at are one-shots already)")
    if args.cron is not None:
        body["cron"] = add._check_cron([args.cron])
        if args.once:
            body["once"] = True
    elif args.every is not None:
        from kairosd.core.schedule.durations import every_to_cron

        every_to_cron(args.every)
        body["every"] = args.every
    elif args.in_ is not None:
        from kairosd.core.schedule.durations import parse_duration

        parse_duration(args.in_)
        body["in"] = args.in_
    elif args.at is not None:
        body["at"] = args.at
    if args.tz:
        body["tz"] = args.tz
    if args.prompt is not None:
        body["prompt"] = add._read_prompt([args.prompt])
    if any(getattr(args, k) is not None for k in TARGET_OPTIONS):
        body["target"] = add._target(args)
    if args.jitter is not None:
        from kairosd.core.schedule.jitter import parse_jitter

        body["jitter"] = parse_jitter(args.jitter).spec
    if args.catch_up:
        body["catch_up"] = args.catch_up
    if args.overlap:
        body["overlap"] = args.overlap
    if args.name:
        from kairosd.core.bounds import MAX_NAME_CHARS, check_text

        body["name"] = check_text(args.name, "--name", MAX_NAME_CHARS)
    if not body:
        raise UsageError("nothing to change: give a schedule, --prompt, a target, --name, --jitter, --catch-up, ...")
    return body


def cmd_edit(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.tasks import describe, fire_lines, task_path
    from kairos.output import print_json
    from kairosd.core.wire.tasks import EditDoc

    doc = client().call("PATCH", task_path(args.id), build_edit_request(args))
    task = read(EditDoc, doc, "PATCH /v1/tasks/ID").task
    if args.json:
        print_json({"task": doc["task"]})
        return 0
    name = f" ({task.name})" if task.name else ""
    print(f"edited {task.id}{name}: {', '.join(task.changed)} changed; {describe(task)}")
    fires = fire_lines(task)[:3]
    print("  next: " + ("\n        ".join(fires) if fires else "(no fire time ahead)"))
    if task.note:
        print(f"  note: {task.note}")
    return 0
