"""Responses about scheduled tasks: task views (list, show, add, edit, pause, resume), removals and imports,
as kairosd answers them and ``kairos VERB --json`` prints them. Runs and missed fires (:mod:`.runs`) and the
inbox (:mod:`.inbox`) have their own modules, so that ``history`` or ``inbox`` builds its own models only
(issue 25); they are named here too for kairosd's handlers, which import them from here.

A key named here always has the type named here; see :mod:`kairosd.core.wire` for the rules every model
follows and the places where an object of any shape is allowed. Must not import any kairosd module
outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.inbox import AckDoc as AckDoc
from kairosd.core.wire.inbox import InboxDoc as InboxDoc
from kairosd.core.wire.runs import ClearedDoc as ClearedDoc
from kairosd.core.wire.runs import HistoryDoc as HistoryDoc
from kairosd.core.wire.runs import IdError
from kairosd.core.wire.runs import MissedDoc as MissedDoc
from kairosd.core.wire.runs import RunDoc as RunDoc

# ---- tasks ---------------------------------------------------------------------------------------


class InboxTargetView(Record):
    kind: Literal["inbox"]
    session: str


class ShellTargetView(Record):
    kind: Literal["shell"]
    argv: list[str]
    cwd: str | None
    timeout_s: float


class AgentTargetView(Record):
    kind: Literal["agent"]
    agent: str
    cwd: str | None
    model: str | None
    timeout_s: float | None  # None: the registry's default turn timeout


class WebhookTargetView(Record):
    kind: Literal["webhook"]
    url: str
    timeout_s: float | None  # None: the [webhook] timeout of the config


class SessionTargetView(Record):
    """A live session target: one scope (``session_id``, ``project`` or ``user``), narrowed to ``agent``."""

    kind: Literal["session"]
    session_id: str | None
    project: str | None
    user: bool
    agent: str | None
    fallback: str  # inbox, headless or drop


# A task's target as kairosd.core.models defines it, told apart by its kind.
TargetView = Annotated[
    InboxTargetView | ShellTargetView | AgentTargetView | WebhookTargetView | SessionTargetView,
    Field(discriminator="kind"),
]


class TargetSummary(Record):
    """A target in a summary listing: its kind and what a table names (inbox: ``session``; shell: ``argv``
    cut to the command; agent: ``agent``; webhook: ``url``; session: its scope and ``agent``)."""

    kind: str
    session: str | None = None
    argv: list[str] | None = None
    agent: str | None = None
    url: str | None = None
    session_id: str | None = None
    project: str | None = None
    user: bool | None = None


class PlannedFire(Record):
    scheduled_for: str
    planned_for: str


class TaskView(Record):
    id: str
    prompt: str
    cron: str | None
    at: str | None
    recurring: bool
    tz: str
    target: TargetView
    name: str | None
    created_at: str
    created_by: str
    last_fired_at: str | None
    last_scheduled_for: str | None
    paused: bool
    paused_reason: str | None  # why kairos paused it itself (a target that keeps failing); None if a person did
    expires_after_days: int | None
    permanent: bool
    catch_up: str
    jitter: str
    overlap: str
    meta: dict[str, Any]
    status: str
    schedule: str
    explanation: str
    next_fires: list[PlannedFire]
    planned_for: str | None
    running: bool


class AddedTask(TaskView):
    note: str | None


class CaughtUp(Record):
    """What a one-shot's catch-up policy did on resume with the slot that passed while it was paused."""

    action: str  # fired, missed or pending
    scheduled_for: str
    run_id: str | None
    outcome: str | None
    reason: str | None


class ChangedTask(TaskView):
    """``pause``/``resume``: ``unchanged`` when it was in that state already; ``caught_up`` on resume."""

    unchanged: bool | None = None
    caught_up: CaughtUp | None = None


class EditedTask(TaskView):
    note: str | None
    changed: list[str]


class EditDoc(Document):
    task: EditedTask


class PausedDoc(Document):
    task: ChangedTask


class ManyTasksDoc(Document):
    """``show``, ``pause``, ``resume`` with several ids: each task, and each id that failed."""

    tasks: list[ChangedTask]
    errors: list[IdError]


class AddDoc(Document):
    task: AddedTask


class TaskDoc(Document):
    task: TaskView


class ListDoc(Document):
    tasks: list[TaskView]


class TaskSummary(Record):
    """A task in ``GET /v1/tasks?view=summary``: only what a table shows (``kairos list`` without ``--json``).

    ``target`` is its kind and the one field a table names (a shell's argv[0], an agent, a URL, a session).
    """

    id: str
    name: str | None
    prompt: str  # the first 200 characters
    cron: str | None
    at: str | None
    recurring: bool
    tz: str
    target: TargetSummary
    status: str
    paused_reason: str | None
    planned_for: str | None
    running: bool


class SummaryListDoc(Document):
    tasks: list[TaskSummary]


class SetAside(Record):
    """A record the store could not use: its id (None if it had no string id), why, and the record as it was."""

    id: str | None
    reason: str
    quarantined_at: str
    record: Any


class ProblemsDoc(Document):
    """``kairos list --problems --json``: the records set aside at load, from the quarantine file at ``path``."""

    path: str
    entries: list[SetAside]


class RemovedDoc(Document):
    removed: list[str]


# ---- import -------------------------------------------------------------------------------------


class ImportedTask(TaskView):
    on_import: str


class SkippedImport(Record):
    id: str
    reason: str


class RejectedImport(Record):
    index: int
    id: str | None
    reason: str


class DroppedKeys(Record):
    id: str
    keys: list[str]


class ImportDoc(Document):
    """``kairos import --json``: what was (with ``dry_run``, would be) imported, skipped, rejected."""

    dry_run: bool
    imported: list[ImportedTask]
    skipped: list[SkippedImport]
    rejected: list[RejectedImport]
    dropped: list[DroppedKeys]
