"""Issue 24, item 10: git-style id prefixes, the same rule in every verb (kairosd.core.ids)."""

from __future__ import annotations

import pytest

from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.ids import resolve_prefix

IDS = {"3f2a9c1d", "3f2b0000", "0b1c2d3e"}


def test_a_unique_prefix_of_four_or_more_resolves_in_any_case() -> None:
    assert resolve_prefix("0b1c", IDS) == "0b1c2d3e"
    assert resolve_prefix("0B1C2D", IDS) == "0b1c2d3e"
    assert resolve_prefix("3F2A9C1D", IDS) == "3f2a9c1d"
    assert resolve_prefix("3f2a9", IDS) == "3f2a9c1d"


def test_an_ambiguous_prefix_names_every_match() -> None:
    with pytest.raises(UsageError, match=r"task id prefix '3f2' is too short"):
        resolve_prefix("3f2", IDS)
    with pytest.raises(UsageError, match=r"run id prefix '3F2A' is ambiguous: matches 3f2a0000, 3f2a9c1d"):
        resolve_prefix("3F2A", IDS | {"3f2a0000"}, "run")


def test_no_match_says_no_task_starts_with_it() -> None:
    with pytest.raises(NotFoundError, match=r"^no task starts with 'dead' \(see 'kairos list'\)$"):
        resolve_prefix("dead", IDS, hint=" (see 'kairos list')")
    with pytest.raises(NotFoundError, match="no board starts with 'zz'"):
        resolve_prefix("zz", IDS, "board")  # too short but matching nothing: not found, not "too short"
