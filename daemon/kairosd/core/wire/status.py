"""``GET /v1/status`` (``kairos status --json``): whether kairosd fires, its tasks, the next fire, and a
section of each feature (:mod:`.sections`).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.sections import ConsolidationStatusDoc, QuarantineInfo, RegistryInfo


class NextFire(Record):
    task_id: str
    planned_for: str


class ClockJump(Record):
    """The last jump of the wall clock kairosd noticed (a suspend, a manual change): when, and by how much."""

    at: str
    drift_s: float


class SessionsInfo(Record):
    live: int
    pending: int  # items held for a live session's next turn
    waiters: int
    ttl_s: float


class StatusDoc(Document):
    """``kairos status --json``: GET /v1/status as kairosd answers it; each feature has its own section."""

    api_version: int
    version: str
    pid: int
    started_at: str
    uptime_s: float
    default_tz: str
    enabled: bool
    disabled_reason: str | None
    tasks: int
    paused: int
    deliveries_running: int
    queued: int
    next_fire: NextFire | None
    store_error: str | None
    socket: str
    store: str
    last_clock_jump: ClockJump | None
    wakeups: int
    # When the loop had decided every fire missed before it started (the catch-up after an absence is
    # over); None while it still decides them. Absent from an older kairosd's answer.
    caught_up_at: str | None = None
    overlap_default: str
    background: RegistryInfo
    sessions: SessionsInfo
    consolidation: ConsolidationStatusDoc
    quarantine: QuarantineInfo | None = None  # with the JSON store (kairosd's own) only
