"""Start-up recovery of the registry: what a record left ``running`` by a dead daemon becomes, its
leftover process group, and which finished records are old enough to prune.

Must not import the registry's state, the scheduler or the server.
"""

from __future__ import annotations

import contextlib
import logging
import os
from datetime import datetime
from typing import Any

from kairosd.jobs.model import JobRecord, JobStatus
from kairosd.jobs.persist import RecordStore
from kairosd.system.procgroup import group_alive, terminate_group

log = logging.getLogger(__name__)

INTERRUPTED_ERROR = "kairosd stopped while it was running; it was not re-run"


def interrupted_changes(record: JobRecord, now: datetime) -> dict[str, Any]:
    """A ``running`` record of a dead daemon becomes ``interrupted``; its open turn ends failed."""
    turns = list(record.turns)
    if turns and turns[-1].finished_at is None:
        error = "kairosd stopped while this turn " + ("waited for a slot" if record.queued else "ran")
        turns[-1] = turns[-1].model_copy(update={"finished_at": now, "ok": False, "error": error})
    return {
        "status": JobStatus.INTERRUPTED,
        "queued": False,
        "turns": turns,
        "pid": None,
        "pid_started": None,
        "error": INTERRUPTED_ERROR,
    }


async def stop_leftover(record: JobRecord, grace_s: float) -> bool:
    """Stop the process group a dead daemon's turn left, if that very process still runs.

    Returns whether SIGKILL was needed (the group outlived SIGTERM and the grace).

    The pid must still lead its own group and have the recorded start time, so a reused pid
    (someone else's process) is never signalled.
    """
    pid = record.pid
    if pid is None or record.pid_started is None:
        return False
    import psutil  # on use: not needed to start (docs/performance.md)

    try:
        same = abs(psutil.Process(pid).create_time() - record.pid_started) < 0.01 and os.getpgid(pid) == pid
    except (psutil.Error, ProcessLookupError, PermissionError):
        return False  # gone, or not ours
    if same and group_alive(pid):
        log.warning("task %s: stopping process group %d left by the previous kairosd", record.id, pid)
        return await terminate_group(pid, grace_s)
    return False


def excess_finished(records: list[JobRecord], keep: int) -> list[JobRecord]:
    """The oldest terminal records beyond the newest ``keep``."""
    finished = sorted((r for r in records if r.terminal), key=lambda r: (r.finished_at or r.updated_at, r.id))
    return finished[: max(0, len(finished) - keep)]


def remove_record(store: RecordStore, record: JobRecord) -> None:
    """Delete a record's file and its log (blocking I/O)."""
    store.delete(record.id)
    with contextlib.suppress(OSError):
        os.unlink(record.log_path)
