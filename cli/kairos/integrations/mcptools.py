"""The tools of ``kairos mcp``, a stdio MCP server (``mcp`` 2.x, ``MCPServer``) in front of kairosd.

Agent CLIs start it (``kairos integrate`` registers it) and the model calls its tools:

- ``cron_create{cron, prompt, recurring, durable}``, ``cron_list``, ``cron_delete{id}``: Claude Code's
  CronCreate/CronList/CronDelete. Every job is persisted by kairosd, ``durable: false`` included, and
  the result says so: kairos never downgrades a job silently, and never keeps one only in a session.
- ``schedule_wakeup{delay_seconds, prompt, reason}``: a one-shot, its delay clamped to 60–3600 s (the
  result says when it was).
- ``inbox_list``, ``inbox_ack``: the prompts kairos delivered to the inbox.
- ``task_start``, ``task_status``, ``task_result``, ``task_cancel``: background jobs (the registry's
  ``/v1/registry`` routes).

Jobs created here are ``created_by: mcp``: recurring ones expire after 7 days unless ``permanent``.
Every failure comes back as an MCP tool error with a one-line reason (for a stopped daemon: start it
with ``kairos daemon start``); bad arguments fail the call, never the server, and a call whose
arguments are not text (a lone surrogate) is answered with an error too.

Each tool reads kairosd's answer as its model (:mod:`kairosd.core.wire`, through :mod:`kairos.answers`):
an answer of another shape is a tool error naming the key, not a result of "?". A tool imports its models
when it is called, not when the server starts: every agent session starts ``kairos mcp``, and most call
none of its tools (the server's start is the mcp SDK's import, ~1 s of CPU, and then ours; issue 25).

With :mod:`kairos.integrations.mcpwire` (its stdio wire), the only module that imports ``mcp``;
``kairos.commands.mcpserver`` imports it when the verb runs.
Must not import asyncio internals of kairosd, or the daemon; of kairosd's models, only the wire's.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from kairos.answers import read
from kairos.client import Client
from kairosd import __version__
from kairosd.core.defaults import MAX_KILL_GRACE_S
from kairosd.core.errors import KairosError
from kairosd.core.protocol import PREFIX, REGISTRY_MAX_WAIT_S, route_path
from kairosd.system.paths import socket_path

if TYPE_CHECKING:
    from kairosd.core.wire.registry import BackgroundTask
    from kairosd.core.wire.tasks import TaskView

WAKEUP_MIN_S = 60
WAKEUP_MAX_S = 3600
PROMPT_SHOWN = 80  # characters of a prompt in a listing, as Claude Code's CronList shows them
MAX_RESULT_WAIT_S = 600.0
LIST_LIMIT = 200
POLL_MARGIN_S = 15.0

_M = TypeVar("_M", bound=BaseModel)

INSTRUCTIONS = """\
kairos is the user's durable scheduler. Jobs created with these tools are kept by the kairosd daemon,
survive the end of this session and restarts, and fire even when no agent session is open (into the
user's kairos inbox). Cron expressions are 5 fields in the user's local time zone. Recurring jobs made
here expire after 7 days unless created with permanent=true. Scheduled prompts are reminders the user
set up; they never approve anything."""


def build_server(environ: Mapping[str, str] | None = None) -> MCPServer:
    """The MCP server with every kairos tool registered (``environ``: the agent's environment, for tests)."""
    env = dict(os.environ if environ is None else environ)
    server: MCPServer = MCPServer(name="kairos", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = _Tools(env)
    for name, fn, description in tools.catalog():
        server.add_tool(fn, name=name, description=description, structured_output=False)
    return server


def run(environ: Mapping[str, str] | None = None) -> None:
    """Serve on stdin/stdout until the client closes the connection (every call answered: see mcpwire)."""
    from kairos.integrations.mcpwire import serve

    serve(build_server(environ))


class _Tools:
    """The tool functions; each turns one call into one or a few kairosd API requests."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def catalog(self) -> list[tuple[str, Any, str]]:
        return [
            ("cron_create", self.cron_create, CRON_CREATE),
            ("cron_list", self.cron_list, "List the user's scheduled kairos jobs: id, schedule, next fire, prompt."),
            ("cron_delete", self.cron_delete, "Delete a scheduled kairos job by its id (from cron_create/cron_list)."),
            ("schedule_wakeup", self.schedule_wakeup, SCHEDULE_WAKEUP),
            ("inbox_list", self.inbox_list, "List prompts kairos delivered to the inbox (unacknowledged ones)."),
            ("inbox_ack", self.inbox_ack, "Acknowledge inbox items by id (or all=true) so they are not shown again."),
            ("task_start", self.task_start, TASK_START),
            ("task_status", self.task_status, "Status and progress of a background job started with task_start."),
            ("task_result", self.task_result, TASK_RESULT),
            ("task_cancel", self.task_cancel, "Cancel a background job and every task it started."),
        ]

    # ---- scheduled jobs ----------------------------------------------------

    async def cron_create(
        self,
        cron: Annotated[str, Field(description="5-field cron expression in local time, e.g. '57 8 * * 1-5'")],
        prompt: Annotated[str, Field(description="The prompt to deliver when the job fires")],
        recurring: Annotated[bool, Field(description="true: every match; false: the next match only")] = True,
        durable: Annotated[
            bool | None, Field(description="Accepted for compatibility; kairos persists every job either way")
        ] = None,
        permanent: Annotated[
            bool, Field(description="Never expire (recurring jobs otherwise expire in 7 days)")
        ] = False,
    ) -> str:
        from kairosd.core.wire.tasks import AddDoc

        body: dict[str, Any] = {
            "cron": cron,
            "prompt": prompt,
            "once": not recurring,
            "tz": self._zone(),
            "created_by": "mcp",
            "target": self._target(),
            "meta": self._meta(),
        }
        if permanent:
            body["permanent"] = True
        task = (await self._call(AddDoc, "POST", route_path("tasks"), body)).task
        kind = "recurring" if recurring else "one-shot"
        lines = [f"Scheduled {kind} job {task.id} ({_human(task)})."]
        lines.append(
            "Persisted by kairosd in its durable store: it survives the end of this session, restarts and reboots."
        )
        fires = [f.planned_for for f in task.next_fires]
        if fires:
            lines.append("Next fire(s): " + ", ".join(fires))
        if durable is False:  # asked for explicitly, not merely left out
            lines.append(
                "You asked for a session-only job (durable: false). kairos has no session-only jobs, so this one is "
                f"durable too; delete it with cron_delete {task.id} when it is no longer wanted."
            )
        if not recurring:
            lines.append("It will fire once, then it is removed.")
        else:
            lines.append(_expiry(task) + f" Use cron_delete {task.id} to cancel it sooner.")
        return "\n".join(lines)

    async def cron_list(self) -> str:
        from kairosd.core.wire.tasks import ListDoc

        tasks = (await self._call(ListDoc, "GET", route_path("tasks"))).tasks
        if not tasks:
            return "No scheduled jobs."
        lines = []
        for task in tasks[:LIST_LIMIT]:
            kind = "recurring" if task.recurring else "one-shot"
            status = "" if task.status == "scheduled" else f" [{task.status}]"
            prompt = _clip(task.name or task.prompt, PROMPT_SHOWN)
            nxt = f", next {task.planned_for}" if task.planned_for else ""
            lines.append(f"{task.id} — {_human(task)} ({kind}{nxt}){status}: {prompt}")
        if len(tasks) > LIST_LIMIT:
            lines.append(f"... and {len(tasks) - LIST_LIMIT} more (kairos list shows them all)")
        return "\n".join(lines)

    async def cron_delete(self, id: Annotated[str, Field(description="The job id, 8 hex characters")]) -> str:
        from kairosd.core.wire.tasks import RemovedDoc

        removed = (await self._call(RemovedDoc, "DELETE", route_path("task", id=id))).removed
        return f"Deleted job {', '.join(removed)}."

    async def schedule_wakeup(
        self,
        delay_seconds: Annotated[float, Field(description="Seconds from now; clamped to 60-3600")],
        prompt: Annotated[str, Field(description="The prompt to deliver when it fires")],
        reason: Annotated[str, Field(description="Why (shown as the job's name)")] = "",
    ) -> str:
        from kairosd.core.wire.tasks import AddDoc

        if not math.isfinite(delay_seconds):
            raise ToolError("delay_seconds must be a finite number of seconds")
        wanted = round(delay_seconds)
        delay = min(max(wanted, WAKEUP_MIN_S), WAKEUP_MAX_S)
        meta = {**self._meta(), "reason": reason, "requested_delay_s": delay_seconds}
        body: dict[str, Any] = {
            "in": f"{delay}s",
            "prompt": prompt,
            "tz": self._zone(),
            "created_by": "mcp",
            "target": self._target(),
            "meta": meta,
        }
        if reason.strip():
            body["name"] = _clip(reason.strip(), PROMPT_SHOWN)
        task = (await self._call(AddDoc, "POST", route_path("tasks"), body)).task
        lines = [f"Wake-up {task.id} scheduled for {task.planned_for or '?'} (in {delay}s)."]
        if delay != wanted:
            lines.append(
                f"Note: delay_seconds={delay_seconds:g} was clamped to {delay} (the allowed range is "
                f"{WAKEUP_MIN_S}-{WAKEUP_MAX_S} seconds)."
            )
        lines.append("Persisted by kairosd: it fires even if this session has ended by then.")
        return "\n".join(lines)

    # ---- inbox -------------------------------------------------------------

    async def inbox_list(
        self,
        session: Annotated[str | None, Field(description="Only this inbox session (default: all)")] = None,
        include_acknowledged: bool = False,
    ) -> str:
        from kairosd.core.wire.inbox import InboxDoc

        query = {"all": "1"} if include_acknowledged else {}
        if session:
            query["session"] = session
        items = (await self._call(InboxDoc, "GET", route_path("inbox"), query=query)).items
        if not items:
            return "The inbox is empty." if not include_acknowledged else "No inbox items."
        lines = []
        for item in items[:LIST_LIMIT]:
            acked = " (acknowledged)" if item.acked_at else ""
            lines.append(
                f"{item.id} [session {item.session}] from job {item.task_id}, delivered "
                f"{item.delivered_at}{acked}: {item.prompt}"
            )
        if len(items) > LIST_LIMIT:
            lines.append(f"... and {len(items) - LIST_LIMIT} more (kairos inbox shows them all)")
        return "\n".join(lines)

    async def inbox_ack(
        self,
        ids: Annotated[list[str] | None, Field(description="Item ids from inbox_list")] = None,
        all: Annotated[bool, Field(description="Acknowledge every unacknowledged item")] = False,
        session: Annotated[str | None, Field(description="Only in this inbox session")] = None,
    ) -> str:
        from kairosd.core.wire.inbox import AckDoc

        if all == bool(ids):
            raise ToolError("give ids (a list of item ids) or all=true, not both and not neither")
        body: dict[str, Any] = {"all": True} if all else {"ids": ids}
        if session:
            body["session"] = session
        acked = (await self._call(AckDoc, "POST", route_path("inbox_ack"), body)).acked
        return f"Acknowledged {len(acked)} item(s)" + (f": {', '.join(acked)}." if acked else ".")

    # ---- background jobs --------------------------------------------------

    async def task_start(
        self,
        prompt: Annotated[str, Field(description="The agent's prompt (for argv: the command's stdin)")],
        agent: Annotated[
            str | None, Field(description="Agent CLI or definition: claude, copilot, codex, gemini, opencode, ...")
        ] = None,
        argv: Annotated[list[str] | None, Field(description="Run this command instead of an agent (no shell)")] = None,
        cwd: Annotated[str | None, Field(description="Working directory (default: this project)")] = None,
        model: Annotated[str | None, Field(description="The agent's model")] = None,
        timeout_s: Annotated[float | None, Field(description="Kill a turn after this many seconds", gt=0)] = None,
    ) -> str:
        from kairosd.core.wire.registry import BackgroundTaskDoc

        if (agent is None) == (argv is None):
            raise ToolError("give agent (claude, codex, ...) or argv (a command), not both and not neither")
        body: dict[str, Any] = {"prompt": prompt, "cwd": self._cwd(cwd)}
        if argv is not None:
            body.update(kind="shell", argv=argv)
        else:
            body.update(kind="agent", agent=agent)
        if model:
            body["model"] = model
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        parent = self.env.get("KAIROS_TASK_ID", "").strip()
        if parent:
            body["parent_id"] = parent
        depth = self.env.get("KAIROS_TASK_DEPTH", "").strip()
        if depth.isascii() and depth.isdigit():  # isdigit() alone takes "٣", which int() reads as 3
            body["parent_depth"] = int(depth)
        task = (await self._call(BackgroundTaskDoc, "POST", route_path("registry"), body)).task
        return (
            f"Started background job {task.id} ({_what(task)}, depth {task.depth}). "
            f"Follow it with task_status {task.id}; get its answer with task_result {task.id}."
        )

    async def task_status(self, id: Annotated[str, Field(description="The task id (t + 10 hex digits)")]) -> str:
        from kairosd.core.wire.registry import BackgroundTaskDoc

        task = (await self._call(BackgroundTaskDoc, "GET", _registry(id))).task
        return _status_text(task)

    async def task_result(
        self,
        id: Annotated[str, Field(description="The task id (t + 10 hex digits)")],
        wait_seconds: Annotated[
            float, Field(description=f"Wait up to this long for the turn to end (at most {MAX_RESULT_WAIT_S:g})", ge=0)
        ] = 0,
    ) -> str:
        from kairosd.core.wire.registry import BackgroundTaskDoc

        wait = min(wait_seconds, MAX_RESULT_WAIT_S)
        if wait > 0:
            task = await self._wait(id, wait)
        else:
            task = (await self._call(BackgroundTaskDoc, "GET", _registry(id))).task
        if task.status == "running":
            head = f"Task {task.id} is still running" + (" (queued for a slot)" if task.queued else "")
            return head + ". Call task_result again later (or with wait_seconds)."
        lines = [f"Task {task.id} is {task.status} after turn {task.turns_done}."]
        if task.error:
            lines.append(f"Error: {task.error}")
        lines.append(task.response or "(no response text)")
        return "\n".join(lines)

    async def task_cancel(self, id: Annotated[str, Field(description="The task id (t + 10 hex digits)")]) -> str:
        # The answer comes once every process is gone: after the kill grace, if one ignores SIGTERM.
        from kairosd.core.wire.registry import CancelledDoc

        doc = await self._call(CancelledDoc, "POST", _registry(id, "cancel"), wait_s=MAX_KILL_GRACE_S + POLL_MARGIN_S)
        id = doc.task.id  # the whole id, when a prefix was given
        if doc.unchanged:
            return f"Task {id} was already cancelled: nothing to do."
        others = [c for c in doc.cancelled if c != id]
        text = f"Cancelled task {id}" + (
            f" and {len(others)} task(s) it started: {', '.join(others)}." if others else "."
        )
        if doc.killed:
            text += f" {', '.join(doc.killed)} ignored SIGTERM and were killed with SIGKILL."
        return text

    # ---- helpers -------------------------------------------------------------

    async def _call(
        self,
        model: type[_M],
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        wait_s: float = 10.0,
    ) -> _M:
        """One API request, off the event loop (the client blocks), its answer read as ``model``; every
        failure (an answer of another shape too) as a ToolError."""
        # The socket of this server's environment (the agent's: os.environ unless build_server was given one).
        call = functools.partial(_blocking_call, model, method, path, body, query, wait_s, socket_path(self.env))
        return await anyio.to_thread.run_sync(call)

    async def _wait(self, task_id: str, wait_s: float) -> BackgroundTask:
        from kairosd.core.wire.registry import SettledDoc

        deadline = anyio.current_time() + wait_s
        while True:
            left = max(0.0, deadline - anyio.current_time())
            query = {"timeout": f"{min(left, REGISTRY_MAX_WAIT_S):.3f}"}
            if self.env.get("KAIROS_TASK_ID", "").strip():
                # A task waiting on its own child lends it its slot meanwhile (see kairosd.jobs).
                query["waiter"] = self.env["KAIROS_TASK_ID"].strip()
            doc = await self._call(
                SettledDoc, "GET", _registry(task_id, "wait"), query=query, wait_s=REGISTRY_MAX_WAIT_S + POLL_MARGIN_S
            )
            if not doc.timed_out or anyio.current_time() >= deadline:
                return doc.task

    def _zone(self) -> str:
        from kairosd.core.clock import local_zone_name

        return local_zone_name(self.env)

    def _cwd(self, cwd: str | None) -> str:
        # Claude Code tells its MCP servers the project; other CLIs start them in it.
        base = self.env.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        return os.path.abspath(os.path.join(base, os.path.expanduser(cwd))) if cwd else base

    def _target(self) -> dict[str, Any]:
        # The inbox until session targets exist; the meta records where the job came from.
        return {"kind": "inbox", "session": "default"}

    def _meta(self) -> dict[str, Any]:
        return {"source": "mcp", "cwd": self._cwd(None)}


def _blocking_call(
    model: type[_M],
    method: str,
    path: str,
    body: Any,
    query: Mapping[str, str] | None,
    timeout: float,
    socket: str | None = None,
) -> _M:
    try:
        answer = Client(socket, timeout=timeout).call(method, path, body, query)
        return read(model, answer, f"{method} {PREFIX}{path}")
    except KairosError as exc:
        # DaemonNotRunning already says to run `kairos daemon start`; API errors carry kairosd's own words.
        raise ToolError(exc.message) from None


def _registry(task_id: str, action: str = "") -> str:
    # Quoted: an id from the model must not be able to reach another route.
    return route_path(f"registry_{action}" if action else "registry_task", id=task_id)


def _human(task: TaskView) -> str:
    return f"{task.explanation or task.schedule}, {task.tz}"


def _expiry(task: TaskView) -> str:
    if task.permanent:
        return "It never expires (permanent)."
    if task.expires_after_days:
        return f"Auto-expires after {task.expires_after_days} days: it fires a final time, then it is removed."
    return "It does not expire."


def _clip(text: str, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _what(task: BackgroundTask) -> str:
    if task.kind == "shell":
        import shlex

        return "command " + shlex.join(task.argv or [])
    return f"agent {task.agent or '?'}"


def _status_text(task: BackgroundTask) -> str:
    progress = task.progress
    status = task.status + (" (queued for a slot)" if task.queued else "")
    lines = [
        f"Task {task.id}: {status}, {_what(task)}, turns finished: {task.turns_done}.",
        f"Progress: {progress.tool_calls} tool call(s)"
        + (f"; {progress.intent}" if progress.intent else "")
        + (f"; last line: {_clip(progress.last_line, 200)}" if progress.last_line else ""),
    ]
    if task.error:
        lines.append(f"Error: {task.error}")
    if task.finished_at:
        lines.append(f"Finished at {task.finished_at}.")
    return "\n".join(lines)


CRON_CREATE = """\
Schedule a prompt on a cron schedule (Claude Code CronCreate compatible). 5 fields in the user's local
time zone: minute hour day-of-month month day-of-week. For approximate requests avoid minutes :00 and :30.
recurring=false fires at the next match only. kairos always persists the job (durable); recurring jobs
expire after 7 days unless permanent=true. Returns the job id."""

SCHEDULE_WAKEUP = """\
Schedule a one-shot prompt delay_seconds from now (clamped to 60-3600 seconds); the result says when
it was clamped. Persisted by kairos, so it fires even if this session ends."""

TASK_START = """\
Start a background job run by kairosd: a headless turn of an agent (agent=claude, codex, ...) or a
command (argv). Returns its id at once; use task_status and task_result to follow it."""

TASK_RESULT = """\
The latest answer of a background job once its turn ended (idle, completed, failed, cancelled or
interrupted). With wait_seconds, wait up to that long for it."""
