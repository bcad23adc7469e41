"""The two kinds of model every response and ``--json`` document is made of (see :mod:`kairosd.core.wire`).

Must not import any kairosd module.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Document(BaseModel):
    """A top-level document: strict types, no unnamed keys."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Record(BaseModel):
    """A record inside a document: strict types for the keys named; later versions may add keys."""

    model_config = ConfigDict(strict=True, extra="allow")
