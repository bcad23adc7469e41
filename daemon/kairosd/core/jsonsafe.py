"""JSON whose nesting and numbers a file or a client controls, parsed without surprises.

Python's ``json`` recurses once per level (a record nested 3,000 levels deep raises
``RecursionError``), reads ``1e999`` as ``inf`` (which pydantic later writes as
``null``) and takes ``NaN`` and ``Infinity``, which JSON does not have. :func:`loads`
measures the nesting first, with a loop, and then parses in one of two modes:

- **strict** (a request, a Claude file as a whole): a document nested deeper than
  the limit, or holding a number that is not finite, is refused with ``ValueError``
  naming the problem.
- **lenient** (the task store, the items of an import): the document still parses,
  but each container nested too deep and each non-finite number becomes an
  :class:`Odd` in its place, so the caller sets aside only the record that holds
  one (:func:`odd_in`) and every other record loads. An ``Odd`` keeps the original
  text, and writes as that text (``str``), so a record set aside loses nothing.

Pure: no I/O. Must not import anything but the standard library.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any


class Odd:
    """A value kairos cannot keep as parsed: its original JSON ``text`` and why (``reason``)."""

    __slots__ = ("reason", "text")

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Odd({self.text[:40]!r})"


def too_deep(text: str, limit: int) -> list[tuple[int, int]]:
    """The spans (start, end) of the outermost containers that open deeper than ``limit`` levels.

    A loop over the characters (strings skipped), so any depth costs no stack. A
    container left open at the end runs to the end of the text (the parser then
    reports the document as invalid).
    """
    spans: list[tuple[int, int]] = []
    depth, start, in_string, escaped = 0, -1, False, False
    for pos, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth == limit + 1:
                start = pos
        elif ch in "]}":
            if depth == limit + 1 and start >= 0:
                spans.append((start, pos + 1))
                start = -1
            depth -= 1
    if start >= 0:
        spans.append((start, len(text)))
    return spans


def _refuse(text: str, reason: str, lenient: bool) -> Odd:
    if lenient:
        return Odd(text, reason)
    raise ValueError(reason)


def _float(text: str, lenient: bool) -> Any:
    value = float(text)
    if math.isfinite(value):
        return value
    return _refuse(text, f"the number {text[:40]} is not finite (kairos keeps only finite numbers)", lenient)


def _int(text: str, lenient: bool) -> Any:
    try:
        return int(text)
    except ValueError:  # more than 4,300 digits
        return _refuse(text, f"the number {text[:40]}... has {len(text)} digits", lenient)


def loads(data: bytes | str, max_depth: int, *, lenient: bool = False) -> Any:
    """``data`` parsed as JSON, nested at most ``max_depth`` levels, with finite numbers only.

    See the module docstring for the two modes. Raises ``ValueError`` (with
    ``UnicodeDecodeError`` and ``json.JSONDecodeError``) when ``data`` is not JSON.
    """
    text = data.decode(json.detect_encoding(data)) if isinstance(data, bytes | bytearray) else data
    spans = too_deep(text, max_depth)
    if spans and not lenient:
        raise ValueError(f"nested deeper than {max_depth} levels")
    marks: dict[str, Odd] = {}
    if spans:
        # Each too-deep container becomes a string no document can hold (a fresh random tag),
        # and then an Odd carrying the container's own text.
        tag = f"\0kairos-too-deep-{secrets.token_hex(8)}-"
        parts, last = [], 0
        for n, (start, end) in enumerate(spans):
            mark = f"{tag}{n}"
            marks[mark] = Odd(text[start:end], f"nested deeper than {max_depth} levels")
            parts += [text[last:start], json.dumps(mark)]
            last = end
        parts.append(text[last:])
        text = "".join(parts)

    value = json.loads(
        text,
        parse_float=lambda s: _float(s, lenient),
        parse_int=lambda s: _int(s, lenient),
        parse_constant=lambda name: _refuse(name, f"{name} is not a JSON number", lenient),
    )
    return _unmark(value, marks) if marks else value


def _unmark(value: Any, marks: dict[str, Odd]) -> Any:
    """``value`` with each mark string replaced by its :class:`Odd` (a loop: the depth is bounded anyway)."""
    if isinstance(value, str):
        return marks.get(value, value)
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in list(pairs):
            if isinstance(child, str) and child in marks:
                item[key] = marks[child]
            elif isinstance(child, dict | list):
                stack.append(child)
    return value


def odd_in(value: Any) -> Odd | None:
    """The first :class:`Odd` anywhere in ``value``, or None (a loop, so any depth is safe)."""
    found = find_odd(value)
    return None if found is None else found[1]


def find_odd(value: Any) -> tuple[str, Odd] | None:
    """Where the first :class:`Odd` in ``value`` is (``"meta.k[0]"``, "" at the top) and the Odd; or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, Odd):
            return where, item
        if isinstance(item, dict):
            stack.extend((child, f"{where}.{key}" if where else str(key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{n}]") for n, child in enumerate(item))
    return None
