"""What every test shares: an environment that does not depend on the caller's shell, and a short folder.

The caller's ``KAIROS_*`` variables (and the others kairos reads) are removed at
import time, before any test module reads them; see :mod:`environment_support`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from environment_support import clean_environment

clean_environment()


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
