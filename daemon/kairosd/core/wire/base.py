"""The two kinds of model every response and ``--json`` document is made of (see :mod:`kairosd.core.wire`).

Both defer their build to the first validation or answer that uses a model: a CLI verb reads one
answer, and a kairosd start imports the handlers that make them all (docs/performance.md).

Must not import any kairosd module.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Document(BaseModel):
    """A top-level document: strict types, no unnamed keys."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)


class Record(BaseModel):
    """A record inside a document: strict types for the keys named; later versions may add keys."""

    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)
