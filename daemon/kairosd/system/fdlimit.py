"""The daemon's file descriptor budget: raise RLIMIT_NOFILE's soft limit, and fit the client limits under it.

Every client connection holds a descriptor (three while a request runs: the
socket and a hang-up watch), and so do the store, the ledgers, the logs and
each running child's pipes. The usual soft limit is 1,024, while the hard limit
is often far higher: kairosd uses epoll, never select(), so it raises the soft
limit to the hard one (capped at :data:`SOFT_TARGET`, because children inherit it
and some programs loop over every possible descriptor). What is left after
:data:`RESERVED` for everything else bounds the connections.

Must not import anything from kairosd above the core.
"""

from __future__ import annotations

import logging
import resource
from typing import Final

log = logging.getLogger(__name__)

SOFT_TARGET: Final = 65536
RESERVED: Final = 256  # the store, ledgers, logs, children's pipes, hook runs
PER_CONNECTION: Final = 3
MIN_CONNECTIONS: Final = 8


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE towards the hard limit; returns the soft limit in effect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = SOFT_TARGET if hard == resource.RLIM_INFINITY else min(hard, SOFT_TARGET)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.info("could not raise the open files limit from %d to %d: %s", soft, target, exc)
            return soft
        log.debug("raised the open files limit from %d to %d", soft, target)
        return target
    return SOFT_TARGET if soft == resource.RLIM_INFINITY else soft


def fit_connections(max_connections: int, max_streams: int, open_files: int) -> tuple[int, int]:
    """The connection and stream limits, lowered (with a warning) to what ``open_files`` descriptors allow."""
    budget = max(MIN_CONNECTIONS, (open_files - RESERVED) // PER_CONNECTION)
    if max_connections <= budget:
        return max_connections, min(max_streams, max_connections)
    log.warning(
        "limits.max_connections = %d needs more descriptors than the limit of %d allows; serving at most %d "
        "(raise LimitNOFILE= in the unit or ulimit -n)",
        max_connections,
        open_files,
        budget,
    )
    return budget, min(max_streams, budget)
