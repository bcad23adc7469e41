"""The last listing's JSON (``GET /tasks``: ``kairos list`` and ``kairos list --json``), given again while
nothing it shows changed.

Both are asked for again and again, and most of the time nothing in them has changed. A listed view
(a summary or a full view) is made from the task, the fire it shows and whether it runs, and from
nothing else, so a listing is kept with its *state*: those three per task, in the book's order. A task
is frozen and a change is a new object (issue 25), and the scheduler makes a new Fire for each new plan,
so the same objects (compared by identity, never by ``==``: a fire at 02:30 before and after the clocks
go back compares equal but reads otherwise) list the same text. A full view whose planned fire is due
asks the clock for the next one, a new Fire each time: such a listing has no state, and is not kept.

Bounded, for issue 28 (the per-task caches it dropped held ~5.5 KB a task for the daemon's life, and
at 100,000 tasks a listing is ~100 MB): only listings of up to KEEP_TASKS tasks and KEEP_BYTES of JSON
are kept, the last one of each kind; a larger one is sent as it is made, and nothing of it stays.

Pure: must not import the store, the server or the CLI.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator

KEEP_TASKS = 4_000  # a listing of more tasks is never kept
KEEP_BYTES = 4 << 20  # nor one whose JSON is longer: 2,000 full views are ~1.3 MB, 1,000 summaries ~0.26 MB


class KeptListing:
    """The last listing of one kind, with the state it was made for (see the module docstring)."""

    def __init__(self) -> None:
        self._state: list[object] | None = None
        self._body = b""

    def get(self, state: list[object] | None) -> bytes | None:
        """The kept JSON if it was made for ``state``, else None."""
        kept = self._state
        if state is None or kept is None or len(kept) != len(state) or not all(map(operator.is_, kept, state)):
            return None
        return self._body

    def keeping(self, pieces: Iterable[bytes], state: list[object]) -> Iterator[bytes]:
        """``pieces`` (a listing of ``state``, ending with a newline) passed on as they come, then kept
        if they were read to the end and are not too long."""
        sent: list[bytes] | None = []
        size = 0
        for piece in pieces:
            size += len(piece)
            if sent is not None:
                sent.append(piece)
                if size > KEEP_BYTES + 1:
                    sent = None  # it will not be kept: no need to hold it
            yield piece
        if sent is not None:
            # The server ends an answer's JSON with a newline: what is kept is the JSON.
            self._state, self._body = state, b"".join(sent).removesuffix(b"\n")
