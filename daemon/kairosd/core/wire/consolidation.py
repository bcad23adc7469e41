"""Responses of consolidation (``kairos consolidate``, ``GET /v1/consolidation/runs/ID``): the decision, and a run,
which is a background job (:mod:`.registry`) with the worker's result (what it changed on the board). GET
/v1/consolidation's answer is in :mod:`.sections`.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from pydantic import Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.records import BoardEntry, ReplacedEntry
from kairosd.core.wire.registry import BackgroundTask, FullBackgroundTask


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
    # offline guesses a rem-agent judged (KEEP ID: their ids; DROP ID: the entries); absent from older results
    confirmed: list[str] = Field(default_factory=list)
    dropped: list[ReplacedEntry] = Field(default_factory=list)


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
