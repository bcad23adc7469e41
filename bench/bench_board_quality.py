"""The consolidator's quality on the labeled corpus (tests/consolidation_corpus): precision and
recall, overall, per transcript shape and per kind.

Held-out text (corpus v2, ``data/heldout``: written before the offline extractor was tuned, never
tuned on): each project's sessions, in their own transcript shape, read by the real readers and
consolidated in order onto one board through extract (offline) or the agent mode's prompt and
parser with the scripted capable model (agent), then BoardStore.merge. Precision: board entries
matching an expected item of their turn / board entries; recall: expected items matched / expected
items; replacements: changes of plan applied / those whose original was learned. These are the
quality figures. Goals (issue 22), offline mode: precision >= 0.95, recall >= 0.70, replacements
>= 0.90; agent mode with the scripted model: precision and recall 1.00.

Tuned text (corpus v1, sessions.py; the old figures): a turn is kept when a board entry came out
of it, every session in each of four formats. Not a quality figure: the extractor was tuned on it.

Baseline (same run): a keyword matcher that keeps every typed turn containing a rule word
(always, never, don't, must, remember, prefer, todo, ...), the obvious thing to do without the
extractor's patterns (on held-out text: a kept turn is right when it has an expected item).

    python bench/bench_board_quality.py [--split heldout] [--mode offline|agent] [--misses] [--v1]
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
from consolidation_corpus import report as v2_report
from consolidation_corpus.corpus import load
from consolidation_corpus.legacy import Outcome, score, table
from consolidation_corpus.score import score as score_v2
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


def keyword_baseline_v2(split: str) -> tuple[float, float]:
    """(precision, recall) on a v2 split of keeping every typed turn with a rule word."""
    kept = hits = items = found = 0
    for writer in load(split):
        for project in writer.projects:
            for session in project.sessions:
                for turn in session.turns:
                    keep = bool(_KEYWORDS.search(turn.text))
                    kept += keep
                    hits += keep and bool(turn.expect)
                    items += len(turn.expect)
                    found += len(turn.expect) if keep else 0
    return hits / kept if kept else 1.0, found / items if items else 1.0


def measure() -> Outcome:
    with tempfile.TemporaryDirectory(prefix="kb-corpus-") as folder:
        return score(Path(folder), formats.FORMATS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--misses", action="store_true", help="also list the turns it got wrong")
    parser.add_argument("--split", default="heldout", help="the v2 split to score (heldout, fresh, train)")
    parser.add_argument("--mode", default="offline", choices=("offline", "agent"), help="consolidation mode")
    parser.add_argument("--v1", action="store_true", help="also the v1 corpus (tuned text, not a quality figure)")


def run(args: argparse.Namespace) -> list[Row]:
    base_p, base_r = keyword_baseline_v2("heldout")
    offline, agent = score_v2("heldout", "offline"), score_v2("heldout", "agent")
    if getattr(args, "verbose", False):
        print(v2_report.table(offline) + "\n\n" + v2_report.table(agent), file=sys.stderr)
    rows = []
    for mode, held, (want_p, want_r) in (("offline", offline, (0.95, 0.70)), ("agent", agent, (1.0, 1.0))):
        p, r = held.overall.precision.value, held.overall.recall.value
        rows += [
            Row("board quality", f"held-out precision ({mode})", p, "", "keyword matcher", base_p, f">= {want_p:.2f}",
                p >= want_p),
            Row("board quality", f"held-out recall ({mode})", r, "", "keyword matcher", base_r, f">= {want_r:.2f}",
                r >= want_r),
        ]  # fmt: skip
    # A keyword matcher replaces nothing: the baseline is the scripted agent, which applies them all.
    rep = offline.replacements.value
    rows.append(Row("board quality", "held-out replacements (offline)", rep, "", "scripted agent",
                    agent.replacements.value, ">= 0.90", rep >= 0.9))  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    v2 = ["--split", args.split, "--mode", args.mode] + (["--misses"] if args.misses else [])
    if v2_report.main(v2) != 0:
        return 2
    base_p, base_r = keyword_baseline_v2(args.split)
    print(f"\nkeyword baseline on {args.split}: precision {base_p:.2f}, recall {base_r:.2f}")
    if not args.v1:
        return 0
    outcome = measure()
    turns = sum(len(s) for s in SESSIONS)
    base_p, base_r = keyword_baseline()
    fmts = len(formats.FORMATS)
    print(f"\nv1 corpus (tuned text): {len(SESSIONS)} sessions, {turns} typed turns, each in {fmts} formats")
    print(f"keyword baseline: precision {base_p:.2f}, recall {base_r:.2f}\n")
    print(table(outcome))
    if args.misses:
        print("\nmissed:\n  " + "\n  ".join(outcome.misses or ["(none)"]))
        print("\nkept but labeled drop:\n  " + "\n  ".join(outcome.false_keeps or ["(none)"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
