"""The typed body of ``POST /v1/export``, with the bounds of :mod:`kairosd.core.bounds`.

Parsed by :func:`kairosd.api.requests.parse_body`. Which tasks exist, and whether an
engine can express each, is the exporter's to decide (:mod:`kairosd.export.api`).

Must not import the store, scheduling, sessions or the server.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, StringConstraints

from kairosd.api.requests import Body, Short
from kairosd.core import bounds

MAX_SECRET_ENV = 20
# kairosd.export.ENGINES, spelled out for the schema
# (tests/integration/kairosd/export/test_export_api.py checks they agree).
Engine = Literal["systemd", "kubernetes", "github-actions"]


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def _variable(value: str) -> str:
    if not value.isidentifier():
        raise ValueError(f"{value[:40]!r} is not an environment variable name")
    return value


class ExportRequest(Body):
    """``POST /v1/export``: tasks as systemd, Kubernetes or GitHub Actions files. ``ids`` or ``all``."""

    to: Engine
    ids: list[Annotated[str, StringConstraints(min_length=1, max_length=bounds.MAX_SHORT_CHARS)]] | None = Field(
        default=None, min_length=1, max_length=bounds.MAX_LIST_ITEMS
    )
    all: StrictBool = False
    image: Annotated[str, StringConstraints(max_length=bounds.MAX_PATH_CHARS), AfterValidator(_non_blank)] | None = (
        Field(default=None, description="kubernetes: the container image holding the agent CLI")
    )
    secret_name: Annotated[Short, AfterValidator(_non_blank)] = Field(
        default="kairos-agent", description="kubernetes: the Secret holding the API keys"
    )
    secret_env: list[Annotated[Short, AfterValidator(_variable)]] = Field(
        default_factory=list, max_length=MAX_SECRET_ENV, description="extra variables to take from the engine's secrets"
    )
