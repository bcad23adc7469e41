"""``json.loads`` and ``json.dumps`` for the CLI's hot paths, straight from CPython's C accelerator.

The json package compiles six regular expressions when it is imported, which its C scanner and
encoder never use, and the Stop hook and ``kairos list`` parse JSON on every call
(docs/performance.md). This module builds the same scanner and encoder json builds, from ``_json``, and gives
the same results: :func:`loads` is ``json.loads`` and :func:`dumps` is ``json.dumps`` with its
defaults (``compact=True``: with ``separators=(",", ":")``). Where ``_json`` is missing or takes
other arguments (another Python), and for input json would decode specially (a byte order mark,
UTF-16 or UTF-32), it hands over to the json package. Errors are json's (``ValueError``,
``TypeError``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"
_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (and UTF-32 LE)


class _Context:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``, at json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan: Callable[[str, int], tuple[Any, int]] | None = None
_make_encoder: Callable[..., Callable[[Any, int], Any]] | None = None
_escape: Callable[[str], str] | None = None
try:
    import _json

    _scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # it reads these attributes only
    _escape = _json.encode_basestring_ascii
    _make_encoder = _json.make_encoder
    _make_encoder({}, _not_serializable, _escape, None, ": ", ", ", False, False, True)  # takes json's arguments
except (ImportError, AttributeError, TypeError):  # not CPython, or another _json: the json package does it all
    _scan, _escape, _make_encoder = None, None, None


def loads(data: str | bytes) -> Any:
    """``json.loads(data)``."""
    if isinstance(data, bytes | bytearray):
        if _scan is None or data[:2] in _BOMS or data[:3] == b"\xef\xbb\xbf" or b"\x00" in data[:4]:
            return _json_package().loads(data)  # json strips a BOM, detects UTF-16 and UTF-32 (a NUL byte)
        text = data.decode("utf-8", "surrogatepass")
    else:
        text = data
    if _scan is None or text.startswith("\ufeff"):
        return _json_package().loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        return _json_package().loads(text)  # raises json's "Expecting value" error
    if text[end:].strip(_WHITESPACE):
        return _json_package().loads(text)  # raises json's "Extra data" error
    return value


def dumps(value: Any, *, compact: bool = False) -> str:
    """``json.dumps(value)``, or with ``compact`` ``json.dumps(value, separators=(",", ":"))``."""
    if _escape is None or _make_encoder is None:
        return str(_json_package().dumps(value, separators=(",", ":") if compact else None))
    if isinstance(value, str):
        return _escape(value)
    # A new encoder each time, as json makes one: its markers (for cycles) are left dirty by an error.
    key_separator, item_separator = (":", ",") if compact else (": ", ", ")
    encode = _make_encoder({}, _not_serializable, _escape, None, key_separator, item_separator, False, False, True)
    return "".join(encode(value, 0))


def _json_package() -> Any:
    import json

    return json
