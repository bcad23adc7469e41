"""Board operations for ``kairos board ...`` and the board as SessionStart's context.

Each operation takes the board's file lock (through :class:`.board.BoardStore`), like the worker,
so kairosd and a worker never lose each other's changes. A user's change is published as a
``board_changed`` event.

Must not import the daemon, the registry, the scheduler or the server's internals.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kairosd.consolidation.board import LIMIT, PRUNE_TO, BoardStore, project_root, render_context
from kairosd.errors import UsageError
from kairosd.events import EventBus

log = logging.getLogger(__name__)


class BoardOperations:
    def __init__(self, boards: BoardStore, now: Callable[[], datetime], events: EventBus) -> None:
        self.boards = boards
        self.now = now
        self.events = events

    def project_for(self, cwd: Any) -> str:
        if not isinstance(cwd, str) or not cwd:
            raise UsageError("give the project folder (cwd), an absolute path")
        if not os.path.isabs(cwd):
            raise UsageError(f"cwd must be an absolute path, not {cwd!r}")
        return project_root(cwd)

    async def board(self, cwd: Any) -> dict[str, Any]:
        project = self.project_for(cwd)
        board = await asyncio.to_thread(self.boards.load, project)
        return {
            "project": project,
            "path": str(self.boards.path_of(project)),
            "limit": LIMIT,
            "prune_to": PRUNE_TO,
            "entries": board.view(self.now()),
            "updated_at": board.updated_at.isoformat() if board.updated_at else None,
        }

    async def add_entry(self, cwd: Any, text: Any, kind: Any) -> dict[str, Any]:
        project = self.project_for(cwd)
        if not isinstance(text, str):
            raise UsageError("text must be a string")
        if kind is not None and not isinstance(kind, str):
            raise UsageError("kind must be a string")
        entry, pruned = await asyncio.to_thread(self.boards.add_user, project, text, kind or "rule")
        self.events.publish("board_changed", project=project, by="user", added=entry.id)
        return {"project": project, "entry": entry.to_json(), "pruned": [e.to_json() for e in pruned]}

    async def remove_entry(self, cwd: Any, entry_id: str) -> dict[str, Any]:
        project = self.project_for(cwd)
        entry = await asyncio.to_thread(self.boards.remove, project, entry_id)
        self.events.publish("board_changed", project=project, by="user", removed=entry.id)
        return {"project": project, "removed": entry.to_json()}

    async def prune(self, cwd: Any) -> dict[str, Any]:
        project = self.project_for(cwd)
        pruned = await asyncio.to_thread(self.boards.prune, project)
        if pruned:
            self.events.publish("board_changed", project=project, by="user", pruned=[e.id for e in pruned])
        return {"project": project, "pruned": [e.to_json() for e in pruned], "prune_to": PRUNE_TO}

    async def history(self, cwd: Any, limit: int) -> dict[str, Any]:
        project = self.project_for(cwd)
        records = await asyncio.to_thread(self.boards.history, project, limit)
        return {"project": project, "history": records}

    def board_context(self, cwd: str | None) -> str | None:
        """The board of the project ``cwd`` is in, rendered for a starting session; None if empty.

        Never raises: the board is an extra, a broken one must not break a session's start.
        """
        if not cwd or not os.path.isabs(cwd):
            return None
        try:
            project = project_root(cwd)
            return render_context(self.boards.load(project), self.now())
        except Exception:
            log.exception("cannot render the context board for %s", cwd)
            return None
