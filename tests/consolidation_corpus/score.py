"""Score consolidation on a split of the v2 corpus, through the path the worker takes.

Each project's sessions are rendered in their transcript shape (:mod:`.shapes`), read by the real
readers, consolidated in order onto one board: offline mode runs
:func:`kairosd.consolidation.offline.extract.extract`; agent mode builds the prompt with
:func:`kairosd.consolidation.remagent.run.prompt_for`, asks ``answer_for`` (a scripted model) and
parses its answer with the agent mode's own parser; both then go through ``BoardStore.merge``,
as :mod:`kairosd.consolidation.worker` does.

Figures (see the corpus format notes):

- **precision**: board entries matching an expected item of their turn (kind allowed, every key
  word in the text) / board entries. "Kind allowed" (:func:`fits`): by default (matching
  ``strict``, the definition every reported figure uses) the entry's kind must be one the label
  lists. Matching ``standing`` (issue 22's eighth round; a second view, never the reported figure)
  lets any of the five standing kinds (rule, preference, correction, decision, fact) match a label of
  standing kinds when it carries the label's key words, while a to-do still matches only a to-do: a
  session reads an entry's words, and "[fact] migration files are named V<yyyyMMddHHmm>__x.sql, our
  convention" tells it much what "[rule] ..." does, but a session does treat a rule and a fact
  differently, so the goals are judged strictly. An entry's turn is the one whose timestamp its candidate
  carries; agent mode's entries carry none, so they may match any item of their session. Entries
  made of no turn at all (from tool calls) are counted apart (``untimed``) and reported.
- **recall**: expected items matched / expected items. An item that a later item *of the same
  session* replaces counts as matched when its replacement is (the later word wins; a board that
  never held the earlier one is right).
- **replacements**: replacing items whose original was learned, and which were applied: at the
  end of the project the original's entry is off the board (gone or superseded) and the
  replacing item's entry is on it.
- **closes**: likewise, to-dos learned that a later turn says are done and whose entry is off
  the board (or marked done or closed, should the board grow such a field) at the end.
- **kept**: learned items still on the board at the end, leaving out the replaced and the closed
  ones (a wrong replacement or a prune shows here).
"""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from consolidation_corpus.corpus import DATA, Expect, Key, Project, Session, Turn, Writer, load
from consolidation_corpus.shapes import READER, render
from kairosd.consolidation.board.entries import Candidate, clean, normal_key
from kairosd.consolidation.board.store import Board, BoardStore, Entry, MergeResult
from kairosd.consolidation.offline.extract import extract
from kairosd.consolidation.offline.kinds import Kinds
from kairosd.consolidation.offline.kinds import load as load_kinds
from kairosd.consolidation.remagent import protocol as rem_protocol
from kairosd.consolidation.transcripts.read import ReadStats, read_file

BASE = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
MODES = ("offline", "agent")
OFFLINE_READINGS = ("broad", "cautious")  # [consolidation] offline
MATCHINGS = ("strict", "standing")  # how an entry's kind must fit its label's kinds (see :func:`fits`)
STANDING = frozenset({"rule", "preference", "correction", "decision", "fact"})  # every board kind but "todo"


def fits(expect: Expect, kind: str, text: str, matching: str = "strict") -> bool:
    """Whether an entry (``kind``, ``text``) is the item ``expect``: every key word in the text, and a
    kind the label allows (``strict``), or, ``standing``, any standing kind for a label of standing
    kinds only (a to-do, made or labeled, must match exactly)."""
    if matching == "strict" or kind not in STANDING or not STANDING.issuperset(expect.kinds):
        return expect.matches(kind, text)
    return expect.matches(expect.kinds[0], text)


@dataclass(frozen=True)
class Script:
    """What a scripted model is given besides the prompt: the labels of the session, and which
    board entry holds each item learned so far (by the item's key), so it can name ids."""

    session: Session
    board: Board
    entry_for: dict[Key, str]  # an item's key -> the id of the board entry that holds it now


AnswerFor = Callable[[str, Script], str]


@dataclass
class Ratio:
    hit: int = 0
    of: int = 0

    @property
    def value(self) -> float:
        return self.hit / self.of if self.of else 1.0

    def add(self, ok: bool) -> None:
        self.hit += ok
        self.of += 1

    def __str__(self) -> str:
        return f"{self.value:.2f} ({self.hit}/{self.of})"


@dataclass
class Tally:
    precision: Ratio = field(default_factory=Ratio)
    recall: Ratio = field(default_factory=Ratio)


@dataclass
class Outcome:
    split: str
    mode: str
    matching: str = "strict"
    offline: str = "broad"  # offline mode's reading
    turns: int = 0
    human_read: int = 0  # typed turns the readers found (must equal ``turns``)
    overall: Tally = field(default_factory=Tally)
    by_shape: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_kind: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))  # recall by the label's kind,
    # precision by the entry's kind
    by_writer: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    replacements: Ratio = field(default_factory=Ratio)
    closes: Ratio = field(default_factory=Ratio)
    # To-dos a session opens and says are done itself: what counts is that none is on the board at the end
    # (a model that never adds one is right); they are out of recall and ``closes``.
    done_in_session: Ratio = field(default_factory=Ratio)
    kept: Ratio = field(default_factory=Ratio)
    untimed: list[str] = field(default_factory=list)  # entries made of no turn (tool calls)
    misread: list[str] = field(default_factory=list)  # sessions whose human turns are not what was typed
    misses: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # replacements, closes and keeps that went wrong


@dataclass
class _Item:
    where: str
    shape: str
    writer: str
    session: int
    turn: int
    expect: Expect
    entry: str | None = None  # the id of the board entry that matched it
    replaced_by: _Item | None = None
    closed: str | None = None  # what the turn that says it is done typed (for --misses)
    closed_in: int | None = None  # the session that says it is done


def score(
    split: str = "heldout",
    mode: str = "offline",
    answer_for: AnswerFor | None = None,
    *,
    shape: str | None = None,
    data: Path = DATA,
    writers: list[Writer] | None = None,
    matching: str = "strict",
    offline: str = "broad",
) -> Outcome:
    """The figures for ``split`` in ``mode`` (agent mode answers with ``answer_for``, by default
    :func:`ideal_answer`); ``shape``: render every session in that shape instead of its own;
    ``matching``: how an entry's kind must fit its label (:func:`fits`); ``offline``: offline mode's
    reading, ``broad`` (the cues) or ``cautious`` (the cues where the shipped kinds model agrees)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if offline not in OFFLINE_READINGS:
        raise ValueError(f"offline must be one of {OFFLINE_READINGS}, not {offline!r}")
    kinds = load_kinds() if offline == "cautious" else None  # a missing model fails the scoring, loudly
    if matching not in MATCHINGS:
        raise ValueError(f"matching must be one of {MATCHINGS}, not {matching!r}")
    outcome = Outcome(split, mode, matching, offline)
    with tempfile.TemporaryDirectory(prefix="kairos-corpus-") as folder:
        for writer in writers if writers is not None else load(split, data):
            for project in writer.projects:
                _project(Path(folder), writer, project, mode, answer_for or ideal_answer, shape, outcome, kinds)
    return outcome


def _project(
    folder: Path,
    writer: Writer,
    project: Project,
    mode: str,
    answer_for: AnswerFor,
    shape: str | None,
    outcome: Outcome,
    kinds: Kinds | None = None,
) -> None:
    cwd = f"/home/{writer.writer}/{project.name}"
    clock = [BASE]
    store = BoardStore(folder / "boards", lambda: clock[0])
    items: list[_Item] = []
    produced: list[tuple[Entry, str, _Item | None, str]] = []  # entry, its shape, the item it matched, where
    for s, session in enumerate(project.sessions):
        fmt = shape or session.shape
        times = [BASE + timedelta(days=s, minutes=2 * t) for t in range(len(session.turns))]
        turns = [(turn.text, when) for turn, when in zip(session.turns, times, strict=True)]
        sid = f"{project.name}-s{s}"
        path = render(folder / "transcripts", fmt, turns, cwd, sid)
        stats = ReadStats()
        messages = list(read_file(path, READER[fmt], stats))
        typed = [m.text for m in messages if m.human]
        outcome.turns += len(turns)
        outcome.human_read += len(typed)
        if typed != [turn.text for turn in session.turns]:  # something injected passed as typed, or a turn lost
            outcome.misread.append(f"{writer.writer}/{project.name} s{s}/{fmt}: {len(typed)} human turn(s) read")
        clock[0] = times[-1] + timedelta(minutes=5)  # the run starts when the session has ended
        mine = [
            _Item(f"{writer.writer}/{project.name} s{s}/{fmt} t{t}", fmt, writer.writer, s, t, e)
            for t, turn in enumerate(session.turns)
            for e in turn.expect
        ]
        _link(items, mine, session, s)
        if mode == "offline":
            candidates = extract(messages, project=cwd, anchor=clock[0], zone=ZoneInfo("UTC"), kinds=kinds).to_merge
            merged = [store.merge(cwd, candidates, session=sid, agent=READER[fmt], run=f"r{s}")]
        else:
            candidates, merged = _agent_chunks(
                store, cwd, items, session, typed, stats, clock[0], answer_for, sid, fmt, s
            )
        turn_of = {when: t for t, when in enumerate(times)}
        by_key: dict[str, datetime | None] = {}
        for candidate in candidates:
            by_key.setdefault(normal_key(clean(candidate.text)), candidate.at)
        entries = [e for m in merged for e in (*m.added, *m.seen)]
        # Agent mode knows no turn of an entry, and "6432, not 5432" fits two items: entries and items are
        # paired as a whole (a maximum matching, the latest item first), not each to the first that fits.
        paired = _pairs(entries, mine, outcome.matching) if mode != "offline" else {}
        for entry in entries:
            when = by_key.get(normal_key(entry.text))
            where = f"{writer.writer}/{project.name} s{s}/{fmt}"
            if mode == "offline" and (when is None or when not in turn_of):
                outcome.untimed.append(f"[{where}] {entry.kind}: {entry.text!r}")
                continue
            turn = turn_of[when] if mode == "offline" and when is not None else None
            fitting = [
                i for i in mine if turn in (None, i.turn) and fits(i.expect, entry.kind, entry.text, outcome.matching)
            ]
            match = paired.get(id(entry)) or (fitting[0] if fitting else None)
            if match is not None and match.entry is None:
                match.entry = entry.id
            produced.append((entry, fmt, match, f"[{where}" + (f" t{turn}]" if turn is not None else "]")))
        items += mine
    _tally(store.load(cwd), items, produced, outcome)


def _pairs(entries: list[Entry], mine: list[_Item], matching: str) -> dict[int, _Item]:
    """Each entry's item in a maximum matching of entries to the items they fit (Kuhn's augmenting paths;
    an entry tries the latest item first: later words win)."""
    options = {
        id(e): sorted(
            (i for i in mine if i.entry is None and fits(i.expect, e.kind, e.text, matching)), key=lambda i: -i.turn
        )
        for e in entries
    }
    owner: dict[int, int] = {}  # id(item) -> id(entry)
    item_of: dict[int, _Item] = {}

    def augment(entry: int, visited: set[int]) -> bool:
        for item in options[entry]:
            if id(item) in visited:
                continue
            visited.add(id(item))
            if id(item) not in owner or augment(owner[id(item)], visited):
                owner[id(item)] = entry
                item_of[entry] = item
                return True
        return False

    for e in entries:
        augment(id(e), set())
    return {entry: item for entry, item in item_of.items() if owner.get(id(item)) == entry}


def _link(earlier: list[_Item], mine: list[_Item], session: Session, index: int) -> None:
    """Each replacing item's original (the latest earlier item with that key), each closed to-do."""
    for item in mine:
        if item.expect.replaces is not None:
            before = [i for i in earlier + mine[: mine.index(item)] if i.expect.key == item.expect.replaces]
            before[-1].replaced_by = item
    for t, turn in enumerate(session.turns):
        for key in turn.closes:
            todo = [i for i in earlier + mine if i.expect.key == key and (i.session, i.turn) < (index, t)]
            todo[-1].closed = f"s{index} t{t} {turn.text!r}"
            todo[-1].closed_in = index


def _tally(
    board: Board, items: list[_Item], produced: list[tuple[Entry, str, _Item | None, str]], out: Outcome
) -> None:
    live = {e.id for e in board.entries if not _done(e)}
    text_of = {entry.id: entry.text for entry, *_ in produced}

    def said(entry_id: str | None) -> str:
        """An entry as --misses shows it: its text, and whether it is still on the board."""
        if entry_id is None:
            return "(never learned)"
        return f"{text_of.get(entry_id, '?')!r} ({'on the board' if entry_id in live else 'off the board'})"

    for entry, fmt, match, where in produced:
        for tally in (out.overall, out.by_shape[fmt], out.by_kind[entry.kind], out.by_writer[where[1:].split("/")[0]]):
            tally.precision.add(match is not None)
        if match is None:
            out.false.append(f"{where} {entry.kind}: {entry.text!r}")
    for item in items:
        if item.closed is not None and item.closed_in == item.session and item.replaced_by is None:
            out.done_in_session.add(item.entry not in live)
            if item.entry in live:
                out.failed.append(
                    f"the to-do {list(item.expect.key)} [{item.where}] said done in its own session is on the "
                    f"board: {said(item.entry)}, said done in {item.closed}"
                )
            continue
        replacement = item.replaced_by
        same_session = replacement is not None and replacement.session == item.session
        learned = item.entry is not None or (same_session and replacement.entry is not None)  # type: ignore[union-attr]
        for tally in (out.overall, out.by_shape[item.shape], out.by_kind[item.expect.kind], out.by_writer[item.writer]):
            tally.recall.add(learned)
        if not learned:
            out.misses.append(f"[{item.where}] {'/'.join(item.expect.kinds)} {list(item.expect.key)}")
        if item.entry is None:
            continue
        if replacement is not None:
            while replacement.replaced_by is not None and replacement.replaced_by.entry is not None:
                replacement = replacement.replaced_by  # replaced again later: the latest word must be there
            ok = item.entry not in live and replacement.entry in live
            out.replacements.add(ok)
            if not ok:
                out.failed.append(
                    f"replacement [{replacement.where}] of {list(item.expect.key)} not applied: "
                    f"old {said(item.entry)}, new {said(replacement.entry)}"
                )
        elif item.closed:
            out.closes.add(item.entry not in live)
            if item.entry in live:
                out.failed.append(
                    f"close of the to-do {list(item.expect.key)} [{item.where}] not applied: {said(item.entry)}, "
                    f"said done in {item.closed}"
                )
        else:
            out.kept.add(item.entry in live)
            if item.entry not in live:
                out.failed.append(
                    f"[{item.where}] {list(item.expect.key)} learned, then lost from the board: {said(item.entry)}"
                    f"{_how_lost(board, item.entry, text_of)}"
                )


def _how_lost(board: Board, entry_id: str, text_of: dict[str, str]) -> str:
    """Why an entry left the board, for --misses: what replaced it, if something did."""
    gone = next((e for e in board.superseded if e.id == entry_id), None)
    if gone is None or gone.superseded_by is None:
        return " (closed, pruned or replaced long ago)"
    return f", replaced by {text_of.get(gone.superseded_by, gone.superseded_by)!r}"


def _done(entry: Entry) -> bool:
    """An entry marked done or closed (should the board grow such a field): off the board."""
    return any(getattr(entry, name, None) for name in ("done", "closed", "closed_at", "done_at"))


def _agent_chunks(
    store: BoardStore,
    cwd: str,
    items: list[_Item],
    session: Session,
    typed: list[str],
    stats: ReadStats,
    now: datetime,
    answer_for: Callable[[str, Script], str],
    sid: str,
    fmt: str,
    index: int,
) -> tuple[list[Candidate], list[MergeResult]]:
    """Agent mode as the worker runs it: the typed turns in chunks, each prompt built by
    :func:`rem_protocol.prompt_for`, answered by ``answer_for``, parsed by :func:`rem_protocol.read_answer`
    and merged before the next chunk is asked (so it sees the board as updated)."""
    groups = rem_protocol.chunks(typed, PROMPT_BUDGET) or [[]]
    candidates: list[Candidate] = []
    merged: list[MergeResult] = []
    for number, pieces in enumerate(groups, 1):
        board = store.load(cwd)
        entry_for = {i.expect.key: i.entry for i in items if i.entry and board.find(i.entry)}
        prompt = rem_protocol.prompt_for(
            cwd, board, pieces, total_turns=len(typed), chunk=number, chunks_total=len(groups),
            ended_at=stats.last_at, now=now,
        )  # fmt: skip
        answer = answer_for(prompt, Script(session, board, entry_for))
        chunk = rem_protocol.read_answer(answer, {e.id: e.kind for e in board.entries}).candidates
        candidates += chunk
        merged.append(store.merge(cwd, chunk, session=sid, agent=READER[fmt], run=f"r{index}.{number}"))
    return candidates, merged


PROMPT_BUDGET = 60_000  # the [consolidation] prompt_budget default (bytes of typed turns per rem-agent turn)

# ---- the scripted capable model ------------------------------------------------------------------


def ideal_answer(prompt: str, script: Script) -> str:
    """What a capable model answers, in the rem-agent's format (``ADD KIND: text``, ``REPLACE ID
    KIND: text``, ``CLOSE ID``, ``NONE``): every expected item of the session whose words reached
    the prompt; an item a later one of the same session replaces is left out (later words win); one
    replacing an entry on the board names it; a to-do on the board that a turn in the prompt says is
    done is closed."""
    seen = " ".join(prompt.split()).lower()
    later = {e.replaces for t in script.session.turns for e in t.expect if e.replaces is not None}
    lines = []
    for index, turn in enumerate(script.session.turns):
        for item in turn.expect:
            if item.key in later and _replaced_here(script.session, index, item.key):
                continue
            if _done_here(script.session, index, item.key, seen):
                continue  # opened and done in the turns it reads: left out, as the prompt asks
            said = evidence(script.session.turns[: index + 1], item)
            if not all(" ".join(part.split()).lower() in seen for part in said):
                continue  # the prompt lost it: no model could answer it
            text = " ".join(" ".join(said).split())
            if any(line.endswith(f": {text}") for line in lines):
                text = narrowed(text, item)  # two entries in one sentence: a model words each on its own
            old = script.entry_for.get(item.replaces) if item.replaces is not None else None
            lines.append(f"REPLACE {old} {item.kind.upper()}: {text}" if old else f"ADD {item.kind.upper()}: {text}")
        if turn.closes and " ".join(turn.text.split()).lower() in seen:
            lines += [f"CLOSE {script.entry_for[key]}" for key in turn.closes if key in script.entry_for]
    return "\n".join(lines) or "NONE"


def narrowed(text: str, item: Expect) -> str:
    """The shortest run of ``text``'s clauses (split at commas, semicolons, dashes and "and") that
    holds all of ``item``'s key words."""
    clauses = [c.strip() for c in re.split(r",|;| [—–-] | and ", text) if c.strip()]
    runs = [clauses[i:j] for i in range(len(clauses)) for j in range(i + 1, len(clauses) + 1)]
    whole = [r for r in runs if all(word in ", ".join(r).lower() for word in item.key)]
    return ", ".join(min(whole, key=len)) if whole else text


def _done_here(session: Session, index: int, key: Key, seen: str) -> bool:
    return any(key in t.closes and " ".join(t.text.split()).lower() in seen for t in session.turns[index + 1 :])


def _replaced_here(session: Session, index: int, key: Key) -> bool:
    return any(e.replaces == key for t in session.turns[index + 1 :] for e in t.expect)


def evidence(turns: tuple[Turn, ...], item: Expect) -> list[str]:
    """The words of the last turn that carry ``item``: the sentence with the most of its key
    words (and the earlier sentence that names what "that" is, when the key is spread)."""
    sentences = [s.strip() for t in turns for s in re.split(r"(?<=[.!?])\s+|\n+", t.text) if s.strip()]
    own = [s for s in re.split(r"(?<=[.!?])\s+|\n+", turns[-1].text) if s.strip()]

    def hits(s: str) -> int:
        return sum(word in s.lower() for word in item.key)

    best = max(own, key=hits)
    if hits(best) == len(item.key):
        return [best]
    lacking = [word for word in item.key if word not in best.lower()]  # the other sentence must add these
    other = max(sentences, key=lambda s: sum(word in s.lower() for word in lacking) if s != best else -1)
    return [other, best] if sentences.index(other) < sentences.index(best) else [best, other]
