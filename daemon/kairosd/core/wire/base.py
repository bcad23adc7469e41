"""The two kinds of model every response and ``--json`` document is made of (see :mod:`kairosd.core.wire`),
and :func:`moved`, for a module's models that moved out of it.

Both defer their build to the first validation or answer that uses a model: a CLI verb reads one
answer, and a kairosd start imports the handlers that make them all (docs/performance.md).

Must not import any kairosd module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict


class Document(BaseModel):
    """A top-level document: strict types, no unnamed keys."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)


class Record(BaseModel):
    """A record inside a document: strict types for the keys named; later versions may add keys."""

    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)


def moved(module: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` (PEP 562) for ``module``, which still names models that moved to another module of
    the wire (``names``: each to its module): imported when first asked, so that a verb that reads this
    module's answers does not build those too. For kairosd's handlers, which import them from the old place."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(f"kairosd.core.wire.{names[name]}"), name)

    return __getattr__
