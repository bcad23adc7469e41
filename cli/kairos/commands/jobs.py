"""``kairos task start|list|show|wait|logs|cancel|send|close``: background jobs (:mod:`kairosd.jobs`).

The verb keeps the name users type; what it starts is a *job* (a *task* is a scheduled prompt).
A job started from inside a job (``KAIROS_TASK_ID`` and
``KAIROS_TASK_DEPTH`` in the environment) is that job's child: the start
sends them as the parent, and the daemon narrows the child's permissions and
enforces the depth limit. Waits are long-polls of at most
``protocol.REGISTRY_MAX_WAIT_S`` each, repeated until the task settles or
``--timeout`` passes. At a terminal a wait shows what it waits for on stderr
(:mod:`kairos.progress`; ``--quiet`` turns it off), with polls of at most
:data:`PROGRESS_POLL_S` so that the task's state it shows is fresh.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O; pydantic only inside the handlers, which
read kairosd's answers as their models (:mod:`kairos.answers`); with ``--json`` they print each answer
as it came.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import (
    add_quiet_flag,
    add_wide_flag,
    make_parser,
    print_block,
    printed_json,
    seconds,
    whole_number,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from kairos.client import Client
    from kairos.progress import Progress, Silent
    from kairosd.core.wire.registry import BackgroundTask, FullBackgroundTask, PermissionsView, SettledDoc

STATUSES = ("running", "idle", "completed", "failed", "cancelled", "interrupted")
PERMISSION_MODES = ("plan", "default", "acceptEdits", "bypassPermissions")
OK_STATUSES = ("idle", "completed")
# The socket timeout of a long-poll: the server answers within its wait bound plus this margin.
POLL_MARGIN_S = 15.0
# With a progress line, the long-poll's bound: the line shows the task's state at most this old.
PROGRESS_POLL_S = 5.0


BACKGROUND_ID_HELP = "background job id (t and 10 hex digits; kairos task list shows them)"


def register(subparsers: Any) -> None:
    task = subparsers.add_parser(
        "task",
        help="background jobs: headless agent and shell runs",
        description="Start, follow and stop background jobs that kairosd runs: headless agent turns "
        "(claude, copilot, codex, gemini, opencode, custom) and shell commands. Records survive daemon "
        "restarts; work that was running when kairosd died shows as interrupted and is never re-run.",
        epilog="examples:\n  kairos task start --agent claude 'fix the flaky test' --cwd .\n"
        "  kairos task list --status running\n  kairos task wait t0a1b2c3d4e --timeout 600",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = task.add_subparsers(dest="task_verb", metavar="COMMAND")
    _register_start(verbs)

    lst = make_parser(
        verbs,
        "list",
        "list background jobs",
        "List background jobs, newest first: id, status, kind, agent or command, turns, prompt.",
        "kairos task list\n  kairos task list --status idle --json",
        aliases=["ls"],
    )
    lst.add_argument("--status", choices=STATUSES, help="only jobs with this status")
    add_wide_flag(lst)
    lst.set_defaults(handler=cmd_list)

    show = make_parser(
        verbs, "show", "show one job", "Show a job's fields, progress and turns.", "kairos task show t0a1b2c3d4e"
    )
    show.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    show.set_defaults(handler=cmd_show)

    wait = make_parser(
        verbs,
        "wait",
        "wait for a job's turn or end",
        "Block until the job stops running (its turn ended: idle, completed, failed, cancelled or "
        "interrupted), or with --since-turn N until a turn after N has finished. Prints the latest "
        "response. Exit 0 if it ended idle or completed, 1 otherwise (also on --timeout).",
        "kairos task wait t0a1b2c3d4e\n  kairos task wait t0a1b2c3d4e --timeout 60 --since-turn 1",
    )
    wait.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    wait.add_argument(
        "--timeout", type=seconds, metavar="DURATION", help="give up after this long: 10m, 90s, 600 (default: never)"
    )
    wait.add_argument("--since-turn", type=whole_number, metavar="N", help="wait for a turn numbered above N")
    add_quiet_flag(wait)
    wait.set_defaults(handler=cmd_wait)

    logs = make_parser(
        verbs,
        "logs",
        "print a job's output",
        "Print a job's log: every output line of every turn, with kairos' turn markers. -f keeps "
        "printing new lines until the job stops running.",
        "kairos task logs t0a1b2c3d4e\n  kairos task logs -f t0a1b2c3d4e",
    )
    logs.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    logs.add_argument("-f", "--follow", action="store_true", help="follow new output until the job stops running")
    logs.set_defaults(handler=cmd_logs)

    cancel = make_parser(
        verbs,
        "cancel",
        "cancel a job and its descendants",
        "Cancel a job and every job it started (recursively): running process groups get SIGTERM, "
        "then SIGKILL after a grace period ([limits] kill_grace; the answer says which were killed so). "
        "A completed, failed or cancelled job cannot be cancelled.",
        "kairos task cancel t0a1b2c3d4e",
    )
    cancel.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    cancel.set_defaults(handler=cmd_cancel)

    send = make_parser(
        verbs,
        "send",
        "send a follow-up to an idle agent job",
        "Resume an idle multi-turn agent job's session with a follow-up prompt ('-' reads stdin).",
        "kairos task send t0a1b2c3d4e 'now add a test'\n  kairos task send --wait t0a1b2c3d4e 'and commit'",
    )
    send.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    send.add_argument("message", nargs="+", metavar="MESSAGE", help="the next prompt for the job's session")
    send.add_argument("--wait", action="store_true", help="wait for the turn and print its response")
    add_quiet_flag(send)
    send.set_defaults(handler=cmd_send)

    close = make_parser(
        verbs,
        "close",
        "end an idle multi-turn job",
        "Mark an idle agent job completed: it takes no more follow-ups.",
        "kairos task close t0a1b2c3d4e",
    )
    close.add_argument("id", metavar="ID", help=BACKGROUND_ID_HELP)
    close.set_defaults(handler=cmd_close)

    task.set_defaults(handler=lambda _args: _help(task))


def _help(parser: argparse.ArgumentParser) -> int:
    from kairosd.core.errors import EXIT_USAGE

    parser.print_help()
    return EXIT_USAGE


def _register_start(verbs: Any) -> None:
    start = make_parser(
        verbs,
        "start",
        "start an agent or shell job",
        "Start a background job: a headless agent turn (--agent NAME, the prompt is required) or a "
        "command (--shell -- ARGV..., the prompt, if any, goes to its stdin). A prompt of '-' is read "
        "from stdin. Started from inside a background job, it becomes that job's child.",
        """
        kairos task start --agent claude 'summarise the open PRs'
        kairos task start --agent codex --cwd ~/src/app --model o3 --wait 'fix the build'
        kairos task start --shell -- make test
        kairos task start --shell 'some input' -- wc -c
        """,
        usage="kairos task start (--agent NAME | --shell) [options] [PROMPT...] [-- ARGV...]",
    )
    what = start.add_mutually_exclusive_group(required=True)
    what.add_argument("--agent", metavar="NAME", help="the agent to run (claude, copilot, codex, ...)")
    what.add_argument("--shell", action="store_true", help="run the command after -- (no shell involved)")
    start.add_argument("words", nargs="*", metavar="PROMPT", help="the prompt")
    start.add_argument("--cwd", metavar="DIR", help="working directory (default: this one)")
    start.add_argument(
        "--session", metavar="NAME",
        help="the kairos (inbox) session the work is for, as with add: its events carry it, and the run "
        "gets it as KAIROS_SESSION (default: default)",
    )  # fmt: skip
    start.add_argument("--model", metavar="MODEL", help="the agent's model")
    start.add_argument("--timeout", type=seconds, metavar="DURATION", help="kill a turn after this long (5m, 90s, 600)")
    start.add_argument("--permission-mode", choices=PERMISSION_MODES, help="narrow the permission mode")
    start.add_argument("--allow-tool", action="append", metavar="TOOL", help="allow only these tools (repeatable)")
    start.add_argument("--deny-tool", action="append", metavar="TOOL", help="deny this tool (repeatable)")
    start.add_argument("--wait", action="store_true", help="wait for the first turn and print its response")
    add_quiet_flag(start)
    start.set_defaults(handler=cmd_start, argv=None)
    _split_at_dashes(start)


def _split_at_dashes(parser: argparse.ArgumentParser) -> None:
    """Keep everything after the first ``--`` as ``args.argv``, untouched by argparse, and let
    options sit between prompt words.

    argparse would merge the command into the prompt words (and read ``-c`` in
    ``wc -c`` as an option of ours), so the split happens before it parses. The
    parent parser calls ``parse_known_args`` on this subparser; the intermixed
    parser's own inner calls must reach the plain method again.
    """
    plain = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        items = list(args or [])
        tail = None
        if "--" in items:
            cut = items.index("--")
            items, tail = items[:cut], items[cut + 1 :]
        setattr(parser, "parse_known_args", plain)  # noqa: B010 - shadowing a method on one instance
        try:
            parsed, extra = parser.parse_known_intermixed_args(items, namespace)
        finally:
            setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010
        parsed.argv = tail
        return parsed, extra

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010


# ---- helpers ----------------------------------------------------------------


def _client(long_poll: bool = False) -> Client:
    from kairos.client import Client
    from kairosd.core.protocol import REGISTRY_MAX_WAIT_S

    return Client(timeout=REGISTRY_MAX_WAIT_S + POLL_MARGIN_S) if long_poll else Client()


def _path(task_id: str, action: str = "") -> str:
    from kairosd.core.protocol import route_path

    # Quoted: an id typed by a person must not be able to reach another route.
    return route_path(f"registry_{action}" if action else "registry_task", id=task_id)


def _text(words: list[str], what: str, required: bool) -> str:
    import sys

    from kairosd.core.errors import UsageError

    text = sys.stdin.read() if words == ["-"] else " ".join(words)
    if required and not text.strip():
        raise UsageError(f"give {what} (or '-' to read it from stdin)")
    return text


def build_start_request(args: argparse.Namespace, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The POST /v1/registry body for ``args``; raises UsageError for what we can check here."""
    import os

    from kairosd.core.errors import UsageError

    env = os.environ if environ is None else environ
    body: dict[str, Any] = {}
    if args.shell:
        if not args.argv:
            raise UsageError("--shell needs the command after --: kairos task start --shell -- make test")
        body.update(kind="shell", argv=list(args.argv))
        prompt = _text(args.words, "input", required=False)
        if prompt:
            body["prompt"] = prompt
    else:
        if args.argv:
            raise UsageError("a command after -- goes with --shell, not --agent")
        body.update(kind="agent", agent=args.agent, prompt=_text(args.words, "a prompt", required=True))
    # The daemon's working directory is not the user's: resolve it here.
    body["cwd"] = os.path.abspath(os.path.expanduser(args.cwd or "."))
    for key in ("session", "model"):
        if getattr(args, key):
            body[key] = getattr(args, key)
    if args.timeout is not None:
        if not args.timeout > 0:
            raise UsageError("--timeout must be more than 0 seconds")
        body["timeout_s"] = args.timeout
    permissions: dict[str, Any] = {}
    if args.permission_mode:
        permissions["mode"] = args.permission_mode
    if args.allow_tool:
        permissions["allowed_tools"] = sorted(set(args.allow_tool))
    if args.deny_tool:
        permissions["denied_tools"] = sorted(set(args.deny_tool))
    if permissions:
        body["permissions"] = permissions
    body["mode"] = "sync" if args.wait else "background"
    parent = env.get("KAIROS_TASK_ID", "").strip()
    if parent:
        body["parent_id"] = parent
    depth = env.get("KAIROS_TASK_DEPTH", "").strip()
    if depth.isascii() and depth.isdigit():  # isdigit() alone takes "٣", which int() reads as 3
        body["parent_depth"] = int(depth)
    return body


def wait_for(
    task_id: str,
    timeout: float | None,
    since_turn: int | None,
    progress: Progress | Silent | None = None,
    what: str | None = None,
) -> tuple[Any, SettledDoc]:
    """Long-poll until the task settles or ``timeout`` passes; the last answer, as it came and as its model.

    From inside a task, the wait names that task as the waiter: the daemon lends a waiting
    parent's concurrency slot to the descendant it waits on (or both could wait forever).

    ``progress`` shows ``what`` is waited for (default: the task) with the task's state from each
    answer. A shown line makes the polls shorter (the first one returns at once, the others within
    :data:`PROGRESS_POLL_S`) so that the state it shows is fresh; not for a waiter, whose every poll
    lends its slot anew, and a loan that ends while the borrower runs counts it above the cap
    (kairosd.jobs.slots).
    """
    import os
    import time

    from kairos.answers import read
    from kairos.progress import Progress
    from kairosd.core.errors import UsageError
    from kairosd.core.protocol import REGISTRY_MAX_WAIT_S
    from kairosd.core.wire.registry import SettledDoc

    if timeout is not None and timeout < 0:
        raise UsageError("--timeout must be 0 or more seconds")
    if since_turn is not None and since_turn < 0:
        raise UsageError("--since-turn must be 0 or more")
    api = _client(long_poll=True)
    waiter = os.environ.get("KAIROS_TASK_ID", "").strip()
    label = what or f"waiting for task {task_id}"
    step = PROGRESS_POLL_S if isinstance(progress, Progress) and not waiter else REGISTRY_MAX_WAIT_S
    bound = 0.0 if step < REGISTRY_MAX_WAIT_S else step  # the first poll: the state at once, for the line
    if progress is not None:
        progress.update(label)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = REGISTRY_MAX_WAIT_S if deadline is None else max(0.0, deadline - time.monotonic())
        query = {"timeout": f"{min(left, bound):.3f}"}
        if since_turn is not None:
            query["since_turn"] = str(since_turn)
        if waiter:
            query["waiter"] = waiter
        answer = api.call("GET", _path(task_id, "wait"), query=query)
        doc = read(SettledDoc, answer, "GET /v1/registry/ID/wait")
        if not doc.timed_out or (deadline is not None and time.monotonic() >= deadline):
            return answer, doc
        if progress is not None:
            progress.update(label, *task_state(doc.task))
        bound = step


def task_state(task: BackgroundTask) -> list[str]:
    """What a progress line says of a task still being waited for: its status, and what it is doing."""
    state = [task.status]
    if task.queued:
        state.append("queued for a slot")
    calls = task.progress.tool_calls
    if calls > 0:
        state.append(f"{calls} tool call{'' if calls == 1 else 's'}")
    return state


def _print_settled(answer: Any, doc: SettledDoc, as_json: bool) -> int:
    """Print a wait's last answer (as it came with ``--json``, else the status line and the response); the
    exit code: 0 if the task settled idle or completed, 1 otherwise (also when the wait timed out)."""
    from kairos.output import error, print_json

    task = doc.task
    code = 0 if not doc.timed_out and task.status in OK_STATUSES else 1
    if as_json:
        print_json(answer)
        return code
    if doc.timed_out:
        error(f"task {task.id} is still {task.status} (timed out waiting)")
        return code
    line = f"{task.id} {task.status} after turn {task.turns_done}"
    if task.error:
        line += f": {task.error}"
    print(line)
    if task.response:
        print(task.response.rstrip("\n"))
    return code


def _started(args: argparse.Namespace, answer: Any, what: str, line: Callable[[FullBackgroundTask], str]) -> int:
    """What start and send print, given kairosd's answer to ``what``: the answer with ``--json`` (or
    ``line(task)``), or with --wait the turn once it settles."""
    from kairos.answers import read
    from kairos.output import print_json
    from kairosd.core.wire.registry import BackgroundTaskDoc

    task = read(BackgroundTaskDoc, answer, what).task
    if args.wait:
        from kairos.progress import on_stderr

        with on_stderr(args.quiet) as progress:
            settled = wait_for(task.id, None, None, progress)
        return _print_settled(*settled, args.json)
    if args.json:
        print_json(answer)
    else:
        print(line(task))
    return 0


def what_text(kind: str | None, agent: str | None, argv: list[str] | None) -> str:
    """``shell: ARGV`` or ``agent: NAME`` (the kind of any other task, and its agent)."""
    if kind == "shell":
        import shlex

        return "shell: " + shlex.join(str(a) for a in argv or [])
    return f"{kind or '?'}: {agent or '?'}"


# ---- handlers -----------------------------------------------------------------


def cmd_start(args: argparse.Namespace) -> int:
    from kairosd.core.protocol import route_path

    answer = _client().call("POST", route_path("registry"), build_start_request(args))
    return _started(
        args,
        answer,
        "POST /v1/registry",
        lambda t: f"started {t.id} ({what_text(t.kind, t.agent, t.argv)}, depth {t.depth})",
    )


def cmd_list(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import print_records
    from kairosd.core.protocol import route_path
    from kairosd.core.wire.registry import BackgroundListDoc

    doc = _client().call("GET", route_path("registry"), query={"status": args.status} if args.status else None)
    tasks = read(BackgroundListDoc, doc, "GET /v1/registry").tasks
    if not printed_json(args, doc):
        empty = "no background jobs" + (f" with status {args.status}" if args.status else "")
        print_records(tasks, empty, ["ID", "STATUS", "WHAT", "TURNS", "CREATED", "PROMPT"], _list_row)
    return 0


def _list_row(t: BackgroundTask, zone: str) -> list[str]:
    from kairos.output import fmt_time

    return [
        t.id,
        t.status + (" (queued)" if t.queued else ""),
        what_text(t.kind, t.agent, t.argv),
        str(t.turns_done),
        fmt_time(t.created_at, zone),
        t.prompt,
    ]


def cmd_show(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import local_zone
    from kairos.output import fmt_time, one_line, print_fields
    from kairosd.core.wire.registry import BackgroundTaskDoc

    doc = _client().call("GET", _path(args.id))
    task = read(BackgroundTaskDoc, doc, "GET /v1/registry/ID").task
    if printed_json(args, doc):
        return 0
    zone = local_zone()
    progress = task.progress
    status = task.status + (" (queued for a slot)" if task.queued else "")
    fields = [
        ("id", task.id),
        ("status", status),
        ("what", what_text(task.kind, task.agent, task.argv)),
        ("parent", f"{task.parent_id or '-'} (depth {task.depth})"),
        ("cwd", task.cwd or "-"),
        ("session", task.session or "-"),
        ("session id", task.agent_session_id or "-"),  # the agent CLI's own, what a follow-up resumes
        ("model", task.model or "-"),
        ("mode", task.mode + (", multi-turn" if task.multi_turn else "")),
        ("permissions", _permissions_text(task.permissions)),
        ("progress", f"{progress.tool_calls} tool call(s); {progress.intent or '-'}"),
        ("last line", one_line(progress.last_line or "-", 100)),
        ("created", fmt_time(task.created_at, zone)),
        ("finished", fmt_time(task.finished_at, zone)),
        ("exit code", "-" if task.exit_code is None else str(task.exit_code)),
        ("log", task.log_path or "-"),
    ]
    if task.error:
        fields.append(("error", task.error))
    if task.scheduled_task_id:
        fields.append(("fired by", f"scheduled task {task.scheduled_task_id}, run {task.run_id}"))
    print_fields(fields, 13)
    for turn in task.turns:
        state = "running" if not turn.finished_at else ("ok" if turn.ok else "failed")
        extra = f": {turn.error}" if turn.error else ""
        print(f"turn {turn.number} ({state}{extra}): {one_line(turn.prompt, 80)}")
    if task.response:
        print_block("response", task.response.rstrip("\n"))
    return 0


def _permissions_text(perms: PermissionsView) -> str:
    text = perms.mode
    if perms.allowed_tools is not None:
        text += f"; allowed: {', '.join(perms.allowed_tools) or 'none'}"
    if perms.denied_tools:
        text += f"; denied: {', '.join(perms.denied_tools)}"
    return text


def cmd_wait(args: argparse.Namespace) -> int:
    from kairos.progress import on_stderr

    with on_stderr(args.quiet) as progress:
        settled = wait_for(args.id, args.timeout, args.since_turn, progress)
    return _print_settled(*settled, args.json)


def cmd_logs(args: argparse.Namespace) -> int:
    import sys

    from kairos.answers import read
    from kairos.commands.common import print_each
    from kairos.output import print_json
    from kairosd.core.wire.registry import LogChunkDoc, LogLine

    if args.follow:

        def show(item: Any) -> None:
            line = read(LogLine, item, "GET /v1/registry/ID/logs?follow=1")
            if args.json:
                print_json(item)
            elif line.line is not None:
                print(line.line)
            elif line.lost:
                print("kairos: some lines were skipped (the follower fell behind)", file=sys.stderr)

        print_each(_client().stream(_path(args.id, "logs"), query={"follow": "1"}), show)
        return 0
    api = _client()
    offset, chunks = 0, []
    while True:
        chunk = read(LogChunkDoc, api.call("GET", _path(args.id, "logs"), query={"offset": str(offset)}),
                     "GET /v1/registry/ID/logs")  # fmt: skip
        chunks.append(chunk.text)
        if not args.json:
            sys.stdout.write(chunk.text)
        if chunk.next_offset <= offset or chunk.next_offset >= chunk.size:
            break
        offset = chunk.next_offset
    if args.json:
        print_json({"text": "".join(chunks), "status": chunk.status})
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import Client
    from kairosd.core.defaults import MAX_KILL_GRACE_S
    from kairosd.core.wire.registry import CancelledDoc

    # The answer comes once every process is gone: after the kill grace, if one ignores SIGTERM.
    answer = Client(timeout=MAX_KILL_GRACE_S + POLL_MARGIN_S).call("POST", _path(args.id, "cancel"))
    doc = read(CancelledDoc, answer, "POST /v1/registry/ID/cancel")
    if printed_json(args, answer):
        return 0
    task_id = doc.task.id  # the whole id, when a prefix was given
    if doc.unchanged:
        print(f"{task_id} was already cancelled: nothing to do")
        return 0
    others = [t for t in doc.cancelled if t != task_id]
    print(f"cancelled {task_id}" + (f" and {len(others)} descendant(s): {', '.join(others)}" if others else ""))
    if doc.killed:
        print(f"{', '.join(doc.killed)} ignored SIGTERM: killed with SIGKILL after the {doc.kill_grace_s:g}s grace")
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    message = _text(args.message, "a message", required=True)
    answer = _client().call("POST", _path(args.id, "send"), {"message": message})
    return _started(
        args,
        answer,
        "POST /v1/registry/ID/send",
        lambda t: f"sent turn {t.turns[-1].number if t.turns else '?'} to {t.id}",
    )


def cmd_close(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairosd.core.wire.registry import BackgroundTaskDoc

    answer = _client().call("POST", _path(args.id, "close"))
    task = read(BackgroundTaskDoc, answer, "POST /v1/registry/ID/close").task
    if not printed_json(args, answer):
        print(f"closed {task.id} ({task.status})")
    return 0
