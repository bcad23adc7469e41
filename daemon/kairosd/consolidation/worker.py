"""The detached consolidation run: ``python -m kairosd.consolidation.worker REQUEST.json``.

kairosd starts it in a new session (its own process group, stdio to the task log, with
``KAIROS_SPAWNED=1``), so it outlives the agent, the hook and kairosd itself. It:

1. takes the project's run lock (``<board>.run.lock``, held until it exits: one run per project
   even across kairosd restarts);
2. reads the transcript and extracts candidates offline (always: it is also agent mode's fallback), in
   the reading the request names (``offline``: broad, or cautious, which falls back to broad, saying why
   in the result, if its model cannot be loaded);
3. in agent mode (:mod:`.remagent.modes` decides), asks ``rem-agent`` once per chunk of typed turns, merging
   each answer before the next chunk is asked; any failure falls back to offline mode (for the
   turns the agent did not reach), and the result says why;
4. merges the candidates into the board (under the board's lock; the history records it);
5. writes its result atomically to the request's ``result_path`` and exits 0 (ok) or 1.

kairosd notices the exit (a pidfd, or after a restart the recorded pid and start time) and reads
the result file; a worker that died without one is recorded as failed.

The request (JSON, written by :mod:`.runs`): ``run, project, transcript, agent, session_id,
mode (auto, agent or offline), agent_timeout_s, offline (broad or cautious: offline mode's reading; broad
if absent), zone, requested_at, boards_dir, result_path, pid_path, config_dir, state_dir, data_dir,
runtime_dir``. With ``--detach`` (how kairosd starts it) it forks first: the
parent writes the worker's pid to ``pid_path`` and exits, the worker leads a new session.

Must not import the daemon, the server or the registry's state.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kairosd.consolidation.board.store import BoardStore, MergeResult
from kairosd.consolidation.offline import kinds as kinds_model
from kairosd.consolidation.offline.extract import Extraction, extract
from kairosd.consolidation.transcripts.read import Message, ReadStats, read_file
from kairosd.core.clock import Clock, SystemClock
from kairosd.system.atomic import write_atomic
from kairosd.system.paths import Paths

REQUEST_VERSION = 1


def consolidate(request: dict[str, Any], clock: Clock, environ: dict[str, str]) -> dict[str, Any]:
    """Do the run the request describes; the result document (never raises for an ordinary failure)."""
    started = clock.now()
    result: dict[str, Any] = {"run": request.get("run"), "ok": False, "started_at": started.isoformat()}
    project = str(request["project"])
    boards = BoardStore(Path(request["boards_dir"]), clock.now)
    with _run_lock(boards.run_lock_path(project)) as held:
        if not held:
            result["error"] = "another consolidation of this project is running (its run lock is held)"
            return _done(result, clock, started)
        stats = ReadStats()
        turns: list[str] = []
        wants_agent = request.get("mode", "offline") in ("auto", "agent")
        kinds = _reading(request, result)
        try:
            # An offline run keeps no copy of the typed turns (only agent mode's prompt needs them).
            extraction = _offline(request, stats, turns if wants_agent else None, kinds=kinds)
        except OSError as exc:
            result["error"] = f"cannot read the transcript {request.get('transcript')}: {exc.strerror or exc}"
            result["transcript"] = stats.as_dict()
            return _done(result, clock, started)
        result["transcript"] = stats.as_dict()
        result["extracted"] = extraction.counts()
        result["dropped"] = {"secrets": extraction.dropped_secrets, "injections": extraction.dropped_injections}
        _say(
            f"read {stats.lines} line(s) of {stats.format or 'unknown'} transcript ({stats.malformed} malformed "
            f"skipped), {stats.human_turns} human turn(s); offline found {len(extraction.candidates)} candidate(s)",
        )
        candidates = extraction.to_merge
        merged = MergeResult()
        result["mode"] = "offline"
        if wants_agent:
            try:
                applied, rest = _agent(request, boards, project, stats, clock, environ, turns, result, merged)
            except Exception as exc:  # agent mode must never cost the run: offline mode takes over
                _fallback(result, f"internal error in agent mode: {exc!r}")
                applied, rest = result.get("chunks_applied", 0), result.get("turns_decided", 0)
                import traceback

                traceback.print_exc()
            if rest is None:
                candidates = []  # the rem-agent decided on every turn
            elif applied:
                # Its first chunks were applied; offline mode takes the turns it did not reach.
                try:
                    candidates = _offline(request, ReadStats(), None, skip_turns=rest, kinds=kinds).to_merge
                except OSError as exc:
                    candidates = []
                    result["fallback"] += f"; the transcript cannot be read again: {exc.strerror or exc}"
        session, agent, run = request.get("session_id"), request.get("agent"), request.get("run")
        if candidates:
            _add(merged, boards.merge(project, candidates, session=session, agent=agent, run=run))
        result["merge"] = merged.as_dict()
        result["board_size"] = len(boards.load(project).entries)
        result["ok"] = True
        _say(
            f"board of {project}: {len(merged.added)} added, {len(merged.seen)} seen again, "
            f"{len(merged.closed)} closed, {len(merged.superseded)} replaced, {len(merged.pruned)} pruned, "
            f"{len(merged.confirmed)} offline guess(es) confirmed, {len(merged.dropped)} dropped; "
            f"{result['board_size']} entr(y/ies) now",
        )
    return _done(result, clock, started)


def _reading(request: dict[str, Any], result: dict[str, Any]) -> kinds_model.Kinds | None:
    """The cautious reading's model, or None for the broad reading; the result says which was used,
    and why not the one asked for (the model's data missing or unreadable: never a reason to fail a run)."""
    asked = request.get("offline", "broad")
    result["offline_reading"] = "broad"
    if asked == "broad":
        return None
    if asked != "cautious":
        why = f"no such offline reading: {asked!r}"
    else:
        try:
            kinds = kinds_model.load()
        except kinds_model.Unavailable as exc:
            why = str(exc)
        else:
            result["offline_reading"] = "cautious"
            return kinds
    result["offline_reading_note"] = f"cautious reading not used ({why}); broad reading"
    _say(f"offline reading: {result['offline_reading_note']}")
    return None


def _offline(
    request: dict[str, Any],
    stats: ReadStats,
    turns: list[str] | None,
    skip_turns: int = 0,
    kinds: kinds_model.Kinds | None = None,
) -> Extraction:
    """Offline mode's candidates; ``turns`` gets what the person typed (all of it: agent mode's
    prompt carries every turn, and the transcript's read cap bounds them). ``skip_turns``: leave out
    the messages before that typed turn (the ones agent mode already consolidated); ``kinds``: the
    cautious reading's model (None: the broad reading)."""
    zone = _zone(request.get("zone"))
    anchor = datetime.fromisoformat(request["requested_at"])

    def typed(messages: Iterator[Message]) -> Iterator[Message]:
        seen = 0
        for message in messages:
            if message.human:
                if turns is not None:
                    turns.append(message.text)
                seen += 1
            if seen > skip_turns:
                yield message

    transcript = read_file(request["transcript"], request.get("agent"), stats, session_id=request.get("session_id"))
    messages = typed(transcript)
    return extract(messages, project=str(request["project"]), anchor=anchor, zone=zone, kinds=kinds)


def _agent(
    request: dict[str, Any],
    boards: BoardStore,
    project: str,
    stats: ReadStats,
    clock: Clock,
    environ: dict[str, str],
    turns: list[str],
    result: dict[str, Any],
    merged: MergeResult,
) -> tuple[int, int | None]:
    """Agent mode, chunk by chunk, each merged before the next is asked (so it sees the board as
    updated). Returns how many chunks were applied and the first turn index (0-based) agent mode
    did not consolidate (None: it did them all; 0: offline mode does the whole session)."""
    # Imported here: offline runs never load the agent adapters.
    from kairosd.config import load_config
    from kairosd.consolidation.remagent import modes
    from kairosd.consolidation.remagent.protocol import chunks, prompt_for
    from kairosd.consolidation.remagent.run import choose, run_rem_agent
    from kairosd.core.errors import KairosError

    paths = Paths(
        Path(request["state_dir"]), Path(request["runtime_dir"]), Path(request["data_dir"]), Path(request["config_dir"])
    )
    try:
        config = load_config(paths, environ)
    except KairosError as exc:
        return _fallback(result, f"the config cannot be used: {exc}"), 0
    setup, why = choose(config, str(request.get("mode")), request.get("agent"), project, environ)
    result["mode_reason"] = why
    _say(f"consolidation mode: {why}")
    if setup is None:
        return 0, 0
    settings = config.consolidation
    groups = chunks(turns, settings.prompt_budget) or [[]]  # no typed turn: still one turn, on the board alone
    if len(groups) > settings.max_chunks:
        why = (
            f"the session's typed turns need {len(groups)} rem-agent turns of {settings.prompt_budget} bytes, "
            f"more than max_chunks = {settings.max_chunks}"
        )
        return _fallback(result, why), 0
    # The day the run was asked for (kairosd's clock), in the user's zone.
    day = datetime.fromisoformat(request["requested_at"]).astimezone(_zone(request.get("zone"))).date().isoformat()
    counts = Path(request["state_dir"]) / "consolidation"  # next to the runs, not among the boards
    taken, before = modes.take_run(counts, day, settings.max_agent_runs_per_day)
    if not taken:
        why = f"{before} agent run(s) today already, max_agent_runs_per_day = {settings.max_agent_runs_per_day}"
        return _fallback(result, why), 0
    result.update(agent=setup.cli, model=setup.model, chunks=len(groups), agent_rejected=[])
    deadline = time.monotonic() + float(request["agent_timeout_s"])  # one bound for all the chunks
    session, run = request.get("session_id"), request.get("run")
    for index, pieces in enumerate(groups, 1):
        # how far agent mode got, should this chunk fail (a part of a turn: offline takes it whole)
        result["chunks_applied"], result["turns_decided"] = index - 1, pieces[0].turn - 1 if pieces else 0
        board = boards.load(project)
        prompt = prompt_for(
            project, board, pieces, total_turns=len(turns), chunk=index, chunks_total=len(groups),
            ended_at=stats.last_at, now=clock.now(),
        )  # fmt: skip
        answer = run_rem_agent(
            config=config,
            setup=setup,
            project=project,
            prompt=prompt,
            timeout_s=deadline - time.monotonic(),
            environ=environ,
            board={e.id: e.kind for e in board.entries},
            guesses={e.id for e in board.entries if e.guessed},
            bound_s=float(request["agent_timeout_s"]),
        )
        if answer.rejected:
            result["agent_rejected"] += answer.rejected
            _say(f"rem-agent answer: {len(answer.rejected)} line(s) not applied: " + "; ".join(answer.rejected))
        if answer.error is not None:
            where = f" (chunk {index} of {len(groups)}; the first {index - 1} were applied)" if index > 1 else ""
            _fallback(result, answer.error + where)
            return result["chunks_applied"], result["turns_decided"]
        result["mode"] = "agent"
        _say(f"rem-agent ({answer.agent}) chunk {index} of {len(groups)}: {len(answer.candidates)} decision(s)")
        if answer.candidates:
            _add(merged, boards.merge(project, answer.candidates, session=session, agent=request.get("agent"), run=run))
    result["chunks_applied"], result["turns_decided"] = len(groups), len(turns)
    return len(groups), None


def _fallback(result: dict[str, Any], why: str) -> int:
    result["fallback"] = why
    _say(f"agent mode not used ({why}); offline mode")
    return 0


def _add(total: MergeResult, part: MergeResult) -> None:
    for name in ("added", "seen", "pruned", "superseded", "conflicts", "closed", "confirmed", "dropped", "notes"):
        getattr(total, name).extend(getattr(part, name))


def _say(text: str) -> None:
    """A line for the run's log (the task log: ``kairos task logs ID``)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _zone(name: Any) -> ZoneInfo:
    try:
        return ZoneInfo(name) if isinstance(name, str) and name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _done(result: dict[str, Any], clock: Clock, started: datetime) -> dict[str, Any]:
    finished = clock.now()
    result["finished_at"] = finished.isoformat()
    result["duration_s"] = round((finished - started).total_seconds(), 3)
    return result


@contextlib.contextmanager
def _run_lock(path: Path) -> Iterator[bool]:
    """The project's run lock, held for the whole run; False if another process holds it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield True
    finally:
        os.close(fd)


def _detach(pid_path: Path) -> None:
    """Fork; the parent records the child's pid and exits, the child goes on in a session of its own.

    kairosd reaps the parent at once, so the worker is nobody's child to wait for (no zombie, no
    subprocess object to keep) and leads its own process group, which a cancel signals.
    """
    child = os.fork()
    if child:
        write_atomic(pid_path, f"{child}\n".encode(), mode=0o600)
        os._exit(0)
    os.setsid()


def _on_term(signum: int, frame: object) -> None:
    # Cancelled (kairos task cancel, or kairosd's bound): unwind, so a running rem-agent's
    # group is killed on the way out (see remagent.run.run_rem_agent).
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    detach = args[:1] == ["--detach"]
    args = args[1:] if detach else args
    if len(args) != 1:
        sys.stderr.write("usage: python -m kairosd.consolidation.worker [--detach] REQUEST.json\n")
        return 2
    request_path = Path(args[0])
    t0 = time.monotonic()
    try:
        request = json.loads(request_path.read_text(encoding="utf-8"))
        if not isinstance(request, dict) or request.get("version") != REQUEST_VERSION:
            raise ValueError(f"not a version {REQUEST_VERSION} consolidation request")
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"kairos consolidation: cannot read the request {request_path}: {exc}\n")
        return 2
    if detach:
        _detach(Path(request["pid_path"]))
    signal.signal(signal.SIGTERM, _on_term)
    clock = SystemClock()
    _say(f"kairos consolidation {request.get('run')} of {request.get('project')} started (pid {os.getpid()})")
    try:
        result = consolidate(request, clock, dict(os.environ))
    except Exception as exc:  # the result file must say what happened, whatever happened
        result = {"run": request.get("run"), "ok": False, "error": f"internal error: {exc!r}"}
        _done(result, clock, clock.now())
        import traceback

        traceback.print_exc()
    data = json.dumps(result, ensure_ascii=False, indent=1).encode("utf-8")
    write_atomic(Path(request["result_path"]), data + b"\n", mode=0o600)
    status = "ok" if result.get("ok") else f"failed: {result.get('error')}"
    _say(f"kairos consolidation {request.get('run')} {status} ({time.monotonic() - t0:.2f}s)")
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
