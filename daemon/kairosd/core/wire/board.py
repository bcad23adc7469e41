"""Responses of the context board (``kairos board ...``): an entry (:mod:`.records`, as a consolidation run's
result shows them too) is a board entry as ``kairosd.consolidation`` writes it.

Consolidation's answers (``kairos consolidate``) are in :mod:`.consolidation`, and GET /v1/consolidation's in
:mod:`.sections` (a section of GET /v1/status too), so that a board verb builds the board's models only
(issue 25).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from pydantic import Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.records import BoardEntry, ReplacedEntry


class BoardDoc(Document):
    """``board show``; with ``--all`` also the replaced entries."""

    project: str
    path: str
    limit: int
    prune_to: int
    entries: list[BoardEntry]
    updated_at: str | None
    superseded: list[ReplacedEntry] | None = None


class BoardAddDoc(Document):
    project: str
    entry: BoardEntry
    pruned: list[BoardEntry]
    superseded: list[ReplacedEntry]


class BoardRemovedDoc(Document):
    """``board rm``: the entry, and the ids removed (as ``kairos rm`` lists them)."""

    project: str
    entry: BoardEntry
    removed: list[str]


class BoardPruneDoc(Document):
    project: str
    pruned: list[BoardEntry]
    prune_to: int


class BoardChange(Record):
    """One line of a board's history; ``reset`` (an unreadable board set aside) names no entry."""

    at: str
    action: str
    by: str
    id: str | None = None
    kind: str | None = None
    text: str | None = None
    # What a change adds to its entry, each present only on the actions that have it:
    superseded_by: str | None = None  # replaced: the entry that replaced it
    with_: str | None = Field(default=None, alias="with")  # conflict: the person's entry it sits beside
    before: str | None = None  # edit: the text it had
    replaced_by: str | None = None  # restore: the entry that had replaced it


class BoardHistoryDoc(Document):
    project: str
    history: list[BoardChange]


class BoardEntryDoc(Document):
    """``board edit`` (with the text ``before``), ``board pin`` and ``board restore`` (``restored``)."""

    project: str
    entry: BoardEntry
    before: str | None = None
    restored: bool | None = None
