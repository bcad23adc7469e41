"""Responses about the daemon itself: reload and shutdown; and, under their old names here for kairosd's
handlers, status, live sessions, the doctor's report and export, each in its own module (:mod:`.status`,
:mod:`.sessions`, :mod:`.doctor`, :mod:`.export`; the timeline's is :mod:`.timeline`), imported when asked
(:func:`.base.moved`), so that a verb builds the models of its own answer only (issue 25). The CLI imports
those modules.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairosd.core.wire.base import Document, moved

if TYPE_CHECKING:
    from kairosd.core.wire.doctor import DoctorAnswer as DoctorAnswer
    from kairosd.core.wire.export import ExportDoc as ExportDoc
    from kairosd.core.wire.sessions import EndedDoc as EndedDoc
    from kairosd.core.wire.sessions import NextItemDoc as NextItemDoc
    from kairosd.core.wire.sessions import SessionDoc as SessionDoc
    from kairosd.core.wire.sessions import SessionsDoc as SessionsDoc
    from kairosd.core.wire.status import StatusDoc as StatusDoc

__getattr__ = moved(
    __name__,
    {
        "DoctorAnswer": "doctor",
        "ExportDoc": "export",
        "EndedDoc": "sessions",
        "NextItemDoc": "sessions",
        "SessionDoc": "sessions",
        "SessionsDoc": "sessions",
        "StatusDoc": "status",
    },
)


class ReloadDoc(Document):
    """``daemon reload``: what kairosd applied from config.toml, and what needs a restart."""

    ok: bool
    error: str | None
    applied: list[str]
    needs_restart: list[str]


class StoppingDoc(Document):
    """``POST /v1/shutdown``: answered before kairosd stops."""

    stopping: bool


class ReloadAnswer(Document):
    """``POST /v1/reload``: what kairosd applied from config.toml (``kairos daemon reload`` prints the inside)."""

    reload: ReloadDoc
