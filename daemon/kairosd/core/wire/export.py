"""``POST /v1/export`` (``kairos export --json``): each task's files for another scheduler, and the tasks
refused.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record


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
