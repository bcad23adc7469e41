"""What every test shares: an environment that does not depend on the caller's shell, and a short folder.

The caller's ``KAIROS_*`` variables (and the others kairos reads) are removed at
import time, before any test module reads them, and ``PYTHONDONTWRITEBYTECODE`` becomes a
bytecode cache in the venv; see :mod:`environment_support`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from environment_support import bytecode_into_the_venv, clean_environment

clean_environment()
bytecode_into_the_venv()

# The reliability tests' fixtures (home, daemon, compiled), wherever their tier put them.
pytest_plugins = ["reliability_fixtures"]

TESTS = Path(__file__).resolve().parent
# The tiers, each a folder of tests/ (scripts/tiers.py puts each test file in one) and a marker of
# the same name: scripts/check's default gate selects unit and integration (.ci/run runs the others).
TIERS = ("unit", "integration", "stress", "packaging", "compat")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its folder's tier, so ``-m`` selects by tier whatever the file says."""
    tiers: dict[Path, str | None] = {}  # per file: resolve() is a few syscalls, and ~4,000 tests share ~300 files
    for item in items:
        if item.path not in tiers:
            try:
                tiers[item.path] = item.path.resolve().relative_to(TESTS).parts[0]
            except ValueError:  # a test outside tests/ (given on the command line)
                tiers[item.path] = None
        tier = tiers[item.path]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A fresh folder right under /tmp, removed afterwards: pytest's tmp_path can be too long for a
    socket path (AF_UNIX allows 107 bytes), and its parents are not the plain /tmp some checks expect."""
    path = Path(tempfile.mkdtemp(dir="/tmp", prefix="k"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kairos_home(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``short_dir`` as this process's KAIROS_HOME, outside any kairos task (a CLI test's home)."""
    monkeypatch.setenv("KAIROS_HOME", str(short_dir))
    for var in ("KAIROS_TASK_ID", "KAIROS_TASK_DEPTH", "KAIROS_SPAWNED", "KAIROS_CONSOLIDATE"):
        monkeypatch.delenv(var, raising=False)
    return short_dir
