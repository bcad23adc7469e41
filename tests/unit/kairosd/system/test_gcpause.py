"""The cycle collector held off for a herd's pass: pauses nest, and the collector comes back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kairosd.system import gcpause


@pytest.fixture(autouse=True)
def _collector_as_it_was() -> Iterator[None]:
    was = gc.isenabled()
    yield
    while gcpause.paused():
        gcpause.resume()
    (gc.enable if was else gc.disable)()


def test_pauses_nest_and_the_last_one_turns_the_collector_back_on() -> None:
    gc.enable()
    gcpause.pause()
    gcpause.pause()
    assert not gc.isenabled()
    gcpause.resume()
    assert not gc.isenabled()  # one pause is still under way
    gcpause.resume()
    assert gc.isenabled()
    gcpause.resume()  # unmatched: changes nothing
    assert gc.isenabled()
    assert gcpause.paused() == 0


def test_a_collector_that_was_off_stays_off() -> None:
    """kairosd keeps the collector off while it starts; a pass then must not turn it on."""
    gc.disable()
    gcpause.pause()
    gcpause.resume()
    assert not gc.isenabled()
