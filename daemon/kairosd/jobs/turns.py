"""The turns of the registry's tasks: from the wait for a slot to the recorded end of the process.

A turn waits for a slot (:class:`~kairosd.jobs.slots.Slots`), is written
durably as started, then runs its process (:class:`~kairosd.system.runner.ProcessRun`)
with the task's ``KAIROS_*`` environment. Each output line goes to the task log
(one write per chunk read, up to the turn's output cap); at most
:data:`LIVE_LINES_PER_CHUNK` lines of a chunk go to log followers and out as
``task_notification`` events, so a flood costs the event loop a bounded amount
per chunk. What the adapter makes of each line updates the progress
(``task_progress``, in memory until the turn ends). The outcome
(:mod:`~kairosd.jobs.rules`) is recorded, then the slot and the turn are
let go in one step. A turn is stopped by a cancel or at shutdown.

Must not import the registry's use-cases (:mod:`~kairosd.jobs.registry`),
the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairosd.agents.base import AgentAdapter, Command
from kairosd.jobs import joblog, rules
from kairosd.jobs.book import Book
from kairosd.jobs.follow import Followers
from kairosd.jobs.limits import RegistryLimits
from kairosd.jobs.model import MAX_LINE_CHARS, JobRecord, JobStatus, ProgressInfo, clip
from kairosd.jobs.slots import Slots
from kairosd.system.runner import ProcessResult, ProcessRun, ProcessSpec

# Output lines of one chunk published live (events, followers); the log gets them all.
LIVE_LINES_PER_CHUNK = 256

# Named as before the registry was split into modules, so its log lines read as they did.
log = logging.getLogger("kairosd.jobs.registry")


@dataclass
class _Live:
    """A task with a turn in flight (queued or running)."""

    command: Command
    adapter: AgentAdapter | None
    handle: asyncio.Task[None] | None = None
    process: ProcessRun | None = None
    cancel_requested: bool = False
    stopping: bool = False
    log_fd: int | None = None
    seq: int = 0
    tool_calls: int = 0  # this turn's
    session_seen: str | None = None  # a session id an output line announced


class Turns:
    def __init__(
        self,
        book: Book,
        slots: Slots,
        limits: RegistryLimits,
        followers: Followers,
        environ: dict[str, str] | None,
    ) -> None:
        self._book = book
        self._slots = slots
        self._limits = limits
        self._followers = followers
        self._environ = environ
        self._live: dict[str, _Live] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # turn coroutines, until their end is recorded

    def in_flight(self, task_id: str) -> bool:
        return task_id in self._live

    def launch(self, task_id: str, command: Command, adapter: AgentAdapter | None) -> None:
        book = self._book
        if book.records[task_id].status is not JobStatus.RUNNING:
            return  # cancelled (with an ancestor) while its start or follow-up was being written
        if book.closing:
            # stop() began while the start was being written: it will not run, and says so.
            error = "kairosd stopped before it started; it was not run"
            book.apply(task_id, {"status": JobStatus.INTERRUPTED, "queued": False, "error": error})
            book.soon(book.save(task_id))
            return
        live = _Live(command, adapter)
        self._live[task_id] = live
        live.handle = asyncio.create_task(self._turn(task_id, live), name=f"kairos-task-{task_id}")
        self._tasks.add(live.handle)
        live.handle.add_done_callback(self._tasks.discard)
        book.notify()

    async def cancel(self, task_id: str) -> bool | None:
        """Stop the turn in flight as cancelled and wait until its end is recorded; None if there was
        none, else whether SIGKILL was needed (something outlived SIGTERM and the grace)."""
        live = self._live.get(task_id)
        if live is None:
            return None
        live.cancel_requested = True
        await self._halt(live)
        return live.process is not None and live.process.killed

    async def stop(self) -> None:
        """At shutdown: stop every turn in flight, then wait for all turns to record their end."""
        lives = list(self._live.values())
        if lives:
            log.info("stopping %d background job(s) in flight", len(lives))
        for live in lives:
            live.stopping = True
        await asyncio.gather(*(self._halt(live) for live in lives))
        if self._tasks:  # turns that ended just before: let them record it
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _halt(self, live: _Live) -> None:
        """Stop a turn in flight (its group: TERM, grace, KILL) and wait until it has recorded its end."""
        if live.process is not None:
            await live.process.stop()
        elif live.handle is not None:
            live.handle.cancel()  # still waiting for a slot
        if live.handle is not None:
            await asyncio.wait({live.handle})

    async def _turn(self, task_id: str, live: _Live) -> None:
        try:
            await self._slots.acquire(task_id)
        except asyncio.CancelledError:
            # Only the registry cancels a turn, and only while it waits for a slot (cancel or stop).
            outcome = rules.cut_short(cancelled=live.cancel_requested, when="while it waited for a slot")
            await self._end(task_id, live, outcome, holding_slot=False)
            return
        record = self._book.records[task_id]
        # No await between taking the slot and setting the process, so cancel() always finds one of the two.
        live.process = ProcessRun(
            self._process_spec(record, live.command),
            functools.partial(self._on_lines, task_id, live),
            kill_grace_s=self._limits.kill_grace_s,
            max_output=self._limits.max_output,
            marker="KAIROS_TASK_ID",  # what a turn starts carries it, also after leaving the group
            on_spawn=functools.partial(self._on_spawn, task_id),
        )
        ended = False
        try:
            try:
                result = await self._run_process(task_id, live)
                outcome = self._outcome(task_id, live, result)
            except Exception:
                log.exception("task %s: the turn failed inside kairosd", task_id)
                outcome = {"ok": False, "status": JobStatus.FAILED, "error": "internal error (see the kairosd log)"}
            ended = True
            await self._end(task_id, live, outcome, holding_slot=True)
        finally:
            if not ended:  # cancelled from outside the registry (event loop teardown)
                self._let_go(task_id, live, holding_slot=True)
                self._book.notify()

    async def _run_process(self, task_id: str, live: _Live) -> ProcessResult:
        assert live.process is not None
        if live.cancel_requested or live.stopping:
            await live.process.stop()  # cancelled between queue and slot: run() returns at once
        record = self._book.records[task_id]
        path = Path(record.log_path)
        live.seq = await asyncio.to_thread(joblog.count_lines, path)
        try:
            live.log_fd = joblog.open_log(path)
        except OSError as exc:
            log.warning("task %s: cannot open its log %s: %s", task_id, path, exc)
        turn = record.turns[-1]
        started = self._book.clock.now()
        self._log_line(task_id, live, "kairos", f"--- kairos: turn {turn.number} started {started.isoformat()} ---")
        turns = [*record.turns[:-1], turn.model_copy(update={"started_at": started})]
        # Durable before the process exists: a crash from here on leaves a record that says "running".
        await self._book.update(task_id, queued=False, turns=turns)
        return await live.process.run()

    def _process_spec(self, record: JobRecord, command: Command) -> ProcessSpec:
        env = dict(os.environ if self._environ is None else self._environ)
        env.update(command.env)
        env.update(
            {
                "KAIROS_TASK_ID": record.id,
                "KAIROS_TASK_DEPTH": str(record.depth),
                "KAIROS_SESSION": record.session or "default",
                # Lets kairos hooks in the command tell a process started by kairos from a user's own.
                "KAIROS_SPAWNED": "1",
            }
        )
        return ProcessSpec(command.argv, env, record.cwd, command.stdin, record.timeout_s)

    def _on_spawn(self, task_id: str, pid: int) -> None:
        import psutil  # on use: not needed to start (docs/performance.md)

        started: float | None = None
        with contextlib.suppress(psutil.Error):
            started = psutil.Process(pid).create_time()
        self._book.apply(task_id, {"pid": pid, "pid_started": started})
        self._book.soon(self._book.save(task_id))

    def _on_lines(self, task_id: str, live: _Live, stream: str, lines: list[str]) -> None:
        """The lines of one chunk of output: logged in one write, fanned out within a budget."""
        self._log_lines(task_id, live, stream, lines)
        if stream == "stdout" and live.adapter is None:
            # Only the last line shows as progress: the rest of the chunk needs no look.
            self._progress(task_id, live, stream, lines[-1])
            return
        for line in lines:
            self._progress(task_id, live, stream, line)

    def _progress(self, task_id: str, live: _Live, stream: str, line: str) -> None:
        record = self._book.records[task_id]
        progress = record.progress
        parsed = None
        if stream == "stdout" and live.adapter is not None:
            try:
                parsed = live.adapter.progress(line)
            except Exception:
                log.exception("task %s: the %s adapter failed on an output line", task_id, record.agent)
        if parsed is not None:
            if parsed.tool_call:
                live.tool_calls += 1
            if parsed.session_id:
                live.session_seen = parsed.session_id
            shown = parsed.text or progress.last_line
            updated = ProgressInfo(
                tool_calls=progress.tool_calls + (1 if parsed.tool_call else 0),
                intent=clip(parsed.intent, MAX_LINE_CHARS) if parsed.intent else progress.intent,
                last_line=clip(shown, MAX_LINE_CHARS),
            )
        elif stream == "stdout" and live.adapter is None:
            updated = progress.model_copy(update={"last_line": clip(line, MAX_LINE_CHARS)})
        else:
            return
        if updated != progress:
            # In memory only: progress is saved with the turn's end, not on every line.
            self._book.records[task_id] = record.model_copy(update={"progress": updated})
            extra = {"tool": parsed.tool_call} if parsed is not None and parsed.tool_call else {}
            self._book.events.publish(
                "task_progress", task_id=task_id, session=record.session, **updated.model_dump(mode="json"), **extra
            )

    def _log_line(self, task_id: str, live: _Live, stream: str, line: str) -> None:
        self._log_lines(task_id, live, stream, [line])

    def _log_lines(self, task_id: str, live: _Live, stream: str, lines: list[str]) -> None:
        """Append ``lines`` to the log (one write) and pass on at most :data:`LIVE_LINES_PER_CHUNK` of them.

        Each line keeps its ``seq`` (its number in the log); a chunk with more lines than the budget
        publishes its first ones and tells followers that lines were skipped, so a flood costs the
        event loop the same per chunk however short its lines are (issue 27).
        """
        if live.log_fd is not None:
            try:
                joblog.append_lines(live.log_fd, lines)
            except OSError as exc:
                log.warning("task %s: cannot write its log (%s); not logging this turn further", task_id, exc)
                os.close(live.log_fd)
                live.log_fd = None
        session = self._book.records[task_id].session
        first = live.seq
        live.seq += len(lines)
        for number, line in enumerate(lines[:LIVE_LINES_PER_CHUNK]):
            item = {"seq": first + number, "stream": stream, "line": line}
            self._book.events.publish("task_notification", task_id=task_id, session=session, **item)
            self._followers.tell(task_id, item)
        if len(lines) > LIVE_LINES_PER_CHUNK:
            self._followers.skipped(task_id, len(lines) - LIVE_LINES_PER_CHUNK)

    def _outcome(self, task_id: str, live: _Live, result: ProcessResult) -> dict[str, Any]:
        """How the turn ended: turn fields and the task's new status."""
        if live.cancel_requested or live.stopping:
            cut = rules.cut_short(cancelled=live.cancel_requested, when="while it ran")
            return cut | {"exit_code": result.exit_code}
        return rules.turn_outcome(
            self._book.records[task_id],
            result,
            live.adapter,
            tool_calls=live.tool_calls,
            session_seen=live.session_seen,
        )

    async def _end(self, task_id: str, live: _Live, outcome: dict[str, Any], *, holding_slot: bool) -> None:
        """Record the end of the current turn and the task's new status; let go of the turn."""
        book = self._book
        changes = rules.end_changes(book.records[task_id], outcome, book.clock.now(), live.tool_calls)
        number, status = changes["turns"][-1].number, changes["status"]
        self._log_line(task_id, live, "kairos", f"--- kairos: turn {number} ended: {rules.summary(outcome)} ---")
        try:
            # In memory, the slot and the live entry go in one step (no await in between), so whoever
            # a wait() wakes sees the turn fully over: no slot held, a send() may start the next turn.
            book.apply(task_id, changes, notify=False)
        finally:
            self._let_go(task_id, live, holding_slot=holding_slot)
        log.info("task %s: turn %d ended, %s", task_id, number, status.value)
        try:
            await book.save(task_id)
        except OSError:
            log.exception("task %s: cannot record the end of its turn", task_id)
        finally:
            book.notify()  # waiters wake once the end is durable (or could not be made so)

    def _let_go(self, task_id: str, live: _Live, *, holding_slot: bool) -> None:
        """The turn is over: close its log, free its slot, forget it, end log followers."""
        if live.log_fd is not None:
            os.close(live.log_fd)
            live.log_fd = None
        if holding_slot:
            self._slots.release(task_id)
        if self._live.get(task_id) is live:
            del self._live[task_id]
        self._followers.tell(task_id, None)
