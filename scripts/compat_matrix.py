"""Render the compatibility suite's last run (``last-run.json``) as the README's matrix.

    python scripts/compat_matrix.py                 # print the table
    python scripts/compat_matrix.py --write         # replace the table in README.md between its markers
    python scripts/compat_matrix.py --results FILE  # another run's results

Statuses: verified (the test passed against the real CLI), not supported (the CLI lacks what the
feature needs, or kairos does not integrate it; the note says which), failing, not run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

FEATURES = (
    "headless",
    "resume",
    "turn-end delivery",
    "session-start context",
    "idle wake",
    "consolidation",
    "MCP",
)
CLIS = ("claude", "codex", "gemini", "copilot", "opencode")
NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "opencode": "opencode",
}
MARK = {"verified": "✅ verified", "unsupported": "➖ not supported", "failing": "❌ failing", "skipped": "… not run"}
BEGIN = "<!-- compat-matrix begin (scripts/compat_matrix.py --write) -->"
END = "<!-- compat-matrix end -->"
ROOT = Path(__file__).resolve().parent.parent


def default_results() -> Path:
    cache = os.environ.get("KAIROS_COMPAT_CACHE") or str(Path.home() / ".cache" / "kairos-compat")
    return Path(os.environ.get("KAIROS_COMPAT_RESULTS") or Path(cache) / "last-run.json")


def render(data: dict[str, object]) -> str:
    versions = data.get("versions") or {}
    assert isinstance(versions, dict)
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for row in data.get("results") or []:  # type: ignore[attr-defined]
        cells[(row["cli"], row["feature"])] = row
    notes: list[str] = []
    lines = [
        "| CLI | version | " + " | ".join(FEATURES) + " |",
        "| --- | --- | " + " | ".join("---" for _ in FEATURES) + " |",
    ]
    for cli in CLIS:
        row = [NAMES[cli], f"`{versions.get(cli, '?')}`"]
        for feature in FEATURES:
            cell = cells.get((cli, feature))
            if cell is None:
                row.append("… not run")
                continue
            text = MARK.get(cell["status"], cell["status"])
            if cell["status"] in ("unsupported", "failing") and cell.get("detail"):
                notes.append(f"{NAMES[cli]}, {feature}: {cell['detail']}")
                text += f" [{len(notes)}]"
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    if notes:
        lines.append("")
        lines += [f"[{i}] {note}  " for i, note in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--write", action="store_true", help="replace the matrix in README.md")
    args = parser.parse_args(argv)
    path = args.results or default_results()
    if not path.exists():
        print(f"no results at {path}: run scripts/compat first", file=sys.stderr)
        return 1
    table = render(json.loads(path.read_text()))
    if not args.write:
        sys.stdout.write(table)
        return 0
    readme = ROOT / "README.md"
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        print(f"README.md has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + BEGIN + "\n" + table + END + tail)
    print(f"wrote the matrix from {path} into {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
