"""``GET /v1/timeline`` (``kairos timeline --json``): each task's planned fires, runs and misses in a window,
the zone changes and kairosd's downtime. ``kairos timeline`` lays the answer out as parsed and builds these
models only to name the key of an answer it cannot read (:mod:`kairos.shape`).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from kairosd.core.wire.base import Document, Record


class TimelineRun(Record):
    run_id: str
    at: str
    scheduled_for: str
    outcome: str  # delivered, late (caught up), failed, skipped, missed or running
    late_by_s: float
    manual: bool
    reason: str | None


class TimelineMissed(Record):
    at: str
    count: int
    reason: str
    action: str


class TimelineTask(Record):
    id: str
    name: str | None
    tz: str
    schedule: str | None
    paused: bool
    capped: bool  # more fires in the window than the cap: only the first cap are listed
    planned: list[str] | None = None  # planned instants (jitter included); without bins
    planned_bins: list[list[int]] | None = None  # [slice, count]; with bins
    planned_count: int | None = None
    runs: list[TimelineRun]
    missed: list[TimelineMissed]


class DstChange(Record):
    at: str
    before: str
    after: str


class TimelineDoc(Document):
    """``kairos timeline --json``: GET /v1/timeline's answer (kairosd.scheduling.timeline)."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    now: str
    cap: int
    bins: int | None
    capped: list[str]
    tasks: list[TimelineTask]
    dst: dict[str, list[DstChange]]
    downtime: list[list[str]]  # [from, to] spans kairosd was down, derived (see downtime_source)
    downtime_source: str
    started_at: str
