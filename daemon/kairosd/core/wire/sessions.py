"""Live agent sessions: ``kairos sessions``, a session registered, a hook's answer, a session ended and
its next item, as kairosd answers them.

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Document, Record


class SessionView(Record):
    """A live agent session as ``kairos sessions`` lists it (its items as a count: prompts stay out of listings)."""

    agent: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    registered_at: str
    last_active: str
    expires_at: str
    in_turn: bool
    pending: int


class SessionsDoc(Document):
    sessions: list[SessionView]


class SessionDoc(Document):
    """``POST /v1/sessions``: the session registered (or refreshed)."""

    session: SessionView


class PendingView(Record):
    """An item a hook or a waiter claimed for its session (the prompt itself is in the answer's ``text``)."""

    run_id: str
    task_id: str
    task_name: str | None
    scheduled_for: str
    queued_at: str


class HookAnswer(Document):
    """``POST /v1/sessions/ID/hook`` (but ``end``, answered as :class:`EndedDoc`): the session, and what this
    event delivers: ``claim`` to acknowledge once ``text`` is written, ``context`` (the board at a start),
    and ``guard`` when a Stop may not block again."""

    session: SessionView
    claim: str | None
    items: list[PendingView]
    text: str | None
    context: str | None
    guard: str | None


class EndedDoc(Document):
    """``POST /v1/sessions/ID/end`` (and a hook's ``end``): whether it was live, and its items sent on."""

    ended: bool
    pending: int
    cwd: str | None
    transcript_path: str | None


class NextItemDoc(Document):
    """``GET /v1/sessions/ID/next``: the next item with its ``claim`` and ``text``, or ``item: null`` and why."""

    item: PendingView | None
    claim: str | None = None
    text: str | None = None
    why: str | None = None
