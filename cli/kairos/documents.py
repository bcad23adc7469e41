"""The JSON documents ``kairos VERB --json`` prints: one model per verb, one type per key.

This is the contract a script relies on: a key named here always has the type named
here (``running`` is whether kairosd runs, a boolean, in every document that has
it; a count is ``deliveries_running``). The models are strict (no coercion: ``0``
is not ``false``) and forbid keys they do not name at the top level, so a new key
must be added here first. Nested records the daemon owns (a task's target, its
meta) are objects of any shape.

:data:`DOCUMENTS` maps each verb (as typed, subcommands joined with a space) to its
model (those of ``kairos task`` are in :mod:`kairos.documents_tasks`, of ``board`` and
``consolidate`` in :mod:`kairos.documents_board`, of ``systemd uninstall|status`` and
``integrate`` in :mod:`kairos.documents_setup`); streams (``watch``, ``inbox --follow``,
``task logs -f``) print one JSON line per item, described by :data:`STREAM_ITEMS`.
``tests/test_json_documents.py`` and its siblings run the verbs and check their output against
these models.

Imported by the tests and by anyone scripting kairos from Python, never by a verb:
the CLI does not load pydantic on its own path. Must not import any kairos module
that does I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairos.document_base import Document, Record
from kairos.documents_board import BOARD_DOCUMENTS
from kairos.documents_setup import SETUP_DOCUMENTS
from kairos.documents_tasks import TASK_DOCUMENTS, LogLine

# ---- tasks ---------------------------------------------------------------------------------------


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
    target: dict[str, Any]
    name: str | None
    created_at: str
    created_by: str
    last_fired_at: str | None
    last_scheduled_for: str | None
    paused: bool
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


class IdError(Record):
    id: str
    code: str
    message: str


class ManyTasksDoc(Document):
    """``show``, ``pause``, ``resume`` with several ids: each task, and each id that failed."""

    tasks: list[ChangedTask]
    errors: list[IdError]


class ReloadDoc(Document):
    """``daemon reload``: what kairosd applied from config.toml, and what needs a restart."""

    ok: bool
    error: str | None
    applied: list[str]
    needs_restart: list[str]


class AddDoc(Document):
    task: AddedTask


class TaskDoc(Document):
    task: TaskView


class ListDoc(Document):
    tasks: list[TaskView]


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


# ---- runs, misses, inbox ----------------------------------------------------------------------


class RunView(Record):
    run_id: str
    task_id: str
    task_name: str | None
    scheduled_for: str
    planned_for: str
    dispatched_at: str
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


class InboxItem(Record):
    id: str
    session: str
    task_id: str
    task_name: str | None
    prompt: str
    scheduled_for: str
    delivered_at: str
    late_by_s: float
    catch_up: bool
    acked_at: str | None


class InboxDoc(Document):
    items: list[InboxItem]


class AckDoc(Document):
    acked: list[str]


# ---- the daemon ---------------------------------------------------------------------------------


class NextFire(Record):
    task_id: str
    planned_for: str


class VersionDoc(Document):
    """``kairos --version --json``: the CLI's version (kairosd's, when it runs, is in ``kairos status``)."""

    kairos: str


class StatusDoc(Document):
    """``kairos status --json``: GET /v1/status as kairosd answers it."""

    model_config = ConfigDict(strict=True, extra="allow")  # features add their own sections (background, ...)
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


class DaemonStatusDoc(StatusDoc):
    """``kairos daemon status --json`` while kairosd runs: the status, and ``running: true``."""

    running: bool


class DaemonStoppedDoc(Document):
    """``kairos daemon status --json`` when kairosd is not running (exit 3)."""

    running: bool
    socket: str


class DaemonStartDoc(Document):
    started: bool
    running: bool
    pid: int | None
    socket: str
    log: str | None = None
    systemd_unit: str | None = None


class DaemonStopDoc(Document):
    stopped: bool
    running: bool
    pid: int | None = None
    socket: str | None = None
    systemd_units: list[str] | None = None


class SessionsDoc(Document):
    sessions: list[dict[str, Any]]


# ---- no daemon -----------------------------------------------------------------------------------


class CronNextDoc(Document):
    expression: str
    normalized: str
    explanation: str
    tz: str
    after: str
    fires: list[str]
    note: str | None


class CronExplainDoc(Document):
    expression: str
    normalized: str
    explanation: str


class CronEveryDoc(Document):
    interval: str
    cron: str
    requested_s: float
    effective_s: int
    note: str | None


class DoctorAgent(Record):
    name: str
    kind: str
    enabled: bool
    found: bool
    usable: bool
    path: str | None
    version: str | None
    reason: str | None


class DoctorDoc(Document):
    model_config = ConfigDict(strict=True, extra="allow")
    ok: bool
    problems: list[str]
    notes: list[str]
    kairos_version: str
    checked_by: str
    agents: list[DoctorAgent]
    usable_agents: list[str]
    config: dict[str, Any]
    paths: dict[str, str]


class SystemdUnitChange(Record):
    unit: str
    path: str
    changed: bool
    new: bool


class SystemdInstallDoc(Document):
    dry_run: bool
    unit_dir: str
    exec_start: str
    units: list[SystemdUnitChange]
    commands: list[list[str]]
    linger: bool | None
    linger_state: str
    linger_detail: str
    stray_pid: int | None
    would_refuse: str | None  # what the real run would refuse, and why (a dry run)
    contents: dict[str, str] | None = None


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


# ---- export ---------------------------------------------------------------------------------------


class ExportFile(Record):
    name: str
    text: str


class ExportedTask(Record):
    task_id: str
    files: list[ExportFile]
    warnings: list[str]


class RefusedTask(Record):
    task_id: str
    reason: str


class ExportDoc(Document):
    """``kairos export --json``: POST /v1/export's answer; with ``--out``, also the paths written."""

    engine: str
    exports: list[ExportedTask]
    refused: list[RefusedTask]
    written: list[str] | None = None


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


DOCUMENTS: dict[str, type[BaseModel] | tuple[type[BaseModel], ...]] = {
    "add": AddDoc,
    "list": (ListDoc, ProblemsDoc),
    "show": (TaskDoc, ManyTasksDoc),
    "pause": (PausedDoc, ManyTasksDoc),
    "resume": (PausedDoc, ManyTasksDoc),
    "run": (RunDoc, ManyRunsDoc),
    "edit": EditDoc,
    "daemon reload": ReloadDoc,
    "rm": RemovedDoc,
    "history": HistoryDoc,
    "missed": (MissedDoc, ClearedDoc),
    "inbox": (InboxDoc, AckDoc),
    "status": StatusDoc,
    "--version": VersionDoc,
    "daemon status": (DaemonStatusDoc, DaemonStoppedDoc),
    "daemon start": DaemonStartDoc,
    "daemon stop": DaemonStopDoc,
    "sessions": SessionsDoc,
    "cron next": CronNextDoc,
    "cron explain": CronExplainDoc,
    "cron every": CronEveryDoc,
    "doctor": DoctorDoc,
    "systemd install": SystemdInstallDoc,
    "export": ExportDoc,
    "import": ImportDoc,
    "timeline": TimelineDoc,
    **TASK_DOCUMENTS,
    **BOARD_DOCUMENTS,
    **SETUP_DOCUMENTS,
}

# Streams: one JSON line per item.
STREAM_ITEMS: dict[str, type[BaseModel]] = {"inbox --follow": InboxItem, "task logs -f": LogLine}


def check(verb: str, document: Any) -> BaseModel:
    """Validate ``document`` as ``verb``'s output (the first model that fits); raise ValueError if none does."""
    from pydantic import ValidationError

    models = DOCUMENTS[verb]
    errors = []
    for model in models if isinstance(models, tuple) else (models,):
        try:
            return model.model_validate(document)
        except ValidationError as exc:
            errors.append(f"{model.__name__}: {exc}")
    raise ValueError(f"kairos {verb} --json printed a document no model of it accepts:\n" + "\n".join(errors))
