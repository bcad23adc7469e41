"""Reading config.toml again while kairosd runs: on SIGHUP, ``kairos daemon reload`` (``POST /v1/reload``)
and the unit's ``ExecReload=``.

What can change live is applied at once; the rest is named as needing a restart, and ``kairos doctor``
keeps saying so until kairosd restarts. Live:

    agents.*, custom.*       agent CLIs and definitions: read at each run, from the settings in effect
    hooks.*                  the lifecycle hook commands (the hook runner subscribes again)
    consolidation.*          every consolidation setting, from the next request on
    webhook.*                the key, allow_non_loopback and timeouts, from the next delivery on
    limits.max_depth         background jobs started from now on
    limits.keep_finished     at the next prune

Everything else (``limits.max_concurrent``, ``kill_grace``, ``max_connections``, ``max_streams``,
``max_sessions``, ``runs_per_task``, ``session_ttl``, ``max_output``, ``agents.codex.idle_wake``; Codex's
idle wake also keeps the binary and env it started with) is sized or bound at start: restart kairosd.

A config that does not load (a typo, a bad value, an unsafe file) changes nothing: the reload reports why
and the settings in effect stay as they were.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kairosd.config import Config, load_config
from kairosd.core.errors import KairosError
from kairosd.system.paths import Paths

log = logging.getLogger("kairosd")

# Sized or bound at start: the run ledger's length, the session store's expiry, the shell's output cap.
RESTART_LIMITS = (
    "max_concurrent", "kill_grace", "max_connections", "max_streams", "max_sessions",
    "runs_per_task", "session_ttl", "max_output",
)  # fmt: skip
LIVE_PREFIXES = (
    "agents.", "custom.", "hooks.", "consolidation.", "webhook.", "limits.max_depth", "limits.keep_finished",
)  # fmt: skip


@dataclass
class LiveSettings:
    """The settings in effect: what kairosd read at start, then at each reload (the live parts of it)."""

    current: Config
    needs_restart: list[str] = field(default_factory=list)  # keys changed in the file, not yet in effect
    appliers: list[Callable[[Config], None]] = field(default_factory=list)  # each part's way to take new settings


def flat(config: Config) -> dict[str, Any]:
    """Every setting as ``section.key`` -> value; secrets by a fingerprint-free marker of whether they changed."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):  # an empty section adds no key: a hook added to it is a live change
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            out[prefix] = value

    walk("", config.model_dump(mode="json"))
    # The dump masks the secret ("**********"): compare the key itself, without showing it anywhere.
    out["webhook.secret"] = config.webhook.secret_bytes()
    return out


def changed_keys(old: Config, new: Config) -> list[str]:
    before, after = flat(old), flat(new)
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


# Under a live prefix, but set up at start: Codex's idle wake (kairosd.sessions) is built once.
RESTART_KEYS = frozenset({"agents.codex.idle_wake"})


def is_live(key: str) -> bool:
    if key in RESTART_KEYS:
        return False
    return any(key == p.rstrip(".") or key.startswith(p) for p in LIVE_PREFIXES)


def reload(live: LiveSettings, paths: Paths, environ: Mapping[str, str]) -> dict[str, Any]:
    """Read the config again and apply what can change live; what happened, as the API answers it."""
    try:
        new = load_config(paths, environ)
    except KairosError as exc:
        log.error("reload: %s; the settings in effect are unchanged", exc.message)
        return {"ok": False, "error": exc.message, "applied": [], "needs_restart": list(live.needs_restart)}
    changed = changed_keys(live.current, new)
    applied = [k for k in changed if is_live(k)]
    if applied:
        # The new settings, except the limits sized at start, which stay as they are in effect.
        kept = {k: getattr(live.current.limits, k) for k in RESTART_LIMITS}
        effective = new.model_copy(update={"limits": new.limits.model_copy(update=kept)})
        for apply in live.appliers:
            apply(effective)
        live.current = effective
    # What the file says and kairosd does not: only a restart applies it (a key changed back drops out).
    pending = live.needs_restart = changed_keys(live.current, new)
    if applied or pending:
        log.info("reloaded the config: applied %s; needs a restart: %s", applied or "nothing", pending or "nothing")
    else:
        log.info("reloaded the config: no change")
    return {"ok": True, "error": None, "applied": applied, "needs_restart": pending}
