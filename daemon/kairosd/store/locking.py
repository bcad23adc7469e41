"""One owner per store: a kernel lock on ``scheduled_tasks.lock`` plus a JSON owner record in it.

The kernel lock (``flock`` through filelock) is what excludes: the kernel drops
it when the owner dies, however it dies. The record
``{"owner", "pid", "procStart", "acquiredAt", "host"}`` is only for people: a
second instance names the running one, and a new owner can say why the
previous record was stale ("dead", "reused_pid", "released", "unreadable",
"other_host").

filelock 4.2.11, checked in its source (``_unix.py``): the lock file is opened
with ``O_RDWR | O_CREAT`` and no ``O_TRUNC``, so a failed attempt never erases
the live owner's record; release unlocks and closes but never unlinks on Unix;
when ``flock`` is unsupported it would silently fall back to an existence lock
(``SoftFileLock``), which we refuse (``fallback_to_soft=False``,
``preserve_lock_file=True``): without a kernel lock a crashed owner would
block every restart. The record is written through filelock's own descriptor
in its ``on_acquired`` hook, i.e. only once the flock is held.

Must not import the store, the server or the CLI.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Literal

from filelock import Timeout, UnixFileLock
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kairosd.core.clock import Clock
from kairosd.core.errors import LockHeldError, StoreError

log = logging.getLogger(__name__)

LOCK_MODE = 0o600
DIR_MODE = 0o700
# psutil derives create_time from boot time and clock ticks; the same process can read a few ms apart.
PROC_START_TOLERANCE_S = 1.0

StaleReason = Literal["dead", "reused_pid", "released", "unreadable", "other_host"]


class LockRecord(BaseModel):
    """Who holds (or last held) the lock. Serialised with camelCase keys."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    owner: str
    pid: int = Field(gt=0, strict=True)
    proc_start: float = Field(alias="procStart")
    acquired_at: datetime = Field(alias="acquiredAt")
    host: str

    @field_validator("acquired_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("acquiredAt must carry a UTC offset")
        return value.astimezone(UTC)

    def to_bytes(self) -> bytes:
        return (self.model_dump_json(by_alias=True) + "\n").encode("utf-8")

    def describe(self) -> str:
        started = self.acquired_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"pid {self.pid}, started {started} on host {self.host}"


@dataclass(frozen=True)
class TakeoverInfo:
    """The stale record found on acquiring (``None`` when unreadable) and why it was stale."""

    previous: LockRecord | None
    reason: StaleReason


def _parse(data: bytes) -> LockRecord | None:
    """The record in ``data``; ``None`` when empty; ``ValueError`` when unreadable."""
    if not data.strip():
        return None
    try:
        return LockRecord.model_validate_json(data)
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc


def read_owner(path: Path) -> LockRecord | None:
    """The owner record in the lock file at ``path``, for status displays.

    ``None`` when there is no file, no record (nobody holds it, or the owner
    has not written it yet) or an unreadable one. Says nothing about whether
    the lock is held right now.
    """
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return _parse(data)
    except ValueError:
        return None


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 65536, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def own_start_time() -> float:
    """When this process started, as psutil's ``Process(os.getpid()).create_time()`` gives it.

    Read from /proc with psutil's own formula on Linux (start ticks / clock ticks + boot time),
    so records stay comparable with ``classify``'s psutil reading. Every start writes it, and
    importing psutil for it cost ~0.9 MB RSS and ~8 ms of each start (measured, issue 16);
    psutil is still used where /proc cannot be read.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        # The command name (field 2) may hold spaces and parentheses: fields 3.. follow the last ")".
        start_ticks = float(stat[stat.rindex(b")") + 2 :].split()[19])  # field 22, starttime
        with open("/proc/stat", "rb") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        return start_ticks / os.sysconf("SC_CLK_TCK") + boot
    except (OSError, ValueError, IndexError, StopIteration):
        import psutil

        return psutil.Process(os.getpid()).create_time()


def classify(previous: LockRecord, host: str) -> StaleReason:
    """Why a record whose kernel lock we now hold is stale."""
    if previous.host != host:
        # Another machine's pids mean nothing here; the free kernel lock is all we know.
        return "other_host"
    import psutil  # here: only a takeover after a crash or a contended start needs it

    try:
        proc = psutil.Process(previous.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # exited, its locks gone, not yet reaped
            return "dead"
        started = proc.create_time()
    except psutil.NoSuchProcess:
        return "dead"
    except psutil.AccessDenied:
        return "reused_pid"  # our own processes are always readable, so this pid is someone else's now
    if abs(started - previous.proc_start) > PROC_START_TOLERANCE_S:
        return "reused_pid"
    return "released"


class StoreLock:
    """Exclusive ownership of a store, held until :meth:`release` or process death.

    ``acquire`` never waits: if another process holds the lock it raises
    :class:`LockHeldError` at once, naming the holder.
    """

    def __init__(self, path: Path, clock: Clock, owner: str = "kairosd") -> None:
        self._path = path
        self._clock = clock
        self._owner = owner
        self._previous: bytes = b""
        self._identity: tuple[int, int] | None = None
        self._lock = UnixFileLock(
            path,
            timeout=0,
            mode=LOCK_MODE,
            thread_local=False,  # the daemon may release from another thread than it acquired on
            blocking=False,
            is_singleton=False,  # a second StoreLock on the same path must contend, not share
            fallback_to_soft=False,
            preserve_lock_file=True,
            on_acquired=self._on_acquired,
        )

    @property
    def path(self) -> Path:
        return self._path

    @property
    def is_held(self) -> bool:
        return self._lock.is_locked

    def acquire(self) -> TakeoverInfo | None:
        """Take the lock and write our record; report a stale previous record, if any."""
        if self._lock.is_locked:
            raise RuntimeError(f"{self._path} is already held by this StoreLock")
        self._path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            raise self._held_error() from None
        except OSError as exc:
            if exc.errno == errno.ENOSYS:
                raise StoreError(
                    f"the file system holding {self._path} does not support flock; "
                    "put kairos' state folder on a local disk (set KAIROS_HOME)"
                ) from exc
            raise StoreError(f"cannot lock {self._path}: {exc.strerror or exc}") from exc
        return self._takeover()

    def release(self) -> None:
        """Clear our record, then drop the kernel lock. The file stays (see below). Idempotent."""
        if not self._lock.is_locked:
            return
        try:
            self._clear_record()
        finally:
            # The file is never unlinked: a contender may already have it open, and after an unlink it
            # would lock the old inode while a third process creates and locks a new one at the same
            # path, two owners at once. An empty record is how "nobody holds it" reads.
            self._lock.release()
            self._identity = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _on_acquired(self, fd: int) -> None:
        # Runs with the flock held, on filelock's descriptor: read what the last owner left, then replace it.
        self._previous = _read_all(fd)
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)
        pid = os.getpid()
        record = LockRecord(
            owner=self._owner,
            pid=pid,
            proc_start=own_start_time(),
            acquired_at=self._clock.now(),
            host=socket.gethostname(),
        )
        data = record.to_bytes()
        os.ftruncate(fd, 0)
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
        os.fsync(fd)

    def _takeover(self) -> TakeoverInfo | None:
        try:
            previous = _parse(self._previous)
        except ValueError:
            log.warning("taking over stale lock %s: unreadable owner record %r", self._path, self._previous[:200])
            return TakeoverInfo(previous=None, reason="unreadable")
        if previous is None:
            return None
        reason = classify(previous, socket.gethostname())
        log.warning("taking over stale lock from pid %d: %s", previous.pid, reason)
        return TakeoverInfo(previous=previous, reason=reason)

    def _held_error(self) -> LockHeldError:
        record = read_owner(self._path)
        if record is not None and classify(record, socket.gethostname()) in ("dead", "reused_pid"):
            # The record is the last owner's: the live holder took the lock and has not replaced it yet.
            record = None
        if record is None:
            return LockHeldError(
                f"another process holds {self._path} (it has not written its owner record yet); "
                "if kairosd is starting, wait; otherwise stop it with 'kairos daemon stop'"
            )
        return LockHeldError(
            f"{record.owner} is already running ({record.describe()}); stop it with "
            f"'kairos daemon stop' (do not remove {self._path.name}: the lock is live)"
        )

    def _clear_record(self) -> None:
        # A fresh descriptor is safe here: flock belongs to filelock's open file description, so closing
        # ours does not drop it (unlike fcntl/POSIX locks, which any close in the process releases).
        # Clearing is for displays only, so a failure is logged and the kernel lock is released anyway.
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != self._identity:
                    # Someone replaced the file while we held it; its content is not ours to erase.
                    log.warning("%s was replaced while locked; leaving its content alone", self._path)
                    return
                os.ftruncate(fd, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("could not clear the owner record in %s: %s", self._path, exc)
