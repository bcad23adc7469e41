"""A second opinion on a cue's kind: the cautious offline reading (``[consolidation] offline = "cautious"``).

A multinomial naive Bayes over a sentence's word 1-2-grams and character 3-grams (:func:`features`),
Laplace-smoothed, trained on the tuned splits of the consolidation corpus
(``python -m tests.consolidation_corpus.train_kinds`` writes ``data/kinds.json.gz``; a unit test checks
that the shipped file is what the corpus gives). Its labels are the board's kinds and "none".

The cautious reading keeps an entry the cues read (:mod:`.cues`) only when this model's most likely label
for the sentence is of the same group (rule, preference and correction count as one: orders); a to-do said
done and an update always pass (:func:`agrees`), and nothing the broad reading would not make is kept
(:func:`..extract.extract`). Precision first: a wrong entry is given to every later session, a missed one
is only missing. Measured with this file (issue 22, the consolidation corpus' report): on fresh8, written
blind, precision 0.97 (33/34) where the cues alone have 0.81 (48/59), recall 0.32 where they have 0.47; on
heldout 0.96 (72/75) against 0.94 (83/88), recall 0.68 against 0.79. The default ("broad") is the cues alone.

The tables are read lazily, once per process, by :func:`load` (the package's own data, through
importlib.resources: the only I/O of the offline package); a file that is missing or unreadable raises
:class:`Unavailable` with the reason, and the caller reads broadly instead.

Stdlib only. Must not import the cues, the extractor, the board or anything of the consolidation runs.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import math
import re
from collections.abc import Mapping
from importlib import resources

__all__ = ["DATA", "FORMAT", "NONE", "Kinds", "Unavailable", "agrees", "features", "from_bytes", "group", "load"]

DATA = "kinds.json.gz"  # in the package's data/ folder
FORMAT = 1
NONE = "none"
ORDERS = frozenset({"rule", "preference", "correction"})
_WORDS = re.compile(r"[a-z0-9_'.:/-]+")


class Unavailable(Exception):
    """The model's data cannot be used (missing, unreadable, or not this format); the message says why."""


def features(sentence: str) -> list[str]:
    """A sentence's features: words (``w:``), word pairs (``b:``) and each word's character 3-grams (``c:``)."""
    words = _WORDS.findall(sentence.lower())
    grams = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in itertools.pairwise(words)]
    for word in words:
        padded = f" {word} "
        grams += [f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
    return grams


def group(kind: str) -> str:
    """Rule, preference and correction are one group (orders): the cues and the model often differ among them."""
    return "orders" if kind in ORDERS else kind


class Kinds:
    """The model: ``prior`` (label -> training sentences) and ``counts`` (label -> feature -> count)."""

    def __init__(self, prior: Mapping[str, int], counts: Mapping[str, Mapping[str, int]]) -> None:
        self.labels = tuple(prior)
        total = sum(prior.values())
        vocabulary = {f for c in counts.values() for f in c}
        self._prior = {label: math.log(n / total) for label, n in prior.items()}
        # log P(feature | label) for the features seen with the label; any other feature of the vocabulary
        # has count 0 (Laplace: +1 over the label's total plus the vocabulary's size)
        self._unseen: dict[str, float] = {}
        self._log: dict[str, dict[str, float]] = {}
        for label in self.labels:
            seen = counts.get(label, {})
            denominator = sum(seen.values()) + len(vocabulary)
            self._unseen[label] = math.log(1 / denominator)
            self._log[label] = {f: math.log((n + 1) / denominator) for f, n in seen.items()}
        self._vocabulary = frozenset(vocabulary)

    def posterior(self, sentence: str) -> dict[str, float]:
        """P(label | sentence) for every label (features outside the vocabulary are left out)."""
        grams = [g for g in features(sentence) if g in self._vocabulary]
        logs = {}
        for label in self.labels:
            table, unseen = self._log[label], self._unseen[label]
            logs[label] = self._prior[label] + sum(table.get(g, unseen) for g in grams)
        top = max(logs.values())
        exp = {label: math.exp(v - top) for label, v in logs.items()}
        norm = sum(exp.values())
        return {label: v / norm for label, v in exp.items()}

    def top(self, sentence: str) -> str:
        """The most likely label (the first of equals, in the training data's label order)."""
        posterior = self.posterior(sentence)
        return max(posterior, key=lambda label: posterior[label])

    @classmethod
    def from_document(cls, document: object) -> Kinds:
        """The model from the data file's JSON (:class:`Unavailable` if it is not that)."""
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise Unavailable(f"not a format {FORMAT} kinds model")
        prior, counts = document.get("prior"), document.get("counts")
        if not isinstance(prior, dict) or not isinstance(counts, dict) or not prior:
            raise Unavailable("the kinds model has no labels")
        if any(not isinstance(n, int) or n <= 0 for n in prior.values()) or set(counts) - set(prior):
            raise Unavailable("the kinds model's labels do not add up")
        for table in counts.values():
            if not isinstance(table, dict) or any(not isinstance(n, int) or n <= 0 for n in table.values()):
                raise Unavailable("the kinds model's counts are not positive integers")
        return cls(prior, counts)


def agrees(kinds: Kinds, sentence: str, kind: str) -> bool:
    """Whether the model's most likely label for ``sentence`` is of the group of the cue's ``kind``."""
    return group(kinds.top(sentence)) == group(kind)


@functools.cache
def load() -> Kinds:
    """The shipped model, read once per process; :class:`Unavailable` says why it cannot be used."""
    try:
        raw = resources.files(__package__).joinpath("data", DATA).read_bytes()
    except OSError as exc:
        raise Unavailable(f"the kinds model ({DATA}) cannot be read: {exc}") from exc
    return from_bytes(raw)


def from_bytes(raw: bytes) -> Kinds:
    """The model out of the data file's bytes (gzipped JSON); :class:`Unavailable` if they are not one."""
    try:
        document = json.loads(gzip.decompress(raw))
    except (OSError, EOFError, ValueError) as exc:  # cut short, not gzip, not JSON (UnicodeError too)
        raise Unavailable(f"the kinds model ({DATA}) is damaged: {exc}") from exc
    return Kinds.from_document(document)
