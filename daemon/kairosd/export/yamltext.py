"""A small YAML writer for the exported manifests and workflows (no YAML library at run time).

Block mappings and sequences; every string is a double-quoted scalar written
with JSON's escapes, which YAML 1.1 and 1.2 read back exactly. Keys that YAML
1.1 reads as booleans (``on``, ``yes``, ...) are quoted too.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_BOOL_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def dump(value: dict[str, Any]) -> str:
    """The mapping as a YAML document (ending in a newline)."""
    return "\n".join(_mapping(value, 0)) + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and not value:
        return "{}"
    if isinstance(value, list) and not value:
        return "[]"
    raise TypeError(f"cannot write {type(value).__name__} as a YAML scalar")


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) and key.lower() not in _BOOL_WORDS else json.dumps(key)


def _nested(value: Any) -> bool:
    return isinstance(value, dict | list) and bool(value)


def _mapping(value: dict[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for key, item in value.items():
        if _nested(item):
            lines.append(f"{pad}{_key(key)}:")
            lines += _mapping(item, indent + 2) if isinstance(item, dict) else _sequence(item, indent + 2)
        else:
            lines.append(f"{pad}{_key(key)}: {_scalar(item)}")
    return lines


def _sequence(value: list[Any], indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for item in value:
        if isinstance(item, dict) and item:
            inner = _mapping(item, indent + 2)
            lines.append(f"{pad}- {inner[0].lstrip()}")
            lines += inner[1:]
        elif isinstance(item, list) and item:
            lines.append(f"{pad}-")
            lines += _sequence(item, indent + 2)
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return lines
