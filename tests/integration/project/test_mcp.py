"""``kairos mcp`` driven by the mcp package's own stdio client, against a real kairosd.

Each KAIROS_HOME is a short folder under /tmp (AF_UNIX paths are limited to ~107 bytes). Waits are
bounded polls on a condition, never blind sleeps.

A ``kairos mcp`` start is ~1 s of CPU (the mcp SDK's import) and a kairosd's ~0.5 s, so the tests of tools
that do not depend on each other share one kairosd and one session (:func:`served`): each looks only at
the tasks and jobs it made (what ``kairos list`` holds after its calls, less what it held before).
The tests of a fresh start, an empty store or an empty inbox get their own home (:func:`home`); what a
tool answers there (bad arguments, no kairosd, the inbox) is asked of the server ``kairos mcp`` serves,
built in this process and spoken to over the mcp SDK's in-memory transport (:func:`with_session_here`):
the stdio process is what the shared session and the raw wire (:class:`RawWire`) talk to.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from cli_inprocess_support import kairos_here
from cli_support import kairosd_answers, kairosd_get

if TYPE_CHECKING:
    # Imported where a session starts: the mcp package takes ~2 s of CPU to import, and every xdist
    # worker imports this module to collect it, not only the one that runs its tests.
    from mcp import ClientSession

pytestmark = pytest.mark.slow

WAIT_S = 30.0
T = TypeVar("T")
TOOLS = {
    "cron_create", "cron_list", "cron_delete", "schedule_wakeup", "inbox_list", "inbox_ack", "task_start",
    "task_status", "task_result", "task_cancel",
}  # fmt: skip


class Home:
    """A KAIROS_HOME with (optionally) a real kairosd in it."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(dir="/tmp", prefix="km"))
        self.env = {**os.environ, "KAIROS_HOME": str(self.path), "TZ": "Europe/Berlin"}
        for var in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON", "KAIROS_TASK_ID", "KAIROS_TASK_DEPTH"):
            self.env.pop(var, None)
        self.daemon: subprocess.Popen[bytes] | None = None

    def kairos(self, *args: str) -> Any:
        """``kairos ARGS --json`` (in this process: what the CLI shows of the tools' work is the point here,
        not its process; see :func:`cli_inprocess_support.kairos_here`)."""
        done = kairos_here(*args, "--json", env=self.env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def start_daemon(self) -> None:
        with open(self.path / "kairosd.log", "wb") as log:
            self.daemon = subprocess.Popen([sys.executable, "-m", "kairosd"], env=self.env, stderr=log)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if kairosd_answers(self.env):
                return
            assert self.daemon.poll() is None, (self.path / "kairosd.log").read_text()
            time.sleep(0.05)
        raise AssertionError("kairosd did not answer in time")

    def close(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait(5)
        shutil.rmtree(self.path, ignore_errors=True)


@pytest.fixture
def home() -> Iterator[Home]:
    h = Home()
    try:
        yield h
    finally:
        h.close()


class SharedSession:
    """One `kairos mcp` session, started as an agent CLI would (stdio) and initialised, that several
    tests' bodies run in: its event loop runs in a thread of its own for as long as the session lasts."""

    def __init__(self, home: Home) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-session", daemon=True)
        self.thread.start()
        opened: Future[ClientSession] = Future()
        self.stop: asyncio.Event | None = None
        self.held = asyncio.run_coroutine_threadsafe(self._hold(home, opened), self.loop)
        try:
            self.session = opened.result(WAIT_S * 2)
        except BaseException:
            self.close()
            raise

    async def _hold(self, home: Home, opened: Future[ClientSession]) -> None:
        """Open the session, hand it over, and keep it open (in this one task, as anyio wants) until closed."""
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self.stop = asyncio.Event()
        params = StdioServerParameters(command=sys.executable, args=["-m", "kairos", "mcp"], env=home.env)
        try:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                opened.set_result(session)
                await self.stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    def run(self, body: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Run ``body`` in the session (on its loop) and return what it returns, within a bound."""
        return asyncio.run_coroutine_threadsafe(body(self.session), self.loop).result(WAIT_S * 2)

    def close(self) -> None:
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.held.result(WAIT_S)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(WAIT_S)
            self.loop.close()


class Served:
    """A kairosd and one `kairos mcp` session on it, shared by a module's tests (:func:`served`)."""

    def __init__(self, home: Home, session: SharedSession) -> None:
        self.home = home
        self.session = session

    def run(self, body: Callable[[ClientSession], Awaitable[T]]) -> T:
        return self.session.run(body)

    def before(self, route: str) -> list[dict[str, Any]]:
        """The tasks (or jobs) of ``route`` before a test's calls, asked from this process (not a kairos
        process: what is under test is what `kairos list` shows after them)."""
        tasks: list[dict[str, Any]] = kairosd_get(self.home.env, route)["tasks"]
        return tasks

    def made(self, before: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
        """The items of ``kairos ARGS --json`` ("tasks") that are not in ``before``: what a test made."""
        ids = {item["id"] for item in before}
        return [item for item in self.home.kairos(*args)["tasks"] if item["id"] not in ids]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    h = Home()
    try:
        h.start_daemon()
        session = SharedSession(h)
        try:
            yield Served(h, session)
        finally:
            session.close()
    finally:
        h.close()


def with_session(home: Home, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Start `kairos mcp` as an agent CLI would (stdio), initialise a session, run ``body`` in it."""

    import anyio  # here, as mcp is: every xdist worker collects this module, one runs this
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> T:
        params = StdioServerParameters(command=sys.executable, args=["-m", "kairos", "mcp"], env=home.env)
        with anyio.fail_after(WAIT_S * 2):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def with_session_here(home: Home, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    """:func:`with_session`, with the server `kairos mcp` serves (``build_server`` with the agent's
    environment) in this process: the mcp client speaks to it over the SDK's in-memory transport, the
    same JSON-RPC messages and initialize handshake as over stdio. For what a tool answers; the stdio
    process itself is what :func:`served` and :class:`RawWire` talk to (a start is ~1 s of CPU)."""
    import anyio  # here, as mcp is (see with_session)
    from mcp.client.client import Client as McpClient

    from kairos.integrations.mcptools import build_server

    async def main() -> T:
        with anyio.fail_after(WAIT_S * 2):
            async with McpClient(build_server(home.env), mode="legacy") as client:
                return await body(client.session)

    return anyio.run(main)


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, str]:
    result = await session.call_tool(tool, args)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), text


def test_tools_are_listed_and_cron_create_shows_up_in_kairos_list(served):
    """The client lists every tool; cron_create persists a created_by=mcp task that `kairos list` shows."""
    before = served.before("tasks")

    async def body(session: ClientSession) -> tuple[set[str], tuple[bool, str]]:
        tools = await session.list_tools()
        return {t.name for t in tools.tools}, await call(session, "cron_create", cron="57 8 * * 1-5", prompt="stand-up")

    names, (error, text) = served.run(body)
    assert names == TOOLS
    assert not error, text
    [task] = served.made(before, "list")
    assert task["prompt"] == "stand-up"
    assert task["cron"] == "57 8 * * 1-5"
    assert task["tz"] == "Europe/Berlin"  # the agent's local zone
    assert task["created_by"] == "mcp"
    assert task["expires_after_days"] == 7
    assert f"Scheduled recurring job {task['id']}" in text
    assert "Persisted by kairosd" in text
    # durable left out: nobody asked for a session-only job, so nothing is said about one.
    assert "session-only" not in text
    assert "Auto-expires after 7 days" in text


def test_one_shots_permanent_jobs_and_deleting(served):
    """recurring=false is a one-shot; permanent=true never expires; cron_list shows both; cron_delete removes."""
    before = served.before("tasks")

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        return [
            await call(session, "cron_create", cron="0 9 1 1 *", prompt="new year", recurring=False, durable=True),
            await call(session, "cron_create", cron="@daily", prompt="digest", permanent=True),
            await call(session, "cron_list"),
        ]

    (e1, once), (e2, daily), (e3, listing) = served.run(body)
    assert not e1
    assert not e2
    assert not e3
    assert "one-shot" in once
    assert "fire once" in once
    assert "durable: false" not in once
    assert "never expires (permanent)" in daily
    made = served.made(before, "list")
    tasks = {t["prompt"]: t for t in made}
    assert len(made) == len(tasks) == 2
    assert tasks["new year"]["recurring"] is False
    assert tasks["digest"]["permanent"] is True
    assert tasks["new year"]["id"] in listing
    assert tasks["digest"]["id"] in listing

    async def delete(session: ClientSession) -> tuple[bool, str]:
        return await call(session, "cron_delete", id=tasks["digest"]["id"])

    error, text = served.run(delete)
    assert not error
    assert "Deleted job" in text
    assert [t["prompt"] for t in served.made(before, "list")] == ["new year"]


def test_schedule_wakeup_is_clamped_and_says_so(served):
    """A 5 s wake-up becomes 60 s and the result says it was clamped; 90 s is kept as asked."""
    before = served.before("tasks")

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        return [
            await call(session, "schedule_wakeup", delay_seconds=5, prompt="poll", reason="deploy check"),
            await call(session, "schedule_wakeup", delay_seconds=90, prompt="poll again"),
            await call(session, "schedule_wakeup", delay_seconds=86400, prompt="tomorrow"),
        ]

    (_, short), (_, exact), (_, long) = served.run(body)
    assert "clamped to 60" in short
    assert "clamped" not in exact
    assert "(in 90s)" in exact
    assert "clamped to 3600" in long
    made = served.made(before, "list")
    tasks = {t["prompt"]: t for t in made}
    assert len(made) == len(tasks) == 3
    assert tasks["poll"]["name"] == "deploy check"
    assert tasks["poll"]["created_by"] == "mcp"
    assert tasks["poll"]["recurring"] is False


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(home):
    """Wrong types, a bad cron, an unknown id and a missing choice are tool errors; the next call still works."""
    home.start_daemon()

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        return [
            await call(session, "cron_create", cron=5),
            await call(session, "cron_create", cron="61 * * * *", prompt="x"),
            await call(session, "cron_delete", id="../../shutdown"),
            await call(session, "inbox_ack"),
            await call(session, "task_start", prompt="x"),
            await call(session, "schedule_wakeup", delay_seconds="soon", prompt="x"),
            await call(session, "no_such_tool"),
            await call(session, "cron_list"),
        ]

    *errors, (last_error, last) = with_session_here(home, body)
    assert all(error for error, _ in errors), errors
    texts = [text for _, text in errors]
    assert "minute: 61 is out of range" in texts[1]
    assert "no task starts with" in texts[2]
    assert "give ids" in texts[3]
    assert "give agent" in texts[4]
    assert not last_error
    assert last == "No scheduled jobs."
    assert home.daemon is not None
    assert home.daemon.poll() is None


def test_background_task_tools_use_the_registry(served):
    """task_start runs a command in the registry; task_result waits for its answer; task_status describes it."""
    before = served.before("registry")

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        started = await call(session, "task_start", prompt="hello from mcp", argv=["cat"])
        task_id = started[1].split()[3]
        return [
            started,
            await call(session, "task_result", id=task_id, wait_seconds=WAIT_S),
            await call(session, "task_status", id=task_id),
            await call(session, "task_cancel", id=task_id),
        ]

    (e1, started), (e2, result), (e3, status), (cancel_error, _cancelled) = served.run(body)
    assert [e1, e2, e3] == [False, False, False], (started, result, status)
    assert "Started background job t" in started
    assert "is completed" in result
    assert "completed" in status
    assert "command cat" in status
    assert cancel_error  # a completed task cannot be cancelled: said as a tool error
    [task] = served.made(before, "task", "list")
    assert task["status"] == "completed"


def test_inbox_tools_list_and_acknowledge(home):
    """A delivered prompt shows in inbox_list; inbox_ack acknowledges it and it leaves the list."""
    home.start_daemon()
    task = home.kairos("add", "--in", "1s", "inbox me")["task"]
    # Polled from this process: a `kairos inbox` process per poll (~0.2 s of CPU each, some twenty of
    # them while the second passes) took more CPU than the rest of the test; the CLI reads it once.
    deadline = time.monotonic() + WAIT_S
    while not kairosd_get(home.env, "inbox")["items"]:
        assert time.monotonic() < deadline, "the one-shot was not delivered in time"
        time.sleep(0.05)
    assert [item["task_id"] for item in home.kairos("inbox")["items"]] == [task["id"]]

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        listed = await call(session, "inbox_list")
        item_id = listed[1].split()[0]
        return [listed, await call(session, "inbox_ack", ids=[item_id]), await call(session, "inbox_list")]

    (_, listed), (ack_error, acked), (_, empty) = with_session_here(home, body)
    assert "inbox me" in listed
    assert task["id"] in listed
    assert not ack_error
    assert "Acknowledged 1 item(s)" in acked
    assert empty == "The inbox is empty."


def test_without_a_daemon_every_tool_says_to_start_it(home):
    """With no kairosd, a tool call is an error telling the user to run `kairos daemon start`."""

    async def body(session: ClientSession) -> list[tuple[bool, str]]:
        return [await call(session, "cron_list"), await call(session, "task_status", id="t0123456789")]

    for error, text in with_session_here(home, body):
        assert error
        assert "kairosd is not running" in text
        assert "kairos daemon start" in text


class RawWire:
    """``kairos mcp`` spoken to line by line, for what the mcp client cannot send (a lone surrogate)."""

    def __init__(self, home: Home) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kairos", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=home.env,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        """The next line the server writes, within WAIT_S (a server that never answers fails here)."""
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], WAIT_S)
        assert ready, "kairos mcp did not answer"
        doc: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return doc

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        finally:
            assert self.proc.stdout is not None
            self.proc.stdout.close()


def test_a_lone_surrogate_in_a_call_is_answered_and_the_server_keeps_serving(served):
    """Issue 27: a tool call holding "\\ud800" was dropped unanswered by the transport; the client waited forever.
    So were a malformed request and a line that is not JSON."""
    before = served.before("tasks")
    wire = RawWire(served.home)
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert wire.answer()["id"] == 1
        wire.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"cron_create","arguments":%s}}'
        wire.send(call % (2, '{"cron":"*/5 * * * *","prompt":"a\\ud800b"}'))
        bad = wire.answer()
        wire.send('{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"x\\udc00"}}')
        other = wire.answer()
        # Other lines the transport dropped unanswered: a malformed request, and a line that is not JSON.
        wire.send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"cron_list"}')
        malformed = wire.answer()
        wire.send("not json")
        garbage = wire.answer()
        # A well-formed pair is text: it reaches the tool and the job is made.
        wire.send(call % (4, '{"cron":"*/5 * * * *","prompt":"ok \\ud83d\\ude00"}'))
        good = wire.answer()
    finally:
        wire.close()
    assert bad["id"] == 2
    assert bad["result"]["isError"] is True
    assert "argument prompt holds a lone UTF-16 surrogate" in bad["result"]["content"][0]["text"]
    assert other["id"] == 3
    assert other["error"]["code"] == -32602
    assert "params.name" in other["error"]["message"]
    assert malformed["id"] == 5
    assert malformed["error"]["code"] == -32600
    assert "params: Input should be an object" in malformed["error"]["message"]
    assert garbage["id"] is None
    assert garbage["error"]["code"] == -32700
    assert good["id"] == 4
    assert not good["result"].get("isError"), good
    assert [task["prompt"] for task in served.made(before, "list")] == ["ok \U0001f600"]
