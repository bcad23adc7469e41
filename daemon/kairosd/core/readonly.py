"""A dict that refuses to change: what a frozen task's free-form ``meta`` (and unknown fields) hold.

A frozen pydantic model refuses ``task.meta = ...`` but not ``task.meta["k"] = v``, and the store
lets every loaded task with an empty ``meta`` share one dict (see :mod:`kairosd.store.store`). So
the dict itself refuses: any in-place change raises ``TypeError`` at the line that tries it,
instead of changing every task that shares it. To change a task's meta, build a new dict
(``{**task.meta, "k": v}``) and a new task.

It is a ``dict`` subclass, so JSON encoders, pydantic's serializer, ``==``, ``**`` and ``dict(...)``
see an ordinary dict. Values nested inside are not wrapped (kept as they are, for speed); they are
never changed in place either, by the same rule.

Pure: the standard library only.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn


def _refuse(self: ReadOnlyDict, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("a task's meta is read-only; build a new dict and a new task (model_copy(update=...))")


class ReadOnlyDict(dict[str, Any]):
    """A ``dict`` whose mutating methods raise ``TypeError``; copies keep it read-only (it is immutable)."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __copy__(self) -> ReadOnlyDict:
        return self  # immutable, like a frozenset: a copy may be the same object

    def __deepcopy__(self, memo: dict[int, Any]) -> ReadOnlyDict:
        if not self:
            return self
        return ReadOnlyDict(copy.deepcopy(dict(self), memo))

    def __reduce__(self) -> tuple[type[ReadOnlyDict], tuple[dict[str, Any]]]:
        # The default rebuilds a dict subclass item by item with __setitem__, which refuses.
        return ReadOnlyDict, (dict(self),)

    def __repr__(self) -> str:
        return f"ReadOnlyDict({dict.__repr__(self)})"


EMPTY: ReadOnlyDict = ReadOnlyDict()
"""The one empty read-only dict: every task without ``meta`` (or unknown fields) can share it."""


def read_only(value: dict[str, Any]) -> ReadOnlyDict:
    """``value`` as a read-only dict: itself if it already is one, the shared :data:`EMPTY` if empty."""
    if type(value) is ReadOnlyDict:
        return value
    return ReadOnlyDict(value) if value else EMPTY
