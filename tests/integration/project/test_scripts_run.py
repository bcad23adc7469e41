"""``scripts/run``, the newcomer's first command (issue 15, items 3 and 13)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths_support import REPO
from session_support import remove_home, short_home

ROOT = REPO


def _copy(tmp_path: Path) -> Path:
    """The repository's scripts/run and pyproject.toml in a folder of their own."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "run", tmp_path / "scripts" / "run")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_an_old_python_is_refused_up_front(tmp_path):
    repo = _copy(tmp_path)
    old = tmp_path / "python3.10"
    old.write_text(
        '#!/bin/sh\nif [ "$1" = -c ]; then case "$2" in *version_info*\'>=\'*) exit 1;; esac; echo 3.10.12; fi\n'
    )
    old.chmod(0o755)
    done = subprocess.run(
        ["bash", "scripts/run"], cwd=repo, env={**os.environ, "PYTHON": str(old)}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "kairos needs Python 3.11 or newer" in done.stderr
    assert not (repo / ".venv").exists()  # nothing half-made to trip over next time


@pytest.mark.slow
def test_run_twice_leaves_no_recurring_task(tmp_path):
    """The demo's recurring example is removed again; the venv is reused (no pip: the stamp is fresh)."""
    repo = _copy(tmp_path)
    venv = Path(sys.prefix)
    (repo / ".venv").mkdir()
    for name in ("bin", "lib", "pyvenv.cfg"):
        (repo / ".venv" / name).symlink_to(venv / name)
    (repo / ".venv" / ".kairos-installed-run").touch()
    home = short_home("kr")
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    try:
        for _ in range(2):
            done = subprocess.run(["bash", "scripts/run"], cwd=repo, env=env, capture_output=True, text=True,
                                  timeout=120, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "the demo leaves no recurring work behind" in done.stdout
            assert "installing kairos" not in done.stdout
        listed = subprocess.run([str(venv / "bin" / "kairos"), "list", "--json"], env=env, capture_output=True,
                                text=True, timeout=60, check=True)  # fmt: skip
        assert [t for t in json.loads(listed.stdout)["tasks"] if t["recurring"]] == []
    finally:
        subprocess.run([str(venv / "bin" / "kairos"), "daemon", "stop"], env=env, capture_output=True, timeout=60,
                       check=False)  # fmt: skip
        remove_home(home)
