"""What every test shares: an environment that does not depend on the caller's shell.

kairos reads many variables (``KAIROS_*``, Claude Code's kill switch and Stop-hook
cap, ``NO_COLOR``); a developer who has one set, or a CI run inside
a kairos task (``KAIROS_TASK_ID``, ``KAIROS_SPAWNED``), must get the same results
as a clean shell. They are removed here, at import time, before any test module
reads them; subprocesses started with ``{**os.environ, ...}`` inherit the clean
environment. ``KAIROS_WRITE_GOLDEN``, which steers the test run itself, is read
here first (:data:`WRITE_GOLDEN`).
"""

from __future__ import annotations

import os

# Rewrite the golden files of the byte-for-byte tests instead of comparing with them.
WRITE_GOLDEN = os.environ.get("KAIROS_WRITE_GOLDEN") == "1"
# Read by kairos besides its own KAIROS_* names.
READ_BY_KAIROS = ("CLAUDE_CODE_DISABLE_CRON", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "NO_COLOR")


def caller_variables(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The names in ``environ`` that would make a test depend on the caller's shell."""
    return [name for name in environ if name.startswith("KAIROS_") or name in READ_BY_KAIROS]


for _name in caller_variables(os.environ):
    del os.environ[_name]
