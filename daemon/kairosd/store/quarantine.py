"""Records the store could not use, kept aside in ``scheduled_tasks.quarantine.json`` with the reason.

One bad record must never stop the daemon: a task that cannot be parsed (a
bad cron or zone, a wrong type, an id of the wrong shape) or cannot be
scheduled over its whole life (see :mod:`kairosd.core.lifecheck`) is moved here
at load, and every other task runs. The record is written here first,
atomically and durably; only then does the store's next save leave it out,
so it is never lost. The file is a JSON object::

    {"schema_version": 1, "entries": [{"id": "...", "reason": "...", "quarantined_at": "...", "record": {...}}]}

``record`` is the task exactly as it stood in the store (for an imported
Claude store, Claude's own item). A record quarantined again (a daemon that
died before its next save) is not added twice. To restore one: stop kairosd,
fix the record, move it into the ``tasks`` list of ``scheduled_tasks.json``,
delete its entry here and start kairosd (it is checked again at load); or
re-create it with ``kairos add``. ``kairos list --problems`` lists the entries.

Must not import the server, the scheduler or the CLI.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from kairosd.core.clock import Clock
from kairosd.system.atomic import write_atomic

log = logging.getLogger(__name__)

FILE_NAME = "scheduled_tasks.quarantine.json"
FORMAT_VERSION = 1
# The oldest entries go past this many: a store of broken records must not grow this file forever.
MAX_ENTRIES = 10_000


def _key(record: Any) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)


def _id_of(record: Any) -> str | None:
    if isinstance(record, dict) and isinstance(record.get("id"), str):
        return str(record["id"])[:100]
    return None


class Quarantine:
    """The quarantine file next to the store. Only the store's owner (the daemon) writes it."""

    def __init__(self, path: Path, clock: Clock | None = None) -> None:
        """``clock`` stamps new entries; readers (``kairos doctor``) need none."""
        self.path = path
        self._clock = clock
        self._count: tuple[tuple[int, int], int] | None = None  # (mtime_ns, size) -> entries

    def count(self) -> int:
        """How many entries; read again only when the file changed (``kairos status`` asks often)."""
        try:
            stat = self.path.stat()
        except OSError:
            return 0
        key = (stat.st_mtime_ns, stat.st_size)
        if self._count is None or self._count[0] != key:
            self._count = (key, len(self.entries()))
        return self._count[1]

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first; an absent or unreadable file has none (an unreadable one is logged)."""
        try:
            return self._read()[0]
        except OSError as exc:
            log.warning("cannot read the quarantine file %s: %s", self.path, exc.strerror or exc)
            return []

    def _read(self) -> tuple[list[dict[str, Any]], bool]:
        """The entries, and whether the file was absent or readable (False: it holds something else).

        Raises ``OSError`` when the file exists but cannot be read at all.
        """
        try:
            doc = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return [], True
        except (ValueError, RecursionError) as exc:
            log.warning("cannot read the quarantine file %s: %s", self.path, exc)
            return [], False
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            return [], False
        return [e for e in entries if isinstance(e, dict)], True

    def status(self) -> dict[str, Any]:
        """``{"count", "path"}``, for ``kairos status`` and ``kairos doctor``."""
        return {"count": self.count(), "path": str(self.path)}

    def add(self, items: list[tuple[Any, str]]) -> int:
        """Keep each ``(record, reason)``, durably, before the store drops it; how many were new.

        Raises ``OSError`` when the file cannot be written: the caller must then
        keep the records where they are.
        """
        if not items:
            return 0
        if self._clock is None:
            raise ValueError("a quarantine without a clock is read-only")
        entries, readable = self._read()
        if not readable:
            # Never write over what may be earlier entries: keep the file under another name first.
            aside = self.path.with_name(f"{self.path.name}.unreadable-{self._clock.now().strftime('%Y%m%dT%H%M%SZ')}")
            os.replace(self.path, aside)
            log.warning("the quarantine file %s could not be read; it was kept as %s", self.path, aside)
        known = {_key(entry.get("record")) for entry in entries}
        stamp = self._clock.now().isoformat()
        added = 0
        for record, reason in items:
            key = _key(record)
            if key in known:
                continue
            known.add(key)
            entries.append({"id": _id_of(record), "reason": reason, "quarantined_at": stamp, "record": record})
            added += 1
        if added:
            entries = entries[-MAX_ENTRIES:]
            doc = {"schema_version": FORMAT_VERSION, "entries": entries}
            data = json.dumps(doc, indent=2, ensure_ascii=True, default=str).encode("ascii") + b"\n"
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(self.path, data, mode=0o600)
        return added
