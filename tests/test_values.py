"""Issue 27, finding 6: numbers in the environment and in query strings are ASCII digits, finite.

``str.isdigit``, ``int`` and ``float`` all read Arabic-Indic (``"٣"``) or fullwidth
(``"３"``) digits, and ``float`` reads ``"inf"``, ``"nan"`` and ``"1e999"``.
"""

from __future__ import annotations

import pytest

from kairosd.api.requests import query_number
from kairosd.app.wiring import _int_env
from kairosd.core.errors import UsageError


@pytest.mark.parametrize("raw", ["\u0663", "\uff13", "inf", "nan", "1e999", "-Infinity"])
def test_a_query_number_is_finite_and_ascii(raw: str) -> None:
    with pytest.raises(UsageError, match="timeout must be a number"):
        query_number(raw, "timeout must be a number")


def test_a_query_number_in_ascii_is_read() -> None:
    assert query_number("2.5", "timeout") == 2.5


@pytest.mark.parametrize("raw", ["\u0663", "\uff13", "\u0661\u0660"])
def test_a_daemon_environment_number_takes_ascii_digits_only(raw: str) -> None:
    with pytest.raises(SystemExit, match="KAIROS_X must be a whole number"):
        _int_env({"KAIROS_X": raw}, "KAIROS_X", 5, 1, 100)
    assert _int_env({"KAIROS_X": "10"}, "KAIROS_X", 5, 1, 100) == 10
