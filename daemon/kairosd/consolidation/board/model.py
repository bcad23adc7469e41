"""The board's types: an entry, a board, a merge's result; and which entries matter most (pure).

See :mod:`.store` for what they mean and how they are stored; it re-exports every name here.
Pure: must not import the board's store or anything that does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kairosd.consolidation.board.entries import KINDS
from kairosd.core.ids import resolve_prefix

LIMIT = 25
PRUNE_TO = 18
HALF_LIFE_DAYS = 14.0
TIERS = {"rule": 0, "preference": 0, "correction": 0, "decision": 0, "todo": 1, "fact": 2}
AUTHORS = ("kairos", "user")
SCHEMA_VERSION = 1


@dataclass
class Entry:
    id: str
    text: str
    kind: str
    author: str
    created_at: datetime
    last_seen_at: datetime
    hits: int = 1
    source_session: str | None = None
    source_agent: str | None = None
    pinned: bool = False  # kairos must keep it: never pruned, never replaced silently
    conflicts_with: str | None = None  # a user's or pinned entry this one would have replaced
    superseded_by: str | None = None  # set once a later entry replaced it (it is then history)
    superseded_at: datetime | None = None
    # Made by offline mode's pattern reader and confirmed by nobody since (no rem-agent answer said the
    # same, the user neither edited nor pinned it): on unseen talk about a third of such entries are
    # wrong (README, "How good it is"), so a session is told which notes are guesses.
    guessed: bool = False
    # Set when a rem-agent judged this offline guess no note for later sessions (``DROP ID``): the entry
    # left the board as a replaced one does (``superseded_at`` says when), so ``board restore`` undoes it.
    dropped_by: str | None = None

    @property
    def protected(self) -> bool:
        """A user's own or a pinned entry: kairos never removes or replaces it by itself."""
        return self.author == "user" or self.pinned

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"pinned": self.pinned} if self.pinned else {}
        if self.guessed:
            extra["guessed"] = True
        if self.conflicts_with:
            extra["conflicts_with"] = self.conflicts_with
        if self.superseded_by:
            extra["superseded_by"] = self.superseded_by
            extra["superseded_at"] = self.superseded_at.isoformat() if self.superseded_at else None
        if self.dropped_by:
            extra["dropped_by"] = self.dropped_by
            extra["superseded_at"] = self.superseded_at.isoformat() if self.superseded_at else None
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "author": self.author,
            "source_session": self.source_session,
            "source_agent": self.source_agent,
            "created_at": self.created_at.isoformat(),
            "last_seen_at": self.last_seen_at.isoformat(),
            "hits": self.hits,
            **extra,
        }

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        if not isinstance(data, dict):
            raise ValueError("an entry must be an object")
        text, kind, author = data.get("text"), data.get("kind"), data.get("author", "kairos")
        if not isinstance(data.get("id"), str) or not isinstance(text, str) or not text:
            raise ValueError("an entry needs an id and a text")
        if kind not in KINDS or author not in AUTHORS:
            raise ValueError(f"bad kind or author: {kind!r}, {author!r}")
        hits = data.get("hits", 1)
        if isinstance(hits, bool) or not isinstance(hits, int) or hits < 1:
            raise ValueError("hits must be a whole number, 1 or more")
        return cls(
            id=data["id"],
            text=text,
            kind=kind,
            author=author,
            created_at=parse_time(data.get("created_at")),
            last_seen_at=parse_time(data.get("last_seen_at", data.get("created_at"))),
            hits=hits,
            source_session=data.get("source_session") if isinstance(data.get("source_session"), str) else None,
            source_agent=data.get("source_agent") if isinstance(data.get("source_agent"), str) else None,
            pinned=data.get("pinned") is True,
            conflicts_with=data.get("conflicts_with") if isinstance(data.get("conflicts_with"), str) else None,
            superseded_by=data.get("superseded_by") if isinstance(data.get("superseded_by"), str) else None,
            superseded_at=parse_time(data["superseded_at"]) if isinstance(data.get("superseded_at"), str) else None,
            guessed=data.get("guessed") is True,
            dropped_by=data.get("dropped_by") if isinstance(data.get("dropped_by"), str) else None,
        )


def parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("a time must be an ISO string")
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        raise ValueError("a time must carry its offset")
    return when


@dataclass
class Board:
    project: str
    entries: list[Entry] = field(default_factory=list)  # what is current: what a session receives
    updated_at: datetime | None = None
    superseded: list[Entry] = field(default_factory=list)  # replaced entries and dropped guesses, oldest first

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "project": self.project,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "entries": [e.to_json() for e in self.entries],
            "superseded": [e.to_json() for e in self.superseded],
        }

    def find(self, entry_id: str) -> Entry | None:
        return next((e for e in self.entries if e.id == entry_id), None)

    def resolve(self, entry_id: str, project: str, replaced: bool = False) -> str:
        """The whole id of the entry ``entry_id`` names (a git-style prefix, any case: see
        :mod:`kairosd.core.ids`); among the replaced entries with ``replaced``."""
        pool = self.superseded if replaced else self.entries
        where = f" on the board of {project} (see: kairos board show{' --all' if replaced else ''})"
        return resolve_prefix(entry_id, [e.id for e in pool], "replaced entry" if replaced else "entry", where)

    def view(self, now: datetime) -> list[dict[str, Any]]:
        """Entries in priority order (what is kept longest first), as JSON."""
        return [e.to_json() for e in by_priority(self.entries, now)]


@dataclass
class MergeResult:
    added: list[Entry] = field(default_factory=list)
    seen: list[Entry] = field(default_factory=list)
    pruned: list[Entry] = field(default_factory=list)
    superseded: list[Entry] = field(default_factory=list)  # each has superseded_by: the entry that replaced it
    conflicts: list[Entry] = field(default_factory=list)  # added beside a user's or pinned entry (conflicts_with)
    closed: list[Entry] = field(default_factory=list)  # to-dos a later word said are done (off the board)
    confirmed: list[Entry] = field(default_factory=list)  # offline guesses a rem-agent said hold (KEEP ID)
    dropped: list[Entry] = field(default_factory=list)  # offline guesses a rem-agent judged wrong (DROP ID)
    notes: list[str] = field(default_factory=list)  # what could not be applied (an unknown id to supersede)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": [e.to_json() for e in self.added],
            "seen": [e.id for e in self.seen],
            "pruned": [e.to_json() for e in self.pruned],
            "superseded": [e.to_json() for e in self.superseded],
            "conflicts": [e.to_json() for e in self.conflicts],
            "closed": [e.to_json() for e in self.closed],
            "confirmed": [e.id for e in self.confirmed],
            "dropped": [e.to_json() for e in self.dropped],
            "notes": list(self.notes),
        }


def score(entry: Entry, now: datetime) -> float:
    """Hits, halved for every :data:`HALF_LIFE_DAYS` since the entry was last seen."""
    age_days = max(0.0, (now - entry.last_seen_at).total_seconds() / 86400)
    return float(entry.hits * 0.5 ** (age_days / HALF_LIFE_DAYS))


def by_priority(entries: Iterable[Entry], now: datetime) -> list[Entry]:
    """Most worth keeping first: tier (rules > to-dos > facts), score, last seen, then id (stable)."""

    def key(e: Entry) -> tuple[int, float, float, float, str]:
        return (TIERS.get(e.kind, 2), -score(e, now), -e.last_seen_at.timestamp(), -e.created_at.timestamp(), e.id)

    return sorted(entries, key=key)


def to_prune(entries: list[Entry], now: datetime, keep: int = PRUNE_TO) -> list[Entry]:
    """Which kairos-written entries to drop so that at most ``keep`` remain (fewer if users' own
    entries leave no room): the lowest priority first. Users' entries are never chosen."""
    excess = len(entries) - keep
    if excess <= 0:
        return []
    dropped: list[Entry] = []
    for entry in reversed(by_priority(entries, now)):
        if len(dropped) >= excess:
            break
        if not entry.protected:
            dropped.append(entry)
    return dropped
