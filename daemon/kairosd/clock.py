"""Where time comes from: the only module allowed to read the system clocks.

Everything else takes a :class:`Clock` (or a ``now`` argument) so tests can use
``kairosd.testing.FakeClock``. Wall time is always an aware UTC datetime;
``monotonic`` is for durations and for noticing wall-clock jumps.

Also resolves the user's local IANA zone (``TZ`` first, then /etc/localtime),
since that reads the environment and the file system.

Must not import the store, the server or anything that does I/O beyond this.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class Clock(Protocol):
    def now(self) -> datetime:
        """The current wall time, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (it may pause during suspend)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


def _zone_from_path(path: str) -> str | None:
    marker = "zoneinfo/"
    idx = path.rfind(marker)
    return path[idx + len(marker) :] if idx >= 0 else None


def local_zone_name(environ: dict[str, str] | None = None, localtime: Path | None = None) -> str:
    """The IANA name of the user's zone: ``TZ`` wins, then /etc/localtime, else UTC.

    ``TZ`` may be ``Europe/Berlin``, ``:Europe/Berlin`` or a path into a zoneinfo
    tree. POSIX rule strings such as ``CET-1CEST`` have no IANA name and are
    ignored (with UTC as the last resort) rather than guessed at.
    """
    env = os.environ if environ is None else environ
    tz = env.get("TZ", "").strip()
    if tz:
        name = tz[1:] if tz.startswith(":") else tz
        if name.startswith("/"):
            name = _zone_from_path(name) or ""
        if name and _is_zone(name):
            return name
    link = localtime or Path("/etc/localtime")
    try:
        target = os.path.realpath(link)
    except OSError:
        target = ""
    name = _zone_from_path(target) or ""
    if name and _is_zone(name):
        return name
    timezone_file = Path("/etc/timezone")
    if localtime is None and timezone_file.is_file():
        name = timezone_file.read_text(encoding="utf-8").strip()
        if name and _is_zone(name):
            return name
    return "UTC"


def _is_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True
