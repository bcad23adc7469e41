"""Claude Code's ``.claude/scheduled_tasks.json`` shape, converted to kairos tasks.

Claude writes ``{"tasks": [{"id", "cron", "prompt", "createdAt", "lastFiredAt"?,
"recurring"?, "permanent"?}]}`` with times in epoch milliseconds, crons in the
machine's local time, ``recurring``/``permanent`` only present when true, and
ids of 8 lowercase hex digits. The store's v1→v2 migration and ``kairos import``
both use this.

Only that shape is read. Any other key (``target``, ``meta``, ``catch_up``...)
is dropped and reported with the task's id: the file of a cloned project is
not the user's own input, and a key such as ``"target": {"kind": "shell"}``
would otherwise turn a prompt into a command that runs. An imported task
always targets the inbox. A recurring task's ``lastFiredAt`` is its anchor,
as in Claude Code: the next fire is the first slot after it.

Pure: no file, socket or clock access; the caller supplies the bytes and the
local zone name. Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from kairosd.core import jsonsafe
from kairosd.core.errors import UsageError
from kairosd.core.models import CatchUp, CreatedBy, Task

# The keys Claude Code writes; nothing else is read.
CLAUDE_KEYS = ("id", "cron", "prompt", "createdAt", "lastFiredAt", "recurring", "permanent")
CLAUDE_ID = re.compile(r"[0-9a-f]{8}")
# Claude writes depth 3; an item nested deeper than this is rejected, measured before parsing.
MAX_DEPTH = 32


@dataclass(frozen=True)
class Rejected:
    """An item that did not convert: its id (escaped) when it has one, its position, and why."""

    index: int
    id: str | None
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class ImportResult:
    """Tasks that converted cleanly, the keys dropped from each (by id), and the items rejected."""

    tasks: list[Task] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)


def _epoch_ms(item: dict[str, Any], key: str) -> str:
    value = item[key]
    # bool is an int in Python; a true/false here is a wrong file, not 1 ms after 1970.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key}: expected epoch milliseconds, got {_quote(value)}")
    try:
        return datetime.fromtimestamp(value / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"{key}: {_quote(value)} is not a usable time ({exc})") from exc


def _flag(item: dict[str, Any], key: str) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false, got {_quote(value)}")
    return value


def _quote(value: Any, limit: int = 60) -> str:
    """A value as a reason quotes it: repr (so control characters are escaped), cut short."""
    text = ascii(value) if isinstance(value, str) else ascii(type(value).__name__)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dropped_keys(item: Any) -> list[str]:
    """The keys of ``item`` that are not Claude's (they are not imported), escaped and sorted."""
    if not isinstance(item, dict):
        return []
    return sorted(ascii(k)[1:-1] if isinstance(k, str) else ascii(k) for k in item if k not in CLAUDE_KEYS)


def claude_task_to_v2(item: dict[str, Any], local_zone: str) -> dict[str, Any]:
    """One Claude task as a raw v2 task dict (not yet validated; :class:`Task` does that).

    Raises ``ValueError`` naming the field when the item is not Claude's shape.
    Only Claude's keys are read (see :func:`dropped_keys` for the rest).
    """
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    odd = jsonsafe.odd_in(item)  # a value nested too deep, or a number such as 1e999 (see core.jsonsafe)
    if odd is not None:
        raise ValueError(odd.reason)
    for key in ("id", "cron", "prompt", "createdAt"):
        if key not in item:
            raise ValueError(f"missing {key!r}")
    for key in ("id", "cron", "prompt"):
        if not isinstance(item[key], str):
            raise ValueError(f"{key}: expected a string, got {_quote(item[key])}")
    if not CLAUDE_ID.fullmatch(item["id"]):
        raise ValueError(f"id: {_quote(item['id'])} is not a Claude Code task id (8 lowercase hex digits)")
    recurring = _flag(item, "recurring")
    converted: dict[str, Any] = {
        "id": item["id"],
        "prompt": item["prompt"],
        "cron": item["cron"],
        "recurring": recurring,
        # Claude evaluates crons in local time; kairos pins the zone so a later TZ change does not move tasks.
        "tz": local_zone,
        "created_at": _epoch_ms(item, "createdAt"),
        "created_by": CreatedBy.IMPORT.value,
        "permanent": _flag(item, "permanent"),
        # A missed one-shot is shown to the user rather than fired late; a recurring task catches up once.
        "catch_up": (CatchUp.ONCE if recurring else CatchUp.SURFACE).value,
        "expires_after_days": None,
    }
    if item.get("lastFiredAt") is not None:
        converted["last_fired_at"] = _epoch_ms(item, "lastFiredAt")
        if recurring and converted["last_fired_at"] > converted["created_at"]:
            # Claude's anchor for a recurring task: its slots up to the last fire were handled there.
            converted["last_scheduled_for"] = converted["last_fired_at"]
    return converted


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(part) for part in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def read_claude_tasks(data: bytes | str, local_zone: str) -> ImportResult:
    """Parse a Claude ``scheduled_tasks.json`` into tasks, reporting bad items instead of failing.

    Raises :class:`UsageError` only when the document as a whole is not Claude's
    shape (not JSON, its task list nested deeper than :data:`MAX_DEPTH`, or no
    ``tasks`` list). An item nested too deep or holding a number that is not
    finite (``1e999``, ``NaN``) is rejected on its own, like a repeated id after
    its first appearance. Depth is measured before parsing (:mod:`kairosd.core.jsonsafe`).
    """
    try:
        # Lenient: an item nested too deep or holding 1e999 is rejected on its own (see claude_task_to_v2).
        doc = jsonsafe.loads(data, MAX_DEPTH, lenient=True)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise UsageError(f"not a Claude scheduled_tasks.json: invalid JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        odd = jsonsafe.odd_in(doc.get("tasks") if isinstance(doc, dict) else doc)
        if odd is not None:
            raise UsageError(f"not a Claude scheduled_tasks.json: {odd.reason}")
        raise UsageError("not a Claude scheduled_tasks.json: expected an object with a 'tasks' list")
    result = ImportResult()
    seen: set[str] = set()
    for index, item in enumerate(doc["tasks"]):
        raw_id = item.get("id") if isinstance(item, dict) else None
        shown_id = _quote(raw_id)[1:-1] if isinstance(raw_id, str) else None
        try:
            task = Task.model_validate(claude_task_to_v2(item, local_zone))
        except ValidationError as exc:
            result.rejected.append(Rejected(index, shown_id, _first_error(exc)))
            continue
        except (ValueError, OverflowError, OSError) as exc:
            result.rejected.append(Rejected(index, shown_id, str(exc)))
            continue
        if task.id in seen:
            result.rejected.append(Rejected(index, shown_id, f"id: {task.id!r} appears earlier in the file"))
            continue
        seen.add(task.id)
        result.tasks.append(task)
        dropped = dropped_keys(item)
        if dropped:
            result.dropped[task.id] = dropped
    return result
