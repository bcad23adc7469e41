"""A sentence's words as runs of lower-case letters: what the cues' exact prefilters test.

A word an IGNORECASE pattern matches between ``\\b``s (or spaces, ``^``, ``'``) is one whole run
of letters of the lower-cased sentence, so a pattern whose every alternative needs one of a few
words cannot match a sentence that has none of them: a set test, where the search costs tens of
microseconds. That holds for an ASCII sentence only (IGNORECASE matches some other letters to
ASCII ones, "\u017f" to "s", that ``lower()`` leaves as they are): callers test ``isascii()``.

One turn asks for the same sentence's words several times (the cues, the noise filters, the
changes): they are kept for the last few sentences. Pure.
"""

from __future__ import annotations

import functools

from kairosd.core import lazyre

_RUN = lazyre.compile(r"[a-z]+")


@functools.lru_cache(maxsize=16)  # the sentences of the turn being read, not a cache across turns
def letter_runs(sentence: str) -> frozenset[str]:
    """The runs of letters a-z of ``sentence.lower()``."""
    return frozenset(_RUN.findall(sentence.lower()))
