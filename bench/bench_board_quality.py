"""The offline consolidator's quality on the labeled corpus (tests/consolidation_corpus): precision
and recall, overall, per transcript format and per kind.

Every session of the corpus is written in each format kairos reads (Claude Code, Codex 0.169,
Copilot CLI, Gemini CLI 0.61), read by the real readers and run through the real extractor. A
turn is kept when a board entry came out of it. Precision: kept turns labeled keep / kept turns.
Recall: kept turns labeled keep / turns labeled keep.

Baseline (same run): a keyword matcher that keeps every typed turn containing a rule word
(always, never, don't, must, remember, prefer, todo, ...), the obvious thing to do without the
extractor's patterns.

Goal (issue 18): precision >= 0.95 and recall >= 0.85. tests/test_consolidation_corpus.py pins it.

    python bench/bench_board_quality.py [--misses]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from _common import REPO, Row

sys.path.insert(0, str(REPO / "tests"))

from consolidation_corpus import formats
from consolidation_corpus.legacy import Outcome, score, table
from consolidation_corpus.sessions import SESSIONS

_KEYWORDS = re.compile(
    r"\b(?:always|never|don'?t|must|make\s+sure|remember|prefer|rather|instead|todo|forget|decided|let'?s|"
    r"from\s+now\s+on)\b",
    re.IGNORECASE,
)


def keyword_baseline() -> tuple[float, float]:
    """(precision, recall) of keeping every turn with a rule word."""
    kept = hits = labeled = 0
    for session in SESSIONS:
        for label, text in session:
            keep = bool(_KEYWORDS.search(text))
            kept += keep
            labeled += label != "-"
            hits += keep and label != "-"
    return hits / kept, hits / labeled


def measure() -> Outcome:
    with tempfile.TemporaryDirectory(prefix="kb-corpus-") as folder:
        return score(Path(folder), formats.FORMATS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--misses", action="store_true", help="also list the turns it got wrong")


def run(args: argparse.Namespace) -> list[Row]:
    outcome = measure()
    base_p, base_r = keyword_baseline()
    if getattr(args, "verbose", False):
        print(table(outcome), file=sys.stderr)
    o = outcome.overall
    return [
        Row("board quality", "precision (offline)", o.precision, "", "keyword matcher", base_p, ">= 0.95",
            o.precision >= 0.95),
        Row("board quality", "recall (offline)", o.recall, "", "keyword matcher", base_r, ">= 0.85", o.recall >= 0.85),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    outcome = measure()
    turns = sum(len(s) for s in SESSIONS)
    base_p, base_r = keyword_baseline()
    print(f"{len(SESSIONS)} sessions, {turns} typed turns, each written in {len(formats.FORMATS)} formats")
    print(f"keyword baseline: precision {base_p:.2f}, recall {base_r:.2f}\n")
    print(table(outcome))
    if args.misses:
        print("\nmissed:\n  " + "\n  ".join(outcome.misses or ["(none)"]))
        print("\nkept but labeled drop:\n  " + "\n  ".join(outcome.false_keeps or ["(none)"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
