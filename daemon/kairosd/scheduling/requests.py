"""Typed request bodies of the task API (add, inbox ack, Claude import), with the bounds of :mod:`kairosd.core.bounds`.

Parsed by :func:`kairosd.api.requests.parse_body`; what a field means (a zone that
exists, a cron expression that fires) is the service's to check.

Must not import the service, the scheduler, the store or the server.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StringConstraints, field_validator

from kairosd.api.requests import Body, Name, Short
from kairosd.core import bounds
from kairosd.core.models import CatchUp, CreatedBy, Overlap, Target


class AddRequest(Body):
    """``POST /v1/tasks``: a new task. Exactly one schedule: ``cron``, ``every``, ``in`` or ``at``."""

    prompt: Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PROMPT_CHARS)]
    cron: Short | None = None
    every: Short | None = Field(default=None, description="a /loop interval such as 5m")
    in_: Short | None = Field(default=None, alias="in", description="a one-shot this long from now, e.g. 20m")
    at: Short | None = Field(default=None, description="a one-shot at ISO 8601 or HH:MM in tz")
    once: StrictBool = False
    tz: str | None = None  # the service checks it (code invalid_time), long names included
    name: Name | None = None
    target: Target | None = Field(default=None, description="where each fire goes (default: the inbox)")
    jitter: Short | None = None
    expires_after_days: StrictInt | None = Field(default=None, ge=1, le=bounds.MAX_EXPIRY_DAYS)
    permanent: StrictBool = False
    catch_up: CatchUp | None = None
    overlap: Overlap | None = None
    created_by: CreatedBy = CreatedBy.API  # the CLI, MCP and hooks say who they are; curl does not
    meta: dict[str, Any] = Field(default_factory=dict)
    check_target: StrictBool = Field(
        default=True,
        description="false: skip the target checks that may pass later (the webhook host resolves, the "
        "command is on PATH); the others still refuse",
    )

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        # Its text and the meta are checked by the task model, which every stored task passes.
        if not value.strip():
            raise ValueError("a task needs a non-empty prompt")
        return value

    @property
    def expiry(self) -> int | Literal["default"] | None:
        """``expires_after_days`` as given, or ``"default"`` when the request left it out (null means never)."""
        return self.expires_after_days if "expires_after_days" in self.model_fields_set else "default"

    def schedule_kinds(self) -> list[str]:
        return [k for k, v in (("cron", self.cron), ("every", self.every), ("in", self.in_), ("at", self.at)) if v]


class EditRequest(Body):
    """``PATCH /v1/tasks/{id}``: change a task in place (its id and history stay). Every field is optional;
    at most one schedule (``cron``, ``every``, ``in`` or ``at``) replaces the current one."""

    prompt: Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PROMPT_CHARS)] | None = None
    cron: Short | None = None
    every: Short | None = Field(default=None, description="a /loop interval such as 5m")
    in_: Short | None = Field(default=None, alias="in", description="a one-shot this long from now, e.g. 20m")
    at: Short | None = Field(default=None, description="a one-shot at ISO 8601 or HH:MM in tz")
    once: StrictBool | None = Field(default=None, description="with cron: fire once (default: as the task was)")
    tz: str | None = None
    name: Name | None = None
    target: Target | None = None
    jitter: Short | None = None
    catch_up: CatchUp | None = None
    overlap: Overlap | None = None

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a task needs a non-empty prompt")
        return value

    def schedule_kinds(self) -> list[str]:
        return [k for k, v in (("cron", self.cron), ("every", self.every), ("in", self.in_), ("at", self.at)) if v]


class AckRequest(Body):
    """``POST /v1/inbox/ack``: ``{"ids": [...]}`` or ``{"all": true}``, optionally in one ``session``."""

    ids: list[Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_SHORT_CHARS)]] | None = Field(
        default=None, min_length=1, max_length=bounds.MAX_LIST_ITEMS
    )
    all: StrictBool = False
    session: Name | None = None


class ImportRequest(Body):
    """``POST /v1/import``: the text of a Claude Code ``scheduled_tasks.json``."""

    data: Annotated[str, StringConstraints(max_length=8 << 20)]
    tz: str | None = None  # the service checks it (code invalid_time), long names included
    dry_run: StrictBool = False  # report what would be created, skipped, rejected and dropped; write nothing
    project: Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PATH_CHARS)] | None = Field(
        default=None, description="an absolute path: the tasks go to a live session there instead of the inbox"
    )
