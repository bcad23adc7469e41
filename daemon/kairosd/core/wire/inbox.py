"""The inbox: ``kairos inbox`` (and one line of ``inbox --follow``) and an acknowledgement.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record


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
