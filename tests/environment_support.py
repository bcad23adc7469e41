"""An environment that does not depend on the caller's shell (used by ``tests/conftest.py``).

kairos reads many variables (``KAIROS_*``, Claude Code's kill switch and Stop-hook
cap, ``NO_COLOR``); a developer who has one set, or a CI run inside a kairos task
(``KAIROS_TASK_ID``, ``KAIROS_SPAWNED``), must get the same results as a clean
shell.

The compatibility suite's own settings (``KAIROS_COMPAT_*``, exported by
``scripts/compat``) leave the environment too, so no kairos process or fake agent
ever sees them, but their values are kept: tests/compat reads them through
:func:`suite_setting`. Stripping them outright made ``scripts/compat --latest``
test the pinned versions, ``--capture`` write nothing and the long idle case
impossible to switch on (issue 23).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# Read by kairos besides its own KAIROS_* names.
READ_BY_KAIROS = ("CLAUDE_CODE_DISABLE_CRON", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "NO_COLOR")
# The compat suite's settings (scripts/compat, tests/compat): never read by kairos itself.
SUITE_SETTINGS = (
    "KAIROS_COMPAT",
    "KAIROS_COMPAT_VERSIONS",
    "KAIROS_COMPAT_CACHE",
    "KAIROS_COMPAT_RESULTS",
    "KAIROS_COMPAT_CAPTURE",
    "KAIROS_COMPAT_KEEP",
    "KAIROS_COMPAT_LONG",
    # The stress tier's sizes (tests/sizes_support.py; .ci/run sets KAIROS_TEST_SIZE=full).
    "KAIROS_TEST_SIZE",
    "KAIROS_STORM_KILLS",
    "KAIROS_FUZZ_EXAMPLES",
)
_kept: dict[str, str] = {}


def caller_variables(environ: Mapping[str, str]) -> list[str]:
    """The names in ``environ`` that would make a test depend on the caller's shell."""
    return [name for name in environ if name.startswith("KAIROS_") or name in READ_BY_KAIROS]


def clean_environment() -> None:
    """Remove :func:`caller_variables` from this process (and so from the subprocesses it starts),
    keeping the values of :data:`SUITE_SETTINGS` for :func:`suite_setting`."""
    for name in caller_variables(os.environ):
        value = os.environ.pop(name)
        if name in SUITE_SETTINGS:
            _kept[name] = value


def bytecode_into_the_venv() -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set, write bytecode into the venv's ``pycache`` folder instead
    (``PYTHONPYCACHEPREFIX``), as ``scripts/check`` does for a plain ``pytest`` too: else every xdist
    worker rewrites and compiles each test module from source (~10 s of CPU per worker) and every kairos
    or kairosd process a test starts compiles what it imports. The caller's tree still gets no
    ``__pycache__``. Outside a venv, or with a prefix already chosen, nothing changes."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or sys.pycache_prefix or sys.prefix == sys.base_prefix:
        return
    prefix = os.path.join(sys.prefix, "pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    # This process too: the test modules are imported (and rewritten by pytest) after the conftest.
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


def suite_setting(name: str) -> str | None:
    """The compat suite's setting ``name`` as the caller gave it: kept by :func:`clean_environment`,
    else still in the environment (``scripts/compat`` imports ``compat.clis`` without the conftest)."""
    if name not in SUITE_SETTINGS:
        raise KeyError(f"{name} is not one of the test suite's own settings")
    return _kept[name] if name in _kept else os.environ.get(name)
