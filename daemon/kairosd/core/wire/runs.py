"""Runs and missed fires: ``run``, ``history`` and ``missed``, as kairosd answers them and ``kairos VERB --json``
prints them.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Any

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.records import IdError


class RunView(Record):
    run_id: str
    task_id: str
    task_name: str | None
    scheduled_for: str
    planned_for: str
    dispatched_at: str | None  # None: never dispatched (a missed fire recorded as a run)
    started_at: str | None
    finished_at: str | None
    outcome: str | None
    reason: str | None
    target: dict[str, Any]
    output_path: str | None
    exit_code: int | None
    late_by_s: float
    catch_up: bool
    manual: bool


class RunDoc(Document):
    run: RunView


class ManyRunsDoc(Document):
    """``run`` with several ids: each run dispatched, and each id that failed."""

    runs: list[RunView]
    errors: list[IdError]


class HistoryDoc(Document):
    runs: list[RunView]


class MissedView(Record):
    task_id: str
    task_name: str | None
    prompt: str
    schedule: str
    scheduled_for: str
    first_scheduled_for: str | None
    count: int
    detected_at: str
    reason: str
    action: str


class MissedDoc(Document):
    missed: list[MissedView]


class ClearedDoc(Document):
    cleared: int
