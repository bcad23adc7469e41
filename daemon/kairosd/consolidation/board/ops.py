"""Board operations for ``kairos board ...`` and the board as SessionStart's context (with what
changed since the project's last session start, which it records).

Each operation takes the board's file lock (through :class:`.store.BoardStore`), like the worker,
so kairosd and a worker never lose each other's changes. A user's change is published as a
``board_changed`` event.

Must not import the daemon, the registry, the scheduler or the server's internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from kairosd.consolidation.board import edits
from kairosd.consolidation.board.render import render_context
from kairosd.consolidation.board.store import LIMIT, PRUNE_TO, BoardStore, project_root
from kairosd.consolidation.request import BoardChangeRequest
from kairosd.core.errors import KairosError, NotFoundError, UsageError
from kairosd.core.events import EventBus

log = logging.getLogger(__name__)


class BoardOperations:
    def __init__(self, boards: BoardStore, now: Callable[[], datetime], events: EventBus) -> None:
        self.boards = boards
        self.now = now
        self.events = events

    def project_for(self, cwd: str | None) -> str:
        if not isinstance(cwd, str) or not cwd:
            raise UsageError("give the project folder (cwd), an absolute path")
        if not os.path.isabs(cwd):
            raise UsageError(f"cwd must be an absolute path, not {cwd!r}")
        return project_root(cwd)

    async def board(self, cwd: str | None, include_superseded: bool = False) -> dict[str, Any]:
        project = self.project_for(cwd)
        board = await asyncio.to_thread(self.boards.load, project)
        extra = {"superseded": [e.to_json() for e in reversed(board.superseded)]} if include_superseded else {}
        return {
            "project": project,
            "path": str(self.boards.path_of(project)),
            "limit": LIMIT,
            "prune_to": PRUNE_TO,
            "entries": board.view(self.now()),
            "updated_at": board.updated_at.isoformat() if board.updated_at else None,
            **extra,
        }

    async def add_entry(self, cwd: str | None, text: str, kind: str | None) -> dict[str, Any]:
        project = self.project_for(cwd)
        entry, pruned = await asyncio.to_thread(self.boards.add_user, project, text, kind or "rule")
        self.events.publish("board_changed", project=project, by="user", added=entry.id)
        board = await asyncio.to_thread(self.boards.load, project)
        replaced = [e.to_json() for e in board.superseded if e.superseded_by == entry.id]
        return {"project": project, "entry": entry.to_json(), "pruned": [e.to_json() for e in pruned],
                "superseded": replaced}  # fmt: skip

    async def remove_entry(self, cwd: str | None, entry_id: str) -> dict[str, Any]:
        project = self.project_for(cwd)
        async with self._or_elsewhere(project, entry_id):
            entry = await asyncio.to_thread(self.boards.remove, project, entry_id)
        self.events.publish("board_changed", project=project, by="user", removed=entry.id)
        # "removed" lists ids, as in kairos rm and systemd uninstall; the entry is under "entry", as in pin.
        return {"project": project, "entry": entry.to_json(), "removed": [entry.id]}

    async def change_entry(self, entry_id: str, change: BoardChangeRequest) -> dict[str, Any]:
        """Edit (``text``, ``kind``), pin or unpin (``pinned``) or restore (``restore: true``) an entry."""
        project = self.project_for(change.cwd)
        text, kind, pinned, restore = change.text, change.kind, change.pinned, change.restore
        if restore and (text is not None or kind is not None or pinned is not None):
            raise UsageError("restore takes no other change")
        if not restore and pinned is None and text is None and kind is None:
            raise UsageError("give text, kind, pinned or restore")
        answer: dict[str, Any] = {"project": project}
        async with self._or_elsewhere(project, entry_id):
            if restore:
                entry = await asyncio.to_thread(edits.restore, self.boards, project, entry_id)
                answer["restored"] = True
            else:
                if text is not None or kind is not None:
                    entry, before = await asyncio.to_thread(edits.edit, self.boards, project, entry_id, text, kind)
                    answer["before"] = before
                if pinned is not None:
                    entry = await asyncio.to_thread(edits.pin, self.boards, project, entry_id, pinned)
        answer["entry"] = entry.to_json()
        self.events.publish("board_changed", project=project, by="user", changed=entry.id)
        return answer

    @contextlib.asynccontextmanager
    async def _or_elsewhere(self, project: str, entry_id: str) -> AsyncIterator[None]:
        """An id not on ``project``'s board, but on exactly one other project's (current or replaced),
        is refused naming that project and the ``--cwd`` that reaches it: ``kairos board pin ID`` run
        outside the project whose board ``show --cwd DIR`` listed only said the id was not there."""
        try:
            yield
        except NotFoundError as missing:
            holders = await asyncio.to_thread(self._holders, project, entry_id)
            if len(holders) != 1:
                raise
            raise NotFoundError(
                f"no entry {entry_id!r} on the board of {project}; it is on the board of {holders[0]}: "
                f"add --cwd {shlex.quote(holders[0])}"
            ) from missing

    def _holders(self, project: str, entry_id: str) -> list[str]:
        """The other projects whose board has an entry (current or replaced) that ``entry_id`` names."""
        want = entry_id.lower()
        holders = []
        for other in self.boards.projects():
            if other == project:
                continue
            with contextlib.suppress(KairosError, OSError, ValueError):  # a board it cannot read holds nothing
                board = self.boards.load(other)
                if any(e.id.lower().startswith(want) for e in (*board.entries, *board.superseded)):
                    holders.append(other)
        return holders

    async def prune(self, cwd: str | None) -> dict[str, Any]:
        project = self.project_for(cwd)
        pruned = await asyncio.to_thread(self.boards.prune, project)
        if pruned:
            self.events.publish("board_changed", project=project, by="user", pruned=[e.id for e in pruned])
        return {"project": project, "pruned": [e.to_json() for e in pruned], "prune_to": PRUNE_TO}

    async def history(self, cwd: str | None, limit: int) -> dict[str, Any]:
        project = self.project_for(cwd)
        records = await asyncio.to_thread(self.boards.history, project, limit)
        # Newest first, as every log kairos lists (history, missed, task list); queues (inbox) are oldest first.
        return {"project": project, "history": records[::-1]}

    def board_context(self, cwd: str | None) -> str | None:
        """The board of the project ``cwd`` is in, rendered for a starting session; None if empty.

        Never raises: the board is an extra, a broken one must not break a session's start.
        """
        if not cwd or not os.path.isabs(cwd):
            return None
        try:
            project = project_root(cwd)
            board = self.boards.load(project)
            since = edits.last_session(self.boards, project)
            text = render_context(board, self.now(), since)
            if board.entries or board.superseded:
                edits.mark_session(self.boards, project, self.now())
            return text
        except Exception:
            log.exception("cannot render the context board for %s", cwd)
            return None
