"""Git-style id prefixes: the one rule every verb uses to turn what a person typed into a whole id.

An id may be given whole or as a unique prefix of at least :data:`MIN_PREFIX`
characters, in any case (ids are lower-case hex, but people copy them from
places that upper-case them). The errors say precisely what went wrong:
``no task starts with 'abcd'``, ``... is ambiguous: matches A, B``, or that a
prefix is too short.

Pure: no I/O. Must import nothing but kairosd.core.errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from kairosd.core.errors import NotFoundError, UsageError

MIN_PREFIX = 4  # the shortest prefix accepted for a whole id, as git accepts short commit ids
_SHOWN = 10  # an ambiguous prefix lists at most this many matches


def resolve_prefix(given: str, ids: Iterable[str], kind: str = "task", hint: str = "") -> str:
    """The one id in ``ids`` that is ``given`` or starts with it (case-insensitive).

    ``kind`` names the ids in messages ("task", "run", "board"...); ``hint``
    ends the not-found message (say, " (see 'kairos list')"). Raises
    :class:`NotFoundError` when none matches and :class:`UsageError` when the
    prefix is too short or several match.
    """
    known = ids if isinstance(ids, (set, frozenset, dict)) else set(ids)
    if given in known:
        return given
    wanted = given.lower()
    if wanted in known:
        return wanted
    matches = sorted(i for i in known if i.lower().startswith(wanted))
    if len(matches) == 1 and len(wanted) >= MIN_PREFIX:
        return matches[0]
    if matches and len(wanted) < MIN_PREFIX:
        raise UsageError(
            f"{kind} id prefix {given!r} is too short: give at least {MIN_PREFIX} characters "
            f"({len(matches)} {kind}(s) start with it)"
        )
    if matches:
        shown = ", ".join(matches[:_SHOWN]) + (f" and {len(matches) - _SHOWN} more" if len(matches) > _SHOWN else "")
        raise UsageError(f"{kind} id prefix {given!r} is ambiguous: matches {shown}")
    raise NotFoundError(f"no {kind} starts with {given!r}{hint}")
