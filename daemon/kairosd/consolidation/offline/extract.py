"""The offline consolidator: durable signals out of a transcript, with no LLM and no network.

What it looks for, in what the person typed (human user turns only: an agent's explanation that
"we should always..." is not the user's rule), sentence by sentence:

- :mod:`.clauses` leaves out what was pasted (fenced code, quoted lines, lines a program printed:
  logs, compiler, linter and CI output) and splits the rest into sentences;
- :mod:`.cues` reads each sentence for a clear cue, precision first (a board entry is given to
  every later session as an instruction; a missed one is only missing): rule, preference,
  correction, decision, todo, fact, or a to-do said done (a ``close`` candidate);
- :mod:`.changes` reads a sentence that says something changed and makes no entry of its own ("stg
  api moved, its api-stg2.tipjar.dev:8443 now") as an ``update`` candidate: the board keeps it
  only in the place of the entry whose slot it gives a new value;
- the items of a context list the person typed ("ctx:" then "- msrv 1.70") are facts, unless
  one asks, orders or hedges (:func:`.cues.context_item`);
- a turn that opens as a user story ("User story: ...", "As a guest I want ...") asks for a
  feature: its "should" and "must" are what to build, not rules, unless one says "from now on";
- :mod:`.joined` makes the orders of one typed line (rules, preferences, corrections), with what
  is said between them and the reason said after them, one entry: read sentence by sentence, "the
  invariant: a balance is never updated in place. Every change is an append to postings." is two
  fragments, each given to every later session as an instruction of its own;
- a correction keeps what it names as corrected ("correction on the alloc rule: ...", and "... That
  supersedes what I said about i128." after an entry): "(corrects what was said about alloc)"
  lets the board replace that entry though the new words do not name it (:func:`.cues.retracting`);
- here, two sentences read together: "put that on the list" is a to-do about the sentence before,
  "so that's done" closes what the sentence before named, and "could you not use X? Use Y." is
  one rule;
- and from the tools: the items of the agent's last to-do list (Claude's TodoWrite, Codex's
  update_plan) not done, the commands that mattered (build, test, lint and deploy commands, or any
  command run three times or more) and the files edited most.

- :mod:`.noise` refuses what carries a cue's words and is no standing instruction: hypotheticals,
  other people's and tools' words, observations, one-offs about the code at hand, task orders,
  review comments, a pick among the agent's options, the state of the work at hand;
- :mod:`.at_hand` reads the whole turn: a fact said beside a request for work now ("The config comes
  from the ansible role. Please explain the transport map.") is that work's context, not the project's;
- in the cautious reading (``[consolidation] offline = "cautious"``), :mod:`.kinds` is asked too: a cue's
  entry is kept only when a small naive Bayes model trained on the corpus reads the sentence as the same
  kind (rule, preference and correction count as one); a to-do said done always passes, and nothing the
  broad reading would not make is kept. Blind (fresh8), precision 0.97 where the cues alone have 0.81,
  recall 0.32 where they have 0.47;
- last, whatever cue made an entry, :mod:`.substance` keeps it only if it stands alone (an order of
  four words or more, with no question in it, not a bare infinitive; a to-do that names what to
  do) and gives a rule that only reports a change ("X moved to Y") the kind "fact". These are shapes,
  not phrases: they carried to writers the cues were not tuned on, where phrases did not.

Why patterns and not a trained classifier (tests/consolidation_corpus/train_classifier.py, 54
train writers): leave-one-writer-out, a naive Bayes classifier alone has precision 0.86 and recall
0.64; as a gate on the cues it keeps their precision and loses a fifth of their recall. Trained
only on the writers before each (so each is unseen, as the cues were the day it was written), it
has precision 0.80 on w-train-25..29 and 50..78 where the cues had 0.92, at the same recall (0.67). On
sentences written outside the corpus, of the 4 noise sentences (of 83) the cues keep, its gate
drops 3, and it drops 10 of the 49 real instructions (of 55) they keep.

Then it normalises: relative dates become absolute (relative to when the words were said), text
is cut to one line of at most :data:`MAX_TEXT` characters, and candidates are deduplicated by
their normalised text (:func:`normal_key`). Questions, quoted or fenced text, secrets (tokens,
keys, passwords) and text that tries to instruct a future agent about its instructions are
dropped, not stored.

Safety: the transcript is data. Nothing here evaluates, runs or fetches anything; entries are
plain text (they are quoted and fenced when shown to a session, see :mod:`..board.store`).

Pure (the caller gives the anchor time and the zone). Must not import the board, the registry
or anything that does I/O.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from kairosd.consolidation.board.entries import KINDS, MAX_TEXT, Candidate, clean, normal_key, unsafe
from kairosd.consolidation.offline.at_hand import context_of_request
from kairosd.consolidation.offline.changes import update
from kairosd.consolidation.offline.clauses import MAX_LINE, context_items, lined_sentences, sentences
from kairosd.consolidation.offline.cues import (
    MIN_TEXT,
    Signal,
    classify,
    clause_rule,
    context_item,
    is_fact,
    read,
    refers_back,
    retracting,
)
from kairosd.consolidation.offline.dates import absolutize
from kairosd.consolidation.offline.joined import asks_to_note_it, joined
from kairosd.consolidation.offline.kinds import Kinds, agrees
from kairosd.consolidation.offline.letters import letter_runs
from kairosd.consolidation.offline.noise import names_nothing, refused
from kairosd.consolidation.offline.substance import fragment, kind_by_mood
from kairosd.consolidation.transcripts.model import Message
from kairosd.core import lazyre

__all__ = [
    "KINDS",
    "MAX_TEXT",
    "MIN_TEXT",
    "Candidate",
    "Extraction",
    "classify",
    "clean",
    "extract",
    "is_fact",
    "normal_key",
    "sentences",
    "unsafe",
]

MAX_SENTENCE_SOURCE = MAX_LINE  # longer "sentences" are pasted text, not something a person said
# How many candidates of each group one session may add: the latest statements win (a later
# correction is more current than an earlier rule).
CAPS = {"rule": 8, "decision": 4, "todo": 4, "command": 3, "file": 3}
_CAP_GROUP = {"rule": "rule", "preference": "rule", "correction": "rule", "decision": "decision", "todo": "todo"}
REPEATED_COMMAND = 3
# A close that names nothing ("so that's done") beyond words like these refers to what came before.
_NAMES = lazyre.compile(
    r"\b(?!(?:so|that'?s|that|this|it'?s|it|is|are|was|all|now|done|fixed|sorted|finished|closed|too|also|ok|okay|"
    r"btw|then|well|yep|yes|and|item|one|thing|point|part|bit|task)\b)[a-z][a-z0-9_-]{2,}",
    re.IGNORECASE,
)
# A sentence that only heads the next one ("New decision. We're moving ...", "Correction on the SLA.
# 48 hours ...") is read with it; one that only stresses the one before ("No exceptions.") makes it a rule.
_HEADER = lazyre.compile(
    r"^(?:(?:a\s+|one\s+)?(?:small\s+|quick\s+|minor\s+)?correction(?:\s+(?:on|to|about|for)\s+[^.:]{1,30})?|new\s+decision|"
    r"(?:a\s+)?decision|change\s+of\s+plans?(?:\s+(?:on|for|about|re)\s+[^.:]{1,30})?|new\s+plan|new\s+rule|house\s+rule|rules?\s+for\s+this\s+\w+|"
    r"(?:ok(?:ay)?[,\s]+)?(?:scratch|forget|ignore|disregard)\s+what\s+i\s+(?:said|told\s+you)\s+(?:about|re)\s+[^.:]{1,30})[.!:]*$",
    re.IGNORECASE,
)
# A word every alternative of _HEADER needs (an exact prefilter, :mod:`.letters`).
_HEADER_NEEDS = frozenset(["correction", "decision", "plan", "plans", "rule", "rules", "what"])
_STRESS = lazyre.compile(
    r"^(?:no\s+exceptions|zero\s+exceptions|period|full\s+stop|non-?negotiable|always|every\s+time|without\s+exception)[.!]*$",
    re.IGNORECASE,
)
# A turn that opens as a user story asks for a feature: its "should" and "must" are what to build.
_STORY = lazyre.compile(
    r"^(?:user\s+story\b|as\s+an?\s+[\w-]+(?:\s+[\w-]+)?,?\s+i\s+(?:want|need|would\s+like)\b)", re.IGNORECASE
)
# A sentence that only takes back what was said before ("That supersedes what I said about i128."):
# the entry of the sentence before replaces it.
_RETRACTION = lazyre.compile(
    r"^(?:(?:so|and|ok(?:ay)?)[,\s]+)?(?:(?:that|this|which|it)\s+)?(?:supersedes|replaces|overrides|corrects)\s+what\s+i\s+"
    r"(?:said|told\s+you|wrote)(?:\s+(?:earlier|before|yesterday|last\s+time))?\s+(?:about|re|on)\s+(?P<about>[^.!?]{1,40}?)[.!]*$",
    re.IGNORECASE,
)
# What _RETRACTION needs (an exact prefilter, :mod:`.letters`): one of its verbs, after a space or the start.
_RETRACTING = frozenset(["supersedes", "replaces", "overrides", "corrects"])
_ORDERS = frozenset({"rule", "preference", "correction"})
_FOR_GOOD = lazyre.compile(r"\b(?:from\s+now\s+on|going\s+forward|always|never|every\s+time|whenever)\b", re.IGNORECASE)
_USE_NEXT = lazyre.compile(r"^use\s+\S+(?:\s+\S+){0,5}[.!]?$", re.IGNORECASE)

_TRIVIAL_COMMANDS = frozenset(
    {"ls", "cat", "cd", "echo", "pwd", "head", "tail", "grep", "rg", "find", "wc", "sed", "awk", "less", "more",
     "which", "true", "false", "sleep", "clear", "tree", "file", "stat", "diff", "sort", "uniq", "env", "printf",
     "date", "whoami", "history", "man", "touch", "mkdir", "cp", "mv", "rm"}
)  # fmt: skip
_TRIVIAL_GIT = frozenset({"status", "diff", "log", "show", "branch", "add", "stash", "blame", "remote", "fetch"})
_IMPORTANT_COMMAND = lazyre.compile(
    r"(?:^|\s)(?:make|just|pytest|tox|nox|ruff|mypy|pyright|black|flake8|eslint|prettier|tsc|jest|vitest|"
    r"cargo\s+(?:build|test|clippy|fmt|run)|go\s+(?:build|test|vet|run)|npm\s+(?:run|test|ci)|yarn\s+\w+|"
    r"pnpm\s+\w+|bun\s+\w+|gradle\w*|mvn|bazel|cmake|ctest|docker\s+(?:compose|build)|docker-compose|"
    r"kubectl|terraform|helm|alembic|uv\s+run|poetry\s+run|hatch\s+run|pip\s+install|\./scripts?/|scripts/)",
)
_CD_PREFIX = lazyre.compile(r"^\s*cd\s+\S+\s*(?:&&|;)\s*")


@dataclass
class Extraction:
    candidates: list[Candidate] = field(default_factory=list)  # entries to add, to-dos said done
    # What the board merges: ``candidates`` and, in the order said, the ``update`` candidates (a
    # sentence that says something changed or happened: the board keeps one only if it updates an
    # entry or closes a to-do, :mod:`.changes`)
    to_merge: list[Candidate] = field(default_factory=list)
    dropped_secrets: int = 0
    dropped_injections: int = 0
    human_turns: int = 0

    def counts(self) -> dict[str, int]:
        return dict(Counter(c.kind for c in self.candidates))


def signals(text: str, after_agent: bool, kinds: Kinds | None = None) -> tuple[Signal, ...]:
    """What one human turn says for the board, sentence by sentence, before dates are made absolute
    (``kinds``: the cautious reading's model, :func:`extract`)."""
    return turn(text, after_agent, kinds)[0]


@functools.lru_cache(maxsize=4096)  # people repeat themselves ("continue", "run the tests again")
def turn(text: str, after_agent: bool, kinds: Kinds | None = None) -> tuple[tuple[Signal, ...], tuple[Signal, ...]]:
    """:func:`signals`, and the turn's ``update`` signals (:mod:`.changes`)."""
    found: list[Signal] = []
    at: list[tuple[int, int]] = []  # the first and last sentence each signal in ``found`` was read from
    previous: str | None = None
    previous_signal: Signal | None = None
    listed = context_items(text) if ":" in text else {}
    lined = _headed(lined_sentences(text))
    typed = [sentence for _, sentence in lined]
    story = bool(typed) and _STORY.match(typed[0]) is not None
    changes: list[Signal | None] = []
    for index, sentence in enumerate(typed):
        if previous is not None and len(sentence) < 30 and _STRESS.match(sentence):
            # "Code review SLA is 24 hours. No exceptions.": the sentence before is a rule
            said = f"{previous.rstrip('.!')}. {sentence}"
            if previous_signal is not None and previous_signal.action == "add":
                found[-1] = previous_signal = Signal("rule", said)
                at[-1] = (at[-1][0], index)
            elif previous_signal is None:
                found.append(Signal("rule", said[:1].upper() + said[1:]))
                at.append((index - 1, index))
                previous_signal = found[-1]
            previous = said
            continue
        may_retract = not sentence.isascii() or not _RETRACTING.isdisjoint(letter_runs(sentence))
        retracted = _RETRACTION.match(sentence) if may_retract else None
        if (
            retracted is not None
            and previous_signal is not None
            and previous_signal.action == "add"
            and previous_signal.kind != "todo"
        ):
            # "We're going with i64 minor units. That supersedes what I said about i128.": the entry
            # before replaces what was said about i128
            found[-1] = previous_signal = retracting(previous_signal, retracted["about"]) or previous_signal
            at[-1] = (at[-1][0], index)
            previous = sentence
            continue
        signal = read(sentence, after_agent=after_agent, first=index == 0)
        if (
            kinds is not None
            and signal is not None
            and signal.action == "add"
            and not agrees(kinds, sentence, signal.kind)
        ):
            signal = None  # the cautious reading: the model reads this sentence as another kind, or none
        start = index
        if sentence in listed and (signal is None or (listed[sentence] == "rule" and signal.kind == "fact")):
            signal = context_item(sentence, listed[sentence])  # "ctx:\n- msrv 1.70": a fact the person listed
            if signal is not None and refused(sentence, signal.kind) is not None:
                signal = None  # "ctx:\n- the bug is in src/x.ts": the work at hand, even in a list
        if (
            signal is not None
            and signal.kind == "todo"
            and signal.action == "add"
            and fragment("todo", signal.text)
            and not asks_to_note_it(signal.text)
            and previous is not None
            and previous_signal is None
            and lined[index - 1][0] == lined[index][0]
            and not fragment("todo", previous)
        ):
            # "need a redis conn errors alert too. later not now": a to-do that names nothing is the
            # sentence before, if that one said something and made no entry of its own
            said = f"{previous.rstrip('.!')}: {sentence}"
            signal = Signal("todo", said[:1].upper() + said[1:])
            start = index - 1
        if signal is None and previous is not None and refers_back(sentence):
            # "write the runbook. put that on the list": the to-do is the sentence before
            if previous_signal is None or previous_signal.kind != "todo":
                said = f"{previous.rstrip('.!')}: {sentence}"
                signal = Signal("todo", said[:1].upper() + said[1:])
                start = index - 1
        elif (
            signal is None
            and previous_signal is not None
            and previous_signal.kind == "rule"
            and _USE_NEXT.match(sentence)
        ):
            # "could you not use inline SVGs? Use the sprite.": one rule
            found[-1] = previous_signal = Signal("rule", f"{previous_signal.text.rstrip('.!')}. {sentence}")
            at[-1] = (at[-1][0], index)
            previous = sentence
            continue
        if signal is None and ("," in sentence or ";" in sentence or " so " in sentence):
            signal = clause_rule(sentence)  # "..., so never join partners on the name"
        if story and signal is not None and signal.kind in _ORDERS and not _FOR_GOOD.search(sentence):
            signal = None  # "User story: ... The button should be red": what to build now, not a rule
        if signal is not None and signal.action == "close" and previous is not None and not _NAMES.search(signal.text):
            # "got read access today!! so that's done": what is done is the sentence before
            signal = Signal("todo", f"{previous} {signal.text}", "close")
        if signal is not None:
            found.append(signal)
            at.append((start, index))
        if signal is None or signal.action == "close":
            # "the restic version pin is now 0.17.1" reads as something done; if no to-do is about
            # it, it may still give an entry a new value
            changes.append(update(sentence, previous, done=signal is not None))
        previous, previous_signal = sentence, signal
    out = tuple(
        Signal(kind_by_mood(s.kind, s.text), s.text, s.action)
        for s in joined(lined, found, at)
        if s.action != "add" or ((s.kind not in _ORDERS or not names_nothing(s.text)) and not fragment(s.kind, s.text))
    )
    # A fact beside a request for work now is that work's context (:mod:`.at_hand`)
    out = tuple(s for s in out if s.action != "add" or not context_of_request(s.kind, s.text, typed))
    # A change no entry holds ("stg api moved, its api-stg2.tipjar.dev:8443 now"): the board keeps it
    # only if it gives an entry a new value (:mod:`.changes`)
    held = [s.text for s in out if s.action != "close"]
    return out, tuple(c for c in changes if c is not None and not any(c.text in h or h in c.text for h in held))


def _headed(said: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The sentences (with their lines), a heading one joined to the next ("New decision. We're
    moving ..." is one)."""
    out: list[tuple[int, str]] = []
    for line, sentence in said:
        if out and len(out[-1][1]) < 60 and _may_head(out[-1][1]) and _HEADER.match(out[-1][1]):
            out[-1] = (out[-1][0], f"{out[-1][1].rstrip('.!:')}: {sentence}")
        else:
            out.append((line, sentence))
    return out


def _may_head(sentence: str) -> bool:
    return not sentence.isascii() or not _HEADER_NEEDS.isdisjoint(letter_runs(sentence))


@functools.lru_cache(maxsize=4096)  # sessions run the same few commands again and again
def short_command(command: str) -> str | None:
    """A command as worth remembering: its first line, without a leading ``cd X &&``; None if trivial."""
    first = command.strip().splitlines()[0] if command.strip() else ""
    first = _CD_PREFIX.sub("", first).strip()
    if not first or len(first) > 160:
        return None
    words = first.split()
    head = os.path.basename(words[0])
    if head in ("sudo", "time", "env") and len(words) > 1:
        head = os.path.basename(words[1])
    if head in _TRIVIAL_COMMANDS or (head == "git" and len(words) > 1 and words[1] in _TRIVIAL_GIT):
        return None
    return " ".join(words)


def project_relative(path: str, project: str | None) -> str | None:
    """``path`` relative to the project (None for a file outside it, e.g. in /tmp)."""
    if not project:
        return path if not os.path.isabs(path) else None
    absolute = path if os.path.isabs(path) else os.path.join(project, path)
    absolute = os.path.normpath(absolute)
    root = os.path.normpath(project)
    if absolute == root or not absolute.startswith(root + os.sep):
        return None
    return os.path.relpath(absolute, root)


def extract(
    messages: Iterable[Message],
    *,
    project: str | None,
    anchor: datetime,
    zone: ZoneInfo,
    kinds: Kinds | None = None,
) -> Extraction:
    """Candidates for the board out of a transcript's messages (see the module docstring).

    ``anchor`` is the time to resolve relative dates against when a message has none (the latest
    time seen so far is used first); ``zone`` the user's zone; ``kinds``: the cautious reading, a
    cue's entry kept only if this model agrees on its kind (None: the broad reading, the cues alone).
    """
    if kinds is None:
        return _extract(messages, project, anchor, zone, None)
    # The cautious reading only removes. A cue's entry dropped where it is read changes how the sentences
    # around it are read (8 of the corpus' 4,663 turns: "X is pinned. do NOT bump it" is one rule when
    # both are read, a fact when the second is dropped; "put it on the list" makes a to-do of the sentence
    # before when that one made none), and a group's cap then keeps an older entry: what the broad reading
    # would not make is left out too.
    said = list(messages)
    broad = set(_extract(said, project, anchor, zone, None).to_merge)
    result = _extract(said, project, anchor, zone, kinds)
    result.to_merge = [c for c in result.to_merge if c in broad]
    result.candidates = [c for c in result.to_merge if c.action != "update"]
    return result


def _extract(
    messages: Iterable[Message], project: str | None, anchor: datetime, zone: ZoneInfo, kinds: Kinds | None
) -> Extraction:
    result = Extraction()
    said: dict[str, Candidate] = {}  # normal key -> candidate; a repeat moves it to the end (newer)
    commands: Counter[str] = Counter()
    edited: Counter[str] = Counter()
    open_todos: tuple[str, ...] | None = None
    last_role: str | None = None
    latest = anchor
    for message in messages:
        if message.at is not None:
            latest = message.at
        if message.human:
            result.human_turns += 1
            when = message.at or latest
            for signal in (s for group in turn(message.text, last_role == "assistant", kinds) for s in group):
                text = clean(absolutize(signal.text, when, zone))
                _keep(said, result, Candidate(signal.kind, text, when, action=signal.action))
        for tool in message.tools:
            if tool.kind == "shell" and tool.command:
                short = short_command(tool.command)
                if short is not None:
                    commands[short] += 1
            elif tool.kind == "edit":
                for path in tool.paths:
                    relative = project_relative(path, project)
                    if relative is not None:
                        edited[relative] += 1
            elif tool.kind == "todo" and tool.open_todos is not None:
                open_todos = tool.open_todos  # the latest list is the state the session ended in
        if message.role == "assistant" or message.human:
            last_role = message.role
    for item in open_todos or ():
        text = clean(absolutize(f"Open to-do: {item}", latest, zone))
        _keep(said, result, Candidate("todo", text, latest))
    facts: list[Candidate] = []
    important = [c for c, n in commands.most_common() if _IMPORTANT_COMMAND.search(" " + c) or n >= REPEATED_COMMAND]
    for command in important[: CAPS["command"]]:
        facts.append(Candidate("fact", clean(f"Command used in this project: `{command}`"), latest))
    for path, _ in edited.most_common(CAPS["file"]):
        facts.append(Candidate("fact", clean(f"Often edited file: {path}"), latest))
    for fact in facts:
        _keep(said, result, fact)
    result.to_merge = _capped(list(said.values()))
    result.candidates = [c for c in result.to_merge if c.action != "update"]
    return result


def _keep(said: dict[str, Candidate], result: Extraction, candidate: Candidate) -> None:
    if len(candidate.text) < MIN_TEXT:
        return
    key = normal_key(candidate.text)
    if candidate.action != "add":
        key = f"{candidate.action}:{key}"  # "X is done" and an entry "X is done" are not the same thing
    known = said.get(key)
    if known is not None and known.text == candidate.text:
        del said[key]  # said again: it moves to the end (the newest), already found safe
        said[key] = candidate
        return
    why = unsafe(candidate.text)
    if why == "secret":
        result.dropped_secrets += 1
        return
    if why == "injection":
        result.dropped_injections += 1
        return
    if not key:
        return
    said.pop(key, None)
    said[key] = candidate


def _capped(candidates: list[Candidate]) -> list[Candidate]:
    """At most :data:`CAPS` per group, keeping the latest of each (the list is oldest first)."""
    kept: list[Candidate] = []
    used: Counter[str] = Counter()
    for candidate in reversed(candidates):
        group = _CAP_GROUP.get(candidate.kind) if candidate.action == "add" else None
        if group is None:  # facts were capped as they were made; a close adds no entry
            kept.append(candidate)
            continue
        if used[group] < CAPS[group]:
            used[group] += 1
            kept.append(candidate)
    kept.reverse()
    return kept
