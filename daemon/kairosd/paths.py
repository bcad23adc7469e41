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

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the CLI ~8 ms
if TYPE_CHECKING:
    # Imported where used: the CLI reaches socket_path() without paying for pathlib.
    from pathlib import Path

APP = "kairos"
STORE_NAME = "scheduled_tasks.json"
LOCK_NAME = "scheduled_tasks.lock"
SOCKET_NAME = "kairosd.sock"


class Paths:
    # A plain class, not a dataclass: this module is imported on the CLI's hot
    # path, and dataclasses pulls in inspect (~9 ms).
    __slots__ = ("config_dir", "data_dir", "runtime_dir", "state_dir")

    def __init__(self, state_dir: Path, runtime_dir: Path, data_dir: Path, config_dir: Path) -> None:
        self.state_dir = state_dir
        self.runtime_dir = runtime_dir
        self.data_dir = data_dir
        self.config_dir = config_dir

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Paths) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Paths(state_dir={self.state_dir!r}, runtime_dir={self.runtime_dir!r}, data_dir={self.data_dir!r})"

    def _key(self) -> tuple[Path, Path, Path, Path]:
        return (self.state_dir, self.runtime_dir, self.data_dir, self.config_dir)

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
        from pathlib import Path

        env = os.environ if environ is None else environ
        home = env.get("KAIROS_HOME")
        if home:
            root = Path(home).expanduser().absolute()
            return cls(root / "state", root / "run", root / "data", root / "config")
        if environ is not None:
            # platformdirs reads os.environ itself; honour an explicit mapping too.
            return _from_mapping(env)
        import warnings

        import platformdirs  # lazily: the CLI's socket lookup below does not need it

        with warnings.catch_warnings():
            # Without XDG_RUNTIME_DIR platformdirs warns and falls back to a private
            # folder in /tmp; that fallback is fine for us, the warning is noise.
            warnings.simplefilter("ignore")
            runtime = platformdirs.user_runtime_dir(APP)
        return cls(
            Path(platformdirs.user_state_dir(APP)),
            Path(runtime),
            Path(platformdirs.user_data_dir(APP)),
            Path(platformdirs.user_config_dir(APP)),
        )


def _from_mapping(env: Mapping[str, str]) -> Paths:
    from pathlib import Path

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


def socket_path(environ: Mapping[str, str] | None = None) -> str:
    """The daemon's socket, found without platformdirs (the CLI's hot path)."""
    env = os.environ if environ is None else environ
    home = env.get("KAIROS_HOME")
    if home:
        return os.path.join(os.path.abspath(os.path.expanduser(home)), "run", SOCKET_NAME)
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    if runtime:
        return os.path.join(runtime, APP, SOCKET_NAME)
    return str(Paths.from_env(dict(env) if environ is not None else None).socket)
