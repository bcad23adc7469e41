"""The registry's limits: concurrency, depth, kill grace, turn timeout, how many finished records to keep.

Each comes from, in order: kairosd's environment (``KAIROS_MAX_CONCURRENT``,
``KAIROS_MAX_DEPTH``), the ``[limits]`` table of the user config (as a plain
mapping, so this module does not depend on the config classes), the default.
A bad value is a :class:`~kairosd.core.errors.UsageError` naming where it came from.

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kairosd.core import defaults
from kairosd.core.errors import UsageError

MAX_CONCURRENT_CAP = 256


@dataclass(frozen=True)
class RegistryLimits:
    max_concurrent: int = defaults.MAX_CONCURRENT  # turns running at once; the rest wait in a FIFO queue
    max_depth: int = defaults.MAX_DEPTH  # a top-level task has depth 0, its child 1, ...; deeper starts are refused
    kill_grace_s: float = defaults.KILL_GRACE_S  # SIGTERM to SIGKILL
    turn_timeout_s: float = defaults.TURN_TIMEOUT_S  # default per turn; a start may ask for another
    keep_finished: int = defaults.KEEP_FINISHED  # terminal records kept (oldest are pruned at start-up)


# name -> (environment variable or None, low, high, type)
_FIELDS: dict[str, tuple[str | None, float, float, type]] = {
    "max_concurrent": ("KAIROS_MAX_CONCURRENT", 1, MAX_CONCURRENT_CAP, int),
    "max_depth": ("KAIROS_MAX_DEPTH", 0, 64, int),
    "kill_grace_s": (None, 0, 600, float),  # the config calls it kill_grace
    "turn_timeout_s": (None, 1, 7 * 86400, float),
    "keep_finished": (None, 1, 1_000_000, int),
}


def resolve_limits(config: Mapping[str, Any] | None, environ: Mapping[str, str]) -> RegistryLimits:
    """Limits from the environment, then ``config`` (the ``[limits]`` table), then the defaults.

    Keys of ``config`` this module does not know are ignored (they belong to others, e.g. the scheduler).
    """
    values: dict[str, Any] = {}
    for name, (var, low, high, kind) in _FIELDS.items():
        raw: Any = None
        where = ""
        if var is not None and environ.get(var, "").strip():
            raw, where = environ[var].strip(), var
        elif config is not None and _configured(config, name) is not None:
            raw, where = _configured(config, name), f"[limits] {name}"
        if raw is None:
            continue
        values[name] = _number(raw, where, low, high, kind)
    return RegistryLimits(**values)


def _configured(config: Mapping[str, Any], name: str) -> Any:
    """``name`` in the config table, also under its config-file spelling without ``_s``."""
    value = config.get(name)
    if value is None and name.endswith("_s"):
        value = config.get(name[:-2])
    return value


def _number(raw: Any, where: str, low: float, high: float, kind: type) -> int | float:
    what = "a whole number" if kind is int else "a number"
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = int(raw) if kind is int and not isinstance(raw, float) else float(raw)
        if kind is int and value != int(value):
            raise ValueError
    except (TypeError, ValueError):
        raise UsageError(f"{where} must be {what} from {low:g} to {high:g}, not {raw!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{where} must be {what} from {low:g} to {high:g}, not {raw!r}")
    return int(value) if kind is int else float(value)
