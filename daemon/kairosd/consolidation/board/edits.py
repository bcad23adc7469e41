"""A person's changes to board entries besides add and remove: edit, pin, restore a replaced
entry; and the time of the project's last session start (for "what changed since").

Each change takes the board's lock through :class:`.store.BoardStore`, like every writer, and is
recorded in the board's history. Blocking I/O: async callers use a thread. Must not import the
registry, the daemon or the server.
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from kairosd.consolidation.board.entries import clean, normal_key, unsafe
from kairosd.consolidation.board.store import FILE_MODE, KINDS, LIMIT, Board, BoardStore, Entry, board_key
from kairosd.core.errors import ConflictError, NotFoundError, UsageError
from kairosd.system.atomic import write_atomic


def edit(store: BoardStore, project: str, entry_id: str, text: str | None, kind: str | None) -> tuple[Entry, str]:
    """Change an entry's text or kind; it becomes the user's own (never pruned or replaced silently).
    Returns the entry and its text before."""
    if kind is not None and kind not in KINDS:
        raise UsageError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if text is not None:
        text = clean(text)
        if not normal_key(text):
            raise UsageError("give the text of the entry (letters or digits)")
        if unsafe(text):
            raise UsageError("that text looks like a secret or an instruction to the agent; not stored")
    if text is None and kind is None:
        raise UsageError("give a new text or --kind")
    with store.locked(project) as board:
        entry = _current(board.find(board.resolve(entry_id, project)), entry_id, project)
        before = entry.text
        key = normal_key(text) if text is not None else None
        if key is not None and any(normal_key(e.text) == key for e in board.entries if e is not entry):
            raise ConflictError(f"the board already has that entry: {text}")
        entry.text = text if text is not None else entry.text
        entry.kind = kind or entry.kind
        entry.author = "user"
        entry.guessed = False  # the person wrote or checked it
        if entry.conflicts_with:  # the person has decided: neither side is in conflict any more
            other = board.find(entry.conflicts_with)
            if other is not None and other.conflicts_with == entry.id:
                other.conflicts_with = None
        entry.conflicts_with = None
        store.save(board)
        store.record(project, [{"action": "edit", "id": entry.id, "kind": entry.kind, "text": entry.text,
                                "before": before, "author": "user", "by": "user"}])  # fmt: skip
    return entry, before


def pin(store: BoardStore, project: str, entry_id: str, pinned: bool = True) -> Entry:
    """Pin (or unpin) an entry: a pinned entry is never pruned and never replaced silently."""
    with store.locked(project) as board:
        entry = _current(board.find(board.resolve(entry_id, project)), entry_id, project)
        if entry.pinned != pinned or (pinned and entry.guessed):
            entry.pinned = pinned
            if pinned:
                entry.guessed = False  # pinning it is the person's word that it holds
            store.save(board)
            action = "pin" if pinned else "unpin"
            store.record(project, [{"action": action, "id": entry.id, "kind": entry.kind, "text": entry.text,
                                    "author": entry.author, "by": "user"}])  # fmt: skip
    return entry


def restore(store: BoardStore, project: str, entry_id: str) -> Entry:
    """Put a replaced entry back on the board (undo a wrong replacement), pinned. The entry that
    replaced it stays, and the two are marked as in conflict (``conflicts_with``, each naming the
    other), so the next session is told they disagree instead of receiving both as if they agreed;
    the person settles it by removing or editing one (``kairos board rm``, ``edit``)."""
    with store.locked(project) as board:
        entry_id = board.resolve(entry_id, project, replaced=True)
        entry = next((e for e in board.superseded if e.id == entry_id), None)
        if entry is None:
            raise NotFoundError(
                f"no replaced entry {entry_id!r} on the board of {project} (see: kairos board show --all)"
            )
        if len(board.entries) >= LIMIT:
            raise ConflictError(f"the board holds {LIMIT} entries; remove one first (kairos board rm ID)")
        replaced_by = entry.superseded_by
        board.superseded.remove(entry)
        entry.superseded_by = entry.superseded_at = entry.dropped_by = None
        entry.pinned = True  # the person chose it over the later words: kairos must not replace it again
        entry.guessed = False
        rival = _current_successor(board, replaced_by)
        entry.conflicts_with = rival.id if rival is not None else None
        if rival is not None:
            rival.conflicts_with = entry.id
        board.entries.append(entry)
        store.save(board)
        store.record(project, [{"action": "restore", "id": entry.id, "kind": entry.kind, "text": entry.text,
                                "author": entry.author, "replaced_by": replaced_by,
                                "conflicts_with": entry.conflicts_with, "by": "user"}])  # fmt: skip
    return entry


def _current_successor(board: Board, replaced_by: str | None) -> Entry | None:
    """The current entry that holds what replaced an entry: the one that replaced it, or, if that was
    replaced in turn ("use yarn" by "use bun"), the latest one of the chain still on the board."""
    seen: set[str] = set()
    while replaced_by and replaced_by not in seen:
        seen.add(replaced_by)
        current = board.find(replaced_by)
        if current is not None:
            return current
        gone = next((e for e in board.superseded if e.id == replaced_by), None)
        replaced_by = gone.superseded_by if gone is not None else None
    return None


def _current(entry: Entry | None, entry_id: str, project: str) -> Entry:
    if entry is None:
        raise NotFoundError(f"no entry {entry_id!r} on the board of {project} (see: kairos board show)")
    return entry


# ---- the project's last session start -------------------------------------------------------------


def last_session(store: BoardStore, project: str) -> datetime | None:
    """When a session of ``project`` last started (received the board), or None."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        data = json.loads((store.folder / f"{board_key(project)}.sessions.json").read_bytes())
        when = datetime.fromisoformat(data["last_start"])
        return when if when.tzinfo is not None else None
    return None


def mark_session(store: BoardStore, project: str, at: datetime) -> None:
    """Record that a session of ``project`` started at ``at``."""
    store.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps({"last_start": at.isoformat()}).encode()
    write_atomic(store.folder / f"{board_key(project)}.sessions.json", data + b"\n", mode=FILE_MODE)
