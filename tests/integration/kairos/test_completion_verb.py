"""``kairos completion SHELL``: the verb prints the script ``generate`` makes from the full parser.

What each script completes: tests/integration/kairos/test_completion.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kairos.app import VERBS, build_parser
from kairos.commands.completion import SHELLS, generate


def test_completion_rejects_an_unknown_shell():
    """`kairos completion tcsh` is a usage error (exit 2)."""
    proc = subprocess.run(
        [sys.executable, "-m", "kairos", "completion", "tcsh"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_kairos_completion_prints_the_script_for_the_shell(shell):
    """The verb prints what `generate` makes from the full parser, every verb in it."""
    script = _script(shell)
    assert script == generate(shell, build_parser())
    assert all(verb in script for verb in VERBS)


def _script(shell: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "kairos", "completion", shell], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def test_completion_json_wraps_the_same_script():
    """`kairos completion bash --json` prints the shell and the very script the plain form prints."""
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "kairos", "completion", "bash", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    assert doc == {"shell": "bash", "script": _script("bash")}
