"""Responses about the daemon itself: reload and shutdown. Status, live sessions, the doctor's report, export
and the timeline each have their own module (:mod:`.status`, :mod:`.sessions`, :mod:`.doctor`,
:mod:`.export`, :mod:`.timeline`), so that a verb builds the models of its own answer only (issue 25).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document


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
