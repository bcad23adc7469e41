"""Typed request bodies of the task API, with the bounds of :mod:`kairosd.core.bounds`, and their one parser.

Each body is a pydantic model with unknown fields forbidden and no coercion of
numbers and flags (``"5"`` is not a number, ``1`` is not ``true``), so a request either parses into a
typed object or gets one 400 line naming the field and the limit. The same models
produce the API reference (``GET /v1/openapi.json``).

What a field means once parsed (a zone that exists, a cron expression that fires)
is the service's to check: these models bound sizes and shapes, not meanings.

Must not import the service, the scheduler, the store or the server.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationError,
    field_validator,
)

from kairosd.core import bounds
from kairosd.core.errors import UsageError
from kairosd.core.models import CatchUp, CreatedBy, Overlap
from kairosd.registry.model import ExecutionMode, PermissionSet

_M = TypeVar("_M", bound=BaseModel)

Short = Annotated[str, StringConstraints(max_length=bounds.MAX_SHORT_CHARS)]
Name = Annotated[str, StringConstraints(max_length=bounds.MAX_NAME_CHARS)]


class _Body(BaseModel):
    # defer_build: the schemas are built at the first request, not while kairosd starts.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class AddRequest(_Body):
    """``POST /v1/tasks``: a new task. Exactly one schedule: ``cron``, ``every``, ``in`` or ``at``."""

    prompt: Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PROMPT_CHARS)]
    cron: Short | None = None
    every: Short | None = Field(default=None, description="a /loop interval such as 5m")
    in_: Short | None = Field(default=None, alias="in", description="a one-shot this long from now, e.g. 20m")
    at: Short | None = Field(default=None, description="a one-shot at ISO 8601 or HH:MM in tz")
    once: StrictBool = False
    tz: str | None = None  # the service checks it (code invalid_time), long names included
    name: Name | None = None
    target: dict[str, Any] | None = None
    jitter: Short | None = None
    expires_after_days: StrictInt | None = Field(default=None, ge=1, le=bounds.MAX_EXPIRY_DAYS)
    permanent: StrictBool = False
    catch_up: CatchUp | None = None
    overlap: Overlap | None = None
    created_by: CreatedBy = CreatedBy.API  # the CLI, MCP and hooks say who they are; curl does not
    meta: dict[str, Any] = Field(default_factory=dict)

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


class AckRequest(_Body):
    """``POST /v1/inbox/ack``: ``{"ids": [...]}`` or ``{"all": true}``, optionally in one ``session``."""

    ids: list[Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_SHORT_CHARS)]] | None = Field(
        default=None, min_length=1, max_length=bounds.MAX_LIST_ITEMS
    )
    all: StrictBool = False
    session: Name | None = None


class ImportRequest(_Body):
    """``POST /v1/import``: the text of a Claude Code ``scheduled_tasks.json``."""

    data: Annotated[str, StringConstraints(max_length=8 << 20)]
    tz: str | None = None  # the service checks it (code invalid_time), long names included
    dry_run: StrictBool = False  # report what would be created, skipped, rejected and dropped; write nothing
    project: Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PATH_CHARS)] | None = Field(
        default=None, description="an absolute path: the tasks go to a live session there instead of the inbox"
    )


ProcessText = Annotated[str, StringConstraints(max_length=bounds.MAX_ARG_CHARS)]
PathText = Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_PATH_CHARS)]


class StartRequest(_Body):
    """``POST /v1/registry``: a background task, an agent turn (``agent``) or a command (``argv``)."""

    kind: Literal["agent", "shell"] = "agent"  # fire and consolidation tasks are started by kairosd itself
    agent: Short | None = None
    argv: list[ProcessText] | None = Field(default=None, min_length=1, max_length=bounds.MAX_ARGV_ITEMS)
    prompt: Annotated[str, StringConstraints(max_length=bounds.MAX_PROMPT_CHARS)] = ""
    cwd: PathText | None = None
    session: Name | None = None
    model: Short | None = None
    mode: ExecutionMode = ExecutionMode.BACKGROUND
    parent_id: Short | None = None
    parent_depth: StrictInt | None = Field(default=None, ge=0, le=1000)
    permissions: PermissionSet | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=bounds.MAX_TIMEOUT_S, strict=True)


class SendRequest(_Body):
    """``POST /v1/registry/{id}/send``: the follow-up prompt of an idle multi-turn agent task."""

    message: Annotated[str, StringConstraints(max_length=bounds.MAX_PROMPT_CHARS)]


REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "AddRequest": AddRequest,
    "AckRequest": AckRequest,
    "ImportRequest": ImportRequest,
    "StartRequest": StartRequest,
    "SendRequest": SendRequest,
}


def parse_body(model: type[_M], body: Any) -> _M:
    """``body`` (parsed JSON, or None for an empty one) as ``model``; one UsageError line otherwise."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise UsageError(validation_message(exc)) from None


def validation_message(exc: ValidationError) -> str:
    """The first problem of a ValidationError as one line: ``field: what is wrong``."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    message = str(first.get("msg", "invalid")).replace("Value error, ", "")
    if first.get("type") == "extra_forbidden":
        message = "unknown field"
    return f"{where}: {message}"
