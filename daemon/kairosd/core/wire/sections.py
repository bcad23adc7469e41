"""The sections one feature gives of itself inside another's answer: the registry's slots (``GET /v1/status``
and ``task list``), consolidation's state (``GET /v1/status`` and ``GET /v1/consolidation``) and the set-aside
tasks (``GET /v1/status`` and the doctor's report).

Apart from the families whose answers carry them (:mod:`.status`, :mod:`.registry`, :mod:`.board`,
:mod:`.doctor`), so that a verb that reads one of those answers builds these few models, not the other
families' (issue 25: a verb imports only the models of its own answer).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record


class Slots(Record):
    limit: int
    in_use: int
    waiting: int
    lent: int


class RegistryInfo(Record):
    tasks: dict[str, int]
    slots: Slots
    max_depth: int


class Decision(Record):
    """One consolidation request's decision, as ``GET /v1/consolidation`` lists the recent ones."""

    at: str
    outcome: str  # started, coalesced, skipped or failed
    gate: str | None
    reason: str
    agent: str
    session_id: str
    project: str | None
    transcript_path: str | None
    end_reason: str | None
    run: str | None


class ConsolidationStatusDoc(Document):
    """``GET /v1/consolidation``: the switch, the gates' settings, each project's running and pending run
    (a run's id, a waiting session's id) and the latest decisions, oldest first."""

    enabled: bool
    mode: str
    min_interval_minutes: float
    min_user_turns: int
    running: dict[str, str]
    pending: dict[str, str]
    recent: list[Decision]


class QuarantineInfo(Record):
    count: int
    path: str
