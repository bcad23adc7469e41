"""Documents ``kairos VERB --json`` prints without asking kairosd (or about kairosd from outside it):
``--version``, ``daemon status|start|stop``, ``cron ...``, ``systemd ...`` and ``integrate``.

Not responses of the wire, but the same contract (:mod:`kairosd.core.wire`), so that every ``--json``
document is described in one place. Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.status import StatusDoc


class SystemdUninstallDoc(Document):
    """``kairos systemd uninstall``: the unit files removed and the systemctl calls (``warnings``: those that
    failed; absent with ``--dry-run``)."""

    dry_run: bool
    unit_dir: str
    removed: list[str]
    commands: list[list[str]]
    warnings: list[str] | None = None


class SystemdStatusDoc(Document):
    """``kairos systemd status``: whether kairosd runs under systemd, each unit's ``systemctl show``
    properties, and the last journal lines."""

    running: bool
    properties: dict[str, dict[str, str]]
    journal: list[str]


class SettingsChange(Record):
    path: str
    what: str
    action: str
    backup: str | None
    after: str | None
    diff: str


class IntegrateDoc(Document):
    """``kairos integrate AGENT``: each settings file changed (with ``--dry-run``, to be changed), and notes."""

    agent: str
    uninstall: bool
    dry_run: bool
    changes: list[SettingsChange]
    notes: list[str]
    consolidation: str  # how the agent's ended sessions are consolidated from now on, and what that costs


class VersionDoc(Document):
    """``kairos --version --json``: the CLI's version (kairosd's, when it runs, is in ``kairos status``)."""

    kairos: str


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
