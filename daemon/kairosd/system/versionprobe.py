"""Ask an executable for its version: ``PATH --version`` with a deadline, first line of its answer.

Used by ``kairos doctor`` (every agent CLI, on kairosd's PATH) and ``kairos integrate`` (the CLI
being integrated, on the shell's PATH), which compare the answer with
:mod:`kairosd.core.agentversions`. A CLI that hangs or fails costs the caller at most ``timeout``.

Imports: the standard library only.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

_OUTPUT_CHARS = 200


def version_of(path: str, env: Mapping[str, str] | None, timeout: float) -> tuple[bool, str]:
    """(answered, the first line it printed or why it did not answer)."""
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=None if env is None else dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"{path} --version did not answer within {timeout:g}s"
    except OSError as exc:
        return False, f"cannot run {path}: {exc.strerror or exc}"
    output = (done.stdout.strip() or done.stderr.strip()).splitlines()
    first = output[0][:_OUTPUT_CHARS] if output else ""
    if done.returncode != 0:
        return False, f"{path} --version exited with {done.returncode}" + (f": {first}" if first else "")
    return True, first or "(no version printed)"
