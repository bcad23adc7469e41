"""The v1 corpus (sessions.py, one label per turn) scored the v1 way: run the offline consolidator
over it in the four v1 formats and count turns kept. Kept working for the tuned corpus; the v2
scorer (score.py) is the one whose held-out figures are quality figures.

A turn counts as kept when the consolidator made a board entry out of it (an entry carries the
time of the turn it came from). Precision: the share of kept turns labeled keep. Recall: the
share of turns labeled keep that were kept. ``same kind``: kept turns whose entry has a kind the
label allows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from consolidation_corpus import formats
from consolidation_corpus.sessions import HELD_OUT, SESSIONS
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.transcripts.read import ReadStats, read_file


@dataclass
class Tally:
    labeled: int = 0  # turns labeled keep
    kept: int = 0  # turns kept
    hits: int = 0  # labeled keep and kept
    same_kind: int = 0  # ... with a kind the label allows

    @property
    def precision(self) -> float:
        return self.hits / self.kept if self.kept else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.labeled if self.labeled else 1.0


@dataclass
class Outcome:
    turns: int = 0
    human_read: int = 0
    overall: Tally = field(default_factory=Tally)
    held_out: Tally = field(default_factory=Tally)  # the sessions never tuned against
    by_format: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_kind: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    misses: list[str] = field(default_factory=list)  # labeled keep, not kept
    false_keeps: list[str] = field(default_factory=list)  # kept, labeled drop


def score(folder: Path, fmts: tuple[str, ...] | None = None) -> Outcome:
    """Write every session (session ``i`` in format ``i % 4``, or every session in each of ``fmts``)."""
    outcome = Outcome()
    for index, session in enumerate(SESSIONS):
        chosen = fmts if fmts is not None else (formats.FORMATS[index % len(formats.FORMATS)],)
        for fmt in chosen:
            turns = [(text, formats.at(index, step * 2)) for step, (_, text) in enumerate(session)]
            path = formats.write(folder, fmt, turns, "/home/dev/acme", f"s{index:02d}")
            stats = ReadStats()
            found = extract(read_file(path, fmt, stats), project="/home/dev/acme", anchor=turns[-1][1],
                            zone=ZoneInfo("UTC"))  # fmt: skip
            outcome.human_read += stats.human_turns
            kinds_at: dict[datetime | None, set[str]] = defaultdict(set)
            for candidate in found.candidates:
                kinds_at[candidate.at].add(candidate.kind)
            for (label, text), (_, when) in zip(session, turns, strict=True):
                outcome.turns += 1
                where = f"[{fmt} s{index}] {label}: {text!r}"
                _count(outcome, fmt, label, kinds_at.get(when, set()), where, index >= HELD_OUT)
    return outcome


def _count(outcome: Outcome, fmt: str, label: str, kinds: set[str], where: str, held_out: bool) -> None:
    allowed = set() if label == "-" else set(label.split("/"))
    tallies = [outcome.overall, outcome.by_format[fmt]] + ([outcome.held_out] if held_out else [])
    if allowed:
        tallies.append(outcome.by_kind[label.split("/")[0]])
    for kind in kinds:  # precision per kind: what was kept as that kind
        if not allowed:
            outcome.by_kind[kind].kept += 1
    for tally in tallies:
        tally.labeled += bool(allowed)
        tally.kept += bool(kinds)
        tally.hits += bool(allowed and kinds)
        tally.same_kind += bool(allowed & kinds)
    if allowed and not kinds:
        outcome.misses.append(where)
    if kinds and not allowed:
        outcome.false_keeps.append(f"{where} -> {sorted(kinds)}")


def table(outcome: Outcome) -> str:
    """The figures as a Markdown table."""
    rows = ["| scope | labeled keep | kept | precision | recall | same kind |", "|---|---|---|---|---|---|"]

    def row(name: str, t: Tally) -> str:
        kind = f"{t.same_kind / t.hits:.2f}" if t.hits else "-"
        return f"| {name} | {t.labeled} | {t.kept} | {t.precision:.2f} | {t.recall:.2f} | {kind} |"

    rows.append(row("**all**", outcome.overall))
    rows.append(row("held-out sessions only", outcome.held_out))
    rows += [row(f"format {f}", outcome.by_format[f]) for f in sorted(outcome.by_format)]
    rows += [row(f"kind {k}", outcome.by_kind[k]) for k in sorted(outcome.by_kind)]
    return "\n".join(rows)
