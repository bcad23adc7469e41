"""Responses about the daemon itself: status, live sessions, the doctor's report, the timeline, export
and reload, as kairosd answers them and ``kairos VERB --json`` prints them.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.board import ConsolidationStatusDoc
from kairosd.core.wire.registry import RegistryInfo

# ---- the daemon ---------------------------------------------------------------------------------


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


class QuarantineInfo(Record):
    count: int
    path: str


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


class SessionView(Record):
    """A live agent session as ``kairos sessions`` lists it (its items as a count: prompts stay out of listings)."""

    agent: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    registered_at: str
    last_active: str
    expires_at: str
    in_turn: bool
    pending: int


class SessionsDoc(Document):
    sessions: list[SessionView]


class SessionDoc(Document):
    """``POST /v1/sessions``: the session registered (or refreshed)."""

    session: SessionView


class PendingView(Record):
    """An item a hook or a waiter claimed for its session (the prompt itself is in the answer's ``text``)."""

    run_id: str
    task_id: str
    task_name: str | None
    scheduled_for: str
    queued_at: str


class HookAnswer(Document):
    """``POST /v1/sessions/ID/hook`` (but ``end``, answered as :class:`EndedDoc`): the session, and what this
    event delivers: ``claim`` to acknowledge once ``text`` is written, ``context`` (the board at a start),
    and ``guard`` when a Stop may not block again."""

    session: SessionView
    claim: str | None
    items: list[PendingView]
    text: str | None
    context: str | None
    guard: str | None


class EndedDoc(Document):
    """``POST /v1/sessions/ID/end`` (and a hook's ``end``): whether it was live, and its items sent on."""

    ended: bool
    pending: int
    cwd: str | None
    transcript_path: str | None


class NextItemDoc(Document):
    """``GET /v1/sessions/ID/next``: the next item with its ``claim`` and ``text``, or ``item: null`` and why."""

    item: PendingView | None
    claim: str | None = None
    text: str | None = None
    why: str | None = None


class DoctorAgent(Record):
    """One agent CLI as the doctor found it: ``usable`` if it answered ``--version`` (a custom agent: found)."""

    name: str
    kind: str  # built-in or custom
    enabled: bool
    binary: str | None
    found: bool
    usable: bool
    path: str | None
    version: str | None
    reason: str | None
    model: str | None
    permission_mode: str
    features: list[str]
    note: str | None
    outdated: str | None  # why this version is older than kairos supports


class DoctorConfig(Record):
    """The config file: whether it loads; from kairosd, also the keys that differ from the settings in effect."""

    path: str
    exists: bool
    ok: bool
    error: str | None
    differs: list[str] | None = None  # checked by kairosd only
    needs_restart: list[str] | None = None


class UnsafeFile(Record):
    path: str
    problem: str
    fix: str


class DoctorHook(Record):
    """A hook command of the config (``[hooks]``): ``unsafe`` lists what keeps kairosd from running it."""

    event: str
    argv: list[str]
    ok: bool
    unsafe: list[UnsafeFile]


class LingerView(Record):
    """Whether systemd keeps this user's services after logout (``linger`` None: unknown, ``detail`` says why)."""

    loginctl: bool
    linger: bool | None
    state: str  # on, off or unknown
    detail: str


class DoctorDoc(Document):
    """``kairos doctor --json``: the report, checked by kairosd (``GET /v1/doctor``) or, without it, by the
    CLI from its shell (``note`` says so)."""

    ok: bool
    problems: list[str]
    notes: list[str]
    kairos_version: str
    python: str
    pid: int
    search_path: str
    config: DoctorConfig
    agents: list[DoctorAgent]
    usable_agents: list[str]
    hooks: list[DoctorHook]
    limits: dict[str, Any]
    settings: dict[str, Any]
    paths: dict[str, str]
    systemd: LingerView
    quarantine: QuarantineInfo
    checked_by: str  # kairosd or cli
    note: str | None = None  # added by the CLI: why the report is its own


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


class ReloadDoc(Document):
    """``daemon reload``: what kairosd applied from config.toml, and what needs a restart."""

    ok: bool
    error: str | None
    applied: list[str]
    needs_restart: list[str]


class StoppingDoc(Document):
    """``POST /v1/shutdown``: answered before kairosd stops."""

    stopping: bool


class DoctorAnswer(Document):
    """``GET /v1/doctor``: the doctor's report from the daemon's side (``checked_by`` is ``kairosd``)."""

    doctor: DoctorDoc


class ReloadAnswer(Document):
    """``POST /v1/reload``: what kairosd applied from config.toml (``kairos daemon reload`` prints the inside)."""

    reload: ReloadDoc
