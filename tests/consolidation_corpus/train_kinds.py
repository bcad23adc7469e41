"""Write the cautious offline reading's model: ``daemon/kairosd/consolidation/offline/data/kinds.json.gz``.

The naive Bayes of :mod:`kairosd.consolidation.offline.kinds`, trained on the sentences of exactly the
splits of :data:`.report.TUNED` (labels as in :mod:`.train_classifier`: a sentence holding every key of an
expected item is an example of its kind; every sentence of a turn that expects and closes nothing is an
example of "none"). Features seen fewer than :data:`MIN_COUNT` times in that data are left out. The count
was chosen by size and by leave-one-split-out figures on fresh3..fresh7 only (``python -m
tests.consolidation_corpus.train_embed --classifier bayes --modes cues,agree --min-count N``; the cautious
reading is ``agree`` at threshold 0), precision first: the smallest file whose precision over the entries
of the five left-out splits together is not below the unpruned model's.

| min_count | file | features | right/wrong entries | pooled precision | mean precision | mean recall |
|---|---|---|---|---|---|---|
| 1 (none left out) | 232 KB | 35,892 | 184/14 | 0.929 | 0.926 | 0.341 |
| **2** | 117 KB | 11,717 | 234/16 | 0.936 | 0.916 | 0.430 |
| 3 | 92 KB | 7,647 | 245/21 | 0.921 | 0.918 | 0.459 |
| 5 | 71 KB | 4,947 | 249/21 | 0.922 | 0.919 | 0.467 |

(the cues alone: mean precision 0.874, mean recall 0.560; the harness hooks the model into the sentence
reader only, without the extractor's final "only removes" filter, which takes away a little more). The file
is deterministic: sorted keys, gzip mtime 0.

Run from the repository root after the corpus or the features change:
``python -m tests.consolidation_corpus.train_kinds`` (``--check``: exit 1 if the shipped file differs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consolidation_corpus.corpus import load
from consolidation_corpus.report import TUNED
from consolidation_corpus.train_classifier import examples
from kairosd.consolidation.offline import kinds

MIN_COUNT = 2
SHIPPED = Path(kinds.__file__).resolve().parent / "data" / kinds.DATA
REGENERATE = "python -m tests.consolidation_corpus.train_kinds"


def tables(data: Iterable[tuple[str, str]], min_count: int = MIN_COUNT) -> dict[str, object]:
    """The model's document: label counts and, per label, the count of each feature kept."""
    prior: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for text, label in data:
        prior[label] += 1
        counts[label].update(kinds.features(text))
    seen: Counter[str] = Counter()
    for table in counts.values():
        seen.update(table)
    kept = {label: {f: n for f, n in table.items() if seen[f] >= min_count} for label, table in counts.items()}
    return {"format": kinds.FORMAT, "min_count": min_count, "splits": list(TUNED), "prior": dict(prior), "counts": kept}


def model(splits: Iterable[str] = TUNED, min_count: int = MIN_COUNT) -> dict[str, object]:
    return tables((pair for split in splits for pair in examples(load(split))), min_count)


def encode(document: dict[str, object]) -> bytes:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped file is not what the corpus gives")
    args = parser.parse_args(argv)
    data = encode(model())
    if args.check:
        same = SHIPPED.exists() and SHIPPED.read_bytes() == data
        print(f"{SHIPPED}: {'up to date' if same else 'differs from the corpus; run ' + REGENERATE}")
        return 0 if same else 1
    SHIPPED.parent.mkdir(parents=True, exist_ok=True)
    SHIPPED.write_bytes(data)
    print(f"wrote {SHIPPED} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
