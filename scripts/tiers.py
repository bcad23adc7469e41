#!/usr/bin/env python3
"""Put each test file in its tier's folder: tests/<tier>/<package>/test_x.py (README, "Tests").

The tier follows from what the file does, by these rules, first match wins:

- ``packaging``: the file says ``pytest.mark.packaging`` (builds the wheel, installs it into fresh
  venvs with pip, pipx or uv);
- ``stress``: the file says ``pytest.mark.stress`` (crash storm, fuzzers, red team, large property
  runs; their sizes come from tests/sizes_support.py);
- ``integration``: it starts another process or a real kairosd (``subprocess``, ``Popen``,
  ``sys.executable``, ``os.fork``, ``pexpect``, reliability_support's ``Home``);
- ``unit``: everything else (in-process, on a fake clock).

tests/compat is its own tier already and is left alone. The package folder is the kairos package
the file imports most (``kairosd.store`` -> ``kairosd/store``, ``kairos.commands`` ->
``kairos/commands``; a module at the top of a package counts for the package itself;
``kairosd.core``, which nearly every test imports, only when no other package is), or ``project``
for a file that imports neither (README, packaging, architecture tests).

Only files that sit outside the tier folders (tests/test_x.py, tests/reliability/test_x.py) are
moved, with ``git mv``; a file already in a tier folder stays where someone put it. So the script
can be run again whenever new test files land: it prints each move, and ``--check`` only lists them
(exit 1 if any). Test files must keep unique names (pytest imports them by name: tests/ has no
``__init__.py``); a move that would make two files of one name is refused.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
TIERS = ("unit", "integration", "stress", "packaging", "compat")
# Folders whose test files are not placed yet (the flat layout before tiers).
LOOSE = (TESTS, TESTS / "reliability")
PACKAGE_ROOTS = {"kairosd": REPO / "daemon" / "kairosd", "kairos": REPO / "cli" / "kairos"}

PACKAGING = re.compile(r"pytest\.mark\.packaging\b")
STRESS = re.compile(r"pytest\.mark\.stress\b")
INTEGRATION = re.compile(
    r"\bsubprocess\b|\bPopen\b|\bsys\.executable\b|\bos\.fork\b|\bpexpect\b|create_subprocess_exec"
    r"|from reliability_support import [^\n]*\bHome\b"
)
IMPORT = re.compile(r"^\s*(?:from|import)\s+(kairosd|kairos)((?:\.\w+)*)", re.M)
# Helpers, not what a test is about.
NOT_A_SUBJECT = {("kairosd", "testing")}
# Imported by nearly every test (models, errors, the clock): the subject only when nothing else is.
GENERIC = {"kairosd/core"}


def tier_of(text: str) -> str:
    if PACKAGING.search(text):
        return "packaging"
    if STRESS.search(text):
        return "stress"
    if INTEGRATION.search(text):
        return "integration"
    return "unit"


def package_of(text: str) -> str:
    """The package folder a test file belongs to: the one it imports most (first seen on a tie)."""
    counts: Counter[str] = Counter()
    for top, rest in IMPORT.findall(text):
        parts = rest.lstrip(".").split(".") if rest else []
        sub = parts[0] if parts else ""
        if (top, sub) in NOT_A_SUBJECT:
            continue
        counts[f"{top}/{sub}" if sub and (PACKAGE_ROOTS[top] / sub).is_dir() else top] += 1
    specific = Counter({name: n for name, n in counts.items() if name not in GENERIC})
    for candidates in (specific, counts):
        if candidates:
            return candidates.most_common(1)[0][0]  # most_common keeps first-seen order among equal counts
    return "project"


def placement(path: Path) -> Path:
    """Where ``path`` (a test file) belongs, relative to the repository."""
    text = path.read_text(encoding="utf-8")
    return (TESTS / tier_of(text) / package_of(text) / path.name).relative_to(REPO)


def loose_files() -> list[Path]:
    return sorted(p for folder in LOOSE if folder.is_dir() for p in folder.glob("test_*.py"))


def placed_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for tier in TIERS:
        for p in (TESTS / tier).rglob("test_*.py"):
            names[p.name] = p
    return names


def stale_references(moves: list[tuple[Path, Path]]) -> None:
    """Print the lines of tracked files that still name a moved file by its old path (docs, comments)."""
    for source, target in moves:
        found = subprocess.run(
            ["git", "grep", "-n", "-F", str(source), "--", ".", ":!tests/consolidation_corpus/data"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        for line in found.splitlines():
            print(f"  stale: {line[:150]}  (now {target})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list the moves without making them; exit 1 if any")
    args = parser.parse_args(argv)
    placed = placed_names()
    moves: list[tuple[Path, Path]] = []
    for path in loose_files():
        target = placement(path)
        other = placed.get(path.name)
        if other is not None:
            print(f"refused: {path.relative_to(REPO)} has the name of {other.relative_to(REPO)}", file=sys.stderr)
            return 2
        placed[path.name] = REPO / target
        moves.append((path.relative_to(REPO), target))
    for source, target in moves:
        print(f"{source} -> {target}")
        if "__file__" in (REPO / source).read_text(encoding="utf-8"):
            print(f"  note: {target} uses __file__; name project files from paths_support (REPO, TESTS)")
        if not args.check:
            (REPO / target).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", str(source), str(target)], cwd=REPO, check=True)
    if not moves:
        print("every test file is in its tier's folder")
    stale_references(moves)
    return 1 if args.check and moves else 0


if __name__ == "__main__":
    sys.exit(main())
