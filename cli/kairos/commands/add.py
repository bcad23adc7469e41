"""``kairos add``: turn a command line into a task and schedule it through kairosd.

Everything ``add`` checks before asking the daemon lives here: the schedule (a
cron expression, ``--every``, ``--in`` or ``--at``), the prompt and the target.
As with every verb module, only argparse and the CLI's cheap helpers are
imported at the top; the client and the schedule math inside the handlers.
Must not import pydantic, asyncio or any kairosd module that does I/O.
"""

from __future__ import annotations

import argparse

from kairos.commands.common import client, local_zone, make_parser, seconds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

NEXT_SHOWN = 3  # fire times printed after `add`
SCHEDULE_KINDS = ("cron", "every", "in_", "at")
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


def register(subparsers: Any) -> None:
    if "add" in subparsers.choices:
        return
    add = make_parser(
        subparsers,
        "add",
        "schedule a prompt",
        "Schedule a prompt. The schedule is exactly one of: a cron expression (the first "
        "argument, its 5 fields quoted as ONE argument, or an @macro, or given as --cron EXPR), --every, "
        "--in or --at. With --cron/--every/--in/--at every argument is the prompt. A prompt of '-' is read "
        "from stdin.",
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
    when.add_argument("--cron", metavar="EXPR", help="the cron expression as an option (the same as giving it first)")
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
    where.add_argument(
        "--cwd",
        metavar="DIR",
        help="shell or agent target: working directory (default: the folder you run add in; recorded in the task)",
    )
    where.add_argument(
        "--timeout",
        type=seconds,
        metavar="DURATION",
        help="shell, agent or webhook target: give up after this long (5m, 90s, 600)",
    )
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
    where.add_argument(
        "--no-check",
        action="store_true",
        help="add even if the webhook host does not resolve or the --cmd program is not on kairosd's PATH "
        "now (name lookups down, a program still to be installed); other target checks still refuse",
    )
    how = add.add_argument_group("behaviour")
    how.add_argument(
        "--jitter",
        metavar="none|claude|max:DUR",
        help="spread fires out (default: none). claude: up to 10%% of the period late, at most 15m (so a "
        "daily task fires at +15:00 exactly, every day); one-shots at :00/:30 up to 90s early. max:DUR: "
        "up to DUR late. Seeded from the task id: the same offset after every restart",
    )
    how.add_argument("--expires", metavar="DAYS|never", help="remove a recurring task after DAYS days")
    how.add_argument("--permanent", action="store_true", help="never expire")
    how.add_argument(
        "--catch-up",
        choices=CATCH_UP,
        help="what to do with fires missed while kairosd was down or the machine asleep: skip: record them "
        "in 'kairos missed', fire nothing; once (default for recurring tasks): fire the latest miss once, late, "
        "if within 7 days, record the rest; all: fire the misses (at most the last 10) one after another; "
        "surface (default for one-shots, one-shots only): do not fire, record it in 'kairos missed' and "
        "remove the task. A one-shot paused past its time follows it on resume",
    )
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
            return parser.parse_known_intermixed_args(_glue_values(args), namespace)
        finally:
            setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010


VALUE_OPTIONS = ("--cron", "--in", "--every", "--at", "--expires", "--jitter", "--timeout")


def _glue_values(args: Any) -> Any:
    """``--in -5m`` as ``--in=-5m``: argparse takes a value starting with '-' for an option and answers
    "expected one argument"; glued, the value reaches the duration parser, which says what is wrong."""
    if args is None:
        return None
    out: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        item = items[i]
        if item == "--":
            out.extend(items[i:])
            break
        nxt = items[i + 1] if i + 1 < len(items) else None
        if item in VALUE_OPTIONS and nxt is not None and nxt.startswith("-") and nxt not in ("-", "--"):
            out.append(f"{item}={nxt}")
            i += 2
            continue
        out.append(item)
        i += 1
    return out


def _check_env_zone() -> None:
    """``TZ=Foo/Bar kairos add``: refuse as ``--tz Foo/Bar`` is refused, instead of silently using another zone.

    A POSIX rule string (``EST5EDT,M3.2.0,M11.1.0``, ``<+03>-3``) has no IANA name for kairos
    to pin the task to, so it is refused too, naming the zone kairos would have used.
    """
    from kairosd.core.clock import tz_env_problem
    from kairosd.core.errors import UsageError

    problem = tz_env_problem()
    if problem:
        raise UsageError(f"{problem}; give --tz ZONE, or set TZ to an IANA name")


def _refuse_cron_with(flag: str, words: list[str]) -> None:
    """``kairos add '0 9 * * *' --in 1m y`` would be a one-shot whose prompt is ``0 9 * * * y``."""
    from kairosd.core.errors import CronSyntaxError, UsageError
    from kairosd.core.schedule.cron import parse_cron

    first = words[0].strip() if words else ""
    if not (first.startswith("@") or len(first.split()) == 5):
        return
    try:
        parse_cron(first)
    except CronSyntaxError:
        return
    raise UsageError(f"{first!r} is a cron expression and {flag} is another schedule: give only one")


def _read_prompt(words: list[str]) -> str:
    import sys

    from kairosd.core.bounds import MAX_PROMPT_CHARS, check_text
    from kairosd.core.errors import UsageError

    if words == ["-"]:
        # Bytes, then strict UTF-8: a prompt that is not text would fail at every fire.
        try:
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"the prompt on stdin is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    else:
        text = " ".join(words)
    if not text.strip():
        raise UsageError("a task needs a non-empty prompt (give it after the schedule, or '-' for stdin)")
    return check_text(text.strip(), "the prompt", MAX_PROMPT_CHARS)


def _check_cron(words: list[str], option: bool = False) -> str:
    """The cron expression in ``words[0]``, validated here for a fast, clear error."""
    from kairosd.core.errors import CronSyntaxError, UsageError
    from kairosd.core.schedule.cron import parse_cron

    if not words:
        raise UsageError("give a schedule and a prompt: kairos add '0 9 * * 1-5' PROMPT (or --every/--in/--at)")
    text = words[0]
    try:
        parse_cron(text)
    except CronSyntaxError as exc:
        hint = None if option else _schedule_in_words(words)
        if hint:
            raise UsageError(f"{text!r} is not a cron expression; did you mean: {hint}") from None
        if len(words) >= 5 and " " not in text.strip() and not text.startswith("@"):
            # `kairos add 0 9 * * * prompt`: the shell split (and maybe globbed) the fields.
            joined = " ".join(words[:5])
            raise UsageError(f"quote the cron expression as one argument: kairos add '{joined}' PROMPT...") from None
        if option:
            raise UsageError(f"--cron {text!r} is not a cron expression ({exc.message})") from None
        raise UsageError(
            f"{text!r} is not a cron expression ({exc.message}); the first argument is the schedule "
            "unless --cron, --every, --in or --at is given"
        ) from None
    return text


def _schedule_in_words(words: list[str]) -> str | None:
    """The command a stranger meant by ``kairos add 'in 20m' PROMPT`` (or ``in 20 minutes PROMPT`` unquoted,
    ``'every 2h'``, ``'at 17:30'``): the schedule's words as its option, or None when no reading of the
    words gives a value the option takes ("every weekday at 9" and "every morning" are no duration)."""
    import shlex

    head = words[0].split(None, 1)
    flag = head[0].lower() if head else ""
    if flag not in ("in", "every", "at"):
        return None
    if len(head) == 2:  # 'in 20m' quoted: the value is the rest of the first argument
        readings = [(head[1].strip(), words[1:])]
    else:  # the shell split it: the value is the next word, or the next two ("20 minutes")
        readings = [(" ".join(words[1:3]), words[3:]), (" ".join(words[1:2]), words[2:])]
    for value, rest in readings:
        if rest and _takes(flag, value):
            return f"kairos add --{flag} {shlex.quote(value)} {shlex.quote(' '.join(rest))}"
    return None


def _takes(flag: str, value: str) -> bool:
    """Whether ``--FLAG VALUE`` would be taken (--at's value is checked by kairosd: one word with a digit)."""
    from kairosd.core.errors import KairosError
    from kairosd.core.schedule.durations import every_to_cron, parse_duration

    if not any(c in "0123456789" for c in value):
        return False
    if flag == "at":
        return len(value.split()) == 1
    try:
        parse_duration(value) if flag == "in" else every_to_cron(value)
    except KairosError:
        return False
    return True


def _target(args: argparse.Namespace) -> dict[str, Any]:
    import os
    import shlex

    from kairosd.core.errors import UsageError

    # `is not None`: an empty --cmd is a mistake to name, not an inbox target.
    shell_opts = [
        o for o, v in (("--cmd", args.cmd), ("--cwd", args.cwd), ("--timeout", args.timeout)) if v is not None
    ]
    agent_opts = [o for o, v in (("--agent", args.agent), ("--model", args.model)) if v]
    if args.cmd is not None and args.agent:
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
    kind = args.target or ("shell" if args.cmd is not None else "agent" if args.agent else "inbox")
    if kind == "inbox":
        if shell_opts or agent_opts:
            raise UsageError(_only_with(shell_opts + agent_opts) + "; the inbox target takes none of them")
        return {"kind": "inbox", "session": args.session or "default"}
    if args.session:
        raise UsageError(f"--session is for the inbox target; the {kind} target has none")
    if kind == "agent":
        if args.cmd is not None:
            raise UsageError("--cmd is for the shell target; an agent target takes --agent NAME")
        if not args.agent:
            raise UsageError("--target agent needs --agent NAME (claude, copilot, codex, gemini, opencode, ...)")
        target: dict[str, Any] = {"kind": "agent", "agent": args.agent}
        if args.model:
            target["model"] = args.model
    else:
        if agent_opts:
            raise UsageError(_only_with(agent_opts))
        if args.cmd is None:
            raise UsageError("--target shell needs --cmd 'PROGRAM ARGS...'")
        try:
            argv = shlex.split(args.cmd)
        except ValueError as exc:
            raise UsageError(f"--cmd: {exc}") from None
        if not argv:
            raise UsageError("--cmd is empty: give the command to run, e.g. --cmd 'notify-send kairos'")
        target = {"kind": "shell", "argv": argv}
    # The daemon's working directory is not the user's: resolve it here. Without --cwd the task runs
    # in the folder `add` ran in, as `kairos task start` does, and the folder is recorded in the task.
    target["cwd"] = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else _here()
    if args.timeout is not None:
        if not args.timeout > 0:
            raise UsageError("--timeout must be more than 0 seconds")
        target["timeout_s"] = args.timeout
    return target


# The targets each target option goes with, as the errors name them.
OPTION_TARGETS = {
    "--cmd": "a shell target",
    "--cwd": "a shell or agent target",
    "--timeout": "a shell, agent or webhook target",
    "--agent": "an agent target",
    "--model": "an agent target (--agent NAME)",
}


def _only_with(options: list[str]) -> str:
    """``--model goes only with an agent target (--agent NAME)`` for each misplaced option, in one line."""
    return "; ".join(f"{o} goes only with {OPTION_TARGETS[o]}" for o in options)


def _here() -> str:
    """The folder ``add`` runs in, for a shell or agent target without ``--cwd``."""
    import os

    from kairosd.core.errors import UsageError

    try:
        return os.getcwd()
    except OSError:
        raise UsageError("the current folder is gone (removed?): give the target's folder with --cwd DIR") from None


def _session_target(args: argparse.Namespace, other_opts: list[str]) -> dict[str, Any]:
    """``--session-target ID | --project PATH | --user-session`` (with ``--session-agent``, ``--fallback``)."""
    import os

    from kairosd.core.errors import UsageError

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
    from kairosd.core.errors import UsageError

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
    from kairosd.core.errors import UsageError

    given = [k for k in SCHEDULE_KINDS if getattr(args, k) is not None]
    if len(given) > 1:
        flags = ", ".join("--" + k.rstrip("_") for k in given)
        raise UsageError(f"give only one schedule, not {flags}")
    body: dict[str, Any] = {}
    words = list(args.words)
    if given in ([], ["cron"]):
        if given:  # `kairos add --cron '0 9 * * *' PROMPT`: what people coming from other schedulers type
            _refuse_cron_with("--cron", words)
            body["cron"] = _check_cron([args.cron], option=True)
        else:
            body["cron"] = _check_cron(words)
            words = words[1:]
        if args.once:
            body["once"] = True
    else:
        _refuse_cron_with("--" + given[0].rstrip("_"), words)
        if args.once:
            raise UsageError("--once goes with a cron expression (--in and --at are one-shots already)")
        if args.every is not None:
            from kairosd.core.schedule.durations import every_to_cron

            every_to_cron(args.every)
            body["every"] = args.every
        elif args.in_ is not None:
            from kairosd.core.schedule.durations import parse_duration

            parse_duration(args.in_)
            body["in"] = args.in_
        else:
            body["at"] = args.at
    body["prompt"] = _read_prompt(words)
    body["created_by"] = "cli"  # a request without it is recorded as made through the API
    # Always send the zone: the daemon's environment may have another TZ than this shell.
    if not args.tz:
        _check_env_zone()
    body["tz"] = args.tz or local_zone()
    body["target"] = _target(args)
    if args.no_check:
        body["check_target"] = False
    if args.jitter is not None:
        from kairosd.core.schedule.jitter import parse_jitter

        body["jitter"] = parse_jitter(args.jitter).spec
    if args.expires is not None:
        days = _expires(args.expires)
        if args.in_ is not None or args.at is not None or args.once:
            raise UsageError(
                "--expires is for recurring tasks; a one-shot (--in, --at, --once) is removed once it fires"
            )
        if days is not None and args.permanent:
            raise UsageError(f"--expires {days} and --permanent contradict each other: give one of them")
        body["expires_after_days"] = days
    if args.permanent:
        body["permanent"] = True
    if args.catch_up:
        body["catch_up"] = args.catch_up
    if args.overlap:
        body["overlap"] = args.overlap
    if args.name:
        from kairosd.core.bounds import MAX_NAME_CHARS, check_text

        body["name"] = check_text(args.name, "--name", MAX_NAME_CHARS)
    return body


def _expires(text: str) -> int | None:
    from kairosd.core.errors import UsageError

    if text.strip().lower() == "never":
        return None
    from kairosd.core.bounds import MAX_EXPIRY_DAYS

    raw = text.strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6) or not 1 <= int(raw) <= MAX_EXPIRY_DAYS:
        raise UsageError(f"--expires takes a whole number of days from 1 to {MAX_EXPIRY_DAYS} or 'never', not {text!r}")
    return int(raw)


def cmd_add(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.tasks import describe, fire_lines
    from kairos.output import print_json
    from kairosd.core.protocol import route_path
    from kairosd.core.wire.tasks import AddDoc

    body = build_add_request(args)
    doc = client().call("POST", route_path("tasks"), body)
    task = read(AddDoc, doc, "POST /v1/tasks").task
    _warn_hidden(doc["task"])
    if args.json:
        print_json({"task": doc["task"]})
        return 0
    name = f" ({task.name})" if task.name else ""
    print(f"added {task.id}{name}: {describe(task)}")
    fires = fire_lines(task)[:NEXT_SHOWN]
    print("  next: " + ("\n        ".join(fires) if fires else "(no fire time ahead)"))
    if task.note:
        print(f"  note: {task.note}")
    return 0


def _warn_hidden(task: dict[str, Any]) -> None:
    """Say it loudly when the prompt or name holds characters nobody reading it can see (the task is kept:
    the person who typed or pasted it is told at once, and every view shows them escaped)."""
    from kairos.output import error
    from kairosd.core.invisible import describe_hidden

    for field in ("prompt", "name"):
        problem = describe_hidden(str(task.get(field) or ""))
        if problem:
            error(
                f"warning: the {field} of task {task.get('id')} holds {problem}; the agent receives them "
                f"as they are, and 'kairos show {task.get('id')}' shows them escaped"
            )
