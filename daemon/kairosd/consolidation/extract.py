"""The offline consolidator: durable signals out of a transcript, with no LLM and no network.

What it looks for, in what the person typed (human user turns only: an agent's explanation that
"we should always..." is not the user's rule):

- **rule**: "always ...", "never ...", "don't ...", "make sure to ...", "from now on ...",
  "remember (that) ...", at the start of a sentence (after "please", "also", "you should", ...);
- **preference**: "I prefer ...", "prefer X over Y", "use X instead of Y", "I'd rather ...";
- **correction**: the first sentence of a turn that answers the agent with "no", "wrong",
  "actually", "that's not ...", "I said ...", "you forgot ...";
- **decision**: "let's go with ...", "we'll use ...", "we decided to ...", "decision: ...";
- **todo**: "TODO: ...", "later ...", "next time ...", "don't forget to ...", "remind me to ...",
  and the items of the agent's last to-do list (Claude's TodoWrite, Codex's update_plan) not done;
- **fact**: the commands that mattered (build, test, lint and deploy commands, or any command run
  three times or more) and the files edited most.

Then it normalises: relative dates become absolute (relative to when the words were said), text
is cut to one line of at most :data:`MAX_TEXT` characters, and candidates are deduplicated by
their normalised text (:func:`normal_key`). Questions, quoted or fenced text, secrets (tokens,
keys, passwords) and text that tries to instruct a future agent about its instructions are
dropped, not stored.

Safety: the transcript is data. Nothing here evaluates, runs or fetches anything; entries are
plain text (they are quoted and fenced when shown to a session, see :mod:`.board`).

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

from kairosd.consolidation.dates import absolutize
from kairosd.consolidation.entries import KINDS, MAX_TEXT, Candidate, clean, normal_key, unsafe
from kairosd.consolidation.transcripts import Message

__all__ = ["KINDS", "MAX_TEXT", "Candidate", "Extraction", "clean", "extract", "normal_key", "unsafe"]

MIN_TEXT = 8
MAX_SENTENCE_SOURCE = 600  # longer "sentences" are pasted text, not something a person said
# How many candidates of each group one session may add: the latest statements win (a later
# correction is more current than an earlier rule).
CAPS = {"rule": 8, "decision": 4, "todo": 4, "command": 3, "file": 3}
_CAP_GROUP = {"rule": "rule", "preference": "rule", "correction": "rule", "decision": "decision", "todo": "todo"}
REPEATED_COMMAND = 3

_LEAD = r"^(?:(?:please|pls|also|and|but|so|ok(?:ay)?|important|note|fyi|btw|hey|hi|remember)[,:!]?\s+)*"
_RULE = re.compile(
    _LEAD + r"(?:(?:in|for)\s+this\s+(?:project|repo|repository|codebase)[,:]?\s+)?"
    r"(?:(?:you|we)\s+(?:should\s+|must\s+)?)?"
    r"(?:always|never|don'?t|do\s+not|must(?:\s+not)?|make\s+sure|from\s+now\s+on)\b",
    re.IGNORECASE,
)
# "Don't worry about it", "never mind": the words of a rule, the meaning of chit-chat.
_CHATTER = re.compile(
    r"\b(?:don'?t|do\s+not|never)\s+(?:worry|bother|mind|care|know|think|understand|see\s+why)\b"
    r"|^(?:i\s+)?(?:never|always)\s+(?:seen|heard|had|been|liked|understood|thought|fun|nice|great|happy|good|"
    r"a\s+pleasure)\b",
    re.IGNORECASE,
)
_REMEMBER = re.compile(r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|note\s+for\s+the\s+future)\b", re.IGNORECASE)
_PREFERENCE = re.compile(
    r"(?:^|\b(?:i|we)\s+)(?:would\s+|'d\s+)?prefer\b|\bi'?d\s+rather\b|\b(?:i|we)\s+like\s+to\s+use\b"
    r"|\buse\s+\S+(?:\s+\S+)?\s+(?:instead\s+of|rather\s+than|over)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^(?:no+\b|nope\b|wrong\b|incorrect\b|not\s+quite\b|actually\b|that'?s\s+(?:not|wrong|incorrect)\b"
    r"|that\s+is\s+(?:not|wrong|incorrect)\b|you\s+(?:forgot|missed|broke|misunderstood|didn'?t)\b"
    r"|i\s+(?:said|meant|told\s+you)\b|stop\b|undo\b|revert\b)[\s,.!:;-]*",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:let'?s|we'?ll|we\s+will|we\s+are|we'?re|i'?ll)\s+(?:go(?:ing)?\s+with|use|using|stick\s+with|keep|"
    r"switch\s+to|adopt)\b|\b(?:we|i)\s+(?:have\s+)?decided\b|^decision\s*:|^(?:let'?s\s+)?go\s+with\b",
    re.IGNORECASE,
)
# A project fact: a statement that names, locates or describes a part of the project ("X is called
# Y", "X runs on / lives in Y", "we use X for Y", "X is read-only on Fridays"). Its subject must be
# a thing (not "I", "you", "it", "this"), and it must not hedge: opinions and one-off remarks stay out.
_FACT_VERB = re.compile(
    r"\b(?:(?:is|are)\s+(?:called|named)\s+\S"
    r"|(?:runs?|lives?|sits?|(?:is|are)\s+(?:hosted|deployed|stored|kept|managed|built|published|configured|"
    r"defined))\s+(?:on|in|at|under|with|by)\s+\S"
    r"|go(?:es)?\s+(?:out\s+)?(?:to|from)\s+\S"
    r"|(?:is|are)\s+(?:read-only|frozen|protected|locked|owned\s+by|maintained\s+by)\b"
    r"|(?:owns?|maintains?|uses)\s+(?:the\s+)?\S)",
    re.IGNORECASE,
)
_FACT_WE_USE = re.compile(r"^(?:we|i)\s+use\s+\S+(?:\s+\S+){0,3}?\s+for\s+\S", re.IGNORECASE)
_NOT_A_SUBJECT = re.compile(
    r"^(?:i|i'?m|you|it|it'?s|this|that|these|those|there|he|she|they|what|why|how|when|where|who|which|can|could|"
    r"should|would|will|do|does|did|is|are|was|were|let'?s|lets|pls|please|maybe|perhaps|ok|okay|hmm|so|just|"
    r"if|and|but|or|then|also|now|well|yes|no|yeah|nah|lol)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:i\s+think|i\s+guess|i\s+believe|maybe|probably|perhaps|seems?|might|apparently|not\s+sure|was|were|"
    r"failed|broke|again|today|yesterday|right\s+now)\b",
    re.IGNORECASE,
)
_FACT_WORDS = (
    r"called|named|runs?|lives?|sits?|hosted|deployed|stored|kept|managed|built|published|configured|"
    r"defined|go|goes|read-only|frozen|protected|locked|owned|maintained|owns?|maintains?|uses?"
)


def is_fact(sentence: str) -> bool:
    """A statement about the project worth keeping as a ``fact`` entry (see :data:`_FACT_VERB`)."""
    if _HEDGE.search(sentence):
        return False
    if _FACT_WE_USE.match(sentence):
        return True
    if _NOT_A_SUBJECT.match(sentence):
        return False
    match = _FACT_VERB.search(sentence)
    # the subject comes first: at most a few words before the verb
    return match is not None and len(sentence[: match.start()].split()) <= 5 and match.start() > 0


# An explicit to-do wins over a rule ("don't forget to ..."); a vague one ("later") loses to it.
_TODO = re.compile(
    r"^(?:todo|fixme)\b[:\s]|\b(?:don'?t\s+forget\s+to|remind\s+me\s+to|still\s+need\s+to)\b", re.IGNORECASE
)
_TODO_VAGUE = re.compile(r"\b(?:later|next\s+time|follow[\s-]?up|at\s+some\s+point)\b", re.IGNORECASE)
# Every word a classifying pattern needs (a superset): a turn without one is not split and tested
# sentence by sentence. Most turns ("fix the test") have none, which keeps long transcripts fast.
_TRIGGER = re.compile(
    r"\b(?:always|never|don'?t|do\s+not|must|make\s+sure|from\s+now\s+on|remember|keep\s+in\s+mind|note\s+for|"
    r"prefer|rather|instead\s+of|over|like\s+to\s+use|let'?s|we'?ll|we\s+will|we\s+are|we'?re|i'?ll|decided|"
    r"decision|go\s+with|todo|fixme|forget|remind|still\s+need|later|next\s+time|follow|some\s+point|"
    + _FACT_WORDS
    + r")\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LOGGY = re.compile(r"Traceback \(most recent call last\)|^\s+File \"|^\s*at \S+\(|^\$ |^[\w.-]+@[\w.-]+:.*\$ ")

_TRIVIAL_COMMANDS = frozenset(
    {"ls", "cat", "cd", "echo", "pwd", "head", "tail", "grep", "rg", "find", "wc", "sed", "awk", "less", "more",
     "which", "true", "false", "sleep", "clear", "tree", "file", "stat", "diff", "sort", "uniq", "env", "printf",
     "date", "whoami", "history", "man", "touch", "mkdir", "cp", "mv", "rm"}
)  # fmt: skip
_TRIVIAL_GIT = frozenset({"status", "diff", "log", "show", "branch", "add", "stash", "blame", "remote", "fetch"})
_IMPORTANT_COMMAND = re.compile(
    r"(?:^|\s)(?:make|just|pytest|tox|nox|ruff|mypy|pyright|black|flake8|eslint|prettier|tsc|jest|vitest|"
    r"cargo\s+(?:build|test|clippy|fmt|run)|go\s+(?:build|test|vet|run)|npm\s+(?:run|test|ci)|yarn\s+\w+|"
    r"pnpm\s+\w+|bun\s+\w+|gradle\w*|mvn|bazel|cmake|ctest|docker\s+(?:compose|build)|docker-compose|"
    r"kubectl|terraform|helm|alembic|uv\s+run|poetry\s+run|hatch\s+run|pip\s+install|\./scripts?/|scripts/)",
)
_CD_PREFIX = re.compile(r"^\s*cd\s+\S+\s*(?:&&|;)\s*")


@dataclass
class Extraction:
    candidates: list[Candidate] = field(default_factory=list)
    dropped_secrets: int = 0
    dropped_injections: int = 0
    human_turns: int = 0

    def counts(self) -> dict[str, int]:
        return dict(Counter(c.kind for c in self.candidates))


def sentences(text: str) -> Iterable[str]:
    """The sentences a person wrote: fenced code, quoted lines, logs and pasted walls are skipped."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(">") or (_maybe_log(line) and _LOGGY.search(line)):
            continue
        line = line.strip().lstrip("-*• ").strip()
        if not line or len(line) > MAX_SENTENCE_SOURCE:
            continue
        yield from (s.strip() for s in _SENTENCES.split(line) if s.strip())


def _maybe_log(line: str) -> bool:
    """What every :data:`_LOGGY` match needs (a cheap test first: it runs on every line)."""
    return "Traceback" in line or line[:1] in (" ", "\t", "$") or line.startswith("at ") or "@" in line


def classify(sentence: str, *, after_agent: bool, first: bool) -> str | None:
    """The kind of a sentence a person wrote, or None. ``after_agent``/``first``: it opens a turn
    that answers the agent (only then can it be a correction)."""
    if sentence.endswith("?"):
        return None  # a question asks; it does not decide or instruct
    if first and after_agent and _CORRECTION.match(sentence):
        rest = _CORRECTION.sub("", sentence, count=1).strip()
        return "correction" if len(rest) >= MIN_TEXT and re.search(r"[A-Za-z]{3}", rest) else None
    if _TODO.search(sentence):
        return "todo"
    if _CHATTER.search(sentence):
        return None
    if _REMEMBER.match(sentence) or _RULE.match(sentence):
        return "rule"
    if _TODO_VAGUE.search(sentence):
        return "todo"
    if _PREFERENCE.search(sentence):
        return "preference"
    if _DECISION.search(sentence):
        return "decision"
    if is_fact(sentence):
        return "fact"
    return None


@functools.lru_cache(maxsize=4096)  # people repeat themselves ("continue", "run the tests again")
def signals(text: str, after_agent: bool) -> tuple[tuple[str, str], ...]:
    """The (kind, sentence) pairs of one human turn, before dates are made absolute."""
    text = text.replace("\u2019", "'")  # a typographic apostrophe is still "don't"
    if _TRIGGER.search(text) is None and not (after_agent and _CORRECTION.match(text.lstrip())):
        return ()  # nothing any pattern could match: no sentences to look at
    found = []
    for index, sentence in enumerate(sentences(text)):
        first = index == 0
        if not (first and after_agent) and _TRIGGER.search(sentence) is None:
            continue  # the same cheap test per sentence: most need no pattern at all
        kind = classify(sentence, after_agent=after_agent, first=first)
        if kind is not None:
            found.append((kind, _tidy(kind, sentence)))
    return tuple(found)


def _tidy(kind: str, sentence: str) -> str:
    if kind == "correction":
        sentence = _CORRECTION.sub("", sentence, count=1).strip()
    sentence = re.sub(r"^(?:please|pls)[,\s]+", "", sentence, flags=re.IGNORECASE)
    return sentence[:1].upper() + sentence[1:]


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


def extract(messages: Iterable[Message], *, project: str | None, anchor: datetime, zone: ZoneInfo) -> Extraction:
    """Candidates for the board out of a transcript's messages (see the module docstring).

    ``anchor`` is the time to resolve relative dates against when a message has none (the latest
    time seen so far is used first); ``zone`` the user's zone.
    """
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
            for kind, said_text in signals(message.text, last_role == "assistant"):
                _keep(said, result, Candidate(kind, clean(absolutize(said_text, when, zone)), when))
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
    result.candidates = _capped(list(said.values()))
    return result


def _keep(said: dict[str, Candidate], result: Extraction, candidate: Candidate) -> None:
    if len(candidate.text) < MIN_TEXT:
        return
    key = normal_key(candidate.text)
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
        group = _CAP_GROUP.get(candidate.kind)
        if group is None:  # facts were capped as they were made
            kept.append(candidate)
            continue
        if used[group] < CAPS[group]:
            used[group] += 1
            kept.append(candidate)
    kept.reverse()
    return kept
