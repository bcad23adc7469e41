"""``POST /v1/import`` (``kairos import --json``): the tasks imported (task views), skipped, rejected, and
the keys each dropped.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record
from kairosd.core.wire.tasks import TaskView


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
