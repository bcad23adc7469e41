"""Where kairos keeps its files.

Defaults follow the XDG base directories (``XDG_STATE_HOME``, ``XDG_DATA_HOME``,
``XDG_CONFIG_HOME``, ``XDG_RUNTIME_DIR``; a relative value is ignored, as the
spec says). This is the one place that resolves them: the daemon and the CLI
both ask it, so they always agree on where the socket and the store are (no
platformdirs, whose runtime-folder fallback depends on its version and on the
folder's mode).
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
import stat  # loaded by os already: free on the CLI's hot path
from collections.abc import Mapping

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the CLI does not import typing (docs/performance.md)
if TYPE_CHECKING:
    # Imported where used: the CLI reaches socket_path() without paying for pathlib.
    from pathlib import Path

APP = "kairos"
STORE_NAME = "scheduled_tasks.json"
LOCK_NAME = "scheduled_tasks.lock"
SOCKET_NAME = "kairosd.sock"
# The runtime folders tried without XDG_RUNTIME_DIR ({uid} filled in); tests point them elsewhere.
RUN_USER_DIR = "/run/user/{uid}"
SHARED_RUNTIME_DIR = "/tmp/runtime-{uid}"  # noqa: S108 (used only when it is this user's own; see runtime_root)


class Paths:
    # A plain class, not a dataclass: this module is imported on the CLI's hot
    # path, and dataclasses pulls in inspect (docs/performance.md).
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
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Paths:
        from pathlib import Path

        env = os.environ if environ is None else environ
        home = env.get("KAIROS_HOME")
        if home:
            root = Path(home).expanduser().absolute()
            return cls(root / "state", root / "run", root / "data", root / "config")
        user_home = Path(env.get("HOME") or Path.home())

        def xdg(var: str, default: Path) -> Path:
            value = env.get(var, "").strip()
            # The XDG spec: a relative value is invalid and ignored.
            return Path(value) if os.path.isabs(value) else default

        return cls(
            xdg("XDG_STATE_HOME", user_home / ".local" / "state") / APP,  # the same as _state_home()
            Path(runtime_root(env)) / APP,
            xdg("XDG_DATA_HOME", user_home / ".local" / "share") / APP,
            xdg("XDG_CONFIG_HOME", user_home / ".config") / APP,
        )


def runtime_root(environ: Mapping[str, str] | None = None) -> str:
    """The user's runtime folder, which holds ``kairos/kairosd.sock``: one answer for the daemon and the CLI.

    ``$XDG_RUNTIME_DIR`` when it is an absolute path, whatever its mode: kairos
    keeps its socket in its own 0700 ``kairos`` folder inside it, and kairosd
    refuses to start when that folder or ``$XDG_RUNTIME_DIR`` is not safe
    (:mod:`kairosd.system.trust`), so the two sides never look in different places.
    Without it ``/run/user/<uid>`` if that folder exists, else ``/tmp/runtime-<uid>``
    when that is this user's own folder (not a link, not writable by others) or
    does not exist yet. Anyone can create that name in /tmp first, to keep kairosd
    from starting; then the runtime folder is ``<state home>/kairos/runtime``
    instead (also while a socket is there, so the daemon and the CLI agree when
    the stranger's folder is gone again).
    """
    env = os.environ if environ is None else environ
    value = env.get("XDG_RUNTIME_DIR", "").strip()
    if os.path.isabs(value):
        return value
    uid = os.getuid()
    default = RUN_USER_DIR.format(uid=uid)
    if os.path.isdir(default):
        return default
    shared = SHARED_RUNTIME_DIR.format(uid=uid)
    fallback = os.path.join(_state_home(env), APP, "runtime")
    if _is_own_folder(shared, uid):
        return shared
    if not os.path.lexists(shared) and not os.path.lexists(os.path.join(fallback, APP, SOCKET_NAME)):
        return shared  # kairosd creates it, 0700
    return fallback


def _state_home(env: Mapping[str, str]) -> str:
    value = env.get("XDG_STATE_HOME", "").strip()
    if os.path.isabs(value):
        return value
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")


def _is_own_folder(path: str, uid: int) -> bool:
    """A real folder (not a link) of ``uid`` that nobody else can write to."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o022


def socket_path(environ: Mapping[str, str] | None = None) -> str:
    """The daemon's socket, found without pathlib (the CLI's hot path); the same as ``Paths.from_env().socket``."""
    env = os.environ if environ is None else environ
    home = env.get("KAIROS_HOME")
    if home:
        return os.path.join(os.path.abspath(os.path.expanduser(home)), "run", SOCKET_NAME)
    return os.path.join(runtime_root(env), APP, SOCKET_NAME)
