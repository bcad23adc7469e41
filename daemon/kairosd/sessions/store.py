"""Live agent sessions and the items waiting for them, durable in one JSON file.

A session is known by its agent (``claude``, ``copilot``, ``codex``, ``gemini``,
or any name a client registers) and the agent's session id. It registers
through its SessionStart hook or the API, and every hook call registers it
again if it is unknown (a hook installed mid-session, a lost SessionStart) and
moves its last-active time. A session not seen for ``ttl`` (24 h by default) is
no longer live: it expires, so a dead session does not collect items forever.
At most ``max_sessions`` are known at once (any client can register any id): a
new one past that makes the longest idle go first (:meth:`SessionStore.evict_idle`),
and its items move on as if it had ended.

A pending item is a fired prompt bound to one session, waiting for that
session's hook to hand it to the agent. A hook *claims* items (a lease of
:data:`CLAIM_LEASE`), writes them out, then *acknowledges* them; an item whose
claim is never acknowledged (the hook died) becomes claimable again when the
lease runs out. So an item reaches the agent at least once and, unless a hook
dies between writing and acknowledging, exactly once.

Persistence: ``<state dir>/sessions.json`` (written with
:func:`kairosd.system.atomic.write_atomic`) holds the sessions with their items.
Claims are not written: after a restart every item is claimable again. The
caller decides when to :meth:`SessionStore.save` (structural changes before it
answers, last-active touches lazily).

Single writer (the daemon); called on the event loop, ``save`` may run in a
worker thread. Must not import the scheduler, the server, the delivery targets
or the CLI.
"""

from __future__ import annotations

import heapq
import json
import logging
import posixpath
import secrets
import shutil
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kairosd.core import defaults
from kairosd.core.clock import Clock
from kairosd.core.models import SessionTarget
from kairosd.system.atomic import remove_stale_temp_files, write_atomic

__all__ = ["CLAIM_LEASE", "DEFAULT_TTL", "LiveSession", "PendingItem", "SessionKey", "SessionStore"]

log = logging.getLogger(__name__)

FILE_VERSION = 1
DEFAULT_TTL = timedelta(hours=24)
# Long enough for a hook to write its output and acknowledge; short enough that an item a dead
# hook claimed comes back within the same turn or the next one.
CLAIM_LEASE = timedelta(seconds=30)
MAX_ID_CHARS = 200
MAX_AGENT_CHARS = 100
MAX_PATH_CHARS = 4096

SessionKey = tuple[str, str]  # (agent, session_id)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a UTC offset")
    return value


class PendingItem(BaseModel):
    """A fired prompt waiting for its session; ``run_id`` is the run it settles (and its idempotency key)."""

    # defer_build: built at the first session read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    run_id: str
    task_id: str
    task_name: str | None = None
    prompt: str
    scheduled_for: datetime
    planned_for: datetime
    dispatched_at: datetime | None = None
    queued_at: datetime
    late_by_s: float = 0.0
    catch_up: bool = False
    manual: bool = False
    target: dict[str, Any] = Field(default_factory=dict)  # the task's session target, for its fallback
    # A claim is a lease, never written to disk (see the module docstring).
    claim: str | None = Field(default=None, exclude=True)
    claimed_until: datetime | None = Field(default=None, exclude=True)

    _check = field_validator("scheduled_for", "planned_for", "dispatched_at", "queued_at")(
        classmethod(lambda cls, v: _utc(v))
    )

    def claimable(self, now: datetime) -> bool:
        return self.claim is None or self.claimed_until is None or self.claimed_until <= now


class LiveSession(BaseModel):
    # defer_build: built at the first session read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    agent: str = Field(min_length=1, max_length=MAX_AGENT_CHARS)
    session_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    cwd: str | None = Field(default=None, max_length=MAX_PATH_CHARS)
    transcript_path: str | None = Field(default=None, max_length=MAX_PATH_CHARS)
    registered_at: datetime
    last_active: datetime
    # A turn is under way (a prompt was submitted, or a Stop hook blocked) and no Stop ended it yet.
    in_turn: bool = False
    # Stop hooks in a row that this session's hook blocked to deliver an item (reset by a turn that ends).
    consecutive_blocks: int = 0
    items: list[PendingItem] = Field(default_factory=list)

    _check = field_validator("registered_at", "last_active")(classmethod(lambda cls, v: _utc(v)))

    @property
    def key(self) -> SessionKey:
        return (self.agent, self.session_id)

    def view(self, ttl: timedelta) -> dict[str, Any]:
        """What ``kairos sessions`` shows (items as a count: prompts stay out of listings)."""
        return {
            "agent": self.agent,
            "session_id": self.session_id,
            "cwd": self.cwd,
            "transcript_path": self.transcript_path,
            "registered_at": self.registered_at.isoformat(),
            "last_active": self.last_active.isoformat(),
            "expires_at": (self.last_active + ttl).isoformat(),
            "in_turn": self.in_turn,
            "pending": len(self.items),
        }


def is_inside(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or below it (lexically, both absolute)."""
    path, folder = posixpath.normpath(path), posixpath.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class SessionStore:
    """The sessions, by (agent, session id), with their pending items."""

    def __init__(
        self, path: Path, clock: Clock, ttl: timedelta = DEFAULT_TTL, max_sessions: int = defaults.MAX_SESSIONS
    ) -> None:
        if ttl <= timedelta(0):
            raise ValueError("the session ttl must be positive")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.path = path
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[SessionKey, LiveSession] = {}
        self._dirty = False
        # save() may run in a worker thread while the loop reads; writes to the dict happen under it.
        self._lock = threading.RLock()

    # ---- persistence -----------------------------------------------------------------------

    def load(self) -> None:
        """Read the file (absent: no sessions). An unreadable one is copied aside and ignored:
        losing sessions only costs re-registration, and the run ledger still knows their items' runs."""
        with self._lock:
            remove_stale_temp_files(self.path)
            self._sessions.clear()
            try:
                raw = self.path.read_bytes()
            except FileNotFoundError:
                return
            try:
                doc = json.loads(raw)
                if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), list):
                    raise ValueError("not a sessions document")
                if doc.get("version", FILE_VERSION) > FILE_VERSION:
                    raise ValueError(f"written by a newer kairos (version {doc.get('version')})")
                sessions = [LiveSession.model_validate(entry) for entry in doc["sessions"]]
            except (ValueError, ValidationError, RecursionError) as exc:  # RecursionError: nested thousands deep
                aside = self.path.with_name(f"{self.path.name}.corrupt-{self._clock.now():%Y%m%dT%H%M%SZ}")
                shutil.copyfile(self.path, aside)
                log.error("%s is unusable (%s); copied to %s and starting without sessions", self.path, exc, aside)
                return
            for session in sessions:
                self._sessions[session.key] = session

    def save(self) -> None:
        """Write the sessions if anything changed since the last save (durable when this returns)."""
        with self._lock:
            if not self._dirty:
                return
            doc = {"version": FILE_VERSION, "sessions": [s.model_dump(mode="json") for s in self._sessions.values()]}
            self._dirty = False
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(doc, separators=(",", ":")).encode())
        except BaseException:
            self._dirty = True  # try again with the next save
            raise

    @property
    def dirty(self) -> bool:
        return self._dirty

    # ---- sessions --------------------------------------------------------------------------

    def __iter__(self) -> Iterator[LiveSession]:
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> LiveSession | None:
        return self._sessions.get(key)

    def find(self, session_id: str, agent: str | None = None) -> list[LiveSession]:
        """Sessions with this id (of this agent, if given), most recently active first."""
        found = [s for s in self._sessions.values() if s.session_id == session_id and agent in (None, s.agent)]
        return sorted(found, key=lambda s: s.last_active, reverse=True)

    def is_live(self, session: LiveSession, now: datetime) -> bool:
        return now - session.last_active < self.ttl

    def live(self, now: datetime) -> list[LiveSession]:
        """Sessions seen within the ttl, most recently active first."""
        found = [s for s in self._sessions.values() if self.is_live(s, now)]
        return sorted(found, key=lambda s: s.last_active, reverse=True)

    def touch(
        self,
        agent: str,
        session_id: str,
        now: datetime,
        *,
        cwd: str | None = None,
        transcript_path: str | None = None,
    ) -> tuple[LiveSession, bool]:
        """The session (registered now if unknown) with its last-active time set; True if it is new."""
        with self._lock:
            key = (agent, session_id)
            session = self._sessions.get(key)
            created = session is None
            if session is None:
                session = LiveSession(
                    agent=agent, session_id=session_id, cwd=cwd, transcript_path=transcript_path,
                    registered_at=now, last_active=now,
                )  # fmt: skip
                self._sessions[key] = session
            else:
                session.last_active = max(session.last_active, now)
                # A session's cwd and transcript can change (cd, /clear); the latest hook knows best.
                if cwd:
                    session.cwd = cwd
                if transcript_path:
                    session.transcript_path = transcript_path
            self._dirty = True
            return session, created

    def remove(self, key: SessionKey) -> LiveSession | None:
        with self._lock:
            session = self._sessions.pop(key, None)
            if session is not None:
                self._dirty = True
            return session

    def evict_idle(self, keep: SessionKey) -> list[LiveSession]:
        """Remove the longest idle sessions (never ``keep``) until at most ``max_sessions`` are left; returns them."""
        with self._lock:
            excess = len(self._sessions) - self.max_sessions
            if excess <= 0:
                return []
            others = (s for s in self._sessions.values() if s.key != keep)
            gone = heapq.nsmallest(excess, others, key=lambda s: s.last_active)  # one pass, not a sort
            for session in gone:
                del self._sessions[session.key]
            self._dirty = True
            return gone

    def expired(self, now: datetime) -> list[LiveSession]:
        return [s for s in self._sessions.values() if not self.is_live(s, now)]

    def resolve(self, target: SessionTarget, now: datetime, exclude: SessionKey | None = None) -> LiveSession | None:
        """The live session ``target`` means now, or None: the most recently active match."""
        for session in self.live(now):
            if session.key == exclude or (target.agent is not None and session.agent != target.agent):
                continue
            if target.session_id is not None and session.session_id != target.session_id:
                continue
            if target.project is not None and not (session.cwd and is_inside(session.cwd, target.project)):
                continue
            return session
        return None

    # ---- items -----------------------------------------------------------------------------

    def item(self, run_id: str) -> tuple[LiveSession, PendingItem] | None:
        for session in self._sessions.values():
            for item in session.items:
                if item.run_id == run_id:
                    return session, item
        return None

    def items_of_task(self, task_id: str) -> list[tuple[LiveSession, PendingItem]]:
        return [(s, i) for s in self._sessions.values() for i in s.items if i.task_id == task_id]

    def add(self, session: LiveSession, item: PendingItem) -> None:
        with self._lock:
            session.items.append(item)
            self._dirty = True

    def drop(self, run_ids: set[str]) -> list[PendingItem]:
        """Remove the items of these runs wherever they are; returns them."""
        with self._lock:
            dropped: list[PendingItem] = []
            for session in self._sessions.values():
                keep = [i for i in session.items if i.run_id not in run_ids]
                if len(keep) != len(session.items):
                    dropped.extend(i for i in session.items if i.run_id in run_ids)
                    session.items = keep
            if dropped:
                self._dirty = True
            return dropped

    def claim(self, session: LiveSession, now: datetime, limit: int) -> tuple[str | None, list[PendingItem]]:
        """Lease up to ``limit`` claimable items, oldest first, under one new claim token."""
        ready = [i for i in session.items if i.claimable(now)][:limit]
        if not ready:
            return None, []
        token = "c" + secrets.token_hex(8)
        for item in ready:
            item.claim, item.claimed_until = token, now + CLAIM_LEASE
        return token, ready

    def hold(self, item: PendingItem, now: datetime) -> str:
        """Claim this one item (a lease, like a hook's) while kairosd itself hands it to the agent."""
        token = "w" + secrets.token_hex(8)
        item.claim, item.claimed_until = token, now + CLAIM_LEASE
        return token

    def take(self, session: LiveSession, claim: str, run_ids: set[str]) -> list[PendingItem]:
        """Remove the items of ``run_ids`` that ``claim`` still holds (a lease that ran out counts,
        unless another claim took the item since): the hook wrote them out."""
        with self._lock:
            taken = [i for i in session.items if i.claim == claim and i.run_id in run_ids]
            if taken:
                gone = {i.run_id for i in taken}
                session.items = [i for i in session.items if i.run_id not in gone]
                self._dirty = True
            return taken
