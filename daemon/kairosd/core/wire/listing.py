"""``kairos list``'s other answers: ``GET /v1/tasks?view=summary`` (what the table shows; read as parsed by
``kairos list`` and ``kairos ui``, its model names a key they cannot read) and the set-aside records of
``kairos list --problems``. The full listing (``ListDoc``) is a list of task views, in :mod:`.tasks`.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import Any

from kairosd.core.wire.base import Document, Record


class TargetSummary(Record):
    """A target in a summary listing: its kind and what a table names (inbox: ``session``; shell: ``argv``
    cut to the command; agent: ``agent``; webhook: ``url``; session: its scope and ``agent``)."""

    kind: str
    session: str | None = None
    argv: list[str] | None = None
    agent: str | None = None
    url: str | None = None
    session_id: str | None = None
    project: str | None = None
    user: bool | None = None


class TaskSummary(Record):
    """A task in ``GET /v1/tasks?view=summary``: only what a table shows (``kairos list`` without ``--json``).

    ``target`` is its kind and the one field a table names (a shell's argv[0], an agent, a URL, a session).
    """

    id: str
    name: str | None
    prompt: str  # the first 200 characters
    cron: str | None
    at: str | None
    recurring: bool
    tz: str
    target: TargetSummary
    status: str
    paused_reason: str | None
    planned_for: str | None
    running: bool


class SummaryListDoc(Document):
    tasks: list[TaskSummary]


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
