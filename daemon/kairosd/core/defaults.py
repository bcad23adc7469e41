"""The one set of defaults for the settings more than one part of kairosd uses.

The ``[limits]`` table of the config, the scheduler, the shell target and the
background task registry each used to carry its own default, and they disagreed
(a kill grace of 10 s in one and 5 s in another; 8 and 4 deliveries at once).
Each now takes its default from here, and the composition root passes the
effective value from the config.

A leaf: must not import anything from kairosd.
"""

from __future__ import annotations

MAX_CONCURRENT = 4  # deliveries (and background agent turns) running at once
MAX_DEPTH = 5  # background tasks started from inside tasks: deepest level allowed
KILL_GRACE_S = 10.0  # SIGTERM to SIGKILL, for every process kairos stops
TURN_TIMEOUT_S = 3600.0  # one background agent turn, unless the start asks for another
KEEP_FINISHED = 1000  # finished background task records kept
