"""The doctor's report (``kairos doctor --json``, ``GET /v1/doctor``): the config, the agents, the hooks,
the settings in effect, systemd's linger and the set-aside tasks.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Any

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.sections import QuarantineInfo


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


class DoctorAnswer(Document):
    """``GET /v1/doctor``: the doctor's report from the daemon's side (``checked_by`` is ``kairosd``)."""

    doctor: DoctorDoc
