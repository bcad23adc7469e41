"""The labeled corpus v2: ``data/<split>/<writer>.json`` read and checked strictly.

The format is described in /work/prompts/corpus-format.md and in :data:`__doc__` of the package:
one file per writer voice, holding projects, each a list of sessions in order, each session a
transcript shape and the turns the person typed with the board entries each should produce.

Strict on purpose: a label with a typo (an unknown field, a kind that is not a board kind, a key
that is not lower case or not in the turn's own words, a ``replaces`` or ``closes`` that names no
earlier expected item) is a :class:`CorpusError` naming the file and the place, never a label
silently scored as something else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairosd.consolidation.board.entries import KINDS

DATA = Path(__file__).parent / "data"
SPLITS = ("train", "heldout", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8")
SHAPES = ("claude", "codex", "codex-0.169", "gemini", "gemini-jsonl", "copilot")

Key = tuple[str, ...]


class CorpusError(ValueError):
    """A corpus file that does not follow the format (the message says where)."""


@dataclass(frozen=True)
class Expect:
    kinds: tuple[str, ...]  # the kinds an entry for it may have; the first is the one reported
    key: Key  # lower-case words/phrases that must all be in the entry's text
    replaces: Key | None = None  # the key of an earlier expected item this one replaces

    @property
    def kind(self) -> str:
        return self.kinds[0]

    def matches(self, kind: str, text: str) -> bool:
        low = text.lower()
        return kind in self.kinds and all(word in low for word in self.key)


@dataclass(frozen=True)
class Turn:
    text: str
    expect: tuple[Expect, ...] = ()
    closes: tuple[Key, ...] = ()  # keys of earlier expected to-dos this turn says are done


@dataclass(frozen=True)
class Session:
    shape: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Project:
    name: str
    sessions: tuple[Session, ...]


@dataclass(frozen=True)
class Writer:
    split: str
    writer: str
    voice: str
    projects: tuple[Project, ...]
    path: Path

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for p in self.projects for s in p.sessions)


def load(split: str, data: Path = DATA) -> list[Writer]:
    """Every writer file of ``split``, in name order (an unknown split or an empty one is an error)."""
    if split not in SPLITS:
        raise CorpusError(f"unknown split {split!r} (one of {', '.join(SPLITS)})")
    files = sorted((data / split).glob("*.json"))
    if not files:
        raise CorpusError(f"no corpus files in {data / split}")
    return [load_file(path, split) for path in files]


def load_file(path: Path, split: str) -> Writer:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{path}: cannot be read: {exc}") from exc
    return parse(doc, split, path)


def parse(doc: Any, split: str, path: Path) -> Writer:
    where = str(path)
    obj = _object(doc, where, required={"writer", "voice", "projects"})
    writer, voice = _text(obj["writer"], f"{where}.writer"), _text(obj["voice"], f"{where}.voice")
    projects = tuple(
        _project(p, f"{where}:{writer}.projects[{i}]") for i, p in enumerate(_list(obj["projects"], where))
    )
    names = [p.name for p in projects]
    if len(set(names)) != len(names):
        raise CorpusError(f"{where}: a project name appears twice: {names}")
    return Writer(split, writer, voice, projects, path)


def _project(doc: Any, where: str) -> Project:
    obj = _object(doc, where, required={"name", "sessions"})
    name = _text(obj["name"], f"{where}.name")
    where = f"{where}({name})"
    learned: list[Expect] = []  # every expected item so far in this project, in order
    sessions = []
    for s, session in enumerate(_list(obj["sessions"], f"{where}.sessions")):
        at = f"{where}.sessions[{s}]"
        sobj = _object(session, at, required={"format", "turns"})
        shape = sobj["format"]
        if shape not in SHAPES:
            raise CorpusError(f"{at}.format: {shape!r} is not one of {', '.join(SHAPES)}")
        turns: list[Turn] = []
        for i, turn in enumerate(_list(sobj["turns"], at)):
            turns.append(_turn(turn, f"{at}.turns[{i}]", learned, " ".join(t.text for t in turns)))
        sessions.append(Session(shape, tuple(turns)))
    return Project(name, tuple(sessions))


def _turn(doc: Any, where: str, learned: list[Expect], before: str) -> Turn:
    """``before``: the session's earlier turns ("put that on the list" names what they said)."""
    obj = _object(doc, where, required={"text", "expect"}, optional={"closes"})
    text = _text(obj["text"], f"{where}.text")
    expect = []
    for i, item in enumerate(_list(obj["expect"], f"{where}.expect", empty=True)):
        at = f"{where}.expect[{i}]"
        iobj = _object(item, at, required={"kind", "key"}, optional={"replaces"})
        kinds = iobj["kind"] if isinstance(iobj["kind"], list) else [iobj["kind"]]
        if not kinds or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise CorpusError(f"{at}.kind: {iobj['kind']!r}: each must be one of {', '.join(KINDS)}")
        key = _key(iobj["key"], f"{at}.key", f"{before}\n{text}")
        replaces = None
        if "replaces" in iobj:
            replaces = _key(iobj["replaces"], f"{at}.replaces", None)
            if not any(e.key == replaces for e in learned):
                raise CorpusError(f"{at}.replaces: {list(replaces)} is not the key of an earlier expected item")
        expect.append(Expect(tuple(kinds), key, replaces))
    closes = []
    for i, key in enumerate(_list(obj.get("closes", []), f"{where}.closes", empty=True)):
        closed = _key(key, f"{where}.closes[{i}]", None)
        if not any(e.key == closed and "todo" in e.kinds for e in learned):
            raise CorpusError(f"{where}.closes[{i}]: {list(closed)} is not the key of an earlier expected to-do")
        closes.append(closed)
    learned.extend(expect)
    return Turn(text, tuple(expect), tuple(closes))


def _key(doc: Any, where: str, text: str | None) -> Key:
    words = _list(doc, where)
    for word in words:
        if not isinstance(word, str) or not word.strip() or word != word.lower() or word != word.strip():
            raise CorpusError(f"{where}: {word!r}: a key is non-empty lower-case words without edge spaces")
        if text is not None and word not in text.lower():
            raise CorpusError(f"{where}: {word!r} is not in what the person typed (this turn or an earlier one)")
    return tuple(words)


def _object(doc: Any, where: str, required: set[str], optional: frozenset[str] | set[str] = frozenset()) -> dict:
    if not isinstance(doc, dict):
        raise CorpusError(f"{where}: expected an object, found {type(doc).__name__}")
    missing, unknown = required - doc.keys(), doc.keys() - required - set(optional)
    if missing:
        raise CorpusError(f"{where}: missing {', '.join(sorted(missing))}")
    if unknown:
        raise CorpusError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    return doc


def _list(doc: Any, where: str, empty: bool = False) -> list[Any]:
    if not isinstance(doc, list) or (not doc and not empty):
        raise CorpusError(f"{where}: expected a{'' if empty else ' non-empty'} list")
    return doc


def _text(doc: Any, where: str) -> str:
    if not isinstance(doc, str) or not doc.strip():
        raise CorpusError(f"{where}: expected non-empty text")
    return doc
