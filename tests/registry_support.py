"""Shared pieces of the registry tests: a fake agent executable, its adapter, and a registry factory.

The fake agent speaks a tiny JSON-lines protocol (init, tool, intent, text,
result) the way stream-JSON agent CLIs do. What it does is chosen by the prompt:

    anything          echo it back: "echo: <prompt>", with the session id (a new one, or --resume's)
    env:PATH          also write its KAIROS_* environment as JSON to PATH
    fail              a failed result and exit 1
    hang:PIDFILE      write its pid to PIDFILE, then sleep (``hang-hard:`` also ignores SIGTERM)
    spawn:PIDFILE     start a grandchild (same group) that ignores SIGTERM, write its pid, sleep

No network and no real agent: it is a Python script next to the test.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from kairosd.agents.base import Command, Progress, TurnOutcome, TurnRequest
from kairosd.core.errors import UsageError
from kairosd.core.events import EventBus
from kairosd.jobs.api import registry_routes
from kairosd.jobs.limits import RegistryLimits
from kairosd.jobs.persist import RecordStore
from kairosd.jobs.registry import Registry
from kairosd.scheduling.api import Api
from kairosd.testing import FakeClock

WAIT_S = 20.0  # upper bound for anything a test waits on; passing runs take far less
T = TypeVar("T")

FAKE_AGENT = f"""#!{sys.executable}
import json, os, signal, subprocess, sys, time
args = sys.argv[1:]
prompt = args[args.index("--prompt") + 1]
resume = args[args.index("--resume") + 1] if "--resume" in args else None
session = resume or "sess-" + os.environ.get("KAIROS_TASK_ID", "none")
def out(obj):
    print(json.dumps(obj), flush=True)
out({{"type": "init", "session_id": session}})
if prompt.startswith("env:"):
    with open(prompt[4:], "w") as f:
        json.dump({{k: v for k, v in os.environ.items() if k.startswith("KAIROS_")}}, f)
if prompt.startswith(("hang:", "hang-hard:")):
    if prompt.startswith("hang-hard:"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out({{"type": "intent", "text": "hanging"}})
    with open(prompt.split(":", 1)[1], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
if prompt.startswith("spawn:"):
    child = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 600"])
    with open(prompt.split(":", 1)[1], "w") as f:
        f.write(str(child.pid))
    time.sleep(600)
out({{"type": "tool", "name": "Read"}})
out({{"type": "intent", "text": "answering"}})
out({{"type": "text", "text": "echo: " + prompt}})
print("a note on stderr", file=sys.stderr, flush=True)
if prompt == "fail":
    out({{"type": "result", "ok": False, "error": "the agent failed"}})
    sys.exit(1)
out({{"type": "result", "ok": True, "text": "echo: " + prompt, "session_id": session, "resumed": resume}})
"""


class FakeAdapter:
    """An AgentAdapter for the fake agent; ``requests`` records every TurnRequest it was given."""

    def __init__(self, binary: Path, *, name: str = "fake", supports_resume: bool = True) -> None:
        self.name = name
        self.binary = str(binary)
        self.supports_resume = supports_resume
        self.requests: list[TurnRequest] = []

    def command(self, request: TurnRequest) -> Command:
        if request.prompt.startswith("refuse"):
            raise UsageError("fake cannot do that")
        self.requests.append(request)
        argv = [self.binary, "--prompt", request.prompt, "--permission-mode", request.permissions.mode]
        if request.resume_session:
            argv += ["--resume", request.resume_session]
        return Command(argv=argv, env={"FAKE_AGENT": "1"})

    def progress(self, line: str) -> Progress | None:
        try:
            event = json.loads(line)
        except ValueError:
            return None
        kind = event.get("type")
        if kind == "tool":
            return Progress(tool_call=event["name"])
        if kind == "intent":
            return Progress(intent=event["text"])
        if kind == "text":
            return Progress(text=event["text"])
        if kind == "init":
            return Progress(session_id=event["session_id"])
        return None

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        for line in reversed(stdout.splitlines()):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "result":
                return TurnOutcome(
                    ok=bool(event["ok"]) and exit_code == 0,
                    final_text=event.get("text"),
                    session_id=event.get("session_id"),
                    error=event.get("error"),
                )
        return TurnOutcome(ok=False, error=f"no result (exit code {exit_code})")


def write_script(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def fake_agent(folder: Path) -> Path:
    return write_script(folder, "fake-agent", FAKE_AGENT)


def adapters(*known: FakeAdapter) -> Callable[[str], FakeAdapter]:
    table = {a.name: a for a in known}

    def adapter_for(name: str) -> FakeAdapter:
        if name not in table:
            raise UsageError(f"unknown agent {name!r} (available: {', '.join(sorted(table))})")
        return table[name]

    return adapter_for


def make_registry(
    root: Path,
    adapter: FakeAdapter | None = None,
    *,
    events: EventBus | None = None,
    clock: FakeClock | None = None,
    **limits: Any,
) -> Registry:
    clock = clock or FakeClock()
    known = [adapter] if adapter is not None else []
    return Registry(
        RecordStore(root / "state" / "registry"),
        root / "data" / "tasks",
        clock,
        events or EventBus(clock.now),
        adapters(*known),  # type: ignore[arg-type]
        RegistryLimits(**{"kill_grace_s": 1.0, **limits}),
    )


def run(coro: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(WAIT_S * 2):
            return await coro

    return asyncio.run(bounded())


async def until(predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:  # noqa: ASYNC109
    """Poll ``predicate`` (bounded) until it holds: for conditions no event announces (a pid file, a dead group)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def wait_file(path: Path, timeout: float = WAIT_S) -> str:
    """The contents of ``path`` once it exists and is not empty (blocking, bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} did not appear")


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for a reaper that is not us counts as gone)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def registry_api(reg: Registry) -> Api:
    """The registry's routes, for a test's own socket server (kairosd serves them the same way)."""
    api = Api(None, lambda: None)  # type: ignore[arg-type]  # the registry routes never touch the service
    api.add_routes(registry_routes(reg))
    return api
