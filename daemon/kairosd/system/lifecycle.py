"""Lifecycle hooks: user commands run when tasks are created or finish and when scheduled tasks fire,
are missed or expire.

Events come from the daemon's EventBus and are renamed for users:

    task_started                         -> task_created
    task_updated with a terminal status  -> task_completed   (completed, failed or cancelled)
    run_started                          -> scheduled_task_fired
    missed                               -> scheduled_task_missed
    expired                              -> scheduled_task_expired

Each configured command gets ``{"event": NAME, "source": BUS TYPE, "at": ..., ...}``
as JSON on stdin, ``KAIROS_HOOK_EVENT`` and ``KAIROS_SPAWNED=1`` in its
environment, runs in its own process group and is stopped at its timeout
(SIGTERM, then SIGKILL). A hook that cannot start, fails or hangs is logged and
never stops the daemon or delays an event: hooks run in the background, at
most ``max_parallel`` at once, and a burst beyond ``MAX_PENDING`` is dropped
with a warning.

A hook is only run when nobody else could have changed what it runs: before
each run its program (``argv[0]``: a path, ``~`` expanded, or a name on the
hook's PATH), an interpreter's script (``["sh", "/path/hook.sh"]``) and the
command behind ``env`` are checked with :mod:`kairosd.system.filesafety` (owned by
this user or root, not writable by group or others, in a folder others cannot
write unless it is sticky). An unsafe hook is not run: a warning names the
file, the reason and the fix (``chmod go-w FILE``), and it counts in
``refused`` and ``failures``.

Takes a plain mapping ``event -> (argv, timeout_s)`` (or a list of such pairs),
so it does not depend on the config module's classes.

Must not import the scheduler, the store, the server or the registry's state
(it reuses only the process runner).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from kairosd.core import defaults
from kairosd.core.events import EventBus
from kairosd.system import filesafety
from kairosd.system.procgroup import describe_exit
from kairosd.system.runner import ProcessRun, ProcessSpec

log = logging.getLogger(__name__)

HOOK_EVENTS = defaults.HOOK_EVENTS
_RENAMED = {
    "task_started": "task_created",
    "run_started": "scheduled_task_fired",
    "missed": "scheduled_task_missed",
    "expired": "scheduled_task_expired",
}
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
MAX_PENDING = 100
MAX_LOGGED_LINES = 3  # last lines of a failed hook's output, quoted in the daemon log

HookSpec = tuple[Sequence[str], float]
HookConfig = Mapping[str, HookSpec | Sequence[HookSpec]]


def normalise(hooks: HookConfig) -> dict[str, list[HookSpec]]:
    """``event -> [(argv, timeout_s), ...]``; an unknown event or a malformed command is a ValueError."""
    table: dict[str, list[HookSpec]] = {}
    for event, value in hooks.items():
        if event not in HOOK_EVENTS:
            raise ValueError(f"no such hook event: {event!r} (use one of {', '.join(HOOK_EVENTS)})")
        specs = [cast(HookSpec, value)] if _is_spec(value) else list(cast(Sequence[HookSpec], value))
        if not all(_is_spec(spec) for spec in specs):
            raise ValueError(f"hook for {event}: give (argv, timeout_s) or a list of them")
        for argv, timeout in specs:
            if isinstance(argv, str) or not argv or not all(isinstance(a, str) and a for a in argv):
                raise ValueError(f"hook for {event}: argv must be a non-empty list of non-empty strings")
            if not timeout > 0:
                raise ValueError(f"hook for {event}: the timeout must be positive")
        if specs:
            # `~` in the program is expanded, as the safety check reads it (exec itself would not).
            table[event] = [([os.path.expanduser(argv[0]), *argv[1:]], float(timeout)) for argv, timeout in specs]
    return table


def _is_spec(value: Any) -> bool:
    return (
        isinstance(value, tuple | list)
        and len(value) == 2
        and isinstance(value[1], int | float)
        and not isinstance(value[1], bool)
    )


class LifecycleHooks:
    """Runs the configured hook commands for bus events; see the module docstring."""

    def __init__(
        self,
        events: EventBus,
        hooks: HookConfig,
        *,
        environ: Mapping[str, str] | None = None,
        lookup: Callable[[str], dict[str, Any] | None] | None = None,
        max_parallel: int = 4,
        kill_grace_s: float = defaults.KILL_GRACE_S,
    ) -> None:
        self._events = events
        self._hooks = normalise(hooks)
        self._environ = None if environ is None else dict(environ)
        self._lookup = lookup  # the whole record of a registry task, for task_completed
        self._sem = asyncio.Semaphore(max_parallel)
        self._grace = kill_grace_s
        self._loop_task: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        self.runs = 0
        self.failures = 0  # failed, hung, could not start, or refused
        self.refused = 0  # not run: a file it runs could be changed by another user

    @property
    def configured(self) -> list[str]:
        return sorted(self._hooks)

    def reconfigure(self, hooks: HookConfig) -> None:
        """Take new hook commands (a config reload): subscribe again to the events they need.

        Hooks running now finish; the new subscription is made before this returns, so no event
        published afterwards is missed."""
        self._hooks = normalise(hooks)
        if self._loop_task is not None:
            self._loop_task.cancel()
            self._loop_task = None
        self.start()

    def start(self) -> None:
        """Subscribe now (so no event published after this is missed) and run hooks from then on."""
        if not self._hooks or self._loop_task is not None:
            return
        types = frozenset(bus for bus, name in _RENAMED.items() if name in self._hooks) | (
            {"task_updated"} if "task_completed" in self._hooks else set()
        )
        stream = self._events.subscribe(types)
        self._loop_task = asyncio.create_task(self._loop(stream), name="kairos-lifecycle-hooks")

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop listening; let running hooks finish for ``grace_s``, then stop them."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None
        if self._running:
            _, late = await asyncio.wait(set(self._running), timeout=grace_s)
            for task in late:
                task.cancel()  # ProcessRun kills the group on cancellation
            if late:
                await asyncio.gather(*late, return_exceptions=True)

    async def _loop(self, stream: Any) -> None:
        async for event in stream:
            name = self._name_of(event)
            if name is None:
                continue
            if len(self._running) >= MAX_PENDING:
                log.warning("dropping the %s hook: %d hook runs are already pending", name, len(self._running))
                continue
            payload = self._payload(name, event)
            for argv, timeout in self._hooks.get(name, ()):
                task = asyncio.create_task(self._run(name, list(argv), timeout, payload))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    def _name_of(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "task_updated":
            return "task_completed" if event.get("status") in _TERMINAL else None
        return _RENAMED.get(str(kind))

    def _payload(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in event.items() if k != "type"}
        payload: dict[str, Any] = {"event": name, "source": event.get("type"), **data}
        if name == "task_completed" and self._lookup is not None and isinstance(event.get("task_id"), str):
            try:
                task = self._lookup(event["task_id"])
            except Exception:
                log.exception("looking up task %s for the task_completed hook failed", event["task_id"])
                task = None
            if task is not None:
                payload["task"] = task
        return payload

    async def _run(self, name: str, argv: list[str], timeout_s: float, payload: dict[str, Any]) -> None:
        """One hook command; logs what went wrong, never raises (except cancellation)."""
        async with self._sem:
            env = dict(os.environ if self._environ is None else self._environ)
            env.update({"KAIROS_HOOK_EVENT": name, "KAIROS_SPAWNED": "1"})
            if self._refuse(name, argv, env):
                return
            lines: deque[str] = deque(maxlen=MAX_LOGGED_LINES)
            spec = ProcessSpec(argv, env, None, json.dumps(payload, default=str) + "\n", timeout_s)
            process = ProcessRun(
                spec, lambda _stream, batch: lines.extend(line[:300] for line in batch), kill_grace_s=self._grace
            )
            self.runs += 1
            try:
                result = await process.run()
            except Exception:
                self.failures += 1
                log.exception("the %s hook %s failed inside kairosd", name, argv[0])
                return
        if result.error is not None:
            problem = result.error
        elif result.timed_out:
            problem = f"timed out after {timeout_s:g}s (process group killed)"
        elif result.exit_code != 0:
            problem = describe_exit(result.exit_code or 0)
        else:
            log.debug("the %s hook %s ran", name, argv[0])
            return
        self.failures += 1
        output = "; ".join(list(lines)[-3:])
        log.warning("the %s hook %s failed: %s%s", name, argv[0], problem, f" (output: {output})" if output else "")

    def _refuse(self, name: str, argv: list[str], env: Mapping[str, str]) -> bool:
        """Whether the hook must not run because another user could change a file it runs (logged)."""
        unsafe = filesafety.check_command(argv, env)
        for problem in unsafe:
            log.warning(
                "the %s hook %s was not run: %s, so another user could run code as you through it. Fix it with: %s",
                name,
                argv[0],
                problem,
                problem.fix,
            )
        if unsafe:
            self.refused += 1
            self.failures += 1
        return bool(unsafe)
