"""Does a small statistical classifier generalise better than the cues? Leave-one-writer-out on train.

A multinomial naive Bayes over word 1-2-grams and character 3-grams, trained on the sentences of
every train writer but one, then scored through the whole pipeline (train_score) on the writer
left out. Three ways are compared per left-out writer:

- ``cues``: the pattern reader alone (:func:`kairosd.consolidation.offline.cues.read`);
- ``nb``: the classifier alone (a sentence is kept as the classifier's kind when it is at least
  ``CONFIDENCE`` sure);
- ``gate``: the cues, each kept only if the classifier does not say "nothing" with that confidence;
- ``union``: the cues, and where they find nothing, the classifier when it is ``UNION_CONFIDENCE`` sure.

Sentence labels come from the turn labels: a sentence holding every key of an expected item is an
example of its kind; every sentence of a turn that expects nothing is an example of "nothing".

Run from tests/: ``python -m consolidation_corpus.train_classifier [--progressive]`` (progressive:
writer k scored by a classifier trained on the writers before it only). Train figures only (the
writers left out were still tuned on by the cues, except as noted in the design note).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from consolidation_corpus.train_score import Figures, load, score_writer
from kairosd.consolidation.offline import cues
from kairosd.consolidation.offline import extract as extract_module
from kairosd.consolidation.offline.clauses import sentences

NONE = "none"
CONFIDENCE = 0.8
UNION_CONFIDENCE = 0.95


def features(sentence: str) -> list[str]:
    words = re.findall(r"[a-z0-9_'.:/-]+", sentence.lower())
    grams = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in itertools.pairwise(words)]
    for word in words:
        padded = f" {word} "
        grams += [f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
    return grams


def examples(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for project in doc["projects"]:
        for session in project["sessions"]:
            for turn in session["turns"]:
                for sentence in sentences(turn["text"]):
                    low = sentence.lower()
                    kinds = [item["kind"] for item in turn["expect"] if all(k.lower() in low for k in item["key"])]
                    if kinds:
                        kind = kinds[0] if isinstance(kinds[0], str) else kinds[0][0]
                        yield sentence, kind
                    elif not turn["expect"] and not turn.get("closes"):
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


def reader(mode: str, bayes: Bayes) -> Callable[..., cues.Signal | None]:
    def read(sentence: str, *, after_agent: bool, first: bool) -> cues.Signal | None:
        signal = cues.read(sentence, after_agent=after_agent, first=first)
        if mode == "cues":
            return signal
        post = bayes.posterior(sentence)
        if mode == "gate":
            if signal is not None and signal.action == "add" and post.get(NONE, 0.0) >= CONFIDENCE:
                return None
            return signal
        label, p = max(post.items(), key=lambda kv: kv[1])
        if signal is not None and (signal.action == "close" or mode == "union"):
            return signal  # closes are not what the classifier learns
        least = UNION_CONFIDENCE if mode == "union" else CONFIDENCE
        return cues.Signal(label, sentence) if label != NONE and p >= least else None

    return read


def run(mode: str, docs: list[dict[str, Any]], left_out: dict[str, Any]) -> Figures:
    bayes = Bayes([e for doc in docs if doc is not left_out for e in examples(doc)])
    return run_with(mode, bayes, left_out)


def run_with(mode: str, bayes: Bayes, left_out: dict[str, Any]) -> Figures:
    original = extract_module.read
    extract_module.read = reader(mode, bayes)  # type: ignore[assignment]
    extract_module.signals.cache_clear()
    try:
        return score_writer(left_out)
    finally:
        extract_module.read = original
        extract_module.signals.cache_clear()


def _number(doc: dict[str, Any]) -> int:
    digits = re.findall(r"\d+", doc["writer"])
    return int(digits[-1]) if digits else 0


def progressive(docs: list[dict[str, Any]], first: int) -> None:
    """Writer k scored by a classifier trained on writers 1..k-1 only: what it would have done had
    it been shipped when writer k was written (the cues' figure for writer k, scored blind the day
    it was written, is in the commit that added it)."""
    docs = sorted(docs, key=_number)
    totals = {mode: Figures() for mode in ("nb", "union")}
    for k, doc in enumerate(docs):
        if _number(doc) < first:
            continue
        bayes = Bayes([e for earlier in docs[:k] for e in examples(earlier)])
        for mode, total in totals.items():
            figures = run_with(mode, bayes, doc)
            total.add(figures)
            print(figures.line(f"{doc['writer'][-7:]} {mode}"))
    for mode, total in totals.items():
        print(total.line(f"PROGRESSIVE {mode}"))


def main(argv: list[str]) -> int:
    docs = load()
    if "--progressive" in argv:
        progressive(docs, 5)
        return 0
    totals = {mode: Figures() for mode in ("cues", "nb", "gate", "union")}
    for left_out in docs:
        for mode, total in totals.items():
            figures = run(mode, docs, left_out)
            total.add(figures)
            print(figures.line(f"{left_out['writer'][-7:]} {mode}"))
    for mode, total in totals.items():
        print(total.line(f"ALL {mode}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
