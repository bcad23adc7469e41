"""Followers of task logs (``kairos task logs -f``): the backlog from the file, then lines as they come.

A follower registers before it reads the backlog, so no line falls in between;
``seq`` (the line's number in the log) drops the lines it then sees twice. Each
follower has a bounded queue: one that falls behind gets a single "lost" note
and misses lines until it catches up, and never slows a running task. A flood
(a chunk of output with more lines than the turn passes on live) also gets a
"lost" note for the lines only the log has (:meth:`Followers.skipped`).

Must not import the registry's state, the scheduler or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairosd.jobs import joblog

FOLLOW_QUEUE = 1000  # lines a slow follower may fall behind before it is told it lost some


@dataclass(eq=False)  # hashed by identity: followers live in sets
class _Follower:
    queue: asyncio.Queue[dict[str, Any] | None] = field(default_factory=lambda: asyncio.Queue(FOLLOW_QUEUE + 2))
    lost: bool = False


class Followers:
    def __init__(self) -> None:
        self._by_task: dict[str, set[_Follower]] = {}

    def tell(self, task_id: str, item: dict[str, Any] | None) -> None:
        """Pass a line (``{"seq", "stream", "line"}``) on; None: the task stopped running."""
        for follower in self._by_task.get(task_id, ()):
            if item is None:
                # Room is always left for one end marker; a follower ends at the first, so more are moot.
                with contextlib.suppress(asyncio.QueueFull):
                    follower.queue.put_nowait(None)
            elif follower.queue.qsize() < FOLLOW_QUEUE:
                follower.lost = False
                follower.queue.put_nowait(item)
            elif not follower.lost:
                follower.lost = True
                follower.queue.put_nowait({"lost": True, "note": "the follower fell behind; see kairos task logs"})

    def skipped(self, task_id: str, count: int) -> None:
        """``count`` lines were written to the log but not passed on live (a flood)."""
        for follower in self._by_task.get(task_id, ()):
            if not follower.lost and follower.queue.qsize() < FOLLOW_QUEUE:
                follower.lost = True
                note = f"{count} line(s) of a flood of output were not shown live; see kairos task logs"
                follower.queue.put_nowait({"lost": True, "note": note})

    async def follow(
        self, task_id: str, log_path: Path, running: Callable[[], bool], status: Callable[[], str]
    ) -> AsyncIterator[dict[str, Any]]:
        """The log's lines (``{"seq", "line"}``), then new ones while ``running()``; last
        ``{"end": true, "status": status()}``."""
        follower = _Follower()
        self._by_task.setdefault(task_id, set()).add(follower)
        try:
            backlog = await asyncio.to_thread(joblog.read_lines, log_path)
            for number, line in enumerate(backlog):
                yield {"seq": number, "line": line}
            next_seq = len(backlog)
            while running():
                item = await follower.queue.get()
                if item is None:
                    break
                seq: int | None = item.get("seq")
                if seq is None:
                    yield item  # a note that lines were lost
                elif seq >= next_seq:
                    next_seq = seq + 1
                    yield item
            yield {"end": True, "status": status()}
        finally:
            followers = self._by_task.get(task_id)
            if followers is not None:
                followers.discard(follower)
                if not followers:
                    del self._by_task[task_id]
