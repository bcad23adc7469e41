"""Durable storage of task records: one JSON file per record, written atomically.

One file per record keeps a write proportional to one task (progress of one
agent never rewrites the others) and lets a corrupt file cost one record, not
the registry. Files are ``<folder>/<id>.json``, 0600 in a 0700 folder. A
record that cannot be read is moved aside as ``<id>.json.corrupt`` with a
warning; the rest load.

Blocking I/O: async callers run these methods in a thread. Single writer
(the daemon holding the store lock).

Must not import the registry, the scheduler or the server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from pydantic import ValidationError

from kairosd.jobs.model import RECORD_ID_RE, JobRecord
from kairosd.system.atomic import remove_stale_temp_files, write_atomic

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
SUFFIX = ".json"


class RecordStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_of(self, record_id: str) -> Path:
        if not RECORD_ID_RE.match(record_id):
            raise ValueError(f"not a task record id: {record_id!r}")
        return self.folder / f"{record_id}{SUFFIX}"

    def save(self, record: JobRecord) -> None:
        """Write ``record`` durably (temp file, fsync, rename, fsync the folder)."""
        self.folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        data = json.dumps(record.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=True)
        write_atomic(self.path_of(record.id), data.encode("ascii"), mode=FILE_MODE)

    def delete(self, record_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path_of(record_id))

    def load_all(self) -> list[JobRecord]:
        """Every readable record (oldest first). Bad files are set aside, never fatal."""
        try:
            entries = sorted(self.folder.iterdir())
        except FileNotFoundError:
            return []
        records: list[JobRecord] = []
        for path in entries:
            if path.suffix != SUFFIX or not RECORD_ID_RE.match(path.stem):
                continue
            remove_stale_temp_files(path)
            try:
                record = JobRecord.model_validate_json(path.read_bytes())
            except (OSError, ValueError, ValidationError) as exc:
                aside = path.with_name(path.name + ".corrupt")
                log.warning("task record %s is unreadable (%s); moved aside to %s", path, _first_line(exc), aside)
                with contextlib.suppress(OSError):
                    os.replace(path, aside)
                continue
            if record.id != path.stem:
                log.warning("task record %s holds id %s; skipped", path, record.id)
                continue
            records.append(record)
        records.sort(key=lambda r: (r.created_at, r.id))
        return records


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
