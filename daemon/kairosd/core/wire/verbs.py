"""Which model each ``kairos VERB --json`` prints (:data:`DOCUMENTS`), and :func:`check` to hold output to it.

A verb is written as typed, subcommands joined with a space. Streams (``inbox --follow``, ``task logs -f``)
print one JSON line per item, described by :data:`STREAM_ITEMS`. For tests and for anyone scripting
kairos from Python; no verb imports it (the CLI prints what kairosd answered). Must not import any
kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kairosd.core.wire.board import (
    BoardAddDoc,
    BoardDoc,
    BoardEntryDoc,
    BoardHistoryDoc,
    BoardPruneDoc,
    BoardRemovedDoc,
)
from kairosd.core.wire.consolidation import ConsolidateDecisionDoc, ConsolidateRunDoc
from kairosd.core.wire.daemon import ReloadDoc
from kairosd.core.wire.doctor import DoctorDoc
from kairosd.core.wire.export import ExportDoc
from kairosd.core.wire.imports import ImportDoc
from kairosd.core.wire.inbox import AckDoc, InboxDoc, InboxItem
from kairosd.core.wire.listing import ProblemsDoc
from kairosd.core.wire.local import (
    CronEveryDoc,
    CronExplainDoc,
    CronNextDoc,
    DaemonStartDoc,
    DaemonStatusDoc,
    DaemonStopDoc,
    DaemonStoppedDoc,
    IntegrateDoc,
    SystemdInstallDoc,
    SystemdStatusDoc,
    SystemdUninstallDoc,
    VersionDoc,
)
from kairosd.core.wire.registry import (
    BackgroundListDoc,
    BackgroundTaskDoc,
    CancelledDoc,
    LogLine,
    LogsDoc,
    SettledDoc,
)
from kairosd.core.wire.runs import ClearedDoc, HistoryDoc, ManyRunsDoc, MissedDoc, RunDoc
from kairosd.core.wire.sessions import SessionsDoc
from kairosd.core.wire.status import StatusDoc
from kairosd.core.wire.tasks import (
    AddDoc,
    EditDoc,
    ListDoc,
    ManyTasksDoc,
    PausedDoc,
    RemovedDoc,
    TaskDoc,
)
from kairosd.core.wire.timeline import TimelineDoc

Models = type[BaseModel] | tuple[type[BaseModel], ...]

DOCUMENTS: dict[str, Models] = {
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
    "task start": (BackgroundTaskDoc, SettledDoc),
    "task send": (BackgroundTaskDoc, SettledDoc),
    "task show": BackgroundTaskDoc,
    "task close": BackgroundTaskDoc,
    "task wait": SettledDoc,
    "task cancel": CancelledDoc,
    "task list": BackgroundListDoc,
    "task logs": LogsDoc,
    "board show": BoardDoc,
    "board add": BoardAddDoc,
    "board rm": BoardRemovedDoc,
    "board prune": BoardPruneDoc,
    "board history": BoardHistoryDoc,
    "board edit": BoardEntryDoc,
    "board pin": BoardEntryDoc,
    "board restore": BoardEntryDoc,
    "consolidate": (ConsolidateDecisionDoc, ConsolidateRunDoc),
    "systemd uninstall": SystemdUninstallDoc,
    "systemd status": SystemdStatusDoc,
    "integrate": IntegrateDoc,
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
