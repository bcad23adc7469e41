"""An environment that does not depend on the caller's shell (used by ``tests/conftest.py``).

kairos reads many variables (``KAIROS_*``, Claude Code's kill switch and Stop-hook
cap, ``NO_COLOR``); a developer who has one set, or a CI run inside a kairos task
(``KAIROS_TASK_ID``, ``KAIROS_SPAWNED``), must get the same results as a clean
shell.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Read by kairos besides its own KAIROS_* names.
READ_BY_KAIROS = ("CLAUDE_CODE_DISABLE_CRON", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "NO_COLOR")


def caller_variables(environ: Mapping[str, str]) -> list[str]:
    """The names in ``environ`` that would make a test depend on the caller's shell."""
    return [name for name in environ if name.startswith("KAIROS_") or name in READ_BY_KAIROS]


def clean_environment() -> None:
    """Remove :func:`caller_variables` from this process (and so from the subprocesses it starts)."""
    for name in caller_variables(os.environ):
        del os.environ[name]
