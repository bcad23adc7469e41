"""Which way a consolidation run goes: the rem-agent through an agent CLI, or offline; and with
which model.

``[consolidation] mode``:

- ``auto`` (the default): agent mode through the CLI whose session ended, when ``kairos integrate``
  has set that CLI up (its user-level hooks file, opencode's kairos plugin, holds kairos'
  session-end hook: what ``integrate`` writes and ``integrate --uninstall`` removes) and its binary
  is found; else offline.
- ``agent``: agent mode whatever the hooks say (through the session's CLI if it is a built-in one,
  else the CLI the rem-agent definition names).
- ``offline``: never an LLM.

Either way ``max_agent_runs_per_day`` agent runs a day (all projects together, counted in
``<state dir>/consolidation/agent-runs.json``; the day is the user's) are the most; past it the
run is offline, and its result says so.

The model is ``[consolidation] models.<cli>``, else the definition's ``model:``, else
:data:`DEFAULT_MODELS` (a cheap one per CLI: consolidation reads a session's typed turns and
answers a few lines; it needs no large model).

Blocking file reads (the hooks file, bounded; the day's count under a flock). Runs in the
detached worker. Must not import the registry, the daemon or the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kairosd.system.atomic import write_atomic
from kairosd.system.boundedread import read_capped

# Cheap models per CLI (the CLI's own name for it). opencode's models depend on the provider the
# user configured, so it keeps the user's own default.
DEFAULT_MODELS: dict[str, str | None] = {
    "claude": "haiku",
    "codex": "gpt-5.1-codex-mini",
    "gemini": "gemini-2.5-flash-lite",
    "copilot": "gpt-5-mini",
    "opencode": None,
}
# Where `kairos integrate AGENT` writes each CLI's hooks: (folder's env override, folder, file in it),
# and the session-end event's name in that CLI (see kairos.integrations.settings.agents).
HOOK_FILES: dict[str, tuple[str | None, str, str, str]] = {
    "claude": (None, ".claude", "settings.json", "SessionEnd"),
    "copilot": ("COPILOT_HOME", ".copilot", "hooks/kairos.json", "sessionEnd"),
    "codex": ("CODEX_HOME", ".codex", "hooks.json", "SessionEnd"),
    "gemini": (None, ".gemini", "settings.json", "SessionEnd"),
    # opencode has no hooks file: kairos' plugin runs `kairos hook opencode SessionEnd` at session end.
    "opencode": ("XDG_CONFIG_HOME", ".config", "opencode/plugin/kairos.js", "SessionEnd"),
}
MAX_HOOKS_FILE = 4 << 20
COUNT_FILE = "agent-runs.json"


@dataclass(frozen=True)
class Choice:
    """Agent mode through ``cli`` (with ``model``), or offline (``cli`` None); ``reason`` says why."""

    cli: str | None
    model: str | None
    reason: str


def hooks_file(agent: str, environ: Mapping[str, str]) -> Path | None:
    """The file ``kairos integrate AGENT`` writes its hooks into; None for a CLI it does not integrate."""
    spec = HOOK_FILES.get(agent)
    home = environ.get("HOME", "")
    if spec is None:
        return None
    env_var, folder, name, _ = spec
    override = environ.get(env_var, "").strip() if env_var else ""
    if override:
        return Path(override).expanduser() / name
    return Path(home) / folder / name if home else None


def integrated(agent: str, environ: Mapping[str, str]) -> tuple[bool, str]:
    """Whether ``kairos integrate AGENT`` set the CLI up (its session-end hook is there), and where we looked."""
    path = hooks_file(agent, environ)
    if path is None:
        return False, f"kairos integrate does not set up {agent!r}"
    event = HOOK_FILES[agent][3]
    try:
        text = read_capped(path, MAX_HOOKS_FILE).decode("utf-8", "replace")
    except OSError:
        return False, f"{agent} is not integrated (no {path}; run: kairos integrate {agent})"
    if re.search(rf"\bhook {re.escape(agent)} {event}\b", text) is None:
        return False, f"{agent} is not integrated (no kairos {event} hook in {path}; run: kairos integrate {agent})"
    return True, f"{agent} is integrated ({path})"


def model_for(cli: str, models: Mapping[str, str], definition_model: str | None) -> str | None:
    """The config's model for ``cli``, else the definition's, else the cheap default."""
    return models.get(cli) or definition_model or DEFAULT_MODELS.get(cli)


def found(binary: str, environ: Mapping[str, str]) -> str | None:
    """Where ``binary`` (a name on PATH or a path) is, if it is an executable."""
    return shutil.which(binary, path=environ.get("PATH", os.defpath))


# ---- the day's count ---------------------------------------------------------------------------


def take_run(folder: Path, day: str, cap: int) -> tuple[bool, int]:
    """Count one agent run on ``day`` unless ``cap`` runs were counted already: (taken, runs before)."""
    if cap <= 0:
        return False, 0
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / COUNT_FILE
    fd = os.open(folder / f"{COUNT_FILE}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for a read and a write: milliseconds
        count = 0
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data = json.loads(path.read_bytes())
            if data.get("day") == day and isinstance(data.get("runs"), int):
                count = max(0, data["runs"])
        if count >= cap:
            return False, count
        write_atomic(path, json.dumps({"day": day, "runs": count + 1}).encode() + b"\n", mode=0o600)
        return True, count
    finally:
        os.close(fd)
