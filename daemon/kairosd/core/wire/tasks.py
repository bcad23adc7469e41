"""Task views, and the answers made of them: ``show``, ``add``, ``edit``, ``pause``, ``resume``, ``rm`` and the
full listing, as kairosd answers them and ``kairos VERB --json`` prints them.

A key named here always has the type named here; see :mod:`kairosd.core.wire` for the rules every model
follows and the places where an object of any shape is allowed. Runs and missed fires (:mod:`.runs`), the
inbox (:mod:`.inbox`) and the listing's other answers (:mod:`.listing`) have their own modules, so that
``kairos add`` or ``kairos history`` builds its own answer's models only (issue 25).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.records import IdError

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


class RemovedDoc(Document):
    removed: list[str]
