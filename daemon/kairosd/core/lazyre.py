"""Regular expressions compiled at their first use: :func:`compile`, for modules that define many.

The offline consolidation's cues, noise filters and supersede rules are ~180 module-level patterns, and
compiling them was ~150 ms of the ~225 ms a consolidation worker (a process per session end) spends
importing its modules, while a run over a typical session uses about half of them. A pattern from
:func:`compile` is compiled when one of its attributes is first asked for; its methods then sit on it as
plain attributes, so later calls cost what the compiled pattern's cost. A pattern with an error fails at
its first use, not at import: ``tests/unit/kairosd/core/test_lazyre.py`` compiles every one.

What it is not: an ``re.Pattern`` for ``isinstance``, or a pattern ``re``'s own functions take
(``re.sub(pattern, ...)``): call its methods (``pattern.sub(...)``). Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, cast

# The compiled pattern's attributes, copied onto the lazy one at its first use.
_ATTRIBUTES = (
    "search", "match", "fullmatch", "split", "findall", "finditer", "sub", "subn", "scanner",
    "flags", "groups", "groupindex",
)  # fmt: skip

# Every lazy pattern made, for the test that compiles them all.
made: list[LazyPattern] = []


class LazyPattern:
    """``re.compile(pattern, flags)``, done when first used."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if it was not yet); its methods become this one's."""
        done: re.Pattern[str] = re.compile(self.pattern, self._flags)
        for name in _ATTRIBUTES:
            setattr(self, name, getattr(done, name))
        return done

    def __getattr__(self, name: str) -> Any:
        # Called only for a name the instance lacks: before the first use, one of the pattern's.
        if name not in _ATTRIBUTES:
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazyre.compile({self.pattern!r}, {self._flags!r})"


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # re.compile's name, on purpose
    """``pattern`` with ``flags``, compiled at its first use (typed as what it stands for)."""
    lazy = LazyPattern(pattern, flags)
    made.append(lazy)
    return cast("re.Pattern[str]", lazy)
