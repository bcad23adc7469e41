"""Printing for the CLI: JSON documents, plain lines, and the one-line error.

Errors go to stderr as ``kairos: <message>``; ``NO_COLOR`` is honoured by never
adding colour when it is set (and when stdout is not a terminal).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def use_color() -> bool:
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def print_json(document: Any) -> None:
    """One JSON document: indented for a person at a terminal, compact for a pipe
    (a script reading 10,000 tasks should not pay for indentation)."""
    if sys.stdout.isatty():
        json.dump(document, sys.stdout, indent=2, default=str)
    else:
        json.dump(document, sys.stdout, separators=(",", ":"), default=str)
    sys.stdout.write("\n")


def error(message: str) -> None:
    sys.stderr.write(f"kairos: {message}\n")
