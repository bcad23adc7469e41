"""Records kairosd keeps besides tasks: runs, missed fires and inbox items.

Pure pydantic models (no I/O). Unknown fields are kept so older daemons do not
drop what newer ones wrote.

Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairosd.core.models import utc_fields


class Outcome(StrEnum):
    DELIVERED = "delivered"  # the target confirmed it
    QUEUED = "queued"  # waiting behind a previous run (overlap=queue), or held by a target (see Run.awaiting)
    FAILED = "failed"  # the target refused, errored, timed out, or the daemon died first
    SKIPPED = "skipped"  # deliberately not run (overlap=skip, paused, ...); reason says why
    MISSED = "missed"  # its time passed while kairos could not fire it


def new_run_id() -> str:
    return "r" + secrets.token_hex(6)


class Run(BaseModel):
    """One fire of a task. ``outcome`` is None while the target has not answered yet."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    run_id: str = Field(default_factory=new_run_id)
    task_id: str
    task_name: str | None = None
    scheduled_for: datetime
    planned_for: datetime
    dispatched_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    reason: str | None = None
    target: dict[str, Any] = Field(default_factory=dict)
    output_path: str | None = None
    exit_code: int | None = None
    late_by_s: float = 0.0
    catch_up: bool = False
    manual: bool = False  # fired by `kairos run`, not by the schedule
    # Set on a queued run that a target holds durably and settles later (the target's kind, e.g.
    # "session": a pending item waiting for a live session's next turn). Such a run survives a
    # restart as queued; its target records the outcome.
    awaiting: str | None = None

    _check = utc_fields("scheduled_for", "planned_for", "dispatched_at", "started_at", "finished_at")


class MissedRecord(BaseModel):
    """Fires that did not happen on time, as the user is told about them.

    ``count`` > 1 summarises a run of misses of one task (a minutely task after a
    week away is one record, not ten thousand).
    """

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(default_factory=lambda: "m" + secrets.token_hex(6))
    task_id: str
    task_name: str | None = None
    prompt: str
    schedule: str  # the cron expression or the exact time
    scheduled_for: datetime  # the most recent missed slot
    first_scheduled_for: datetime | None = None  # the oldest, when count > 1
    count: int = 1
    detected_at: datetime
    reason: str  # "daemon was not running", "clock jumped (suspend?)", ...
    action: str  # "surfaced", "recorded", "caught up", ...

    _check = utc_fields("scheduled_for", "first_scheduled_for", "detected_at")


class InboxItem(BaseModel):
    """A prompt delivered to a session's inbox. ``id`` is the run id (idempotency key)."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str
    session: str
    task_id: str
    task_name: str | None = None
    prompt: str
    scheduled_for: datetime
    delivered_at: datetime
    late_by_s: float = 0.0
    catch_up: bool = False
    acked_at: datetime | None = None

    _check = utc_fields("scheduled_for", "delivered_at", "acked_at")
