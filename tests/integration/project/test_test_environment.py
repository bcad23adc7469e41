"""The suite does not depend on the caller's environment (issue 15, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from environment_support import caller_variables
from paths_support import REPO, TESTS

from kairosd.testing import wait_for

ROOT = REPO


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
    (where,) = TESTS.rglob("test_registry.py")  # in its tier's folder (scripts/tiers.py)
    test = f"{where.relative_to(REPO)}::test_env_markers_and_cwd_reach_the_agent"
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


def test_the_compat_suites_own_settings_reach_its_fixtures_but_no_kairos_process(tmp_path):
    """Issue 23: the conftest stripped KAIROS_COMPAT_VERSIONS, _CAPTURE, _LONG... with every other KAIROS_*,
    so `scripts/compat --latest` ran the pinned versions. In a real pytest run they reach the compat suite
    (its report header says what it will test), and still leave the environment kairos processes inherit."""
    env = {
        **os.environ,
        "KAIROS_COMPAT_VERSIONS": '{"claude": "9.9.9", "codex": "8.8.8"}',
        "KAIROS_COMPAT_CAPTURE": str(tmp_path / "captures"),
        "KAIROS_COMPAT_RESULTS": str(tmp_path / "results.json"),
        "KAIROS_COMPAT_LONG": "1",
        "KAIROS_COMPAT_KEEP": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "tests/compat"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    header = done.stdout
    assert "compat versions (newest): claude 9.9.9, codex 8.8.8, gemini " in header, header[:2000]
    assert f"compat results: {tmp_path / 'results.json'}" in header
    assert f"compat capture: {tmp_path / 'captures'}; keep sandboxes: on; long idle case: on" in header


def test_the_compat_settings_are_kept_but_taken_out_of_the_environment(monkeypatch):
    import environment_support

    monkeypatch.setenv("KAIROS_COMPAT_LONG", "1")
    monkeypatch.setattr(environment_support, "_kept", {})
    environment_support.clean_environment()
    assert "KAIROS_COMPAT_LONG" not in os.environ
    assert environment_support.suite_setting("KAIROS_COMPAT_LONG") == "1"
    with pytest.raises(KeyError):
        environment_support.suite_setting("KAIROS_HOME")


@pytest.mark.parametrize(("venv", "changed"), [(True, True), (False, False)], ids=["in a venv", "outside a venv"])
def test_no_bytecode_asked_for_becomes_bytecode_in_the_venv(monkeypatch, venv, changed):
    """PYTHONDONTWRITEBYTECODE becomes a cache in the venv, for this process and the ones it starts, as
    scripts/check makes it: else each xdist worker rewrites every test module from source."""
    from environment_support import bytecode_into_the_venv

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "prefix", "/venv")
    monkeypatch.setattr(sys, "base_prefix", "/usr" if venv else "/venv")
    bytecode_into_the_venv()
    if changed:
        assert "PYTHONDONTWRITEBYTECODE" not in os.environ
        assert os.environ["PYTHONPYCACHEPREFIX"] == sys.pycache_prefix == "/venv/pycache"
        assert sys.dont_write_bytecode is False
    else:
        assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"
        assert "PYTHONPYCACHEPREFIX" not in os.environ
        assert (sys.dont_write_bytecode, sys.pycache_prefix) == (True, None)
