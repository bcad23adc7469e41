"""Sanitized copies of the transcripts a real CLI wrote, for transcript readers and their fixtures.

``capture(cli, home, root, dest)`` copies every session file the CLI wrote under ``home`` into
``dest`` with the sandbox's paths replaced by ``/home/user`` (and ``/home/user/project``) and the
fake API key by ``REDACTED``. opencode keeps its sessions in SQLite; its ``session``, ``message``
and ``part`` rows are written as JSON lines instead (plain files only).

Must not import kairos or kairosd.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from compat.clis import FAKE_KEY

PATTERNS = {
    "claude": [".claude/projects/*/*.jsonl"],
    "codex": [".codex/sessions/**/*.jsonl"],
    "gemini": [".gemini/tmp/*/chats/*.json*"],
    "copilot": [".copilot/session-state/*/events.jsonl"],
    "opencode": [],
}


def sanitize(text: str, root: Path) -> str:
    home, project = str(root / "home"), str(root / "project")
    dashed = re.sub(r"[^A-Za-z0-9]", "-", str(root))  # Claude's project folder names
    for old, new in (
        (project, "/home/user/project"),
        (home, "/home/user"),
        (str(root), "/home/user/sandbox"),
        (dashed + "-project", "-home-user-project"),
        (dashed.lstrip("-") + "-project", "home-user-project"),
        (FAKE_KEY, "REDACTED"),
    ):
        text = text.replace(old, new)
    return text


def capture(cli: str, home: Path, root: Path, dest: Path) -> list[Path]:
    written: list[Path] = []
    for pattern in PATTERNS[cli]:
        for path in sorted(home.glob(pattern)):
            out = dest / sanitize(str(path.relative_to(home)), root).lstrip("/")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(sanitize(path.read_text(errors="replace"), root))
            written.append(out)
    if cli == "opencode":
        db = home / ".local" / "share" / "opencode" / "opencode.db"
        if db.exists():
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                conn.row_factory = sqlite3.Row
                for table in ("session", "message", "part"):
                    rows = [dict(r) for r in conn.execute(f"SELECT * FROM {table}")]
                    out = dest / "opencode.db" / f"{table}.jsonl"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    lines = [json.dumps(r, ensure_ascii=False, default=str) for r in rows]
                    out.write_text(sanitize("".join(line + "\n" for line in lines), root))
                    written.append(out)
    return written
