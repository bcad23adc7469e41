"""Does a small statistical classifier generalise better than the cues? Leave one split out.

A multinomial naive Bayes over word 1-2-grams and character 3-grams is trained on the sentences of
every tuned split but the one scored (``--pool``, default the tuned splits), then the split left out
is scored through the whole pipeline (:func:`consolidation_corpus.score.score`, offline mode) with the
classifier hooked into the sentence reader. Compared per split:

- ``cues``: the pattern reader alone (:func:`kairosd.consolidation.offline.cues.read`);
- ``gate``: the cues, each entry kept only if the classifier does not say "nothing" with at least
  ``--confidence``;
- ``union``: the cues, and where they find nothing, the classifier's kind when it is at least
  ``--union-confidence`` sure (a question is never added).

Sentence labels come from the turn labels: a sentence holding every key of an expected item is an
example of its kind; every sentence of a turn that expects nothing and closes nothing is an example of
"nothing". The classifier never sees the split it is scored on; the cues were tuned on every tuned split,
so their figures here are flattering, which makes any gain of the classifier's the more telling.

Run from the repository root:
``python -m tests.consolidation_corpus.train_classifier [--test fresh5,fresh4,fresh3] [--pool ...]``.
Never give it ``heldout`` or the newest blind part: their figures are the quality measure.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consolidation_corpus import score as scoring
from consolidation_corpus.corpus import Writer, load
from consolidation_corpus.report import TUNED
from kairosd.consolidation.offline import cues
from kairosd.consolidation.offline import extract as extract_module
from kairosd.consolidation.offline.clauses import sentences
from kairosd.consolidation.offline.kinds import features  # the shipped model's, so the two cannot drift

NONE = "none"
MODES = ("cues", "gate", "union")


def examples(writers: Iterable[Writer]) -> Iterator[tuple[str, str]]:
    for writer in writers:
        for project in writer.projects:
            for session in project.sessions:
                for turn in session.turns:
                    for sentence in sentences(turn.text):
                        low = sentence.lower()
                        kinds = [e.kinds[0] for e in turn.expect if all(k.lower() in low for k in e.key)]
                        if kinds:
                            yield sentence, kinds[0]
                        elif not turn.expect and not turn.closes:
                            yield sentence, NONE


class Bayes:
    def __init__(self, data: list[tuple[str, str]]) -> None:
        self.prior = Counter(label for _, label in data)
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        for text, label in data:
            self.counts[label].update(features(text))
        self.vocabulary = {f for c in self.counts.values() for f in c}
        self.totals = {label: sum(c.values()) for label, c in self.counts.items()}

    def posterior(self, sentence: str) -> dict[str, float]:
        total = sum(self.prior.values())
        grams = [g for g in features(sentence) if g in self.vocabulary]
        logs = {}
        for label, n in self.prior.items():
            denominator = self.totals[label] + len(self.vocabulary)
            counts = self.counts[label]
            logs[label] = math.log(n / total) + sum(math.log((counts[g] + 1) / denominator) for g in grams)
        top = max(logs.values())
        exp = {label: math.exp(v - top) for label, v in logs.items()}
        norm = sum(exp.values())
        return {label: v / norm for label, v in exp.items()}


def reader(mode: str, bayes: Bayes, confidence: float, union_confidence: float) -> Callable[..., cues.Signal | None]:
    def read(sentence: str, *, after_agent: bool, first: bool) -> cues.Signal | None:
        signal = cues.read(sentence, after_agent=after_agent, first=first)
        if mode == "cues":
            return signal
        posterior = bayes.posterior(sentence)
        if mode == "gate":
            if signal is not None and signal.action == "add" and posterior.get(NONE, 0.0) >= confidence:
                return None
            return signal
        if signal is not None:
            return signal
        label, p = max(posterior.items(), key=lambda kv: kv[1])
        if label != NONE and p >= union_confidence and not sentence.endswith("?"):
            return cues.Signal(label, sentence)
        return None

    return read


def figures(split: str, mode: str, bayes: Bayes, confidence: float, union_confidence: float) -> str:
    original = extract_module.read
    extract_module.read = reader(mode, bayes, confidence, union_confidence)  # type: ignore[assignment]
    extract_module.turn.cache_clear()
    try:
        outcome = scoring.score(split, "offline")
    finally:
        extract_module.read = original
        extract_module.turn.cache_clear()
    overall = outcome.overall
    return f"precision {overall.precision}  recall {overall.recall}  replacements {outcome.replacements}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--test", default="fresh5,fresh4,fresh3", help="splits to leave out and score, one at a time")
    parser.add_argument("--pool", default=",".join(TUNED), help="splits to train on (the one scored is left out)")
    parser.add_argument("--confidence", type=float, default=0.8)
    parser.add_argument("--union-confidence", type=float, default=0.95)
    args = parser.parse_args(argv)
    for split in args.test.split(","):
        if split not in TUNED:
            parser.error(f"{split} is not a tuned split: its figures are a quality measure, not for choosing a method")
        bayes = Bayes(list(examples(w for pooled in args.pool.split(",") if pooled != split for w in load(pooled))))
        for mode in MODES:
            said = figures(split, mode, bayes, args.confidence, args.union_confidence)
            print(f"{split:8} {mode:6} {said}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
