"""Claude Code's ``.claude/scheduled_tasks.json`` shape, converted to kairos tasks.

Claude writes ``{"tasks": [{"id", "cron", "prompt", "createdAt", "lastFiredAt"?,
"recurring"?, "permanent"?}]}`` with times in epoch milliseconds, crons in the
machine's local time, and ``recurring``/``permanent`` only present when true.
The store's v1→v2 migration and the ``kairos import`` verb both use this.

Pure: no file, socket or clock access; the caller supplies the bytes and the
local zone name. Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from kairosd.errors import UsageError
from kairosd.models import CatchUp, CreatedBy, Task

# Keys Claude writes that the conversion consumes; anything else rides along unchanged.
_CLAUDE_KEYS = frozenset({"id", "cron", "prompt", "createdAt", "lastFiredAt", "recurring", "permanent"})


@dataclass(frozen=True)
class ImportResult:
    """Tasks that converted cleanly, and ``(index, reason)`` for each item that did not."""

    tasks: list[Task] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)


def _epoch_ms(item: dict[str, Any], key: str) -> str:
    value = item[key]
    # bool is an int in Python; a true/false here is a wrong file, not 1 ms after 1970.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key}: expected epoch milliseconds, got {value!r}")
    try:
        return datetime.fromtimestamp(value / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"{key}: {value!r} is not a usable time ({exc})") from exc


def _flag(item: dict[str, Any], key: str) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    return value


def claude_task_to_v2(item: dict[str, Any], local_zone: str) -> dict[str, Any]:
    """One Claude task as a raw v2 task dict (not yet validated; :class:`Task` does that).

    Raises ``ValueError`` naming the field when the item is not Claude's shape.
    Unknown keys are kept as they are, so nothing the user had is lost.
    """
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    for key in ("id", "cron", "prompt", "createdAt"):
        if key not in item:
            raise ValueError(f"missing {key!r}")
    for key in ("id", "cron", "prompt"):
        if not isinstance(item[key], str):
            raise ValueError(f"{key}: expected a string, got {item[key]!r}")
    recurring = _flag(item, "recurring")
    converted: dict[str, Any] = {k: v for k, v in item.items() if k not in _CLAUDE_KEYS}
    converted.update(
        id=item["id"],
        prompt=item["prompt"],
        cron=item["cron"],
        recurring=recurring,
        # Claude evaluates crons in local time; kairos pins the zone so a later TZ change does not move tasks.
        tz=local_zone,
        created_at=_epoch_ms(item, "createdAt"),
        created_by=CreatedBy.IMPORT.value,
        permanent=_flag(item, "permanent"),
        # A missed one-shot is shown to the user rather than fired late; a recurring task catches up once.
        catch_up=(CatchUp.ONCE if recurring else CatchUp.SURFACE).value,
        expires_after_days=None,
    )
    if item.get("lastFiredAt") is not None:
        converted["last_fired_at"] = _epoch_ms(item, "lastFiredAt")
    return converted


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def read_claude_tasks(data: bytes | str, local_zone: str) -> ImportResult:
    """Parse a Claude ``scheduled_tasks.json`` into tasks, reporting bad items instead of failing.

    Raises :class:`UsageError` only when the document as a whole is not Claude's
    shape (not JSON, or no ``tasks`` list). A repeated id is rejected after its
    first appearance.
    """
    try:
        doc = json.loads(data)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise UsageError(f"not a Claude scheduled_tasks.json: invalid JSON ({exc})") from exc
    except RecursionError:
        raise UsageError("not a Claude scheduled_tasks.json: nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise UsageError("not a Claude scheduled_tasks.json: expected an object with a 'tasks' list")
    result = ImportResult()
    seen: set[str] = set()
    for index, item in enumerate(doc["tasks"]):
        try:
            task = Task.model_validate(claude_task_to_v2(item, local_zone))
        except ValidationError as exc:
            result.rejected.append((index, _first_error(exc)))
            continue
        except ValueError as exc:
            result.rejected.append((index, str(exc)))
            continue
        if task.id in seen:
            result.rejected.append((index, f"id: duplicate id {task.id!r}"))
            continue
        seen.add(task.id)
        result.tasks.append(task)
    return result
