"""Fixtures of the reliability tests (see README, "Reliability"): a pytest plugin that conftest.py loads.

Those tests now sit in their tiers' folders (scripts/tiers.py), no longer in one folder with its
own conftest; a test module's own fixture of the same name wins over these.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from reliability_support import Here, Home, InProcessDaemon, precompile

from kairosd.testing import FakeClock


@pytest.fixture(scope="session")
def compiled() -> None:
    """Bytecode on disk, so each of the hundreds of kairosd starts does not recompile every module."""
    precompile()


@pytest.fixture
def home(compiled: None) -> Iterator[Home]:
    """A fresh short KAIROS_HOME; every kairosd started in it is killed at teardown."""
    h = Home()
    try:
        yield h
    finally:
        h.cleanup()


@pytest.fixture
def here(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: Any, caplog: Any) -> Here:
    """kairosd's own main in this process, with ``home`` as its KAIROS_HOME (:class:`reliability_support.Here`)."""
    return Here(home, monkeypatch, capsys, caplog)


@pytest.fixture
def daemon() -> Iterator[InProcessDaemon]:
    """The real API, service and scheduler in this process, on a clock nobody moves."""
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="kg"))
    d = InProcessDaemon(root, FakeClock(datetime(2026, 3, 2, 10, tzinfo=UTC)))
    try:
        yield d
    finally:
        d.close()
        shutil.rmtree(root, ignore_errors=True)
