"""``kairos __complete tasks|jobs|board|inbox|tz``: the names a completion script offers for an argument.

The scripts ``kairos completion SHELL`` prints call this hidden subcommand at TAB time, as git,
systemctl and kubectl complete their object names. It prints one candidate a line, ``NAME<TAB>
description`` where there is one (a task's name or prompt start, an entry's text). It must never
get in the way of typing: if kairosd is down, slow or answers anything odd it prints nothing and
exits 0, and the socket timeout bounds the wait (``TIMEOUT_S``).

``kairos.__main__`` dispatches here before argparse or any verb module is imported. Must not
import argparse, pydantic, asyncio or any kairosd module but the protocol's routes.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

KINDS = ("tasks", "jobs", "board", "inbox", "tz")
# A TAB that waits longer than this for kairosd feels broken; better no candidates.
TIMEOUT_S = 0.8
DESCRIPTION_CHARS = 60
ZONES_CACHE = "zones.cache"


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
        return _zones()
    if kind == "tasks":
        doc = _get("tasks", {"view": "summary"})
        return (_line(t.get("id"), t.get("name") or t.get("prompt")) for t in doc.get("tasks") or [])
    if kind == "jobs":
        doc = _get("registry", None)
        return (_line(t.get("id"), t.get("prompt")) for t in doc.get("tasks") or [])
    if kind == "inbox":
        # The runs waiting in an inbox (what `kairos inbox --ack` takes), with their task's name or prompt.
        doc = _get("inbox", None)
        return (_line(i.get("id"), i.get("task_name") or i.get("prompt")) for i in doc.get("items") or [])
    if kind == "board":
        doc = _get("board", {"cwd": os.getcwd()})
        return (_line(e.get("id"), e.get("text")) for e in doc.get("entries") or [])
    return ()


def _zones() -> list[str]:
    """Every zone name, from a cache next to kairosd's socket while the zone database it was read
    from is unchanged: walking the database nearly doubles the call (83 ms against 45, best of 15)."""
    import zoneinfo

    from kairosd.system.paths import socket_path

    key = _zones_key()
    cache = os.path.join(os.path.dirname(socket_path()), ZONES_CACHE)
    if key:
        try:
            with open(cache, encoding="utf-8") as f:
                head, _, body = f.read().partition("\n")
            if head == key:
                return body.split()
        except (OSError, UnicodeDecodeError):
            pass
    zones = sorted(zoneinfo.available_timezones())
    # Only into a runtime folder kairosd made: a TAB creates no folder.
    if key and os.path.isdir(os.path.dirname(cache)):
        from pathlib import Path

        from kairosd.system.atomic import write_atomic

        with contextlib.suppress(OSError):  # a read-only folder: no cache, the zones all the same
            write_atomic(Path(cache), "\n".join([key, *zones]).encode())
    return zones


def _zones_key() -> str:
    """What identifies the zone database: the files each of its updates rewrites, and the tzdata
    package's; empty (no caching) where none is found."""
    import importlib.util
    import zoneinfo

    files = [os.path.join(folder, name) for folder in zoneinfo.TZPATH for name in ("tzdata.zi", "zone1970.tab")]
    spec = importlib.util.find_spec("tzdata")
    if spec is not None and spec.origin:
        files.append(spec.origin)
    stamps = []
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue
        stamps.append(f"{path}@{info.st_mtime_ns}:{info.st_size}")
    return " ".join(stamps)


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
