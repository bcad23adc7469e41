"""Responses of the context board and consolidation (``kairos board ...``, ``kairos consolidate``).

An entry is a board entry as ``kairosd.consolidation`` writes it; a consolidation run is a background job
(:mod:`kairosd.core.wire.registry`). Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from pydantic import Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.registry import BackgroundTask, FullBackgroundTask
from kairosd.core.wire.sections import ConsolidationStatusDoc as ConsolidationStatusDoc


class BoardEntry(Record):
    id: str
    text: str
    kind: str
    author: str
    source_session: str | None
    source_agent: str | None
    created_at: str
    last_seen_at: str
    hits: int
    pinned: bool | None = None  # present (true) only on a pinned entry
    conflicts_with: str | None = None  # present only beside a person's entry it contradicts (that entry's id)


class ReplacedEntry(BoardEntry):
    """An entry a later one replaced (``board show --all``, and what ``board add`` replaced)."""

    superseded_by: str
    superseded_at: str


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


class ConsolidateDecisionDoc(Document):
    """``consolidate`` without ``--wait``, or when it did not start: whether it started, and why not."""

    status: str
    gate: str | None
    reason: str
    project: str | None
    run: BackgroundTask | None = None


class TranscriptStats(Record):
    """What the worker read of the transcript (``kairosd.consolidation.transcripts.model.ReadStats``)."""

    format: str
    lines: int
    malformed: int
    human_turns: int
    messages: int
    first_at: str | None
    last_at: str | None
    truncated: bool
    notes: list[str]


class BoardMerge(Record):
    """What a run changed on the board (``kairosd.consolidation.board.model.Merge``): ``seen`` are ids."""

    added: list[BoardEntry]
    seen: list[str]
    pruned: list[BoardEntry]
    superseded: list[ReplacedEntry]
    conflicts: list[BoardEntry]
    closed: list[BoardEntry]
    notes: list[str]


class ConsolidationResult(Record):
    """The worker's report of one run (``kairosd.consolidation.worker``), as its result file holds it.

    ``ok`` and, on a failure, ``error`` are always there; ``transcript`` once the transcript was read,
    ``merge`` and ``board_size`` once the board was written. The worker adds what its mode did (the
    agent's chunks, a fallback, the extraction's counts) as further keys, which a reader may show as they
    are.
    """

    ok: bool
    error: str | None = None
    transcript: TranscriptStats | None = None
    merge: BoardMerge | None = None
    board_size: int | None = None


class ConsolidateRunDoc(Document):
    """``consolidate --wait`` once the run settled (or the wait ran out): the run, its result, the decision."""

    task: FullBackgroundTask
    result: ConsolidationResult | None
    decision: ConsolidateDecisionDoc
    timed_out: bool


class ConsolidationRunDoc(Document):
    """``GET /v1/consolidation/runs/ID``: the run's task record and the worker's result (None until it wrote one)."""

    task: FullBackgroundTask
    result: ConsolidationResult | None  # None until the worker wrote one
