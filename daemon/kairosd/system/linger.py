"""Whether the user lingers: one answer (on, off or unknown, with the reason) for every place that says so.

A systemd user service runs while its user has a login session, or from boot when the user lingers.
``kairos doctor`` and ``kairos systemd install`` both report it, and both ask :func:`linger_state`,
so they cannot disagree. It asks ``loginctl show-user`` (found on the given PATH); without an answer
the state is "unknown" and the reason says why (no loginctl, no session, a failing loginctl).

Imports: the standard library only (the CLI's systemd verb imports this in a broken install too).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LOGINCTL_TIMEOUT_S = 2.0
_OUTPUT_CHARS = 200


@dataclass(frozen=True)
class Linger:
    """``state`` is "on", "off" or "unknown"; ``detail`` says why, or what to do."""

    user: str
    state: str
    detail: str
    loginctl: bool

    @property
    def on(self) -> bool | None:
        return None if self.state == "unknown" else self.state == "on"

    def as_json(self) -> dict[str, Any]:
        return {"loginctl": self.loginctl, "linger": self.on, "state": self.state, "detail": self.detail}


def user_name(env: Mapping[str, str]) -> str:
    """The user whose linger counts: this process's, by uid (``$USER`` may be stale after ``su``)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return env.get("USER") or str(os.getuid())


def linger_state(env: Mapping[str, str], user: str | None = None) -> Linger:
    """Ask ``loginctl`` whether ``user`` (default: this one) lingers."""
    user = user or user_name(env)
    loginctl = shutil.which("loginctl", path=env.get("PATH", os.defpath))
    if loginctl is None:
        return Linger(user, "unknown", "loginctl not found (no systemd?)", loginctl=False)
    try:
        done = subprocess.run(
            [loginctl, "show-user", user, "--property=Linger"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=LOGINCTL_TIMEOUT_S,
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        return Linger(user, "unknown", f"loginctl failed: {exc}", loginctl=True)
    value = done.stdout.strip().partition("=")[2]
    if done.returncode != 0 or value not in ("yes", "no"):
        said = " ".join((done.stderr.strip() or done.stdout.strip()).split())[:_OUTPUT_CHARS]
        # loginctl knows only users with a session or linger: "not logged in or lingering".
        if "not logged in" in said:
            return Linger(user, "unknown", f"no user session for {user} (loginctl: {said})", loginctl=True)
        return Linger(user, "unknown", f"loginctl gave no answer: {said or 'nothing'}", loginctl=True)
    if value == "yes":
        return Linger(user, "on", "kairosd can run while you are logged out", loginctl=True)
    return Linger(
        user, "off", f"a user service stops at logout; enable with: loginctl enable-linger {user}", loginctl=True
    )
