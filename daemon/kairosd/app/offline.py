"""Read-only views while kairosd is down: ``python -m kairosd.app.offline GET PATH [KEY=VALUE ...]``.

The CLI runs this in a child process when nothing listens on the socket (issue 24, item 9), so
``kairos list``, ``show``, ``history``, ``missed`` and ``board show`` print what is on disk,
the same documents the daemon would answer, without the CLI importing the store (the
``cli-public-face`` contract). It builds the app as kairosd does but starts nothing, binds
nothing and takes no lock, and changes nothing: the store is read with its journal folded in
(:func:`kairosd.store.store.read_folded`), and the run and missed ledgers, whose loading may
finalise or compact records, are loaded from private copies in a temporary folder.

Prints the answer's JSON on stdout (exit 0), or the error's code and message as JSON on
stdout (exit 1). Only GET is served. Must not be imported by the daemon.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kairosd.api.http_types import EncodedJson, JsonPieces, Request, Response, compact_json
from kairosd.app.wiring import build_app
from kairosd.config import load_config
from kairosd.core.errors import KairosError
from kairosd.core.protocol import PREFIX, ROUTES
from kairosd.store.store import StoreState, read_folded
from kairosd.system.paths import Paths

LEDGERS = ("runs.jsonl", "missed.jsonl")


class FoldedStore:
    """The store file with its journal folded in, read once; never written."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> StoreState:
        try:
            return read_folded(self.path)
        except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise KairosError(f"the store {self.path} cannot be read: {str(exc).splitlines()[0]}") from None

    def save(self, state: StoreState) -> None:
        raise KairosError("kairosd is not running: nothing is changed while it is down")


async def answer(method: str, path: str, query: dict[str, str]) -> bytes:
    """The JSON kairosd would answer ``method path?query`` with, from the files on disk."""
    if method != "GET":
        raise KairosError(f"only GET is served while kairosd is down, not {method}")
    paths = Paths.from_env()
    settings = load_config(paths)
    with tempfile.TemporaryDirectory(prefix="kairos-offline-") as scratch:
        for name in LEDGERS:
            src = paths.state_dir / name
            if src.is_file():
                shutil.copyfile(src, Path(scratch) / name)
        copy = Paths(Path(scratch), paths.runtime_dir, paths.data_dir, paths.config_dir)
        app = build_app(settings, paths=copy, store=FoldedStore(paths.store))
        app.book.load()
        app.ledger.load()
        app.missed.load()
        full = path if path.startswith(PREFIX + "/") else PREFIX + path
        if full == PREFIX + ROUTES["tasks"] and query.get("view") == "summary":
            # A summary shows the scheduler's plan, which is made at start and not kept on disk;
            # the full view computes each task's next fire from its schedule (its fields include
            # the summary's), so the list shows the same next fires.
            query = {k: v for k, v in query.items() if k != "view"}
        reply = await app.api.handle(Request(method, full, query, None, -1))
        if isinstance(reply, JsonPieces):
            return b"".join(reply.pieces)
        if not isinstance(reply, Response):
            raise KairosError(f"{path} is not a view that can be read while kairosd is down")
        return reply.body.data if isinstance(reply.body, EncodedJson) else compact_json(reply.body)


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: python -m kairosd.app.offline GET PATH [KEY=VALUE ...]\n")
        return 2
    query = dict(item.partition("=")[::2] for item in argv[2:])
    try:
        data = asyncio.run(answer(argv[0], argv[1], query))
    except KairosError as exc:
        return _failed(exc.code, exc.message)
    except (OSError, ValueError) as exc:  # an unreadable or corrupt file: one line, not a traceback
        return _failed("internal", f"cannot read kairos' files: {exc}")
    sys.stdout.buffer.write(data + b"\n")
    return 0


def _failed(code: str, message: str) -> int:
    sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
