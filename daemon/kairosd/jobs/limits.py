"""The registry's limits: concurrency, depth, kill grace, turn timeout, finished records kept, output per turn.

They come from the loaded config's ``[limits]`` table (:func:`kairosd.config.load_config` has
already applied ``KAIROS_MAX_CONCURRENT`` and ``KAIROS_MAX_DEPTH`` and checked every range: one
loader, one set of defaults in :mod:`kairosd.core.defaults`), or are the defaults when there is none.

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kairosd.core import defaults

if TYPE_CHECKING:
    from kairosd.config import Limits


@dataclass(frozen=True)
class RegistryLimits:
    max_concurrent: int = defaults.MAX_CONCURRENT  # turns running at once; the rest wait in a FIFO queue
    max_depth: int = defaults.MAX_DEPTH  # a top-level task has depth 0, its child 1, ...; deeper starts are refused
    kill_grace_s: float = defaults.KILL_GRACE_S  # SIGTERM to SIGKILL
    turn_timeout_s: float = defaults.TURN_TIMEOUT_S  # default per turn; a start may ask for another
    keep_finished: int = defaults.KEEP_FINISHED  # terminal records kept (oldest are pruned at start-up)
    max_output: int = defaults.MAX_OUTPUT_BYTES  # output bytes logged per turn; the rest is counted, not kept

    @classmethod
    def from_config(cls, limits: Limits | None) -> RegistryLimits:
        """The registry's share of ``[limits]`` (already checked and with the environment applied)."""
        if limits is None:
            return cls()
        return cls(
            max_concurrent=limits.max_concurrent,
            max_depth=limits.max_depth,
            kill_grace_s=limits.kill_grace,
            keep_finished=limits.keep_finished,
            max_output=limits.max_output,
        )
