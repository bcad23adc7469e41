"""Upgrades raw store documents, one schema version at a time, to :data:`SCHEMA_VERSION`.

Versions:

1. No ``schema_version`` key: Claude Code's own ``scheduled_tasks.json`` (a user
   copied theirs into kairos' state folder). See :mod:`kairosd.store.claude_compat`.
2. ``{"schema_version": 2, "tasks": [<Task>...]}``: kairos' own shape.

Each step takes the raw dict of version N and returns one of version N+1; it
works on plain data (validation is the store's job) and keeps keys it does not
know. To add version 3: bump :data:`SCHEMA_VERSION`, add ``_v2_to_v3`` to
``_STEPS``, and check in a fixture of version 2.

Pure: no I/O. Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCHEMA_VERSION = 2
CLAUDE_VERSION = 1  # the implicit version of a document with no schema_version key

Step = Callable[[dict[str, Any], str, list[tuple[Any, str]] | None], dict[str, Any]]


def schema_version_of(raw: dict[str, Any]) -> int:
    """The document's version; ``ValueError`` if the key holds something other than a positive int."""
    if "schema_version" not in raw:
        return CLAUDE_VERSION
    version = raw["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"schema_version: expected a positive integer, got {version!r}")
    return version


def _v1_to_v2(raw: dict[str, Any], local_zone: str, rejected: list[tuple[Any, str]] | None) -> dict[str, Any]:
    # Only a Claude store copied in needs the converter: a start with kairos' own store does not import it.
    from kairosd.store.claude_compat import claude_task_to_v2

    tasks = raw.get("tasks", [])
    if not isinstance(tasks, list):
        raise ValueError(f"tasks: expected a list, got {type(tasks).__name__}")
    converted = []
    for index, item in enumerate(tasks):
        try:
            converted.append(claude_task_to_v2(item, local_zone))
        except ValueError as exc:
            if rejected is None:
                raise ValueError(f"tasks.{index}: {exc}") from exc
            rejected.append((item, str(exc)))
    rest = {k: v for k, v in raw.items() if k != "tasks"}
    return {"schema_version": 2, "tasks": converted, **rest}


# _STEPS[n] turns version n into version n + 1.
_STEPS: dict[int, Step] = {1: _v1_to_v2}


def migrate(raw: dict[str, Any], local_zone: str, rejected: list[tuple[Any, str]] | None = None) -> dict[str, Any]:
    """Upgrade ``raw`` step by step to :data:`SCHEMA_VERSION` (a no-op when it is current).

    ``local_zone`` is the IANA zone that version-1 (Claude) crons were written
    in. Raises ``ValueError`` when the document cannot be upgraded, including
    when it is newer than this code (callers should check that first and say so).
    With ``rejected``, a task that cannot be upgraded is appended to it as
    ``(raw item, reason)`` and left out, rather than failing the document.
    """
    version = schema_version_of(raw)
    if version > SCHEMA_VERSION:
        raise ValueError(f"schema {version} is newer than {SCHEMA_VERSION}")
    doc = raw
    while version < SCHEMA_VERSION:
        doc = _STEPS[version](doc, local_zone, rejected)
        version += 1
        doc["schema_version"] = version
    return doc
