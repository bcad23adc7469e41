"""``kairos __complete tasks|jobs|board|tz``: the names a completion script offers for an argument.

The scripts ``kairos completion SHELL`` prints call this hidden subcommand at TAB time, as git,
systemctl and kubectl complete their object names. It prints one candidate a line, ``NAME<TAB>
description`` where there is one (a task's name or prompt start, an entry's text). It must never
get in the way of typing: if kairosd is down, slow or answers anything odd it prints nothing and
exits 0, and the socket timeout bounds the wait (``TIMEOUT_S``).

``kairos.__main__`` dispatches here before argparse or any verb module is imported. Must not
import argparse, pydantic, asyncio or any kairosd module but the protocol's routes.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

KINDS = ("tasks", "jobs", "board", "tz")
# A TAB that waits longer than this for kairosd feels broken; better no candidates.
TIMEOUT_S = 0.8
DESCRIPTION_CHARS = 60


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else ""
    try:
        lines = list(candidates(kind))
    except Exception:  # a completion never reports an error: the shell would print it mid-line
        return 0
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def candidates(kind: str) -> Iterable[str]:
    if kind == "tz":
        import zoneinfo

        return sorted(zoneinfo.available_timezones())
    if kind == "tasks":
        doc = _get("tasks", {"view": "summary"})
        return (_line(t.get("id"), t.get("name") or t.get("prompt")) for t in doc.get("tasks") or [])
    if kind == "jobs":
        doc = _get("registry", None)
        return (_line(t.get("id"), t.get("prompt")) for t in doc.get("tasks") or [])
    if kind == "board":
        doc = _get("board", {"cwd": os.getcwd()})
        return (_line(e.get("id"), e.get("text")) for e in doc.get("entries") or [])
    return ()


def _get(route: str, query: dict[str, str] | None) -> dict:  # type: ignore[type-arg]
    from kairos.client import Client
    from kairosd.core.protocol import route_path

    doc = Client(timeout=TIMEOUT_S).call("GET", route_path(route), query=query)
    return doc if isinstance(doc, dict) else {}


def _line(name: object, description: object) -> str:
    # One line each: a tab or newline inside the text would split a candidate.
    text = " ".join(str(description or "").split())
    if len(text) > DESCRIPTION_CHARS:
        text = text[: DESCRIPTION_CHARS - 1] + "…"
    return f"{name}\t{text}" if text else str(name)
