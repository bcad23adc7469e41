"""The run ledger (``runs.jsonl``) and the missed ledger (``missed.jsonl``): durable, bounded history.

Both are append-only :class:`kairosd.store.jsonlog.JsonLog` files read once at start
and mirrored in memory. A record is appended (and fsynced) before memory
changes, so what a client is told is on disk. Both stay bounded: memory keeps
only the newest records, and the file is rewritten with just those once it
holds more than twice as many lines (plus slack, so compaction is rare); the
scheduler holds that off while a herd is written (:meth:`RunLedger.hold_compaction`).

A run is recorded several times as it progresses (dispatched, then finished);
the last record for a ``run_id`` wins. A run still without an ``outcome`` when
the ledger is loaded was cut off by the daemon stopping: it is finalised as
failed, since nothing can confirm it was delivered.

Single writer: only the daemon that holds the store lock loads and records.
Blocking I/O; async callers run these methods in a thread when it matters.

Must not import the scheduler, the server, the store or any delivery target.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.records import MissedRecord, Outcome, Run, json_line
from kairosd.store.jsonlog import JsonLog

__all__ = ["INTERRUPTED_REASON", "Compacting", "MissedLedger", "RunLedger"]

log = logging.getLogger(__name__)

INTERRUPTED_REASON = "interrupted: kairosd stopped before the target confirmed delivery"
NEVER_STARTED_REASON = "kairosd stopped while this run was queued; it never started"

# Lines a log may hold beyond twice its kept records before it is compacted: keeps rewrites rare.
COMPACT_SLACK = 1000


def _needs_compaction(lines: int, kept: int) -> bool:
    return lines > 2 * kept + COMPACT_SLACK


def _in_flight(run: Run) -> bool:
    """No outcome yet, or queued and held by a target that will settle it (``awaiting``)."""
    return run.outcome is None or (run.outcome is Outcome.QUEUED and bool(run.awaiting))


_Record = TypeVar("_Record", Run, MissedRecord)


def _copied(value: Any) -> Any:
    """``value`` with its dicts, lists and sets copied all the way down; anything else (text, times,
    numbers: immutable) shared. What a record holds is JSON-like, so this is a deep copy of it."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if isinstance(value, set):
        return set(value)  # hashable members: immutable in practice
    return value


def _detached(record: _Record) -> _Record:
    """A copy of ``record`` that shares nothing mutable with it: its dicts and lists (the target, extra
    fields) are copied, its strings, datetimes and numbers (immutable) shared.

    ``model_copy(deep=True)`` also sent every datetime through ``copy.deepcopy``: 0.1 ms a record,
    two seconds for the 20,000 records of one catch-up pass over 10,000 tasks; a shallow copy with
    ``copy.deepcopy`` of the target alone still took 40 µs a record, this about 7.
    """
    values = {**record.__dict__, **(record.__pydantic_extra__ or {})}
    return record.model_copy(update={k: _copied(v) for k, v in values.items() if isinstance(v, dict | list | set)})


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    return f"{loc}: {first['msg']}" if loc else str(first["msg"])


class Compacting(Protocol):
    """A log whose compaction can wait (the ledgers here, the inbox): the scheduler holds it for a pass."""

    def hold_compaction(self) -> None: ...

    def release_compaction(self, compact: bool = True) -> None: ...

    @property
    def compaction_due(self) -> bool: ...


class _HeldLog:
    """What both ledgers share of :class:`Compacting`: a count of holds, and the release that compacts.

    A subclass sets ``_log``, ``_lock``, ``_loaded`` and ``_compaction_holds`` and gives ``_kept`` (the
    records its file would keep) and ``_maybe_compact``; its appends skip compaction while a hold stands.
    """

    _log: JsonLog
    _lock: threading.RLock
    _loaded: bool
    _compaction_holds: int

    def hold_compaction(self) -> None:
        """Let appends not compact the file until :meth:`release_compaction` (holds nest)."""
        with self._lock:
            self._compaction_holds += 1

    def release_compaction(self, compact: bool = True) -> None:
        """End one :meth:`hold_compaction`; the last one compacts now if the file is due (blocking: run
        it in a thread), unless ``compact`` is False (then the next append does)."""
        with self._lock:
            self._compaction_holds = max(0, self._compaction_holds - 1)
            if compact and not self._compaction_holds and self._loaded:
                self._maybe_compact()

    @property
    def compaction_due(self) -> bool:
        """Whether the file holds enough superseded lines to be rewritten (see :meth:`release_compaction`)."""
        return _needs_compaction(self._log.lines, self._kept())

    def _kept(self) -> int:
        raise NotImplementedError

    def _maybe_compact(self) -> None:
        raise NotImplementedError


class RunLedger(_HeldLog):
    """Runs by id, the newest ``keep_per_task`` per task.

    A run still in flight (no outcome, or queued and held by a target) is never
    evicted, however old (finished runs make room for it), so its outcome always
    has a run to land on.

    Runs of deleted tasks are kept under the same bound: history outlives tasks.
    ``on_evict`` hears of every run let go, so what belongs to it (its output
    log) goes with it.
    """

    def __init__(
        self,
        path: Path,
        clock: Clock,
        keep_per_task: int = defaults.RUNS_PER_TASK,
        on_evict: Callable[[builtins.list[Run]], None] | None = None,
    ) -> None:
        if keep_per_task < 1:
            raise ValueError("keep_per_task must be at least 1")
        self._log = JsonLog(path)
        self._clock = clock
        self._keep = keep_per_task
        # Told of the runs the history lets go (e.g. to delete their output logs); blocking, quick.
        self._on_evict = on_evict
        self._runs: dict[str, Run] = {}
        self._by_task: dict[str, set[str]] = {}
        # Order of first sight: breaks ties between runs with the same timestamp.
        self._seq: dict[str, int] = {}
        self._next_seq = 0
        # Each run's age (see _age), kept as its run is put: the history is sorted by it for every
        # task past its bound, once per fire (51 runs a task at 50 kept), and a key computed per
        # run per sort made every herd after the 50th cost 3.4 times the CPU of the first ones.
        self._ages: dict[str, tuple[datetime, int]] = {}
        self._loaded = False
        # The daemon may record from the event loop and from worker threads alike.
        self._lock = threading.RLock()
        self._compaction_holds = 0  # hold_compaction() calls not yet released: appends do not compact

    @property
    def path(self) -> Path:
        return self._log.path

    # Held for a herd (_HeldLog): a compaction rewrites every record kept (50 runs a task: 500,000 at
    # 10,000 tasks, seconds of work), and it came inside whichever append crossed the line: one herd in
    # every 25 or so waited for it. The scheduler compacts once the herd's outcomes are durable.
    def _kept(self) -> int:
        return len(self._runs)

    def load(self) -> builtins.list[Run]:
        """Read the ledger; finalise and return the runs a previous daemon left without an outcome.

        Call once, at start, before anything else. The finalised runs are written
        back, so they are reported once, not at every start.
        """
        with self._lock:
            self._log.remove_stale_temp_files()
            self._runs.clear()
            self._by_task.clear()
            self._seq.clear()
            self._ages.clear()
            self._put_many(run for run in map(self._parse, self._log.read()) if run is not None)
            self._trim(builtins.list(self._by_task))
            self._loaded = True
            now = self._clock.now()
            interrupted = [
                run.model_copy(update={"outcome": Outcome.FAILED, "reason": INTERRUPTED_REASON, "finished_at": now})
                for run in self._runs.values()
                if run.outcome is None
            ]
            # Runs waiting behind another when the daemon died never started; say so. Runs a target
            # holds (``awaiting``, e.g. a pending session item) are still held: the target settles them.
            interrupted += [
                run.model_copy(update={"outcome": Outcome.SKIPPED, "reason": NEVER_STARTED_REASON, "finished_at": now})
                for run in self._runs.values()
                if run.outcome is Outcome.QUEUED and not run.awaiting
            ]
            if interrupted:
                self._append(interrupted, handed_over=True)  # copies of their own, made just above
            else:
                self._maybe_compact()
            return [run.model_copy(deep=True) for run in interrupted]

    def record(self, run: Run) -> None:
        """Append ``run`` (a new run or a later state of one); durable when this returns."""
        self.record_many([run])

    def record_many(
        self,
        runs: builtins.list[Run],
        *,
        handed_over: bool = False,
        lines: builtins.list[bytes] | None = None,
    ) -> None:
        """Append several runs with a single fsync.

        The ledger keeps copies, so a caller that changes its Run later does not
        change history. ``handed_over``: the caller made these records for the
        ledger and will not change them (a later state of a run is a new record):
        they are kept as they are, without a copy each (20,000 a 10k herd).
        ``lines``: the runs' lines, one each in order, the bytes :func:`json_line` gives (the scheduler
        and the dispatcher have them already: see ``firing.Decision.lines_of``); else each run is encoded.
        """
        if not runs:
            return
        if lines is not None and len(lines) != len(runs):
            raise ValueError(f"{len(lines)} lines for {len(runs)} runs")
        with self._lock:
            self._require_loaded()
            self._append(runs, handed_over, lines)

    def get(self, run_id: str) -> Run:
        with self._lock:
            self._require_loaded()
            run = self._runs.get(run_id)
            if run is None:
                raise NotFoundError(
                    f"no run {run_id!r} in the ledger (it keeps the last {self._keep} runs of each task)"
                )
            return run.model_copy(deep=True)

    def list(self, task_id: str | None = None, limit: int = 50) -> builtins.list[Run]:
        """Runs newest first (by dispatch time, else planned time), of one task or of all."""
        if limit < 0:
            raise UsageError(f"limit must be 0 or more, not {limit}")
        with self._lock:
            self._require_loaded()
            if task_id is None:
                ids: Iterable[str] = self._runs
            else:
                ids = self._by_task.get(task_id, set())
            newest_first = sorted(ids, key=self._age, reverse=True)[:limit]
            return [self._runs[run_id].model_copy(deep=True) for run_id in newest_first]

    def caught_up(self, after: datetime | None = None) -> builtins.list[Run]:
        """The catch-up runs (missed fires fired late) dispatched after ``after``, newest first."""
        with self._lock:
            self._require_loaded()
            late = [
                run_id
                for run_id, run in self._runs.items()
                if run.catch_up and (after is None or (run.dispatched_at or run.planned_for) > after)
            ]
            return [self._runs[run_id].model_copy(deep=True) for run_id in sorted(late, key=self._age, reverse=True)]

    def between(self, start: datetime, end: datetime, task_ids: Iterable[str] | None = None) -> builtins.list[Run]:
        """Runs (of ``task_ids``, else of all) planned in [start, end], in no particular order.

        The records themselves, not copies (a timeline reads 1,000 tasks' runs): read them, do not change them.
        """
        with self._lock:
            self._require_loaded()
            if task_ids is None:
                runs: Iterable[Run] = self._runs.values()
            else:
                runs = (self._runs[r] for t in task_ids for r in self._by_task.get(t, ()))
            return [run for run in runs if start <= run.planned_for <= end]

    def latest_scheduled(self) -> dict[str, Run]:
        """Per task, the scheduled (not manual) run with the latest slot: where its schedule stands.

        The scheduler records a fire here before the store has the task's new
        anchor, so after a crash this is how far each task had got.
        """
        with self._lock:
            self._require_loaded()
            latest: dict[str, Run] = {}
            for run in self._runs.values():
                if run.manual:
                    continue
                best = latest.get(run.task_id)
                if best is None or run.scheduled_for > best.scheduled_for:
                    latest[run.task_id] = run
            return latest  # not copies (10,000 tasks at start-up): read them, do not change them

    def running(self) -> builtins.list[Run]:
        """Runs whose target has not answered yet, oldest first."""
        with self._lock:
            self._require_loaded()
            ids = sorted((rid for rid, run in self._runs.items() if run.outcome is None), key=self._age)
            return [self._runs[run_id].model_copy(deep=True) for run_id in ids]

    def awaiting(self, kind: str) -> builtins.list[Run]:
        """Queued runs held by the ``kind`` target (``Run.awaiting``), oldest first."""
        with self._lock:
            self._require_loaded()
            ids = sorted(
                (rid for rid, run in self._runs.items() if run.outcome is Outcome.QUEUED and run.awaiting == kind),
                key=self._age,
            )
            return [self._runs[run_id].model_copy(deep=True) for run_id in ids]

    def _append(
        self,
        runs: builtins.list[Run],
        handed_over: bool = False,
        lines: builtins.list[bytes] | None = None,
    ) -> None:
        self._log.append_lines([json_line(run) for run in runs] if lines is None else lines)
        # Copies: a caller that keeps mutating its Run must not change history behind the file's back.
        self._put_many(runs if handed_over else [_detached(run) for run in runs])
        self._trim({run.task_id for run in runs})
        if not self._compaction_holds:
            self._maybe_compact()

    def _parse(self, record: dict[str, Any]) -> Run | None:
        # Run.run_id has a default; a record without one would otherwise become a new, random run.
        if not isinstance(record.get("run_id"), str):
            log.warning("%s: skipping a record without a run_id", self._log.path)
            return None
        try:
            return Run.model_validate(record)
        except ValidationError as exc:
            log.warning("%s: skipping invalid run %s (%s)", self._log.path, record["run_id"], _problem(exc))
            return None

    def _put_many(self, runs: Iterable[Run]) -> None:
        """Keep each of ``runs`` (a later state of a run replaces the one kept), in one loop: a catch-up pass
        hands over 10,000-20,000 at once."""
        by_id, by_task, seqs, ages = self._runs, self._by_task, self._seq, self._ages
        seq = self._next_seq
        for run in runs:
            fields = run.__dict__  # one read through pydantic's __getattr__ hook rather than one a field
            run_id, task_id = fields["run_id"], fields["task_id"]
            old = by_id.get(run_id)
            if old is not None and old.task_id != task_id:
                by_task[old.task_id].discard(run_id)
            by_id[run_id] = run
            ids = by_task.get(task_id)
            if ids is None:
                ids = by_task[task_id] = set()
            ids.add(run_id)
            number = seqs.get(run_id)
            if number is None:
                number = seqs[run_id] = seq
                seq += 1
            ages[run_id] = (fields["dispatched_at"] or fields["planned_for"], number)
        self._next_seq = seq

    def knows(self, run_id: str) -> bool:
        """Whether the history still has the run ``run_id``."""
        with self._lock:
            return run_id in self._runs

    def _trim(self, task_ids: Iterable[str]) -> None:
        evicted: builtins.list[Run] = []
        age = self._ages.__getitem__
        for task_id in task_ids:
            ids = self._by_task.get(task_id)
            if ids is None:
                continue
            excess = len(ids) - self._keep
            if excess > 0:
                oldest = min(ids, key=age) if excess == 1 else None
                # Once a task's history is full each fire lets its oldest run go: found without a sort.
                order = [oldest] if oldest is not None and not _in_flight(self._runs[oldest]) else sorted(ids, key=age)
                for run_id in order:
                    if excess == 0:
                        break
                    if _in_flight(self._runs[run_id]):
                        continue  # never forget a run in flight: its outcome is still to be recorded
                    ids.discard(run_id)
                    evicted.append(self._runs.pop(run_id))
                    del self._seq[run_id]
                    del self._ages[run_id]
                    excess -= 1
            if not ids:
                del self._by_task[task_id]
        if evicted and self._on_evict is not None:
            try:
                self._on_evict(evicted)
            except Exception:
                log.exception("cleaning up after %d run(s) the history let go failed", len(evicted))

    def _maybe_compact(self) -> None:
        if not _needs_compaction(self._log.lines, len(self._runs)):
            return
        oldest_first = sorted(self._runs, key=self._age)
        try:
            self._log.rewrite([json_line(self._runs[run_id]) for run_id in oldest_first])
        except OSError as exc:
            # Every record is already durable in the long file; compaction can wait for the next append.
            log.warning("could not compact %s: %s", self._log.path, exc)
        else:
            log.info("compacted %s to %d runs", self._log.path, len(oldest_first))

    def _age(self, run_id: str) -> tuple[datetime, int]:
        return self._ages[run_id]

    def _require_loaded(self) -> None:
        if not self._loaded:
            raise RuntimeError("RunLedger.load() must be called before the ledger is used")


class MissedLedger(_HeldLog):
    """Missed fires, the last ``keep`` added. Re-adding a record with the same id replaces it."""

    def __init__(self, path: Path, clock: Clock, keep: int = 1000) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self._log = JsonLog(path)
        self._clock = clock
        self._keep = keep
        # Insertion order is the order added; the bound drops from the front.
        self._records: dict[str, MissedRecord] = {}
        self._loaded = False
        self._lock = threading.RLock()
        self._compaction_holds = 0  # as RunLedger's: appends do not compact while held

    # Held for a pass (_HeldLog): only the newest ``keep`` records stay, so a pass that adds one a task
    # (10,000 after a long stop) made the file due three times on the way and rewrote ``keep`` records
    # each time, inside the pass's writes.
    def _kept(self) -> int:
        return len(self._records)

    @property
    def path(self) -> Path:
        return self._log.path

    def load(self) -> builtins.list[MissedRecord]:
        """Read the ledger (call once, at start); returns the records, newest first."""
        with self._lock:
            self._log.remove_stale_temp_files()
            self._records.clear()
            for record in self._log.read():
                if not isinstance(record.get("id"), str):
                    log.warning("%s: skipping a record without an id", self._log.path)
                    continue
                try:
                    missed = MissedRecord.model_validate(record)
                except ValidationError as exc:
                    log.warning("%s: skipping invalid record %s (%s)", self._log.path, record["id"], _problem(exc))
                    continue
                self._put(missed)
            self._trim()
            self._loaded = True
            self._maybe_compact()
            return self._newest_first()

    def add(
        self,
        records: builtins.list[MissedRecord],
        *,
        handed_over: bool = False,
        lines: builtins.list[bytes] | None = None,
    ) -> None:
        """Append ``records`` with a single fsync; durable when this returns. ``handed_over`` and ``lines``:
        as for :meth:`RunLedger.record_many` (kept as they are, not copied)."""
        if not records:
            return
        if lines is not None and len(lines) != len(records):
            raise ValueError(f"{len(lines)} lines for {len(records)} records")
        with self._lock:
            self._require_loaded()
            self._log.append_lines([json_line(record) for record in records] if lines is None else lines)
            # Only the newest ``keep`` stay in memory: the older ones of a big batch (one per task after a
            # long stop) would be trimmed at once, so they only replace what they update.
            kept = len(records) - self._keep
            for record in records[:kept] if kept > 0 else ():
                self._records.pop(record.id, None)
            for record in records[max(kept, 0) :]:
                self._put(record if handed_over else _detached(record))
            self._trim()
            if not self._compaction_holds:
                self._maybe_compact()

    def list(self) -> builtins.list[MissedRecord]:
        """Newest first (by detection time, then by the order added)."""
        with self._lock:
            self._require_loaded()
            return self._newest_first()

    def clear(self) -> int:
        """Forget every record, on disk too; returns how many there were."""
        with self._lock:
            self._require_loaded()
            count = len(self._records)
            self._log.rewrite([])
            self._records.clear()
            return count

    def _put(self, record: MissedRecord) -> None:
        # pop first so an updated record moves to the end: it is the newest information.
        self._records.pop(record.id, None)
        self._records[record.id] = record

    def _trim(self) -> None:
        excess = len(self._records) - self._keep
        if excess > 0:
            for record_id in builtins.list(self._records)[:excess]:
                del self._records[record_id]

    def _maybe_compact(self) -> None:
        if not _needs_compaction(self._log.lines, len(self._records)):
            return
        try:
            self._log.rewrite([json_line(record) for record in self._records.values()])
        except OSError as exc:
            log.warning("could not compact %s: %s", self._log.path, exc)
        else:
            log.info("compacted %s to %d records", self._log.path, len(self._records))

    def _newest_first(self) -> builtins.list[MissedRecord]:
        ordered = builtins.list(enumerate(self._records.values()))
        ordered.sort(key=lambda pair: (pair[1].detected_at, pair[0]), reverse=True)
        return [record.model_copy(deep=True) for _, record in ordered]

    def _require_loaded(self) -> None:
        if not self._loaded:
            raise RuntimeError("MissedLedger.load() must be called before the ledger is used")
