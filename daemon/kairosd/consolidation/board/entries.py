"""What a board entry may be: its kinds, its one-line text, its key, and what must never be stored.

Shared by the board (which the daemon loads) and the offline extractor (which
runs in the detached worker), so the daemon can read and show boards without
importing the extractor's patterns.

Pure: must not import the board, the extractor or anything that does I/O.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime

from kairosd.core import lazyre

KINDS = ("rule", "preference", "correction", "decision", "todo", "fact")
MAX_TEXT = 300

# Never stored: a secret in a board would be shown to every future session.
_SECRETS = lazyre.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bxox[abposr]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.|\bAIza[0-9A-Za-z_-]{30,}"
    r"|(?i:\b(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)\b\s*(?:is\s+|[:=]\s*)\S{6,})",
)
# Text aimed at a future agent's instructions rather than at the project: dropped.
_INJECTION = lazyre.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|system|your)\b"
    r".{0,20}\b(?:instructions?|prompts?|rules|guidelines)\b|\bsystem\s+prompt\b|\byou\s+are\s+now\b"
    r"|</?(?:system|assistant|instructions?)>",
)


@dataclass(frozen=True)
class Candidate:
    """Something worth remembering: a board entry to add (or to count as seen again)."""

    kind: str
    text: str
    at: datetime | None = None
    supersedes: str | None = None  # the id of the entry it replaces (or closes), when the answer named one
    # "add": a new entry (or one seen again), replacing ``supersedes`` or what its words replace;
    # "close": the to-do ``supersedes`` names (agent mode), or the one ``text`` says is done, is done;
    # "update": ``text`` says something changed; kept only if it updates one entry, in its place
    # (offline mode: :mod:`kairosd.consolidation.board.slots`), else dropped.
    action: str = "add"
    # Whether the board may infer from its words which entries it replaces (offline mode). False for the
    # rem-agent's lines: its answer says what it replaces (REPLACE ID), and an ADD replaces nothing.
    infer: bool = field(default=True, compare=False)


@functools.lru_cache(maxsize=4096)
def normal_key(text: str) -> str:
    """What two entries must share to be the same: lower-case letters and digits, single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def clean(text: str) -> str:
    """One line of plain text: no control characters, single spaces, at most :data:`MAX_TEXT`."""
    if not text.isprintable():  # the common case needs no character-by-character pass
        text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - 1].rstrip() + "…"
    return text


def unsafe(text: str) -> str | None:
    """Why ``text`` must not be stored ("secret" or "injection"), or None."""
    if _SECRETS.search(text):
        return "secret"
    if _INJECTION.search(text):
        return "injection"
    return None
