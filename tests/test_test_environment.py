"""The suite does not depend on the caller's environment (issue 15, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from environment_support import caller_variables

ROOT = Path(__file__).resolve().parent.parent


def test_no_caller_variable_reaches_a_test():
    assert caller_variables(os.environ) == []


def test_a_kairos_variable_in_the_callers_shell_does_not_fail_the_registry_env_test(tmp_path):
    """registry_support's fake agent dumps every KAIROS_* it sees; the test compares for an exact match."""
    env = {
        **os.environ,
        "KAIROS_SESSION": "from-the-shell",
        "KAIROS_MAX_CONCURRENT": "2",
        "KAIROS_SKIP_SLOW": "1",
        "CLAUDE_CODE_DISABLE_CRON": "1",
    }
    test = "tests/test_registry.py::test_env_markers_and_cwd_reach_the_agent"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
