"""The task model: what a scheduled prompt is, validated with pydantic.

Pure: no file, socket or clock access. ``created_at`` and every other time
come from the caller. Unknown fields (written by a newer kairos) are kept,
so a round trip through an older daemon never loses them.

Must not import the store, the server, the clock module or anything with I/O.
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from kairosd.core import bounds
from kairosd.core.errors import InvalidTimeError
from kairosd.core.readonly import read_only
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.jitter import parse_jitter

# \Z, not $: "$" also matches before a trailing newline, and such an id could never be addressed.
TASK_ID_RE = re.compile(r"\A[0-9a-f]{8}\Z")
AGENT_DEFAULT_EXPIRY_DAYS = 7


class CreatedBy(StrEnum):
    CLI = "cli"
    MCP = "mcp"
    HOOK = "hook"
    IMPORT = "import"
    API = "api"  # a request that did not say who made it (curl, a script); the CLI sends "cli"


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


# defer_build (here, on Task and on the record, registry and session models): each schema is built
# at its first use (the first task loaded or added), not at import, so an empty kairosd builds none
# of them: ~6 ms and 0.3 MB less at start (BENCHMARKS.md, Session 5). Use the validators from inside
# a function: pydantic's deferred rebuild looks two frames up.
_TARGET_CONFIG = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False, defer_build=True)
PathText = Annotated[str, Field(min_length=1, max_length=bounds.MAX_PATH_CHARS)]
Timeout = Annotated[float, Field(gt=0, le=bounds.MAX_TIMEOUT_S)]
ShortText = Annotated[str, Field(min_length=1, max_length=bounds.MAX_SHORT_CHARS)]


def _process_text(value: str | None) -> str | None:
    """Text that reaches a process (argv, cwd, environment): valid Unicode without NUL."""
    if value is not None:
        problem = bounds.text_problem(value)
        if problem:
            raise ValueError(problem)
    return value


class InboxTarget(BaseModel):
    model_config = _TARGET_CONFIG
    kind: Literal["inbox"] = "inbox"
    session: str = Field(default="default", min_length=1, max_length=bounds.MAX_NAME_CHARS)


class ShellTarget(BaseModel):
    model_config = _TARGET_CONFIG
    kind: Literal["shell"] = "shell"
    argv: list[Annotated[str, Field(max_length=bounds.MAX_ARG_CHARS)]] = Field(
        min_length=1, max_length=bounds.MAX_ARGV_ITEMS
    )
    cwd: PathText | None = None
    timeout_s: Timeout = 300.0

    @field_validator("argv")
    @classmethod
    def _check_argv(cls, value: list[str]) -> list[str]:
        if not value[0]:
            raise ValueError("the command (argv[0]) must not be empty")
        for arg in value:
            _process_text(arg)
        return value

    _check_cwd = field_validator("cwd")(classmethod(lambda cls, value: _process_text(value)))


class AgentTarget(BaseModel):
    """``agent:NAME``: each fire starts a headless run of that agent in the background job registry."""

    model_config = _TARGET_CONFIG
    kind: Literal["agent"] = "agent"
    agent: ShortText
    cwd: PathText | None = None
    model: ShortText | None = None
    timeout_s: Timeout | None = None  # None: the registry's default turn timeout

    _check_text = field_validator("agent", "cwd", "model")(classmethod(lambda cls, value: _process_text(value)))


class WebhookTarget(BaseModel):
    """``webhook:URL``: each fire is POSTed to the URL as signed JSON (see :mod:`kairosd.delivery.webhook`).

    Only the URL's shape is checked here; whether its host may be reached (loopback
    only, unless the config allows others) is decided at delivery time, after the
    name is resolved.
    """

    model_config = _TARGET_CONFIG
    kind: Literal["webhook"] = "webhook"
    url: str = Field(min_length=1, max_length=2048)
    timeout_s: Timeout | None = None  # None: the [webhook] timeout of the config

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        problem = webhook_url_problem(value)
        if problem:
            raise ValueError(problem)
        return value


def webhook_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook target, or None. Pure: no name resolution."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"a webhook URL must start with http:// or https://, not {url[:40]!r}"
    if not parts.hostname:
        return "a webhook URL needs a host"
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in task listings and logs; the config's secret signs requests instead.
        return "a webhook URL must not carry a user name or password"
    if parts.fragment:
        return "a webhook URL must not have a #fragment"
    if port == 0:
        return "a webhook URL needs a port from 1 to 65535"
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "a webhook URL must not contain spaces or control characters"
    return None


SESSION_FALLBACKS = ("inbox", "headless", "drop")


class SessionTarget(BaseModel):
    """A live agent session: the prompt becomes a pending item that the session's hook hands to the agent.

    Exactly one scope: ``session_id`` (that session), ``project`` (an absolute path:
    any live session whose cwd is inside it, the most recently active first) or
    ``user: true`` (the most recently active session). ``agent`` narrows any scope to
    one agent CLI. ``fallback`` decides what happens when no such session is live at
    fire time, or when the session ends or expires with the item still pending:
    ``inbox`` (the default), ``headless`` (a background agent run) or ``drop``
    (recorded as skipped).
    """

    model_config = _TARGET_CONFIG
    kind: Literal["session"] = "session"
    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    project: str | None = Field(default=None, min_length=1, max_length=4096)
    user: bool = False
    agent: str | None = Field(default=None, min_length=1, max_length=100)
    fallback: Literal["inbox", "headless", "drop"] = "inbox"

    @field_validator("project")
    @classmethod
    def _check_project(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/"):
            raise ValueError(f"project must be an absolute path, not {value[:80]!r}")
        return posixpath.normpath(value)

    @model_validator(mode="after")
    def _check_scope(self) -> SessionTarget:
        given = [self.session_id is not None, self.project is not None, self.user]
        if sum(given) != 1:
            raise ValueError("a session target needs exactly one of session_id, project or user")
        return self

    @property
    def scope(self) -> str:
        """``session:ID``, ``project:PATH`` or ``user``, for listings and reasons."""
        if self.session_id is not None:
            return f"session:{self.session_id}"
        if self.project is not None:
            return f"project:{self.project}"
        return "user"


Target = Annotated[InboxTarget | ShellTarget | AgentTarget | WebhookTarget | SessionTarget, Field(discriminator="kind")]


def check_meta(value: dict[str, Any]) -> dict[str, Any]:
    """A task's ``meta`` if it is small and shallow enough to store, send and log; ValueError otherwise.

    It travels in every webhook body and every save, so it is bounded: nested at most
    MAX_META_DEPTH levels and at most MAX_META_BYTES as compact JSON.
    """
    if not value:
        return value
    problem = bounds.json_problem(value, bounds.MAX_META_DEPTH)
    if problem:
        raise ValueError(f"meta: {problem}")
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > bounds.MAX_META_BYTES:
        raise ValueError(f"meta is {size} bytes as JSON; the limit is {bounds.MAX_META_BYTES}")
    return value


def new_task_id() -> str:
    """8 lowercase hex characters, like Claude Code's ids (the seed for jitter)."""
    return secrets.token_hex(4)


@lru_cache(maxsize=256)
def _jitter_spec(value: str) -> str:
    """The canonical spelling of a jitter policy; cached, since a store holds a few policies many times."""
    return parse_jitter(value).spec


def _aware_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a UTC offset")
    return value.astimezone(UTC)


def utc_or_none(value: datetime | None) -> datetime | None:
    """A stored time in UTC (None stays None); ValueError for a naive one. Every record's times use this."""
    return None if value is None else _aware_utc(value)


def utc_fields(*names: str) -> Any:
    """A pydantic field validator keeping the named time fields in UTC (naive times refused)."""
    return field_validator(*names)(classmethod(lambda cls, value: utc_or_none(value)))


def _stored_time(value: datetime, info: ValidationInfo) -> datetime:
    """A task's time in UTC and in the range kairos can plan (ValueError naming the field otherwise)."""
    return bounds.check_stored_time(_aware_utc(value), str(info.field_name))


def _task_text(value: str) -> str:
    problem = bounds.unicode_problem(value)  # NUL is harmless on stdin, in JSON and in a file
    if problem:
        raise ValueError(problem)
    return value


# A task's checked times and texts. Annotated on the type, not a field validator, so that an empty field
# (``None``, as three of a task's four times and most names are) is not checked: a field validator is
# called for None too, and loading 10,000 tasks made 40,000 such calls (the same errors either way).
StoredTime = Annotated[datetime, AfterValidator(_stored_time)]


def _no_meta() -> dict[str, Any]:
    return read_only({})


class Task(BaseModel):
    """One scheduled prompt: a cron expression (recurring or one-shot) or an exact time.

    Frozen, and its ``meta`` is a read-only dict (:mod:`kairosd.core.readonly`): a change is a new
    task, ``task.model_copy(update=...)`` (values already valid) or ``Task.model_validate`` (new
    values from a request). The store shares parts of loaded tasks and several caches hold a
    task's JSON by the task object (see :mod:`kairosd.store.store`): both rely on this.
    """

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False, defer_build=True)

    id: str
    prompt: Annotated[str, Field(max_length=bounds.MAX_PROMPT_CHARS), AfterValidator(_task_text)]
    cron: str | None = None
    at: StoredTime | None = None
    recurring: bool = True
    tz: str = "UTC"
    target: Target = Field(default_factory=InboxTarget)
    name: Annotated[str, Field(max_length=bounds.MAX_NAME_CHARS), AfterValidator(_task_text)] | None = None
    created_at: StoredTime
    created_by: CreatedBy = CreatedBy.CLI
    last_fired_at: StoredTime | None = None
    # The last scheduled slot kairos handled (fired, skipped or recorded missed).
    # Nominal, never jittered: the next fire is computed after it.
    last_scheduled_for: StoredTime | None = None
    paused: bool = False
    # Why kairos itself paused the task (it could not plan, fire or expire it); None when the user did.
    paused_reason: str | None = None
    expires_after_days: int | None = Field(default=None, ge=1, le=bounds.MAX_EXPIRY_DAYS)
    permanent: bool = False
    catch_up: CatchUp = CatchUp.ONCE
    jitter: str = "none"
    overlap: Overlap = Overlap.SKIP
    meta: dict[str, Any] = Field(default_factory=_no_meta)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not TASK_ID_RE.match(value):
            raise ValueError("id must be 8 lowercase hex characters")
        return value

    @field_validator("meta")
    @classmethod
    def _check_meta(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Read-only, and one shared dict for every empty meta (most tasks have none).
        return read_only(check_meta(value))

    @field_validator("tz")
    @classmethod
    def _check_tz(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
            # OSError: a zone name is looked up as a file, and a 300-character one fails with ENAMETOOLONG.
            raise ValueError(f"unknown time zone {value!r}{bounds.zone_hint(value)}") from exc
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
        return _jitter_spec(value)

    @model_validator(mode="after")
    def _check_unknown(self) -> Task:
        # Kept and written back as they are, so bounded like a request: 1e999 would come back as null.
        problem = self.__pydantic_extra__ and bounds.json_problem(self.__pydantic_extra__, text=False)
        if problem:
            raise ValueError(f"unknown fields: {problem}")
        return self

    @model_validator(mode="after")
    def _check_schedule(self) -> Task:
        if (self.cron is None) == (self.at is None):
            raise ValueError("a task needs exactly one of 'cron' or 'at'")
        if self.at is not None and self.recurring:
            raise ValueError("a task pinned to an exact time ('at') cannot be recurring")
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied, unvalidated (as pydantic's), except that a new ``meta`` is
        checked and made read-only like a validated one: a copy must not hold a meta one can change."""
        if update is not None and "meta" in update:
            update = {**update, "meta": read_only(check_meta(dict(update["meta"])))}
        return super().model_copy(update=update, deep=deep)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def expires(self) -> bool:
        return self.recurring and not self.permanent and self.expires_after_days is not None


# Read once: Task.model_fields is a pydantic property, a microsecond each time (10,000 times in a catch-up pass).
_TASK_FIELDS = frozenset(Task.model_fields)


def moved(task: Task, **changes: Any) -> Task:
    """``task.model_copy(update=changes)``, for changes already valid, at a third of its cost.

    A catch-up pass moves the anchor of every task (10,000 copies after a long stop). The copy's
    dict is a copy of ``task``'s: a loaded task's shares its keys with the other tasks' (see
    :func:`kairosd.store.store.slim`), and so does the copy's. It shares ``task``'s fields set and
    empty unknown-fields dict (pydantic adds names to the set and, with ``validate_assignment``,
    replaces that dict on an assignment rather than changing it). Nothing is validated: only for
    values of the fields' types.
    """
    if not changes.keys() <= _TASK_FIELDS:
        raise TypeError(f"Task has no field {sorted(changes.keys() - _TASK_FIELDS)[0]!r}")
    return moved_with(task, changes)


def moved_with(task: Task, changes: dict[str, Any]) -> Task:
    """:func:`moved` of ``changes`` given as a dict whose names are Task's fields (not checked: the caller
    checked them once for many tasks, or built them from field names)."""
    copy = Task.__new__(Task)
    # A copy of a dict on shared keys is on them too, and copying it is a fifth of the cost of setting
    # each field into a new one (0.13 against 0.94 us, 10,000 times in a catch-up pass).
    fields = task.__dict__.copy()
    fields.update(changes)
    set_dict(copy, fields)
    kept = task.__pydantic_fields_set__
    extra = task.__pydantic_extra__
    set_fields_set(copy, kept if changes.keys() <= kept else kept | changes.keys())
    set_extra(copy, dict(extra) if extra else extra)
    set_private(copy, None)
    return copy


# BaseModel's slots, set through their descriptors (object.__setattr__ looks each name up on the class
# first): records and tasks made without validation, 40,000 in a herd of 10,000 (see core.records).
_slots: Mapping[str, Any] = vars(BaseModel)
set_fields_set = _slots["__pydantic_fields_set__"].__set__
set_extra = _slots["__pydantic_extra__"].__set__
set_private = _slots["__pydantic_private__"].__set__
set_dict = _slots["__dict__"].__set__


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
