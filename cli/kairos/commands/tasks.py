"""``kairos add|list|show|rm|pause|resume|run``: manage scheduled tasks through kairosd.

``kairos.app`` imports the verb module on every call, so this module imports
only argparse and the CLI's own cheap helpers at the top (not even typing);
the client, the schedule math and everything else are imported inside the
handlers. Must not import pydantic, asyncio or any kairosd module that does I/O
(allowed: kairosd.protocol, errors, paths, clock and the pure kairosd.schedule.*).
"""

from __future__ import annotations

import argparse

from kairos.commands.common import client, local_zone, make_parser
from kairos.output import fmt_seconds, fmt_time, print_fields, print_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

NEXT_SHOWN = 3  # fire times printed after `add`
SCHEDULE_KINDS = ("every", "in_", "at")
CATCH_UP = ("skip", "once", "all", "surface")
OVERLAP = ("skip", "queue")
TARGET_KINDS = ("inbox", "shell", "agent", "session")
FALLBACKS = ("inbox", "headless", "drop")


class TargetChoices:
    """``--target``'s choices: the plain kinds and ``webhook:URL`` (shell completion offers ``webhook:``)."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and (value in TARGET_KINDS or value == "webhook" or value.startswith("webhook:"))

    def __iter__(self) -> Iterator[str]:
        return iter((*TARGET_KINDS, "webhook:"))


# ---- helpers ----------------------------------------------------------------


def task_path(task_id: str, action: str = "") -> str:
    from kairosd.protocol import quote

    # Quote: an id typed by a person must not be able to reach another route.
    return f"/tasks/{quote(task_id)}" + (f"/{action}" if action else "")


# ---- registration ---------------------------------------------------------


def register(subparsers: Any) -> None:
    # app.VERBS maps each of our verbs to this module, so we may be called once per verb.
    if "add" in subparsers.choices:
        return
    _register_add(subparsers)

    lst = make_parser(
        subparsers,
        "list",
        "list tasks",
        "List every task with its next planned fire time (in your local zone), schedule, target and name or prompt.",
        """
        kairos list
        kairos ls --json | jq -r '.tasks[].id'
        """,
        aliases=["ls"],
    )
    lst.set_defaults(handler=cmd_list)

    show = make_parser(
        subparsers,
        "show",
        "show one task in full",
        "Show every field of a task and its next five fire times.",
        "kairos show 3f2a9c1d",
    )
    show.add_argument("id", metavar="ID", help="task id (8 hex characters)")
    show.set_defaults(handler=cmd_show)

    rm = make_parser(
        subparsers,
        "rm",
        "remove tasks",
        "Remove one or more tasks. Ids are removed in order; the first error stops the rest.",
        "kairos rm 3f2a9c1d\n  kairos rm 3f2a9c1d 0b1c2d3e",
    )
    rm.add_argument("ids", nargs="+", metavar="ID", help="task id(s)")
    rm.set_defaults(handler=cmd_rm)

    pause = make_parser(
        subparsers,
        "pause",
        "stop a task from firing",
        "Pause a task: it keeps its schedule but does not fire until resumed.",
        "kairos pause 3f2a9c1d",
    )
    pause.add_argument("id", metavar="ID")
    pause.set_defaults(handler=cmd_pause)

    resume = make_parser(
        subparsers,
        "resume",
        "let a paused task fire again",
        "Resume a paused task. Fires that fell in the pause are not counted as missed.",
        "kairos resume 3f2a9c1d",
    )
    resume.add_argument("id", metavar="ID")
    resume.set_defaults(handler=cmd_resume)

    run = make_parser(
        subparsers,
        "run",
        "fire a task now",
        "Fire a task now, outside its schedule (the schedule is unchanged). "
        "Prints the run id; see the outcome with 'kairos history ID'.",
        "kairos run 3f2a9c1d",
    )
    run.add_argument("id", metavar="ID")
    run.set_defaults(handler=cmd_run)


def _register_add(subparsers: Any) -> None:
    add = make_parser(
        subparsers,
        "add",
        "schedule a prompt",
        "Schedule a prompt. The schedule is exactly one of: a cron expression (the first "
        "argument, its 5 fields quoted as ONE argument, or an @macro), --every, --in or --at. "
        "With --every/--in/--at every argument is the prompt. A prompt of '-' is read from stdin.",
        """
        kairos add '0 9 * * mon-fri' 'summarise open PRs'
        kairos add @daily --name digest 'write the daily digest'
        kairos add --every 30m 'check the CI of this branch'
        kairos add --in 90s 'remind me to push'
        kairos add --at 17:30 --session work 'stand-up notes'
        kairos add '0 3 * * *' --once 'run the migration dry-run'
        kairos add --every 1h --target shell --cmd 'notify-send kairos tick' tick
        kairos add '0 7 * * *' --agent claude --cwd ~/src/app 'triage the new issues'
        kairos add --in 30m --project . 'check whether the build is green'
        kairos add --every 2h --user-session --fallback drop 'stretch and drink water'
        kairos add --at 16:00 --session-target 6f1c2d3e-... --fallback headless 'write the summary'
        git log -1 | kairos add --in 1h -
        """,
        usage="kairos add [options] [CRON] PROMPT...",
    )
    add.add_argument("words", nargs="*", metavar="[CRON] PROMPT", help="cron expression (quoted) and prompt")
    when = add.add_argument_group("schedule (default: the first argument is a cron expression)")
    when.add_argument("--every", metavar="INTERVAL", help="repeat: 90s, 5m, 2h, 1d (rounded to what cron can do)")
    when.add_argument("--in", dest="in_", metavar="DURATION", help="once, this long from now: 90s, 20m, 1h30m")
    when.add_argument("--at", metavar="TIME", help="once, at HH:MM[:SS] (next such time) or ISO 8601")
    when.add_argument("--once", action="store_true", help="fire the cron expression once, then remove the task")
    when.add_argument("--tz", metavar="ZONE", help="IANA zone of the schedule (default: your local zone)")
    where = add.add_argument_group("target")
    where.add_argument(
        "--target",
        metavar="KIND",
        choices=TargetChoices(),
        help="where the prompt goes: inbox (default), shell, agent, session (a live agent session, see "
        "below), or webhook:URL (a signed POST; the key is [webhook] in config.toml)",
    )
    where.add_argument(
        "--session",
        metavar="NAME",
        help="inbox session (default: 'default'); for a live agent session see --session-target",
    )
    where.add_argument(
        "--cmd",
        metavar="COMMAND",
        help="shell target: command split like a shell would (shlex) but run WITHOUT a shell; "
        "write sh -c '...' for pipes or variables. Implies --target shell",
    )
    where.add_argument(
        "--agent",
        metavar="NAME",
        help="agent target: run this agent headlessly on each fire (claude, codex, ...). Implies --target agent",
    )
    where.add_argument("--model", metavar="MODEL", help="agent target: the agent's model")
    where.add_argument("--cwd", metavar="DIR", help="shell or agent target: working directory (made absolute here)")
    where.add_argument("--timeout", type=float, metavar="SECONDS", help="shell or agent target: kill after this long")
    live = add.add_argument_group(
        "live session target (--session-target, --project or --user-session; each implies --target session)",
        "The prompt goes into a live agent session at its next turn, through kairos' hooks "
        "(see kairos sessions). --session above names an inbox, not an agent session.",
    )
    scope = live.add_mutually_exclusive_group()
    scope.add_argument("--session-target", metavar="ID", help="the live agent session with this session id")
    scope.add_argument(
        "--project", metavar="PATH", help="any live session whose working directory is inside PATH (made absolute)"
    )
    scope.add_argument("--user-session", action="store_true", help="the most recently active live session")
    live.add_argument("--session-agent", metavar="NAME", help="only sessions of this agent CLI (claude, codex, ...)")
    live.add_argument(
        "--fallback",
        choices=FALLBACKS,
        help="when no such session is live, or it ends first: inbox (default), headless (run the agent "
        "in the background) or drop (recorded as skipped)",
    )
    how = add.add_argument_group("behaviour")
    how.add_argument("--jitter", metavar="none|claude|max:DUR", help="spread fires out (default: none)")
    how.add_argument("--expires", metavar="DAYS|never", help="remove a recurring task after DAYS days")
    how.add_argument("--permanent", action="store_true", help="never expire")
    how.add_argument("--catch-up", choices=CATCH_UP, help="fires missed while kairosd was down")
    how.add_argument("--overlap", choices=OVERLAP, help="a fire while the previous run still runs")
    how.add_argument("--name", metavar="NAME", help="a short name shown instead of the prompt")
    add.set_defaults(handler=cmd_add)
    _allow_intermixed(add)


def _allow_intermixed(parser: argparse.ArgumentParser) -> None:
    """Let options sit between the cron expression and the prompt words.

    Plain argparse stops filling a ``nargs="*"`` positional at the first option,
    so ``add '0 3 * * *' --once 'dry run'`` would fail. The parent parser calls
    ``parse_known_args`` on this subparser; route that to the intermixed parser,
    whose own inner calls must reach the plain method again.
    """
    plain = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        setattr(parser, "parse_known_args", plain)  # noqa: B010 - shadowing a method on one instance
        try:
            return parser.parse_known_intermixed_args(args, namespace)
        finally:
            setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010


# ---- add ------------------------------------------------------------------


def _read_prompt(words: list[str]) -> str:
    import sys

    from kairosd.errors import UsageError

    text = sys.stdin.read() if words == ["-"] else " ".join(words)
    if not text.strip():
        raise UsageError("a task needs a non-empty prompt (give it after the schedule, or '-' for stdin)")
    return text.strip()


def _check_cron(words: list[str]) -> str:
    """The cron expression in ``words[0]``, validated here for a fast, clear error."""
    from kairosd.errors import CronSyntaxError, UsageError
    from kairosd.schedule.cron import parse_cron

    if not words:
        raise UsageError("give a schedule and a prompt: kairos add '0 9 * * 1-5' PROMPT (or --every/--in/--at)")
    text = words[0]
    try:
        parse_cron(text)
    except CronSyntaxError as exc:
        if len(words) >= 5 and " " not in text.strip() and not text.startswith("@"):
            # `kairos add 0 9 * * * prompt`: the shell split (and maybe globbed) the fields.
            joined = " ".join(words[:5])
            raise UsageError(f"quote the cron expression as one argument: kairos add '{joined}' PROMPT...") from None
        raise UsageError(
            f"{text!r} is not a cron expression ({exc.message}); the first argument is the schedule "
            "unless --every, --in or --at is given"
        ) from None
    return text


def _target(args: argparse.Namespace) -> dict[str, Any]:
    import os
    import shlex

    from kairosd.errors import UsageError

    shell_opts = [o for o, v in (("--cmd", args.cmd), ("--cwd", args.cwd), ("--timeout", args.timeout)) if v]
    agent_opts = [o for o, v in (("--agent", args.agent), ("--model", args.model)) if v]
    if args.cmd and args.agent:
        raise UsageError("give --cmd (a shell target) or --agent (an agent target), not both")
    live_opts = [
        o
        for o, v in (
            ("--session-target", args.session_target),
            ("--project", args.project),
            ("--user-session", args.user_session),
            ("--session-agent", args.session_agent),
            ("--fallback", args.fallback),
        )
        if v
    ]
    if args.target == "session" or (args.target is None and live_opts):
        return _session_target(args, shell_opts + agent_opts)
    if live_opts:
        raise UsageError(f"{', '.join(live_opts)} only go(es) with a live session target, not --target {args.target}")
    if args.target is not None and (args.target == "webhook" or args.target.startswith("webhook:")):
        return _webhook_target(args, shell_opts + agent_opts)
    if args.target is not None and args.target not in TARGET_KINDS:
        raise UsageError(f"--target must be one of {', '.join(TARGET_KINDS)} or webhook:URL, not {args.target!r}")
    kind = args.target or ("shell" if args.cmd else "agent" if args.agent else "inbox")
    if kind == "inbox":
        if shell_opts or agent_opts:
            raise UsageError(f"{', '.join(shell_opts + agent_opts)} only go(es) with --target shell or agent")
        return {"kind": "inbox", "session": args.session or "default"}
    if args.session:
        raise UsageError(f"--session is for the inbox target; the {kind} target has none")
    if kind == "agent":
        if args.cmd:
            raise UsageError("--cmd is for the shell target; an agent target takes --agent NAME")
        if not args.agent:
            raise UsageError("--target agent needs --agent NAME (claude, copilot, codex, gemini, opencode, ...)")
        target: dict[str, Any] = {"kind": "agent", "agent": args.agent}
        if args.model:
            target["model"] = args.model
    else:
        if agent_opts:
            raise UsageError(f"{', '.join(agent_opts)} only go(es) with --target agent")
        if not args.cmd:
            raise UsageError("--target shell needs --cmd 'PROGRAM ARGS...'")
        try:
            argv = shlex.split(args.cmd)
        except ValueError as exc:
            raise UsageError(f"--cmd: {exc}") from None
        if not argv:
            raise UsageError("--cmd is empty")
        target = {"kind": "shell", "argv": argv}
    if args.cwd:
        # The daemon's working directory is not the user's: resolve it here.
        target["cwd"] = os.path.abspath(os.path.expanduser(args.cwd))
    if args.timeout is not None:
        if not args.timeout > 0:
            raise UsageError("--timeout must be more than 0 seconds")
        target["timeout_s"] = args.timeout
    return target


def _session_target(args: argparse.Namespace, other_opts: list[str]) -> dict[str, Any]:
    """``--session-target ID | --project PATH | --user-session`` (with ``--session-agent``, ``--fallback``)."""
    import os

    from kairosd.errors import UsageError

    if args.session:
        raise UsageError("--session names an inbox; for a live agent session use --session-target ID")
    if other_opts:
        raise UsageError(f"{', '.join(other_opts)} do(es) not go with a live session target")
    target: dict[str, Any] = {"kind": "session"}
    if args.session_target:
        target["session_id"] = args.session_target
    elif args.project:
        # The daemon's working directory is not the user's: resolve it here.
        target["project"] = os.path.abspath(os.path.expanduser(args.project))
    elif args.user_session:
        target["user"] = True
    else:
        raise UsageError("--target session needs --session-target ID, --project PATH or --user-session")
    if args.session_agent:
        target["agent"] = args.session_agent
    if args.fallback:
        target["fallback"] = args.fallback
    return target


def _webhook_target(args: argparse.Namespace, other_opts: list[str]) -> dict[str, Any]:
    """``--target webhook:URL``: its shape is checked here; kairosd checks the rest (the address when it posts)."""
    from kairosd.errors import UsageError

    url = args.target.partition(":")[2].strip()
    if not url:
        raise UsageError("--target webhook needs the URL: --target webhook:http://127.0.0.1:8080/hook")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"a webhook URL must start with http:// or https://, not {url[:40]!r}")
    extra = [o for o in other_opts if o != "--timeout"] + (["--session"] if args.session else [])
    if extra:
        raise UsageError(f"{', '.join(extra)} do(es) not go with a webhook target")
    target: dict[str, Any] = {"kind": "webhook", "url": url}
    if args.timeout is not None:
        if not args.timeout > 0:
            raise UsageError("--timeout must be more than 0 seconds")
        target["timeout_s"] = args.timeout
    return target


def build_add_request(args: argparse.Namespace) -> dict[str, Any]:
    """The POST /v1/tasks body for ``args``; raises UsageError for what we can check here."""
    from kairosd.errors import UsageError

    given = [k for k in SCHEDULE_KINDS if getattr(args, k) is not None]
    if len(given) > 1:
        flags = ", ".join("--" + k.rstrip("_") for k in given)
        raise UsageError(f"give only one schedule, not {flags}")
    body: dict[str, Any] = {}
    words = list(args.words)
    if not given:
        body["cron"] = _check_cron(words)
        words = words[1:]
        if args.once:
            body["once"] = True
    else:
        if args.once:
            raise UsageError("--once goes with a cron expression (--in and --at are one-shots already)")
        if args.every is not None:
            from kairosd.schedule.durations import every_to_cron

            every_to_cron(args.every)
            body["every"] = args.every
        elif args.in_ is not None:
            from kairosd.schedule.durations import parse_duration

            parse_duration(args.in_)
            body["in"] = args.in_
        else:
            body["at"] = args.at
    body["prompt"] = _read_prompt(words)
    # Always send the zone: the daemon's environment may have another TZ than this shell.
    body["tz"] = args.tz or local_zone()
    body["target"] = _target(args)
    if args.jitter is not None:
        from kairosd.schedule.jitter import parse_jitter

        body["jitter"] = parse_jitter(args.jitter).spec
    if args.expires is not None:
        body["expires_after_days"] = _expires(args.expires)
    if args.permanent:
        body["permanent"] = True
    if args.catch_up:
        body["catch_up"] = args.catch_up
    if args.overlap:
        body["overlap"] = args.overlap
    if args.name:
        body["name"] = args.name
    return body


def _expires(text: str) -> int | None:
    from kairosd.errors import UsageError

    if text.strip().lower() == "never":
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"--expires takes a whole number of days (1 or more) or 'never', not {text!r}")
    return int(text)


def describe(task: dict[str, Any]) -> str:
    """``At 09:00 on Monday to Friday (Europe/Berlin)``, with ``once`` for one-shot crons."""
    text = str(task.get("explanation") or task.get("schedule") or "?")
    if task.get("cron") and not task.get("recurring", True):
        text += ", once"
    return f"{text} ({task.get('tz', 'UTC')})"


def fire_lines(task: dict[str, Any]) -> list[str]:
    """Planned fire times, with the scheduled time when jitter moved one."""
    lines = []
    for fire in task.get("next_fires") or []:
        planned, scheduled = fire.get("planned_for"), fire.get("scheduled_for")
        line = fmt_time(planned)
        if scheduled and scheduled != planned:
            nominal = fmt_time(scheduled)
            same_day = nominal[:10] == line[:10]
            line += f" (scheduled {nominal[11:19] if same_day else nominal})"
        lines.append(line)
    return lines


def cmd_add(args: argparse.Namespace) -> int:
    from kairos.output import print_json

    body = build_add_request(args)
    task = client().call("POST", "/tasks", body)["task"]
    if args.json:
        print_json({"task": task})
        return 0
    name = f" ({task['name']})" if task.get("name") else ""
    print(f"added {task['id']}{name}: {describe(task)}")
    fires = fire_lines(task)[:NEXT_SHOWN]
    print("  next: " + ("\n        ".join(fires) if fires else "(no fire time ahead)"))
    if task.get("note"):
        print(f"  note: {task['note']}")
    return 0


# ---- list / show ----------------------------------------------------------


def target_text(target: Any) -> str:
    if not isinstance(target, dict):
        return "?"
    if target.get("kind") == "inbox":
        return f"inbox:{target.get('session', 'default')}"
    if target.get("kind") == "shell":
        argv = target.get("argv") or ["?"]
        return f"shell:{str(argv[0]).rsplit('/', 1)[-1]}"
    if target.get("kind") == "agent":
        return f"agent:{target.get('agent', '?')}"
    if target.get("kind") == "webhook":
        return f"webhook:{_url_host(target.get('url'))}"
    if target.get("kind") == "session":
        return session_scope_text(target)
    return str(target.get("kind", "?"))


def session_scope_text(target: dict[str, Any]) -> str:
    """``session:ID``, ``project:PATH`` or ``user-session``, with ``/AGENT`` when one is named."""
    if target.get("session_id"):
        text = f"session:{target['session_id']}"
    elif target.get("project"):
        text = f"project:{target['project']}"
    else:
        text = "user-session"
    return text + (f"/{target['agent']}" if target.get("agent") else "")


def _url_host(url: Any) -> str:
    """The host[:port] of a URL, without its path (webhook paths often carry tokens)."""
    text = str(url or "?")
    rest = text.partition("://")[2] or text
    return rest.split("/", 1)[0].split("?", 1)[0] or "?"


def _next_text(task: dict[str, Any], zone: str) -> str:
    status = task.get("status")
    if status == "paused" or status == "done" or not task.get("planned_for"):
        return str(status or "done")
    return fmt_time(task["planned_for"], zone)


def _schedule_text(task: dict[str, Any], zone: str) -> str:
    text = str(task["cron"]) if task.get("cron") else "once"
    if task.get("cron") and not task.get("recurring", True):
        text += " (once)"
    if task.get("tz") and task["tz"] != zone:
        text += f" {task['tz']}"
    return text


def cmd_list(args: argparse.Namespace) -> int:
    from kairos.output import print_json

    doc = client().call("GET", "/tasks", query=None if args.json else {"view": "summary"})
    if args.json:
        print_json(doc)
        return 0
    tasks = doc.get("tasks") or []
    if not tasks:
        print("no tasks (add one with: kairos add '0 9 * * 1-5' PROMPT)")
        return 0
    zone = local_zone()
    rows = [
        [
            str(t["id"]),
            _next_text(t, zone) + (" *" if t.get("running") else ""),
            _schedule_text(t, zone),
            target_text(t.get("target")),
            t.get("name") or t.get("prompt") or "",
        ]
        for t in tasks
    ]
    print_table(["ID", "NEXT", "SCHEDULE", "TARGET", "NAME/PROMPT"], rows)
    if any(t.get("running") for t in tasks):
        print("* running now")
    return 0


def _expiry_text(task: dict[str, Any]) -> str:
    if not task.get("recurring", True):
        return "- (one-shot: removed after it fires)"
    if task.get("permanent"):
        return "never (permanent)"
    days = task.get("expires_after_days")
    return f"after {days} day(s)" if days else "never"


def _target_detail(target: Any) -> str:
    import shlex

    if isinstance(target, dict) and target.get("kind") == "session":
        return f"live session: {session_scope_text(target)}, fallback {target.get('fallback', 'inbox')}"
    if not isinstance(target, dict) or target.get("kind") not in ("shell", "agent", "webhook"):
        return target_text(target)
    if target["kind"] == "webhook":
        parts = [f"webhook: POST {target.get('url', '?')}"]
    elif target["kind"] == "agent":
        parts = [f"agent: {target.get('agent', '?')}" + (f" (model {target['model']})" if target.get("model") else "")]
    else:
        parts = [f"shell: {shlex.join(str(a) for a in target.get('argv') or [])}"]
    if target.get("cwd"):
        parts.append(f"in {target['cwd']}")
    if target.get("timeout_s") is not None:
        parts.append(f"timeout {fmt_seconds(target['timeout_s'])}")
    return ", ".join(parts)


def cmd_show(args: argparse.Namespace) -> int:
    import json
    import textwrap

    from kairos.output import print_json

    doc = client().call("GET", task_path(args.id))
    if args.json:
        print_json(doc)
        return 0
    task = doc["task"]
    status = str(task.get("status", "?")) + (", running now" if task.get("running") else "")
    schedule = task.get("cron") or task.get("schedule") or "?"
    fields = [
        ("id", task["id"]),
        ("name", task.get("name") or "-"),
        ("status", status),
        ("schedule", schedule),
        ("meaning", describe(task)),
        ("target", _target_detail(task.get("target"))),
        ("jitter", task.get("jitter", "none")),
        ("catch-up", task.get("catch_up", "-")),
        ("overlap", task.get("overlap", "-")),
        ("expires", _expiry_text(task)),
        ("created", f"{fmt_time(task.get('created_at'), task.get('tz'))} by {task.get('created_by', '?')}"),
        ("last fired", fmt_time(task.get("last_fired_at"), task.get("tz"))),
    ]
    if task.get("meta"):
        fields.append(("meta", json.dumps(task["meta"], sort_keys=True)))
    print_fields(fields, 13)
    fires = fire_lines(task) or ["-"]
    print(f"{'next:':<12} " + ("\n" + " " * 13).join(fires))
    print("prompt:")
    print(textwrap.indent(str(task.get("prompt", "")), "  "))
    return 0


# ---- rm / pause / resume / run --------------------------------------------


def cmd_rm(args: argparse.Namespace) -> int:
    from kairos.output import print_json
    from kairosd.errors import KairosError

    api = client()
    removed: list[str] = []
    try:
        for task_id in dict.fromkeys(args.ids):  # a repeated id would fail the second time
            removed.extend(api.call("DELETE", task_path(task_id))["removed"])
            if not args.json:
                print(f"removed {task_id}")
    except KairosError:
        if args.json and removed:
            print_json({"removed": removed})  # say what did happen before the error line
        raise
    if args.json:
        print_json({"removed": removed})
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    return _set_paused(args, "pause")


def cmd_resume(args: argparse.Namespace) -> int:
    return _set_paused(args, "resume")


def _set_paused(args: argparse.Namespace, action: str) -> int:
    from kairos.output import print_json

    doc = client().call("POST", task_path(args.id, action))
    if args.json:
        print_json(doc)
        return 0
    task = doc["task"]
    if action == "pause":
        print(f"paused {task['id']}")
    else:
        planned = task.get("planned_for")
        print(f"resumed {task['id']}" + (f", next: {fmt_time(planned)}" if planned else ", no fire time ahead"))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from kairos.output import print_json

    doc = client().call("POST", task_path(args.id, "run"))
    if args.json:
        print_json(doc)
        return 0
    run = doc["run"]
    line = f"dispatched run {run.get('run_id', '?')} of task {run.get('task_id', args.id)}"
    if run.get("outcome"):
        line += f": {run['outcome']}" + (f" ({run['reason']})" if run.get("reason") else "")
    print(line)
    return 0
