"""The suite does not depend on the caller's environment (issue 15, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from environment_support import caller_variables

from kairosd.testing import wait_for

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


def test_the_shared_wait_returns_the_first_truthy_value_and_names_what_it_waited_for():
    """kairosd.testing.wait_for: what the suites and the benchmarks poll another process with."""
    answers = iter([None, 0, [], "ready"])
    assert wait_for(lambda: next(answers), "the answer", 5, poll=0) == "ready"
    with pytest.raises(AssertionError, match=r"^timed out after 0\.05s waiting for a file$"):
        wait_for(lambda: None, "a file", 0.05, poll=0.01)
