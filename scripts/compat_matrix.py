"""Render the compatibility suite's last run (``last-run.json``) as the README's matrix.

    python scripts/compat_matrix.py                 # print the table
    python scripts/compat_matrix.py --write         # replace the table in README.md between its markers
    python scripts/compat_matrix.py --results FILE  # another run's results
    python scripts/compat_matrix.py --latest FILE   # also a row per CLI from a `scripts/compat --latest` run

With a ``--latest`` run's results (by default ``last-run-latest.json`` beside the pinned run's, when it
exists) each CLI gets two rows: the pinned version and the newest published one, each as its own run
found it.

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
    "rem-agent",
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


def latest_results(pinned: Path) -> Path:
    return pinned.with_name(pinned.stem + "-latest" + pinned.suffix)


def _cells(data: dict[str, object]) -> tuple[dict[str, str], dict[tuple[str, str], dict[str, str]]]:
    versions = data.get("versions") or {}
    assert isinstance(versions, dict)
    cells = {(row["cli"], row["feature"]): row for row in data.get("results") or []}  # type: ignore[attr-defined]
    return versions, cells


def render(data: dict[str, object], latest: dict[str, object] | None = None) -> str:
    runs = [("", *_cells(data))]
    if latest is not None:
        runs.append(("newest", *_cells(latest)))
    notes: list[str] = []
    lines = [
        "| CLI | version | " + " | ".join(FEATURES) + " |",
        "| --- | --- | " + " | ".join("---" for _ in FEATURES) + " |",
    ]
    for cli in CLIS:
        for label, versions, cells in runs:
            version = f"`{versions.get(cli, '?')}`"
            if latest is not None:
                version += " newest" if label else " pinned"
            row = [NAMES[cli], version]
            for feature in FEATURES:
                cell = cells.get((cli, feature))
                if cell is None:
                    row.append("… not run")
                    continue
                text = MARK.get(cell["status"], cell["status"])
                if cell["status"] in ("unsupported", "failing") and cell.get("detail"):
                    note = f"{NAMES[cli]}, {feature}: {cell['detail']}"
                    if note not in notes:
                        notes.append(note)
                    text += f" [{notes.index(note) + 1}]"
                row.append(text)
            lines.append("| " + " | ".join(row) + " |")
    if notes:
        lines.append("")
        lines += [f"[{i}] {note}  " for i, note in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--latest", type=Path, default=None, help="a `scripts/compat --latest` run's results")
    parser.add_argument("--write", action="store_true", help="replace the matrix in README.md")
    args = parser.parse_args(argv)
    path = args.results or default_results()
    if not path.exists():
        print(f"no results at {path}: run scripts/compat first", file=sys.stderr)
        return 1
    latest_path = args.latest or latest_results(path)
    if args.latest is not None and not latest_path.exists():
        print(f"no results at {latest_path}: run scripts/compat --latest first", file=sys.stderr)
        return 1
    latest = json.loads(latest_path.read_text()) if latest_path.exists() else None
    table = render(json.loads(path.read_text()), latest)
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
