"""``kairos.cjson`` is ``json.loads`` and ``json.dumps``, built from ``_json`` so the hot paths skip json's import.

Same values, same text, same errors, for anything JSON can carry and for input json decodes specially.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos import cjson

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (json round-trips it)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(VALUES)
def test_dumps_writes_what_json_writes(value):
    assert cjson.dumps(value) == json.dumps(value)
    assert cjson.dumps(value, compact=True) == json.dumps(value, separators=(",", ":"))


@given(VALUES, st.sampled_from(["", " ", "\n", " \t\r\n "]))
def test_loads_reads_what_json_reads(value, space):
    text = space + json.dumps(value) + space
    for data in (text, text.encode(), text.encode("utf-16"), text.encode("utf-32"), b"\xef\xbb\xbf" + text.encode()):
        assert _same(cjson.loads(data), json.loads(data))


def test_odd_keys_and_numbers():
    value = {1: "int key", 2.5: "float key", False: None, None: [], "k": [2**70, -0.0, 1e16, 1e-7, float("inf")]}
    assert cjson.dumps(value) == json.dumps(value)
    assert cjson.dumps("café \u2028 \ud800") == json.dumps("café \u2028 \ud800")
    text = '{"a": NaN, "b": -Infinity, "c": 1E400, "d": "\\ud83d\\ude00 \\ud800"}'
    assert _same(cjson.loads(text), json.loads(text))


@pytest.mark.parametrize(
    "text", ["", "   ", "{", '{"a": }', "[1, 2", '{"a": 1} x', "nul", "\ufeff{}", '"\x01"', "[1,]", b"\xff\xff"]
)
def test_bad_input_raises_what_json_raises(text):
    with pytest.raises(ValueError) as expected:  # noqa: PT011 - whichever json raises, cjson must raise
        json.loads(text)
    with pytest.raises(type(expected.value)) as got:
        cjson.loads(text)
    assert str(got.value) == str(expected.value)


def test_what_json_cannot_write_raises_what_json_raises():
    for value in ({"when": object()}, [1, {2}], {(1, 2): 3}):
        with pytest.raises(TypeError) as expected:
            json.dumps(value)
        with pytest.raises(TypeError) as got:
            cjson.dumps(value)
        assert str(got.value) == str(expected.value)
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        cjson.dumps(cycle)


def test_without_the_accelerator_the_json_package_does_it(monkeypatch):
    monkeypatch.setattr(cjson, "_scan", None)
    monkeypatch.setattr(cjson, "_escape", None)
    monkeypatch.setattr(cjson, "_make_encoder", None)
    assert cjson.loads(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert cjson.dumps({"a": [1, "é"]}, compact=True) == '{"a":[1,"\\u00e9"]}'


def test_the_hot_paths_do_not_import_the_json_package():
    import subprocess
    import sys

    code = (
        "import sys\nfrom kairos import cjson\n"
        "cjson.dumps(cjson.loads(b'[1, {\"a\": 2}]'))\nprint('json' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
