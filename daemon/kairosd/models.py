"""The task model: what a scheduled prompt is, validated with pydantic.

Pure: no file, socket or clock access. ``created_at`` and every other time
come from the caller. Unknown fields (written by a newer kairos) are kept,
so a round trip through an older daemon never loses them.

Must not import the store, the server, the clock module or anything with I/O.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kairosd.errors import InvalidTimeError
from kairosd.schedule.cron import parse_cron
from kairosd.schedule.jitter import parse_jitter

TASK_ID_RE = re.compile(r"^[0-9a-f]{8}$")
AGENT_DEFAULT_EXPIRY_DAYS = 7


class CreatedBy(StrEnum):
    CLI = "cli"
    MCP = "mcp"
    HOOK = "hook"
    IMPORT = "import"


class CatchUp(StrEnum):
    """What to do with fires whose time passed while kairos could not fire them."""

    SKIP = "skip"  # record as missed, do not fire
    ONCE = "once"  # one catch-up fire for the most recent miss within the grace window
    ALL = "all"  # every miss (bounded), oldest first
    SURFACE = "surface"  # one-shots: record in the missed ledger, do not fire, remove


class Overlap(StrEnum):
    """What to do when a fire comes while the previous run of the task is still going."""

    SKIP = "skip"
    QUEUE = "queue"


class InboxTarget(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    kind: Literal["inbox"] = "inbox"
    session: str = "default"


class ShellTarget(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    kind: Literal["shell"] = "shell"
    argv: list[str] = Field(min_length=1)
    cwd: str | None = None
    timeout_s: float = Field(default=300.0, gt=0)


Target = Annotated[InboxTarget | ShellTarget, Field(discriminator="kind")]


def new_task_id() -> str:
    """8 lowercase hex characters, like Claude Code's ids (the seed for jitter)."""
    return secrets.token_hex(4)


def _aware_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a UTC offset")
    return value.astimezone(UTC)


class Task(BaseModel):
    """One scheduled prompt: a cron expression (recurring or one-shot) or an exact time."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    id: str
    prompt: str
    cron: str | None = None
    at: datetime | None = None
    recurring: bool = True
    tz: str = "UTC"
    target: Target = Field(default_factory=InboxTarget)
    name: str | None = None
    created_at: datetime
    created_by: CreatedBy = CreatedBy.CLI
    last_fired_at: datetime | None = None
    # The last scheduled slot kairos handled (fired, skipped or recorded missed).
    # Nominal, never jittered: the next fire is computed after it.
    last_scheduled_for: datetime | None = None
    paused: bool = False
    expires_after_days: int | None = Field(default=None, ge=1)
    permanent: bool = False
    catch_up: CatchUp = CatchUp.ONCE
    jitter: str = "none"
    overlap: Overlap = Overlap.SKIP
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not TASK_ID_RE.match(value):
            raise ValueError("id must be 8 lowercase hex characters")
        return value

    @field_validator("created_at", "last_fired_at", "last_scheduled_for", "at")
    @classmethod
    def _check_aware(cls, value: datetime | None) -> datetime | None:
        return None if value is None else _aware_utc(value)

    @field_validator("tz")
    @classmethod
    def _check_tz(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("cron")
    @classmethod
    def _check_cron(cls, value: str | None) -> str | None:
        if value is not None:
            parse_cron(value)  # raises CronSyntaxError, a ValueError, with the field named
        return value

    @field_validator("jitter")
    @classmethod
    def _check_jitter(cls, value: str) -> str:
        return parse_jitter(value).spec

    @model_validator(mode="after")
    def _check_schedule(self) -> Task:
        if (self.cron is None) == (self.at is None):
            raise ValueError("a task needs exactly one of 'cron' or 'at'")
        if self.at is not None and self.recurring:
            raise ValueError("a task pinned to an exact time ('at') cannot be recurring")
        return self

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def expires(self) -> bool:
        return self.recurring and not self.permanent and self.expires_after_days is not None


def default_catch_up(recurring: bool) -> CatchUp:
    return CatchUp.ONCE if recurring else CatchUp.SURFACE


def default_expiry_days(created_by: CreatedBy) -> int | None:
    """CLI and import tasks never expire by default; agent-created ones after 7 days."""
    return AGENT_DEFAULT_EXPIRY_DAYS if created_by in (CreatedBy.MCP, CreatedBy.HOOK) else None


def new_task(
    *,
    prompt: str,
    created_at: datetime,
    tz: str,
    cron: str | None = None,
    at: datetime | None = None,
    recurring: bool | None = None,
    created_by: CreatedBy = CreatedBy.CLI,
    task_id: str | None = None,
    catch_up: CatchUp | None = None,
    expires_after_days: int | Literal["default"] | None = "default",
    **fields: Any,
) -> Task:
    """Build a task with the defaults that depend on how it was created.

    A one-shot ``at`` time must lie after ``created_at``: kairos never quietly
    moves a past time to next year.
    """
    is_recurring = (at is None) if recurring is None else recurring
    if at is not None and _aware_utc(at) <= created_at:
        raise InvalidTimeError(f"{_aware_utc(at).isoformat()} is in the past (now is {created_at.isoformat()})")
    return Task(
        id=task_id or new_task_id(),
        prompt=prompt,
        cron=cron,
        at=at,
        recurring=is_recurring,
        tz=tz,
        created_at=created_at,
        created_by=created_by,
        catch_up=catch_up or default_catch_up(is_recurring),
        expires_after_days=(default_expiry_days(created_by) if expires_after_days == "default" else expires_after_days),
        **fields,
    )
