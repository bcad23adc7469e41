"""The daemon's tasks in memory, written to the store with group commit.

Every change is applied in memory at once and made durable by
:meth:`TaskBook.commit`, which callers await before they acknowledge anything.
Concurrent commits share one write: while a write runs, later changes pile up
and go out together in the next one, so a storm of adds costs a few writes,
not one each. A failed write is fatal for the daemon (the caller stops taking
work), because memory and disk no longer agree.

Must not import the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

from kairosd.errors import NotFoundError
from kairosd.models import Task
from kairosd.store import SCHEMA_VERSION, Store, StoreState

log = logging.getLogger(__name__)


class TaskBook:
    def __init__(self, store: Store, state: StoreState) -> None:
        self._store = store
        self._extra = {k: v for k, v in (state.model_extra or {}).items()}
        self._tasks: dict[str, Task] = {t.id: t for t in state.tasks}
        self._version = 0  # bumped by every change
        self._written = 0  # the version last made durable
        self._writing: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(list(self._tasks.values()))

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def get(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise NotFoundError(f"no task with id {task_id!r} (see 'kairos list')") from None

    def find(self, task_id: str) -> Task | None:
        return self._tasks.get(task_id)

    def put(self, task: Task) -> None:
        self._tasks[task.id] = task
        self._version += 1

    def remove(self, task_id: str) -> Task | None:
        task = self._tasks.pop(task_id, None)
        if task is not None:
            self._version += 1
        return task

    def snapshot(self) -> StoreState:
        return StoreState(schema_version=SCHEMA_VERSION, tasks=list(self._tasks.values()), **self._extra)

    async def commit(self) -> None:
        """Return once every change made before this call is durable."""
        target = self._version
        while self._written < target:
            if self._writing is None:
                self._writing = asyncio.ensure_future(self._write())
            writing = self._writing
            await asyncio.shield(writing)

    async def _write(self) -> None:
        try:
            version = self._version
            state = self.snapshot()
            await asyncio.to_thread(self._store.save, state)
            self._written = max(self._written, version)
        finally:
            self._writing = None

    def commit_sync(self) -> None:
        """Write now, blocking (start-up and shutdown, outside the event loop's hot path)."""
        version = self._version
        self._store.save(self.snapshot())
        self._written = version
