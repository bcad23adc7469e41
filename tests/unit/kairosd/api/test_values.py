"""Issue 27, finding 6: numbers in the environment and in query strings are ASCII digits, finite.

``str.isdigit``, ``int`` and ``float`` all read Arabic-Indic (``"٣"``) or fullwidth
(``"３"``) digits, and ``float`` reads ``"inf"``, ``"nan"`` and ``"1e999"``.
"""

from __future__ import annotations

import pytest

from kairosd.api.requests import query_number
from kairosd.core.clock import tz_env_problem
from kairosd.core.errors import UsageError


@pytest.mark.parametrize("raw", ["\u0663", "\uff13", "inf", "nan", "1e999", "-Infinity"])
def test_a_query_number_is_finite_and_ascii(raw: str) -> None:
    with pytest.raises(UsageError, match="timeout must be a number"):
        query_number(raw, "timeout must be a number")


def test_a_query_number_in_ascii_is_read() -> None:
    assert query_number("2.5", "timeout") == 2.5


@pytest.mark.parametrize("tz", ["EST5EDT,M3.2.0,M11.1.0", "<+03>-3", ":UTC0"])
def test_a_posix_tz_says_it_cannot_be_used_and_which_zone_is(tmp_path, tz: str) -> None:
    localtime = tmp_path / "localtime"
    localtime.symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    problem = tz_env_problem({"TZ": tz}, localtime)
    assert problem is not None
    assert problem.startswith(f"TZ={tz} is a POSIX rule string, which kairos cannot use")
    assert problem.endswith("kairos uses Europe/Berlin as the local zone instead")


@pytest.mark.parametrize(
    "tz", ["", "America/New_York", ":America/New_York", "/usr/share/zoneinfo/Asia/Tokyo", "EST5EDT"]
)
def test_a_tz_kairos_uses_is_no_problem(tmp_path, tz: str) -> None:
    localtime = tmp_path / "localtime"
    localtime.symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    assert tz_env_problem({"TZ": tz}, localtime) is None


DEEP = '{"k":' + "[" * 3000 + "]" * 3000 + "}"


def test_an_agent_line_nested_thousands_deep_is_not_an_object() -> None:
    """Issue 27, finding 6: RecursionError is not a ValueError, and escaped the agent output reader."""
    from kairosd.agents.common import json_object

    assert json_object(DEEP) is None
    assert json_object('{"k": 1}') == {"k": 1}


def test_a_hook_payload_nested_thousands_deep_is_ignored(monkeypatch) -> None:
    import io
    import sys

    from kairos.integrations import hook

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DEEP.encode())))
    assert hook._read_payload() is None


@pytest.mark.parametrize("raw", ["\u0663" + "\u0660" * 6, "\uff13" + "\uff10" * 6])
def test_the_watchdog_interval_takes_ascii_digits_only(raw: str) -> None:
    from kairosd.system.sdnotify import watchdog_interval_s

    assert watchdog_interval_s({"WATCHDOG_USEC": raw}, pid=1) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "3000000"}, pid=1) == 1.5
