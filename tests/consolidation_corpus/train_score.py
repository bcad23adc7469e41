"""Score the offline consolidator on the TRAIN split (tests/consolidation_corpus/data/train/*.json).

The tuner's own yardstick until the corpus scorer (score.py, branch ``corpus``) lands; it may then
be replaced. Figures from here are figures on tuned text, never quality figures. It never opens
the ``heldout`` or ``fresh`` splits.

Each project's sessions are consolidated in order onto one board, as the worker does: the typed
turns (an agent answer between two) go through :func:`extract`, the candidates through
:meth:`BoardStore.merge`. An entry belongs to the turn whose time its candidate carries.

- precision: entries made that match an expected item of their turn (kind allowed, every key a
  substring of the text) / entries made;
- recall: expected items matched / expected items (and per kind);
- replacements: replacing items whose original was learned, where afterwards the original is off
  the board and the replacing entry on it / replacing items whose original was learned;
- closes: likewise for to-dos a turn says are done.

Run: ``python -m consolidation_corpus.train_score [-v]`` from tests/ (``-v`` lists what went wrong).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from kairosd.consolidation.board.entries import normal_key
from kairosd.consolidation.board.store import BoardStore
from kairosd.consolidation.offline.extract import Extraction, extract
from kairosd.consolidation.transcripts.read import Message

TRAIN = Path(__file__).parent / "data" / "train"
BASE = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
Extractor = Callable[..., Extraction]


@dataclass
class Figures:
    produced: int = 0
    correct: int = 0
    expected: int = 0
    matched: int = 0
    kind_expected: Counter[str] = field(default_factory=Counter)
    kind_matched: Counter[str] = field(default_factory=Counter)
    replace_learned: int = 0
    replace_applied: int = 0
    close_learned: int = 0
    close_applied: int = 0
    wrong_closes: int = 0
    wrong_replacements: int = 0  # entries replaced that no label says are replaced
    false: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    not_replaced: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    @property
    def replacements(self) -> float:
        return self.replace_applied / self.replace_learned if self.replace_learned else 1.0

    @property
    def closes(self) -> float:
        return self.close_applied / self.close_learned if self.close_learned else 1.0

    def add(self, other: Figures) -> None:
        for name in ("produced", "correct", "expected", "matched", "replace_learned", "replace_applied",
                     "close_learned", "close_applied", "wrong_closes", "wrong_replacements"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.kind_expected.update(other.kind_expected)
        self.kind_matched.update(other.kind_matched)
        self.false += other.false
        self.missed += other.missed
        self.not_replaced += other.not_replaced

    def line(self, name: str) -> str:
        kinds = " ".join(f"{k}={self.kind_matched[k]}/{n}" for k, n in sorted(self.kind_expected.items()))
        return (f"{name:<12} P={self.precision:.2f} ({self.correct}/{self.produced}) R={self.recall:.2f} "
                f"({self.matched}/{self.expected}) repl={self.replacements:.2f} ({self.replace_applied}/"
                f"{self.replace_learned}) close={self.closes:.2f} ({self.close_applied}/{self.close_learned}) "
                f"wrong-closes={self.wrong_closes} wrong-replacements={self.wrong_replacements} | {kinds}")  # fmt: skip


def load(folder: Path = TRAIN) -> list[dict[str, Any]]:
    """The writer documents of a split folder (train only: this module is the tuner's)."""
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]


def _kinds(item: dict[str, Any]) -> set[str]:
    kind = item["kind"]
    return {kind} if isinstance(kind, str) else set(kind)


def _matches(item: dict[str, Any], kind: str, text: str) -> bool:
    return kind in _kinds(item) and all(key.lower() in text.lower() for key in item["key"])


def messages_of(turns: Iterable[str], day: int) -> list[Message]:
    """A session's typed turns at distinct times, with an agent answer after each."""
    out = []
    for step, text in enumerate(turns):
        when = BASE + timedelta(days=day, minutes=2 * step)
        out.append(Message("user", text, human=True, at=when))
        out.append(Message("assistant", "Done.", at=when + timedelta(seconds=30)))
    return out


def score_project(project: dict[str, Any], where: str, extractor: Extractor = extract) -> Figures:
    figures = Figures()
    with tempfile.TemporaryDirectory() as folder:
        now = [BASE]
        store = BoardStore(Path(folder), lambda: now[0])
        made: dict[tuple[int, int], list[tuple[str, str, str]]] = {}  # (session, turn) -> [(id, kind, text)]
        closed_at: dict[str, tuple[int, int]] = {}  # entry id -> the turn whose close removed it
        for s, session in enumerate(project["sessions"]):
            texts = [turn["text"] for turn in session["turns"]]
            messages = messages_of(texts, s)
            now[0] = messages[-1].at or BASE
            found = extractor(messages, project="/p/" + project["name"], anchor=now[0], zone=ZoneInfo("UTC"))
            turn_at = {m.at: i for i, m in enumerate(messages[::2])}
            origin = {}
            for candidate in found.candidates:
                if candidate.at in turn_at and candidate.action == "add":
                    origin[normal_key(candidate.text)] = (s, turn_at[candidate.at])
            # in the order said, as the worker merges them (a to-do said and done in one session is
            # closed), one at a time so that each close is known by its turn
            for candidate in found.to_merge:
                result = store.merge(project["name"], [candidate])
                for gone in result.closed:
                    if candidate.at in turn_at:
                        closed_at[gone.id] = (s, turn_at[candidate.at])
                for entry in result.added:
                    ref = origin.get(normal_key(entry.text))
                    if ref is not None:
                        made.setdefault(ref, []).append((entry.id, entry.kind, entry.text))
        board = store.load(project["name"])
        current = {e.id for e in board.entries}
        replacing = [
            i["replaces"] for ses in project["sessions"] for t in ses["turns"] for i in t["expect"] if "replaces" in i
        ]
        for gone in board.superseded:
            if not any(all(k.lower() in gone.text.lower() for k in keys) for keys in replacing):
                figures.wrong_replacements += 1
                figures.not_replaced.append(f"[{where}] replaced with no label saying so: {gone.text!r}")
    learned: list[tuple[tuple[int, int], dict[str, Any], str | None]] = []  # (turn, item, entry id)
    for s, session in enumerate(project["sessions"]):
        for t, turn in enumerate(session["turns"]):
            entries = made.get((s, t), [])
            label = f"[{where} s{s} t{t}] {turn['text'][:110]!r}"
            used: set[str] = set()
            for item in turn["expect"]:
                figures.expected += 1
                first = sorted(_kinds(item))[0]
                figures.kind_expected[first] += 1
                hit = next((i for i, k, x in entries if i not in used and _matches(item, k, x)), None)
                if hit is None:
                    hit = next((i for i, k, x in entries if _matches(item, k, x)), None)
                if hit is not None:
                    used.add(hit)
                    figures.matched += 1
                    figures.kind_matched[first] += 1
                else:
                    figures.missed.append(f"{label} want {item['kind']} {item['key']}")
                if "replaces" in item:
                    _replacement(figures, learned, item, hit, current, label)
                learned.append(((s, t), item, hit))
            for _id, kind, text in entries:
                figures.produced += 1
                if any(_matches(item, kind, text) for item in turn["expect"]):
                    figures.correct += 1
                else:
                    figures.false.append(f"{label} -> {kind}: {text}")
            for keys in turn.get("closes", []):
                original = _original(learned, keys)
                if original is not None and original[2] is not None:
                    figures.close_learned += 1
                    if original[2] not in current:
                        figures.close_applied += 1
                    else:
                        figures.not_replaced.append(f"{label} did not close {keys}")
    expected_closes = {
        (s, t)
        for s, session in enumerate(project["sessions"])
        for t, turn in enumerate(session["turns"])
        if turn.get("closes")
    }
    figures.wrong_closes = sum(1 for ref in closed_at.values() if ref not in expected_closes)
    return figures


def _original(learned: list[tuple[tuple[int, int], dict[str, Any], str | None]], keys: list[str]) -> Any:
    for entry in reversed(learned):
        if entry[1]["key"] == keys:
            return entry
    return None


def _replacement(figures: Figures, learned: list[Any], item: dict[str, Any], hit: str | None, current: set[str],
                 label: str) -> None:  # fmt: skip
    original = _original(learned, item["replaces"])
    if original is None or original[2] is None:
        return  # the original was never learned: nothing to replace
    figures.replace_learned += 1
    if original[2] not in current and hit is not None and hit in current:
        figures.replace_applied += 1
    else:
        figures.not_replaced.append(f"{label} did not replace {item['replaces']}")


def score_writer(doc: dict[str, Any], extractor: Extractor = extract) -> Figures:
    figures = Figures()
    for project in doc["projects"]:
        figures.add(score_project(project, f"{doc['writer']}/{project['name']}", extractor))
    return figures


def main(argv: list[str]) -> int:
    total = Figures()
    for doc in load():
        figures = score_writer(doc)
        print(figures.line(doc["writer"]))
        total.add(figures)
    print(total.line("all (train)"))
    if "-v" in argv:
        for title, lines in (("FALSE", total.false), ("MISSED", total.missed), ("NOT APPLIED", total.not_replaced)):
            print(f"\n{title} ({len(lines)})")
            print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
