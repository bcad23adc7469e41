"""Durable per-session inboxes: one :class:`kairosd.store.jsonlog.JsonLog` per session.

A session's log is ``<folder>/<session, percent-encoded>.jsonl``. Session names
are free text (``/``, ``..``, unicode are all fine): every byte outside
``A-Za-z0-9_.-~`` is percent-encoded, so a name can never leave the folder. A
name whose encoding would not fit in a file name (255 bytes) gets a shortened
prefix plus ``+`` and a hash; ``+`` is always encoded otherwise, so such names
cannot collide with plain ones, and the real name is read back from the items.

The log holds item records (an :class:`InboxItem` as JSON) and ack records
(``{"ack": id, "at": time}``). Memory holds a session's unacknowledged items and,
for acknowledged ones, only their id and when they were acked (so a retried put
stays a no-op); the acknowledged items themselves are on disk only, for
:data:`ACKED_RETENTION`. A put or an ack costs the same whatever the inbox holds:
compaction is decided on counters (lines in the file against records worth
keeping), never on a walk of the items, and runs once the dead lines outnumber
the live ones (plus slack), so its cost is spread over the appends that made it
due. It drops items acked more than :data:`ACKED_RETENTION` ago and folds acks
into their items. Unacknowledged items are never dropped.

Sessions are cached once loaded, at most :data:`MAX_CACHED_SESSIONS` of them, least recently
used out first: any client can name any session (``GET /v1/inbox?session=NAME``), so an
unbounded cache would grow with every name asked for. Dropping a session from the cache loses
nothing, since every item and ack is on disk before the cache changes; its next use reads it again.

Items are unique by id within a session (the id is the run id, and a retried
delivery goes to the same session), which makes :meth:`InboxStore.put`
idempotent. Single writer: the daemon. Blocking I/O; async callers use a thread.

Must not import the scheduler, the server, the store or the delivery targets.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from pydantic import ValidationError

from kairosd.core.clock import Clock
from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.ids import resolve_prefix
from kairosd.core.records import InboxItem, json_line
from kairosd.store.jsonlog import JsonLog

__all__ = ["ACKED_RETENTION", "MAX_CACHED_SESSIONS", "MAX_SESSION_CHARS", "InboxStore", "session_file_name"]

log = logging.getLogger(__name__)

MAX_SESSION_CHARS = 200
MAX_CACHED_SESSIONS = 256
ACKED_RETENTION = timedelta(days=7)
SUFFIX = ".jsonl"

# Lines a log may hold beyond twice its kept records before compaction; keeps rewrites rare.
COMPACT_SLACK = 100
_MAX_FILE_NAME_BYTES = 255  # NAME_MAX on Linux and macOS file systems
_HASHED_PREFIX_CHARS = 150
_HASH_MARK = "+"  # quote(safe="") always encodes "+", so it only appears in hashed names


def _check_session(session: str) -> None:
    if not session:
        raise UsageError("an inbox session name must not be empty")
    if len(session) > MAX_SESSION_CHARS:
        raise UsageError(f"inbox session name is {len(session)} characters long; the limit is {MAX_SESSION_CHARS}")


def session_file_name(session: str) -> str:
    """The log's file name for ``session``; raises :class:`UsageError` for an unusable name."""
    _check_session(session)
    try:
        quoted = quote(session, safe="")
    except UnicodeEncodeError as exc:  # a lone surrogate, say, from a JSON \ud800 escape
        raise UsageError(f"inbox session name is not valid Unicode ({exc.reason})") from exc
    name = quoted + SUFFIX
    if len(name) <= _MAX_FILE_NAME_BYTES:  # quoted text is ASCII, so characters are bytes
        return name
    # Non-ASCII names can take 9 bytes a character once encoded; keep a readable prefix.
    prefix = re.sub(r"%[0-9A-F]?$", "", quoted[:_HASHED_PREFIX_CHARS])  # no half escapes
    digest = hashlib.sha256(session.encode("utf-8")).hexdigest()[:32]
    return f"{prefix}{_HASH_MARK}{digest}{SUFFIX}"


def _session_from_file_name(name: str) -> str | None:
    """The session a plain file name encodes; None for hashed or foreign names."""
    if not name.endswith(SUFFIX) or _HASH_MARK in name:
        return None
    try:
        session = unquote(name[: -len(SUFFIX)], errors="strict")
        if session_file_name(session) == name:
            return session
    except (UsageError, UnicodeDecodeError):
        pass
    return None


@dataclass
class _Session:
    name: str
    log: JsonLog
    items: dict[str, InboxItem] = field(default_factory=dict)  # unacknowledged, by id, in put order
    # Acknowledged ids -> when, oldest ack first: the items are on disk only (see the module docstring).
    acked: dict[str, datetime] = field(default_factory=dict)

    def kept(self) -> int:
        """Records a compacted log would hold (before old acks expire)."""
        return len(self.items) + len(self.acked)


class InboxStore:
    """Inboxes under ``folder``, loaded per session on first use and then cached (at most ``max_cached``)."""

    def __init__(self, folder: Path, clock: Clock, max_cached: int = MAX_CACHED_SESSIONS) -> None:
        self._folder = folder
        self._clock = clock
        self._max_cached = max(1, max_cached)
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        # put runs in worker threads (one per delivery); reads come from the event loop.
        self._lock = threading.RLock()
        self.compactions = 0  # how many log rewrites so far (for tests and benchmarks)
        self._compaction_holds = 0  # hold_compaction() calls not yet released: puts and acks do not compact

    @property
    def folder(self) -> Path:
        return self._folder

    @property
    def cached_sessions(self) -> int:
        """How many sessions are held in memory now."""
        with self._lock:
            return len(self._sessions)

    def hold_compaction(self) -> None:
        """Let puts and acks not compact a session's log until :meth:`release_compaction` (holds nest).

        A compaction reads the whole log back and rewrites it: the scheduler holds it while a pass's
        deliveries (a herd's batches) are written, as it holds the run ledger's, and compacts after.
        """
        with self._lock:
            self._compaction_holds += 1

    def release_compaction(self, compact: bool = True) -> None:
        """End one :meth:`hold_compaction`; the last one compacts every cached session that is due now
        (blocking: run it in a thread), unless ``compact`` is False (then each one's next append does;
        a session dropped from the cache meanwhile is compacted when it is next loaded)."""
        with self._lock:
            self._compaction_holds = max(0, self._compaction_holds - 1)
            if compact and not self._compaction_holds:
                for session in builtins.list(self._sessions.values()):
                    self._maybe_compact(session)

    @property
    def compaction_due(self) -> bool:
        """Whether a cached session's log may be rewritten now (see :meth:`release_compaction`): it is
        due, or would be once its expired acks are dropped."""
        with self._lock:
            cutoff = self._clock.now() - ACKED_RETENTION
            return any(
                self._due(session) or (session.log.lines > COMPACT_SLACK and self._oldest_ack(session) < cutoff)
                for session in self._sessions.values()
            )

    @staticmethod
    def _oldest_ack(session: _Session) -> datetime:
        return next(iter(session.acked.values()), datetime.max.replace(tzinfo=UTC))

    def put(self, item: InboxItem) -> bool:
        """Add ``item`` to its session's inbox; False if that id is already there (a retry).

        Returns True only once the item is durably on disk.
        """
        return self.put_many([item])[0]

    def put_many(
        self,
        items: builtins.list[InboxItem],
        *,
        handed_over: bool = False,
        lines: builtins.list[bytes | None] | None = None,
    ) -> builtins.list[bool]:
        """Add several items with one write and one fsync per session: a group commit.

        Returns, per item, what :meth:`put` would (True: new and durable; False:
        a repeat of an id already there). All or nothing per session: when a
        session's write fails, :class:`OSError` is raised and that session's
        memory is unchanged (sessions written before it stay written).
        The store keeps copies; ``handed_over``: the caller made the items for
        it and will not change them, so they are kept as they are. ``lines``:
        the items' lines (:func:`json_line`'s bytes) where the caller has them
        (None for one it has not), one an item in order.
        """
        if lines is not None and len(lines) != len(items):
            raise ValueError(f"{len(lines)} lines for {len(items)} items")
        with self._lock:
            fresh: dict[str, builtins.list[tuple[InboxItem, bytes | None]]] = {}  # session -> new items, put order
            seen: set[tuple[str, str]] = set()
            answers: builtins.list[bool] = []
            session: _Session | None = None
            for index, item in enumerate(items):
                if session is None or session.name != item.session:  # a batch is one session's, mostly
                    session = self._session(item.session)
                key = (item.session, item.id)
                new = item.id not in session.items and item.id not in session.acked and key not in seen
                answers.append(new)
                if new:
                    seen.add(key)
                    fresh.setdefault(item.session, []).append((item, None if lines is None else lines[index]))
            for name, entries in fresh.items():
                session = self._session(name)
                session.log.append_lines([line or json_line(item) for item, line in entries])
                for item, _ in entries:
                    # A shallow copy is a full one: every field of an item is immutable (text, times, numbers).
                    session.items[item.id] = item if handed_over else item.model_copy()
                if not self._compaction_holds:
                    self._maybe_compact(session)
            return answers

    def has(self, session: str, item_id: str) -> bool:
        """Whether ``session``'s inbox holds ``item_id`` (acknowledged or not)."""
        with self._lock:
            s = self._session(session)
            return item_id in s.items or item_id in s.acked

    def list(self, session: str | None = None, include_acked: bool = False) -> builtins.list[InboxItem]:
        """Items oldest first (by delivery time), of one session or of all; unacked only by default.

        Acknowledged items are read back from disk (they are not kept in memory).
        """
        with self._lock:
            found: builtins.list[InboxItem] = []
            for s in self._chosen(session):
                found.extend(item.model_copy(deep=True) for item in s.items.values())
                if include_acked and s.acked:
                    found.extend(self._acked_items(s))
            # sorted is stable: equal times keep session order, then put order.
            return sorted(found, key=lambda item: item.delivered_at)

    def ack(self, session: str | None, ids: builtins.list[str] | None) -> builtins.list[str]:
        """Acknowledge items; returns the ids acked by this call (already-acked ones are left out).

        ``ids`` None acks every unacked item of ``session`` (of every session when
        ``session`` is None). An id not found raises :class:`NotFoundError` and
        nothing is acked.
        """
        with self._lock:
            chosen = self._chosen(session)
            by_name = {s.name: s for s in chosen}  # held here: the cache may drop them meanwhile
            targets: dict[str, builtins.list[str]] = {}  # session name -> ids to ack there
            if ids is None:
                for s in chosen:
                    targets[s.name] = builtins.list(s.items)
            else:
                missing: builtins.list[str] = []
                known: set[str] | None = None  # every id, built only when a prefix is given
                for given in dict.fromkeys(ids):  # drop repeats, keep order
                    item_id = given
                    owner = next((s for s in chosen if given in s.items or given in s.acked), None)
                    if owner is None:  # not a whole id: a unique prefix of one (git-style), any case
                        if known is None:
                            known = {i for s in chosen for i in (*s.items, *s.acked)}
                        try:
                            item_id = resolve_prefix(given, known, "inbox item")
                        except NotFoundError:
                            missing.append(given)
                            continue
                        owner = next((s for s in chosen if item_id in s.items or item_id in s.acked), None)
                    if owner is None:
                        missing.append(item_id)
                    elif item_id in owner.items:
                        targets.setdefault(owner.name, []).append(item_id)
                if missing:
                    where = f"session {session!r}" if session is not None else "any session"
                    raise NotFoundError(f"no inbox item {', '.join(map(repr, missing))} in {where}")
            now = self._clock.now()
            acked: builtins.list[str] = []
            for name, item_ids in targets.items():
                if not item_ids:
                    continue
                s = by_name[name]
                s.log.append([{"ack": item_id, "at": now.isoformat()} for item_id in item_ids])
                for item_id in item_ids:
                    del s.items[item_id]  # on disk only from now on
                    s.acked[item_id] = now
                acked.extend(item_ids)
                if not self._compaction_holds:
                    self._maybe_compact(s)
            return acked

    def sessions(self) -> builtins.list[str]:
        """Every session with an inbox log file, sorted."""
        with self._lock:
            cached = {s.log.path.name: name for name, s in self._sessions.items()}
            names: set[str] = set()
            for path in self._files():
                name = cached.get(path.name) or _session_from_file_name(path.name)
                if name is None:
                    name = self._hashed_session_name(path)
                if name is not None:
                    names.add(name)
            return sorted(names)

    def _chosen(self, session: str | None) -> builtins.list[_Session]:
        if session is not None:
            return [self._session(session)]
        return [self._session(name) for name in self.sessions()]

    def _files(self) -> builtins.list[Path]:
        try:
            return sorted(p for p in self._folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file())
        except FileNotFoundError:
            return []

    def _hashed_session_name(self, path: Path) -> str | None:
        # A hashed name does not encode the session; its items do. An empty log names no session.
        for record in JsonLog(path).read():
            name = record.get("session")
            if isinstance(name, str) and "ack" not in record:
                try:
                    if session_file_name(name) == path.name:
                        return name
                except UsageError:
                    pass
        return None

    def _session(self, name: str) -> _Session:
        cached = self._sessions.get(name)
        if cached is not None:
            self._sessions.move_to_end(name)
            return cached
        # The folder and the file are created by the first append, not by a read.
        session = _Session(name, JsonLog(self._folder / session_file_name(name)))
        session.log.remove_stale_temp_files()
        everything = self._replay_all(session)
        session.items = {item_id: item for item_id, item in everything.items() if item.acked_at is None}
        acked = sorted((item.acked_at, item_id) for item_id, item in everything.items() if item.acked_at is not None)
        session.acked = {item_id: at for at, item_id in acked}
        self._sessions[name] = session
        while len(self._sessions) > self._max_cached:
            self._sessions.popitem(last=False)
        self._maybe_compact(session)
        return session

    def _replay_all(self, session: _Session) -> dict[str, InboxItem]:
        """Every item of ``session``'s log, acks folded in, by id in put order."""
        items: dict[str, InboxItem] = {}
        for record in session.log.read():
            self._replay(session, items, record)
        return items

    def _acked_items(self, session: _Session) -> builtins.list[InboxItem]:
        """The acknowledged items of ``session`` still kept, read from its log."""
        return [
            item.model_copy(update={"acked_at": session.acked[item_id]})
            for item_id, item in self._replay_all(session).items()
            if item_id in session.acked
        ]

    def _replay(self, session: _Session, items: dict[str, InboxItem], record: dict[str, Any]) -> None:
        where = session.log.path
        if "ack" in record:
            item_id = record["ack"]
            item = items.get(item_id) if isinstance(item_id, str) else None
            try:
                at = datetime.fromisoformat(record["at"])
            except (KeyError, TypeError, ValueError):
                log.warning("%s: skipping an ack record without a valid time", where)
                return
            if item is None:
                # Its item was garbled or compacted away; nothing left to mark.
                log.debug("%s: ack for unknown item %r ignored", where, item_id)
            elif at.tzinfo is None:
                log.warning("%s: skipping an ack for %r without a UTC offset", where, item_id)
            elif item.acked_at is None:
                items[item_id] = item.model_copy(update={"acked_at": at})
            return
        try:
            item = InboxItem.model_validate(record)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(part) for part in first["loc"])
            log.warning("%s: skipping an invalid inbox item (%s: %s)", where, loc, first["msg"])
            return
        if item.session != session.name:
            log.warning("%s: skipping item %r of another session (%r)", where, item.id, item.session)
            return
        # The first record of an id wins, as put does: a repeat is a duplicate, never a change.
        items.setdefault(item.id, item)

    def _expire(self, session: _Session) -> builtins.list[str]:
        """Forget the acks older than :data:`ACKED_RETENTION` (oldest first, so each is looked at once);
        their ids. Only for a log worth compacting: a small one keeps them until it grows."""
        if session.log.lines <= COMPACT_SLACK:
            return []
        cutoff = self._clock.now() - ACKED_RETENTION
        expired: builtins.list[str] = []
        for item_id, at in session.acked.items():
            if at >= cutoff:
                break
            expired.append(item_id)
        for item_id in expired:
            del session.acked[item_id]
        return expired

    @staticmethod
    def _due(session: _Session) -> bool:
        # Small logs are never worth a rewrite.
        return session.log.lines > COMPACT_SLACK and session.log.lines > 2 * session.kept() + COMPACT_SLACK

    def _maybe_compact(self, session: _Session) -> None:
        """Compact ``session``'s log once its dead lines outnumber the kept records (plus slack).

        Constant work unless it compacts: the decision reads two counters, and
        expired acks leave the front of ``acked`` (oldest first) one by one, each
        once. The rewrite reads the log back (the acknowledged items are on disk
        only); it comes after at least as many appends as it rewrites records.
        """
        expired = self._expire(session)
        if not self._due(session):
            return
        self.compactions += 1
        try:
            kept = [
                item.model_copy(update={"acked_at": session.acked.get(item_id)}).model_dump(mode="json")
                for item_id, item in self._replay_all(session).items()
                if item_id in session.items or item_id in session.acked
            ]
            session.log.rewrite(kept)
        except OSError as exc:
            # Everything is durable in the long log already; compaction can wait for the next append.
            log.warning("could not compact %s: %s", session.log.path, exc)
            return
        log.info("compacted %s: %d items kept, %d old acked items dropped", session.log.path, len(kept), len(expired))
