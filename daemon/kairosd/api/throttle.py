"""A log line for a condition that repeats (out of descriptors, clients refused at a limit), at most once
per interval with a count of the times in between: a client must not be able to flood the log.

Must not import anything from kairosd.
"""

from __future__ import annotations

import logging
from typing import Final

LOG_EVERY_S: Final = 60.0


class LogThrottle:
    def __init__(self, log: logging.Logger, level: int, every_s: float = LOG_EVERY_S) -> None:
        self._log = log
        self._level = level
        self._every_s = every_s
        self._last: float | None = None
        self._count = 0

    def hit(self, now: float, message: str, *args: object) -> None:
        """Count one occurrence at ``now`` (monotonic seconds); log it unless one was logged recently."""
        self._count += 1
        if self._last is not None and now - self._last < self._every_s:
            return
        self._log.log(self._level, "%s (%d time(s) since the last report)", message % args, self._count)
        self._last, self._count = now, 0
