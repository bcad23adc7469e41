"""The ``--json`` documents of ``kairos systemd uninstall|status`` and ``kairos integrate``.

Part of the contract in :mod:`kairos.documents` (which gathers :data:`SETUP_DOCUMENTS` into
its ``DOCUMENTS``). Must not import any kairos module that does I/O.
"""

from __future__ import annotations

from pydantic import BaseModel

from kairos.document_base import Document, Record


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


SETUP_DOCUMENTS: dict[str, type[BaseModel] | tuple[type[BaseModel], ...]] = {
    "systemd uninstall": SystemdUninstallDoc,
    "systemd status": SystemdStatusDoc,
    "integrate": IntegrateDoc,
}
