"""Where kairos keeps its files.

Defaults follow the XDG base directories through platformdirs (so
``XDG_STATE_HOME``, ``XDG_RUNTIME_DIR`` and friends are honoured).
``KAIROS_HOME`` overrides every path at once, for tests and for users who want
everything in one folder:

    $KAIROS_HOME/state    scheduled_tasks.json, its lock, ledgers
    $KAIROS_HOME/run      the daemon's socket
    $KAIROS_HOME/data     inboxes, run output, context boards
    $KAIROS_HOME/config   config.toml

Reads only the environment; creating folders is left to the adapters that
need them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP = "kairos"
STORE_NAME = "scheduled_tasks.json"
LOCK_NAME = "scheduled_tasks.lock"
SOCKET_NAME = "kairosd.sock"


@dataclass(frozen=True)
class Paths:
    state_dir: Path
    runtime_dir: Path
    data_dir: Path
    config_dir: Path

    @property
    def store(self) -> Path:
        return self.state_dir / STORE_NAME

    @property
    def lock(self) -> Path:
        return self.state_dir / LOCK_NAME

    @property
    def socket(self) -> Path:
        return self.runtime_dir / SOCKET_NAME

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Paths:
        env = os.environ if environ is None else environ
        home = env.get("KAIROS_HOME")
        if home:
            root = Path(home).expanduser().absolute()
            return cls(root / "state", root / "run", root / "data", root / "config")
        if environ is not None:
            # platformdirs reads os.environ itself; honour an explicit mapping too.
            return _from_mapping(env)
        return cls(
            Path(platformdirs.user_state_dir(APP)),
            Path(platformdirs.user_runtime_dir(APP)),
            Path(platformdirs.user_data_dir(APP)),
            Path(platformdirs.user_config_dir(APP)),
        )


def _from_mapping(env: Mapping[str, str]) -> Paths:
    user_home = Path(env.get("HOME", str(Path.home())))

    def xdg(var: str, default: Path) -> Path:
        value = env.get(var, "").strip()
        return Path(value) if value else default

    runtime_root = xdg("XDG_RUNTIME_DIR", Path(f"/run/user/{os.getuid()}"))
    return Paths(
        xdg("XDG_STATE_HOME", user_home / ".local" / "state") / APP,
        runtime_root / APP,
        xdg("XDG_DATA_HOME", user_home / ".local" / "share") / APP,
        xdg("XDG_CONFIG_HOME", user_home / ".config") / APP,
    )
