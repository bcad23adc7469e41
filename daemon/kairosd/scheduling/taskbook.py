"""The daemon's tasks in memory, written to the store with group commit.

Every change is applied in memory at once and made durable by
:meth:`TaskBook.commit`, which callers await before they acknowledge anything.
Concurrent commits share one write: while a write runs, later changes pile up
and go out together in the next one, so a storm of adds costs a few writes,
not one each.

A failed write never leaves memory and disk apart: the book rolls back to
what the store last held (every change not yet durable is discarded, and the
listeners in :attr:`TaskBook.on_rollback` are told which tasks changed back),
every caller whose change was discarded gets a :class:`StoreError`, and
:attr:`TaskBook.error` says what went wrong until a later write succeeds. The
daemon keeps running and keeps answering; each later change tries the store
again.

Must not import the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from kairosd.core.errors import NotFoundError, StoreError
from kairosd.core.ids import resolve_prefix
from kairosd.core.models import Task
from kairosd.store.store import SCHEMA_VERSION, Store, StoreState, encode_task, slim

log = logging.getLogger(__name__)

# Version ranges discarded by rollbacks, kept to answer the commits still waiting on them.
# A commit waits for at most two writes, so a few ranges are plenty.
_LOST_RANGES = 64


class TaskBook:
    def __init__(self, store: Store, state: StoreState | None = None) -> None:
        """``state``: what the store holds; None: nothing yet, until :meth:`load` reads it."""
        self._store = store
        self._encode: Callable[[Task], str] = getattr(store, "fragment", encode_task)
        self._hold(state or StoreState.empty())
        self._version = 0  # bumped by every change
        self._written = 0  # memory at this version is what the store holds
        # (after, up to, why): versions discarded by a rollback, so their commits can fail with the reason.
        self._lost: deque[tuple[int, int, StoreError]] = deque(maxlen=_LOST_RANGES)
        self._writing: asyncio.Task[None] | None = None
        self._save_lock = threading.Lock()  # one save at a time, never an older snapshot after a newer one
        self._on_disk = 0  # the version of the last snapshot saved
        self.error: StoreError | None = None  # the last write failed (None once one succeeds)
        self.failures = 0  # failed writes since start
        self.on_rollback: list[Callable[[set[str]], None]] = []

    def _hold(self, state: StoreState) -> None:
        self._extra = {k: v for k, v in (state.model_extra or {}).items()}
        self._durable_extra = dict(self._extra)  # what the store holds
        self._tasks: dict[str, Task] = {t.id: t for t in state.tasks}
        # Kept in step by every change: status() is polled (every 10 ms by `kairos daemon start`'s callers
        # and the benches) and counted 10,000 tasks each time, a tenth of a catch-up pass's CPU.
        self._paused = sum(1 for t in self._tasks.values() if t.paused)
        # What the store holds of each task changed since the last write began (None: absent), and the
        # changes in order: a write sends only those (a journal line), and a rollback undoes them. Issue 16
        # kept a second dict of every task instead, copied at each first change after a write: O(tasks).
        self._undo: dict[str, Task | None] = {}
        self._ops: list[tuple[bool, str]] = []  # (put?, task id)
        self._fields_changed = False
        self._inflight: dict[str, Task | None] = {}  # ``_undo`` of the write now running
        self._full_next = False  # after a rollback: memory's order may differ from the file's, rewrite it

    def load(self) -> None:
        """Read the store and hold its tasks: the start-up step, before anything changed the book."""
        if self._version:
            raise RuntimeError("the task book is loaded before anything changes it")
        self._hold(self._store.load())

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def paused(self) -> int:
        """How many tasks are paused."""
        return self._paused

    def __iter__(self) -> Iterator[Task]:
        return iter(list(self._tasks.values()))

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def get(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise NotFoundError(f"no task with id {task_id!r} (see 'kairos list')") from None

    def resolve(self, task_id: str) -> str:
        """The id of the one task whose id is ``task_id`` or starts with it, in any case (see
        :func:`kairosd.core.ids.resolve_prefix`: the rule every verb shares)."""
        return resolve_prefix(task_id, self._tasks, "task", " (see 'kairos list')")

    def find(self, task_id: str) -> Task | None:
        return self._tasks.get(task_id)

    def put(self, task: Task) -> None:
        task_id = task.id
        old = self._tasks.get(task_id)
        self._put(task_id, task, old)
        self._paused += task.paused - (old is not None and old.paused)

    def put_moved(self, task_id: str, task: Task, old: Task) -> None:
        """:meth:`put` of ``task``, ``old`` (the book's task ``task_id``) with its anchor moved
        (:func:`~kairosd.scheduling.firing.advanced`): paused as ``old`` is, so the paused count stays."""
        self._put(task_id, task, old)

    def _put(self, task_id: str, task: Task, old: Task | None) -> None:
        if old is not None and task.__pydantic_fields_set__ is not old.__pydantic_fields_set__:
            slim(task, old)  # a model_copy of it (an edit, say); an anchor moved is already lean (models.moved)
        self._undo.setdefault(task_id, old)
        self._ops.append((True, task_id))
        self._tasks[task_id] = task
        self._version += 1

    def remove(self, task_id: str) -> Task | None:
        if task_id not in self._tasks:
            return None
        self._undo.setdefault(task_id, self._tasks[task_id])
        self._ops.append((False, task_id))
        task = self._tasks.pop(task_id)
        self._paused -= task.paused
        self._version += 1
        return task

    def encoded(self, task: Task) -> str:
        """``task`` as compact JSON, as the store writes it (cached by a store that keeps it)."""
        return self._encode(task)

    async def encode_ahead(self, per_turn: int = 500) -> int:
        """Have the store encode each task it holds no JSON of yet, ``per_turn`` tasks per turn of the loop;
        how many tasks were looked at.

        For after the daemon answers: loading does not encode, so the first listing after a start
        (and the first whole rewrite) encoded every task, ~0.7 s at 100,000 tasks (issue 28). Done
        here, it is out of the way: requests are served between turns, and a task changed or removed
        meanwhile is left to whoever needs its new version. A store that keeps no JSON needs nothing.
        """
        if self._encode is encode_task:
            return 0
        tasks = list(self._tasks.values())
        current, encode = self._tasks.get, self._encode
        for start in range(0, len(tasks), per_turn):
            for task in tasks[start : start + per_turn]:
                if current(task.id) is task:
                    encode(task)
            await asyncio.sleep(0)
        return len(tasks)

    def get_field(self, key: str) -> Any:
        """A top-level field of the store besides the tasks (None when absent)."""
        return self._extra.get(key)

    def set_field(self, key: str, value: Any) -> None:
        """Change a top-level field of the store; durable at the next commit, undone by a rollback."""
        self._extra[key] = value
        self._fields_changed = True
        self._version += 1

    @property
    def dirty(self) -> bool:
        """Some change is not durable yet."""
        return self._written < self._version

    def snapshot(self) -> StoreState:
        return self._state(list(self._tasks.values()))

    def _state(self, tasks: list[Task]) -> StoreState:
        # Built without validation: the tasks are validated models and their ids are the dict's keys.
        return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=tasks, **self._extra)

    async def commit(self) -> None:
        """Return once every change made before this call is durable.

        Raises :class:`StoreError` if a write failed and the change was rolled back.
        """
        target = self._version
        while True:
            lost = self._lost_by(target)
            if lost is not None:
                raise lost
            if self._written >= target:
                return
            if self._writing is None:
                self._writing = asyncio.ensure_future(self._write())
            await asyncio.shield(self._writing)  # never raises: a failure shows as a lost range

    async def retry(self) -> bool:
        """Write the store again after a failure; True once it is writable (or never failed)."""
        if self.error is None:
            return True
        self._version += 1  # an empty change: forces a write of what the store should hold
        try:
            await self.commit()
        except StoreError:
            return False
        return True

    def _lost_by(self, version: int) -> StoreError | None:
        """Why the change at ``version`` was rolled back, or None if it was not."""
        for after, upto, error in self._lost:
            if after < version <= upto:
                return error
        return None

    async def _write(self) -> None:
        try:
            version = self._version
            extra = dict(self._extra)
            undo, ops, fields_changed = self._undo, self._ops, self._fields_changed
            self._undo, self._ops, self._fields_changed, self._inflight = {}, [], False, undo
            append = getattr(self._store, "append", None)
            wants_full = getattr(self._store, "wants_compaction", None)
            job: StoreState | Callable[[], None] | None
            full = append is None or self._full_next or (wants_full is not None and wants_full())
            if full:
                job = self._state(list(self._tasks.values()))
            elif ops or fields_changed:
                assert append is not None
                dels, puts = _journal_ops(ops)
                job = partial(append, dels, [self._tasks[i] for i in puts], extra if fields_changed else None)
            else:
                job = None  # nothing changed (an empty commit)
            try:
                saved = await asyncio.to_thread(self._save, job, version)
            except Exception as exc:
                if self._written < version:  # else a newer whole write (commit_sync) already holds it all
                    self._rollback(exc)
                return
            if saved:
                self._saved(version, extra, full=full)
        finally:
            self._inflight = {}
            self._writing = None

    def _save(self, job: StoreState | Callable[[], None] | None, version: int) -> bool:
        """Save the book at ``version``: a whole state, or ``job`` (a journal append); False if a newer
        whole one is on disk already."""
        # A background write may still be running when commit_sync (shutdown) saves a newer snapshot.
        with self._save_lock:
            if version < self._on_disk:
                return False
            if isinstance(job, StoreState):
                self._store.save(job)
            elif job is not None:
                job()
            self._on_disk = version
            return True

    def _saved(self, version: int, extra: dict[str, Any], *, full: bool) -> None:
        self._durable_extra = extra
        self._written = max(self._written, version)
        if full:
            self._full_next = False
        if self.error is not None:
            log.warning("the store is writable again: %d task(s) saved", len(self._tasks))
        self.error = None

    @staticmethod
    def _error_for(exc: BaseException) -> StoreError:
        if isinstance(exc, StoreError):
            return exc
        return StoreError(f"cannot save the tasks: {exc}")

    def _rollback(self, exc: BaseException) -> None:
        """Make memory what the store holds again, after a failed write."""
        error = self._error_for(exc)
        if not isinstance(exc, StoreError):
            log.error("saving the store failed unexpectedly", exc_info=exc)
        durable = dict(self._inflight)  # the older undo wins: it holds what is on disk
        for task_id, task in self._undo.items():
            durable.setdefault(task_id, task)
        changed = {task_id for task_id, task in durable.items() if self._tasks.get(task_id) is not task}
        for task_id, task in durable.items():
            if task is None:
                self._tasks.pop(task_id, None)
            else:
                self._tasks[task_id] = task
        self._paused = sum(1 for t in self._tasks.values() if t.paused)
        self._undo, self._ops, self._fields_changed, self._inflight = {}, [], False, {}
        self._full_next = True  # a task put back goes to the end of memory's order, not to its place on disk
        if self._version > self._written:
            self._lost.append((self._written, self._version, error))
        self._extra = dict(self._durable_extra)
        self._written = self._version
        self.error = error
        self.failures += 1
        log.error("%s; undid the unsaved changes to %d task(s)", error.message, len(changed))
        for listener in list(self.on_rollback):
            try:
                listener(changed)
            except Exception:
                log.exception("a rollback listener failed")

    def commit_sync(self) -> None:
        """Write the whole store now if anything is unsaved or journaled, blocking (start-up and shutdown,
        not the hot path): after a clean stop, ``scheduled_tasks.json`` alone holds every task.

        Raises :class:`StoreError` (after rolling back) if the write fails.
        """
        journaled = getattr(self._store, "journaled", None)
        if not self.dirty and not (journaled is not None and journaled()):
            return
        version = self._version
        extra = dict(self._extra)
        try:
            saved = self._save(self._state(list(self._tasks.values())), version)
        except Exception as exc:
            self._rollback(exc)
            raise self._error_for(exc) from None
        if saved:
            self._undo, self._ops, self._fields_changed = {}, [], False
            self._saved(version, extra, full=True)


def _journal_ops(ops: list[tuple[bool, str]]) -> tuple[list[str], list[str]]:
    """The ids to remove, then the ids to put (in this order), that ``ops`` amount to.

    A put followed later by a removal of the same id is left out (the removal undoes it,
    whether or not the id was there before), and so is any put after the first of an id
    since its last removal (it does not move the task). Removals of distinct ids do not move
    the others, so they can all go first; the puts keep their order, which decides where
    new tasks go: replayed, the journal gives the book's order exactly.
    """
    last_removal = {task_id: i for i, (put, task_id) in enumerate(ops) if not put}
    puts: dict[str, None] = {}
    for i, (put, task_id) in enumerate(ops):
        if put and i > last_removal.get(task_id, -1):
            puts.setdefault(task_id, None)
    return list(last_removal), list(puts)
