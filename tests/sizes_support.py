"""How big the large runs are: small by default, the full size when ``KAIROS_TEST_SIZE=full``.

The stress tier (crash storm, fuzzers) and the large property runs of the other tiers (cron
against cronsim, time jumps, racing starts) read their counts here. ``scripts/check`` by default
runs them small, so the gate stays fast; ``.ci/run`` exports ``KAIROS_TEST_SIZE=full`` for the gate
and for the stress tier after it, and gets the sizes the README reports. The small sizes exercise the
same code paths, only fewer times.

The variables start with ``KAIROS_``, which conftest removes from the environment before any test
runs; :func:`environment_support.suite_setting` keeps their values for this module.
"""

from __future__ import annotations

from environment_support import suite_setting


def full_size() -> bool:
    """Whether this run asked for the full sizes (``KAIROS_TEST_SIZE=full``)."""
    return suite_setting("KAIROS_TEST_SIZE") == "full"


def sized(full: int, small: int, override: str | None = None) -> int:
    """``full`` in a full-size run, else ``small``; the suite setting ``override`` (a count) wins over both."""
    given = suite_setting(override) if override else None
    if given:
        return int(given)
    return full if full_size() else small
