"""Records that answers of two families carry: each id a many-ids verb could not act on (``show``, ``pause``,
``resume``: :mod:`.tasks`; ``run``: :mod:`.runs`) and a board entry (the board's answers, :mod:`.board`, and what
a consolidation run changed, :mod:`.consolidation`).

Apart from those families, so that a verb that reads one of their answers builds these few models, not the other
family's (issue 25: a verb imports only the models of its own answer).

Must not import any kairosd module outside :mod:`kairosd.core`.
"""

from __future__ import annotations

from kairosd.core.wire.base import Record


class IdError(Record):
    id: str
    code: str
    message: str


class BoardEntry(Record):
    id: str
    text: str
    kind: str
    author: str
    source_session: str | None
    source_agent: str | None
    created_at: str
    last_seen_at: str
    hits: int
    pinned: bool | None = None  # present (true) only on a pinned entry
    conflicts_with: str | None = None  # present only beside a person's entry it contradicts (that entry's id)
    guessed: bool | None = None  # present (true) only on an entry offline mode made that nobody confirmed


class ReplacedEntry(BoardEntry):
    """An entry a later one replaced (``board show --all``, and what ``board add`` replaced), or an offline
    guess a rem-agent dropped (``dropped_by`` names it, and no entry replaced it)."""

    superseded_by: str | None = None
    superseded_at: str
    dropped_by: str | None = None
