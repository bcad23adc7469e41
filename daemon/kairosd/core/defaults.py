"""The one set of defaults for the settings more than one part of kairosd uses.

The ``[limits]`` table of the config, the scheduler, the shell target, the run
ledger and the background job registry take their defaults from here, so they
cannot disagree; the composition root passes each the effective value from the
config (``kairos doctor`` prints them).

A leaf: must not import anything from kairosd.
"""

from __future__ import annotations

MAX_CONCURRENT = 4  # deliveries (and background agent turns) running at once
MAX_DEPTH = 5  # background jobs started from inside tasks: deepest level allowed
KILL_GRACE_S = 10.0  # SIGTERM to SIGKILL, for every process kairos stops
MAX_KILL_GRACE_S = 600.0  # the most [limits] kill_grace may be: a cancel's answer can take this long
TURN_TIMEOUT_S = 3600.0  # one background agent turn, unless the start asks for another
KEEP_FINISHED = 1000  # finished background job records kept
RUNS_PER_TASK = 50  # runs the run ledger keeps per scheduled task (KAIROS_RUNS_PER_TASK)
SESSION_TTL_S = 24 * 3600.0  # a live session not seen by any hook this long expires (KAIROS_SESSION_TTL)
# Client connections kairosd serves at once, and of those the open streams (watch, follow). Well
# below the usual 1,024 descriptors: a connection can hold three while it runs (the socket and a
# hang-up watch), and the store, logs and running children need theirs too.
MAX_CONNECTIONS = 256
MAX_STREAMS = 64
MAX_SESSIONS = 1000  # live agent sessions registered at once; the longest idle expire first past it
MAX_OUTPUT_BYTES = 1 << 20  # output kept per run of a shell target or background job ([limits] max_output)

# The events a [hooks] command can be given (config.toml, kairosd.system.lifecycle). Here, not in lifecycle:
# the config reads them, and the consolidation worker reads the config without running any hook (lifecycle
# imports asyncio and the process runner, ~30 ms of each worker's start).
HOOK_EVENTS = (
    "task_created",
    "task_completed",
    "scheduled_task_fired",
    "scheduled_task_missed",
    "scheduled_task_expired",
)
