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

# The CLI imports this module for local_zone_name(), and imports neither typing nor datetime for it
# (docs/performance.md). Clock is a Protocol for mypy; at run time it is a plain class nobody instantiates.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime
    from os import PathLike
    from typing import Protocol

    StrPath = str | PathLike[str]
else:
    Protocol = object


class Clock(Protocol):
    def now(self) -> datetime:
        """The current wall time, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (it may pause during suspend)."""
        ...


class SystemClock:
    def __init__(self) -> None:
        from datetime import UTC, datetime  # here, not at the top: see the imports

        self._datetime, self._utc = datetime, UTC

    def now(self) -> datetime:
        return self._datetime.now(self._utc)

    def monotonic(self) -> float:
        return time.monotonic()


def _zone_from_path(path: str) -> str | None:
    marker = "zoneinfo/"
    idx = path.rfind(marker)
    return path[idx + len(marker) :] if idx >= 0 else None


def local_zone_name(environ: Mapping[str, str] | None = None, localtime: StrPath | None = None) -> str:
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
    try:
        target = os.path.realpath(localtime or "/etc/localtime")
    except OSError:
        target = ""
    name = _zone_from_path(target) or ""
    if name and _is_zone(name):
        return name
    timezone_file = "/etc/timezone"
    if localtime is None and os.path.isfile(timezone_file):
        with open(timezone_file, encoding="utf-8") as file:
            name = file.read().strip()
        if name and _is_zone(name):
            return name
    return "UTC"


def tz_env_problem(environ: Mapping[str, str] | None = None, localtime: StrPath | None = None) -> str | None:
    """Why ``TZ`` is set yet is not the zone kairos uses as local (it says which it uses); None if it is.

    kairos needs an IANA name to pin a task's zone; a POSIX rule string such as
    ``EST5EDT,M3.2.0,M11.1.0`` or ``<+03>-3`` has none, so :func:`local_zone_name`
    falls back to the system's zone. ``kairos doctor`` and kairosd's log say so,
    and ``kairos add`` refuses to guess (see ``kairos.commands.add``).
    """
    env = os.environ if environ is None else environ
    raw = env.get("TZ", "").strip()
    if not raw:
        return None
    used = local_zone_name(env, localtime)
    name = raw[1:] if raw.startswith(":") else raw
    if name.startswith("/"):
        try:
            name = _zone_from_path(os.path.realpath(name)) or _zone_from_path(name) or ""
        except (OSError, ValueError):
            name = ""
    if name == used:
        return None
    kind = "a POSIX rule string" if any(ch.isdigit() or ch in ",<>" for ch in raw) else "not a known time zone"
    return (
        f"TZ={ascii(raw[:60])[1:-1]} is {kind}, which kairos cannot use (it needs an IANA name such as Europe/Berlin); "
        f"kairos uses {used} as the local zone instead"
    )


def _is_zone(name: str) -> bool:
    if name == "UTC":
        # local_zone_name falls back to UTC anyway, so its answer is the same
        # without loading zoneinfo (docs/performance.md).
        return True
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True
