"""The context board: a small, bounded set of notes per project, kept from earlier sessions.

Storage: ``<data dir>/boards/<slug>-<hash>.json`` (never inside the project tree), keyed by the
project's real path: the nearest folder up from the session's cwd that holds ``.git`` (else the
cwd itself), symlinks resolved, so sessions in sub-folders and through links share one board.
Next to it: ``.history.jsonl`` (every change, appended) and ``.lock`` (one writer at a time).

An entry is ``{id, text, kind, author, source_session, source_agent, created_at, last_seen_at,
hits}``, with ``pinned``, ``conflicts_with``, ``superseded_by``, ``superseded_at``, ``guessed`` and
``dropped_by`` when set (the types are in :mod:`.model`). ``author`` is ``kairos`` (consolidation wrote it)
or ``user`` (``kairos board add`` or ``edit``). ``guessed``: offline mode made it and nobody has confirmed
it since (a rem-agent answer with the same words or ``KEEP ID``, an edit or a pin confirms it; a
rem-agent's ``DROP ID`` moves it to the replaced entries with ``dropped_by``, where ``kairos board
restore`` finds it). Seeing the same text again (compared by
:func:`~kairosd.consolidation.board.entries.normal_key`) counts a hit and moves ``last_seen_at`` instead
of adding a duplicate.

Later words win (:mod:`.supersede`): a new entry that updates or contradicts a current one about
the same subject replaces it, within a session and across sessions. A sentence that only says
something changed (an ``update`` candidate) is kept only if it updates one entry's slot
(:mod:`.slots`), in that entry's place and with its kind. The replaced entry moves to
the board's ``superseded`` list (the newest :data:`SUPERSEDED_KEEP`, with what replaced it and
when) and the history records it, so ``kairos board show --all`` and ``kairos board restore`` can
undo a wrong replacement. A user's own or a pinned entry is never replaced: the new one is added
beside it with ``conflicts_with`` naming it, and the session is told of the conflict.

Bounds: at most :data:`LIMIT` (25) entries. When a merge goes past that, entries are dropped
until :data:`PRUNE_TO` (18) remain, lowest priority first: facts before to-dos before rules
(rules, preferences, corrections and decisions are what a future session most needs), and within
a tier the lowest score first: hits halved every :data:`HALF_LIFE_DAYS` days since last seen
(frequent or recent beats stale), then the older ``last_seen_at``. Only kairos' own entries are
ever pruned automatically (not pinned ones either); a user's entries go only when the user removes them.

Writers: kairosd (``kairos board add|rm|prune``) and the detached consolidation worker. Both
take the board's lock (``flock``) around read, change and atomic write, so neither loses the
other's change. A board file that cannot be read is set aside as ``.corrupt-<time>`` and a new
one is started (the history says so).

Blocking I/O: async callers use a thread. Must not import the registry, the daemon or the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from kairosd.consolidation.board.entries import KINDS, Candidate, clean, normal_key, unsafe
from kairosd.consolidation.board.model import (
    AUTHORS,
    HALF_LIFE_DAYS,
    LIMIT,
    PRUNE_TO,
    SCHEMA_VERSION,
    TIERS,
    Board,
    Entry,
    MergeResult,
    by_priority,
    parse_time,
    score,
    to_prune,
)
from kairosd.consolidation.board.slots import done_by, says_changed
from kairosd.consolidation.board.slots import updated as updated_by_text
from kairosd.consolidation.board.supersede import closed as closed_by_text
from kairosd.consolidation.board.supersede import superseded as superseded_by_text
from kairosd.core.errors import ConflictError, KairosError, NotFoundError, UsageError
from kairosd.store.jsonlog import JsonLog
from kairosd.system.atomic import write_atomic

__all__ = [
    "AUTHORS",
    "FILE_MODE",
    "HALF_LIFE_DAYS",
    "KINDS",
    "LIMIT",
    "PRUNE_TO",
    "SCHEMA_VERSION",
    "TIERS",
    "Board",
    "BoardStore",
    "Entry",
    "MergeResult",
    "board_key",
    "by_priority",
    "project_root",
    "score",
    "to_prune",
]

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
LOCK_TIMEOUT_S = 30.0
SUPERSEDED_KEEP = 50  # replaced entries kept on the board file (the history keeps every change)
HISTORY_KEEP = 5000  # history lines kept when it is compacted (at twice this)


def project_root(cwd: str | os.PathLike[str]) -> str:
    """The project a session in ``cwd`` belongs to: its Git work tree's top folder, else ``cwd``
    (absolute, symlinks resolved)."""
    here = Path(os.path.realpath(os.path.expanduser(os.fspath(cwd))))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def board_key(project: str) -> str:
    """The file name stem of a project's board: readable slug, then a hash of the real path."""
    digest = hashlib.sha256(project.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(project.rstrip("/")) or "root").strip("-.")[:40]
    return f"{slug or 'project'}-{digest}"


# ---- the files --------------------------------------------------------------------------------


class BoardStore:
    """The boards under ``folder`` (``<data dir>/boards``). ``now`` gives aware UTC times."""

    def __init__(self, folder: Path, now: Callable[[], datetime]) -> None:
        self.folder = folder
        self.now = now

    def path_of(self, project: str) -> Path:
        return self.folder / f"{board_key(project)}.json"

    def history_path(self, project: str) -> Path:
        return self.folder / f"{board_key(project)}.history.jsonl"

    def run_lock_path(self, project: str) -> Path:
        """Held by a consolidation worker for its whole run (one run per project at a time)."""
        return self.folder / f"{board_key(project)}.run.lock"

    # ---- reading ---------------------------------------------------------------------------

    def load(self, project: str) -> Board:
        """The project's board (empty if none). Never raises for bad content; see :meth:`_read`."""
        board, _ = self._read(project)
        return board

    def _read(self, project: str) -> tuple[Board, str | None]:
        path = self.path_of(project)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return Board(project), None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
                raise ValueError("not a board (no entries list)")
            if isinstance(data.get("schema_version"), int) and data["schema_version"] > SCHEMA_VERSION:
                raise KairosError(f"{path} was written by a newer kairos (schema {data['schema_version']})")
            entries = [Entry.from_json(e) for e in data["entries"]]
            old = data.get("superseded")
            superseded = [Entry.from_json(e) for e in old] if isinstance(old, list) else []
        except (ValueError, TypeError) as exc:
            return Board(project), f"{exc}"
        updated = data.get("updated_at")
        return Board(project, entries, parse_time(updated) if isinstance(updated, str) else None, superseded), None

    def history(self, project: str, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` changes, oldest first."""
        records = JsonLog(self.history_path(project)).read()
        return records[-limit:] if limit else records

    def projects(self) -> list[str]:
        """Every project that has a board."""
        found = []
        with contextlib.suppress(FileNotFoundError):
            for path in sorted(self.folder.glob("*.json")):
                with contextlib.suppress(OSError, ValueError):
                    data = json.loads(path.read_bytes())
                    if isinstance(data, dict) and isinstance(data.get("project"), str):
                        found.append(data["project"])
        return found

    # ---- changing --------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, project: str) -> Iterator[Board]:
        """The board, read under its lock; the caller changes it and calls :meth:`save` inside."""
        self.folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        lock_path = self.folder / f"{board_key(project)}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            _flock(fd, LOCK_TIMEOUT_S, lock_path)
            board, problem = self._read(project)
            if problem is not None:
                self._set_aside(project, problem)
            yield board
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _set_aside(self, project: str, problem: str) -> None:
        path = self.path_of(project)
        aside = path.with_name(f"{path.name}.corrupt-{self.now().strftime('%Y%m%dT%H%M%SZ')}")
        log.warning("context board %s is unreadable (%s); moved aside to %s, starting a new one", path, problem, aside)
        with contextlib.suppress(OSError):
            os.replace(path, aside)
        self.record(project, [{"action": "reset", "by": "kairos", "text": f"unreadable board set aside: {aside.name}"}])

    def save(self, board: Board) -> None:
        board.updated_at = self.now()
        data = json.dumps(board.to_json(), ensure_ascii=False, indent=1).encode("utf-8")
        write_atomic(self.path_of(board.project), data + b"\n", mode=FILE_MODE)

    def record(self, project: str, records: list[dict[str, Any]]) -> None:
        at = self.now().isoformat()
        history = JsonLog(self.history_path(project))
        history.append([{"at": at, **r} for r in records])
        if history.path.stat().st_size > HISTORY_KEEP * 400:  # about twice the kept lines: compact
            kept = history.read()[-HISTORY_KEEP:]
            history.rewrite(kept)

    def merge(
        self,
        project: str,
        candidates: Iterable[Candidate],
        *,
        session: str | None = None,
        agent: str | None = None,
        run: str | None = None,
    ) -> MergeResult:
        """Add what is new, count a hit for what is already there, prune past :data:`LIMIT`."""
        result = MergeResult()
        with self.locked(project) as board:
            now = self.now()
            index = {normal_key(e.text): e for e in board.entries}
            touched: set[str] = set()
            for candidate in candidates:
                if candidate.action == "close":
                    closed = len(result.closed)
                    if not self._close(board, candidate, result) and candidate.supersedes is None:
                        said = f"{candidate.text!r} says something is done"
                        result.notes.append(f"{said}; no single to-do matched, none closed")
                    for done in result.closed[closed:]:
                        index.pop(normal_key(done.text), None)
                    continue
                if candidate.action in ("keep", "drop"):
                    self._judge(board, candidate, now, index, result)
                    continue
                if candidate.action == "update":
                    if candidate.infer:  # offline only: the rem-agent names what it replaces
                        self._update(board, candidate, now, (session, agent), index, touched, result)
                    continue
                text = clean(candidate.text)
                key = normal_key(text)
                if not key or candidate.kind not in KINDS or unsafe(text):
                    continue
                existing = index.get(key)
                if existing is not None:
                    # The same words as an entry already there: a hit for it, and if the answer named
                    # another entry it replaces, that one still goes (the answer's decision stands).
                    named = board.find(candidate.supersedes) if candidate.supersedes else None
                    if named is not None and named is not existing:
                        self._replace(board, existing, [named], now, result)
                        index.pop(normal_key(named.text), None)
                    if not candidate.infer:
                        existing.guessed = False  # a model read the session and said the same
                    if existing.id in touched:
                        continue  # one hit per run, however often the session said it
                    touched.add(existing.id)
                    existing.hits += 1
                    existing.last_seen_at = now
                    result.seen.append(existing)
                    continue
                entry = Entry(_new_id(board), text, candidate.kind, "kairos", now, now, 1, session, agent)
                entry.guessed = candidate.infer  # offline mode's reading; the rem-agent's answer is not a guess
                targets = self._targets(board, candidate, text, result)
                self._add(board, entry, targets, now, (key, index, touched), result)
            if len(board.entries) > LIMIT:
                result.pruned = to_prune(board.entries, now)
                board.entries = [e for e in board.entries if e not in result.pruned]
            changed = (result.added, result.seen, result.pruned, result.superseded, result.closed)
            if not any((*changed, result.confirmed, result.dropped)):
                return result
            self.save(board)
            base = {"by": "kairos", "session": session, "agent": agent, "run": run}
            records = [{"action": "add", **_brief(e), **base} for e in result.added]
            records += [{"action": "seen", **_brief(e), "hits": e.hits, **base} for e in result.seen]
            records += [_supersede_record(e, base) for e in result.superseded]
            records += [{"action": "conflict", **_brief(e), "with": e.conflicts_with, **base} for e in result.conflicts]
            records += [{"action": "close", **_brief(e), **base} for e in result.closed]
            records += [{"action": "confirm", **_brief(e), **base} for e in result.confirmed]
            records += [{"action": "drop", **_brief(e), **base} for e in result.dropped]
            records += [{"action": "prune", **_brief(e), **base} for e in result.pruned]
            self.record(project, records)
        return result

    @staticmethod
    def _targets(board: Board, candidate: Candidate, text: str, result: MergeResult) -> list[Entry]:
        """The current entries ``candidate`` replaces: the one its answer named, else (offline) by its words."""
        if candidate.supersedes is None:
            if not candidate.infer:
                return []  # the rem-agent decided: an ADD replaces nothing it did not name
            found = superseded_by_text(candidate.kind, text, board.entries)
            if not found and candidate.kind != "todo" and says_changed(text):
                found = updated_by_text(text, board.entries)  # "we're on Node 22 now": a slot's new value
            return [e for e in found if isinstance(e, Entry)]
        named = board.find(candidate.supersedes)
        if named is None:
            result.notes.append(f"no current entry {candidate.supersedes} to supersede; {text!r} added alone")
            return []
        return [named]

    @staticmethod
    def _close(board: Board, candidate: Candidate, result: MergeResult) -> bool:
        """A to-do is done: the one the answer named, else the one ``candidate.text`` is about (by its
        words: :func:`.supersede.closed`). It leaves the board; the
        history records it. A user's own or a pinned to-do stays (they remove it), with a note.
        False when no to-do is about it (by its words)."""
        if candidate.supersedes is not None:
            todo = board.find(candidate.supersedes)
            if todo is None or todo.kind != "todo":
                result.notes.append(f"no current to-do {candidate.supersedes} to close")
                return False
        else:
            matches = [e for e in closed_by_text(candidate.text, board.entries) if isinstance(e, Entry)]
            if not matches:
                return False
            todo = matches[0]
        if todo.protected:
            why = "it is the user's own or pinned: left on the board"
            result.notes.append(f"to-do {todo.id} is done, but {why} (kairos board rm {todo.id})")
            return True
        board.entries.remove(todo)
        result.closed.append(todo)
        return True

    @staticmethod
    def _judge(board: Board, candidate: Candidate, now: datetime, index: dict[str, Entry], result: MergeResult) -> None:
        """A rem-agent's word on an offline guess: ``keep`` confirms it, ``drop`` takes it off the board
        into the replaced entries (so ``kairos board restore`` undoes it). Only a guess still on the
        board, and never a user's or pinned entry, is judged."""
        entry = board.find(candidate.supersedes or "")
        if entry is None or not entry.guessed or entry.protected:
            result.notes.append(f"no offline guess {candidate.supersedes} on the board to {candidate.action}")
            return
        if candidate.action == "keep":
            entry.guessed = False
            result.confirmed.append(entry)
            return
        board.entries.remove(entry)
        index.pop(normal_key(entry.text), None)
        entry.superseded_at, entry.dropped_by = now, "rem-agent"
        board.superseded.append(entry)
        del board.superseded[:-SUPERSEDED_KEEP]
        result.dropped.append(entry)

    def _update(
        self,
        board: Board,
        candidate: Candidate,
        now: datetime,
        source: tuple[str | None, str | None],
        index: dict[str, Entry],
        touched: set[str],
        result: MergeResult,
    ) -> None:
        """A sentence that says something changed or happened: it closes the one open to-do it names
        (:func:`.slots.done_by`); if none, and it said a change (not kind ``todo``), it is kept only
        if it gives one entry's slot a new value (:func:`.slots.updated`), in that entry's place and
        with its kind; otherwise nothing is added (it is no instruction of its own)."""
        text = clean(candidate.text)
        key = normal_key(text)
        done = [e for e in done_by(text, board.entries) if isinstance(e, Entry)]
        if done and not done[0].protected:  # "ssh key rotated btw": the to-do it names is done
            board.entries.remove(done[0])
            index.pop(normal_key(done[0].text), None)
            result.closed.append(done[0])
            return
        if candidate.kind == "todo":
            return  # it said only that something happened: it may close a to-do, never update an entry
        targets = [e for e in updated_by_text(text, board.entries) if isinstance(e, Entry)]
        if not key or unsafe(text) or not targets or key in index:
            return
        entry = Entry(_new_id(board), text, targets[0].kind, "kairos", now, now, 1, *source, guessed=True)
        self._add(board, entry, targets, now, (key, index, touched), result)

    def _add(
        self,
        board: Board,
        entry: Entry,
        targets: list[Entry],
        now: datetime,
        run: tuple[str, dict[str, Entry], set[str]],
        result: MergeResult,
    ) -> None:
        """Put a new ``entry`` on ``board`` in place of ``targets`` (those it replaces), and keep this
        merge's ``run`` state (its text key, the index of entries by key, the ids touched) in step."""
        key, index, touched = run
        before = len(result.superseded)
        self._replace(board, entry, targets, now, result)
        for gone in result.superseded[before:]:
            index.pop(normal_key(gone.text), None)
        board.entries.append(entry)
        index[key] = entry
        touched.add(entry.id)
        result.added.append(entry)

    def _replace(self, board: Board, entry: Entry, targets: list[Entry], now: datetime, result: MergeResult) -> None:
        """``entry`` replaces ``targets``: kairos' own become history; beside a protected one it is a conflict."""
        for old in targets:
            if old.protected:
                entry.conflicts_with = entry.conflicts_with or old.id
                continue
            old.superseded_by, old.superseded_at = entry.id, now
            board.entries.remove(old)
            board.superseded.append(old)
            result.superseded.append(old)
        if entry.conflicts_with:
            result.conflicts.append(entry)
        del board.superseded[:-SUPERSEDED_KEEP]

    def add_user(self, project: str, text: str, kind: str = "rule") -> tuple[Entry, list[Entry]]:
        """A user's own entry (never pruned automatically); returns it and what was pruned for room."""
        if kind not in KINDS:
            raise UsageError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        text = clean(text)
        if not normal_key(text):
            raise UsageError("give the text of the entry (letters or digits)")
        with self.locked(project) as board:
            now = self.now()
            key = normal_key(text)
            if any(normal_key(e.text) == key for e in board.entries):
                raise ConflictError(f"the board already has that entry: {text}")
            pruned: list[Entry] = []
            if len(board.entries) >= LIMIT:
                pruned = to_prune(board.entries, now)
                board.entries = [e for e in board.entries if e not in pruned]
            if len(board.entries) >= LIMIT:
                raise ConflictError(
                    f"the board holds {LIMIT} entries of your own; remove one first (kairos board rm ID)"
                )
            entry = Entry(_new_id(board), text, kind, "user", now, now, 1)
            # A person's later words replace kairos' earlier ones too; their own or pinned ones stay,
            # marked as in conflict with the new one (they decide which holds).
            replaced = MergeResult()
            targets = [e for e in superseded_by_text(kind, text, board.entries) if isinstance(e, Entry)]
            self._replace(board, entry, targets, now, replaced)
            board.entries.append(entry)
            self.save(board)
            self.record(
                project,
                [{"action": "prune", **_brief(e), "by": "kairos"} for e in pruned]
                + [{"action": "add", **_brief(entry), "by": "user"}]
                + [_supersede_record(e, {"by": "user"}) for e in replaced.superseded],
            )
        return entry, pruned

    def remove(self, project: str, entry_id: str) -> Entry:
        with self.locked(project) as board:
            entry = board.find(board.resolve(entry_id, project))
            if entry is None:
                raise NotFoundError(f"no entry {entry_id!r} on the board of {project} (see: kairos board show)")
            board.entries.remove(entry)
            self.save(board)
            self.record(project, [{"action": "remove", **_brief(entry), "by": "user"}])
        return entry

    def prune(self, project: str, keep: int = PRUNE_TO) -> list[Entry]:
        """Drop kairos' lowest-priority entries until at most ``keep`` remain (users' stay)."""
        with self.locked(project) as board:
            pruned = to_prune(board.entries, self.now(), keep)
            if pruned:
                board.entries = [e for e in board.entries if e not in pruned]
                self.save(board)
                self.record(project, [{"action": "prune", **_brief(e), "by": "user"} for e in pruned])
        return pruned


def _brief(entry: Entry) -> dict[str, Any]:
    return {"id": entry.id, "kind": entry.kind, "text": entry.text, "author": entry.author}


def _supersede_record(entry: Entry, base: dict[str, Any]) -> dict[str, Any]:
    return {"action": "supersede", **_brief(entry), "superseded_by": entry.superseded_by, **base}


def _new_id(board: Board) -> str:
    taken = {e.id for e in board.entries} | {e.id for e in board.superseded}
    while True:
        candidate = "b" + secrets.token_hex(3)
        if candidate not in taken:
            return candidate


def _flock(fd: int, timeout_s: float, path: Path) -> None:
    """Take an exclusive flock on ``fd``, waiting at most ``timeout_s`` (writes take milliseconds)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ConflictError(f"the context board is busy (lock {path} held for {timeout_s:g}s)") from None
            time.sleep(0.01)
