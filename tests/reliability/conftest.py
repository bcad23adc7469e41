"""Fixtures of the reliability suite (see README, "Reliability")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from reliability_support import Home, precompile


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
