"""Which entry a sentence that says something changed gives a new value (the slot it updates), or
which open to-do a sentence that says something happened says is done.

An entry that states a value is about a **slot**: the thing the value belongs to (the port of the
tax api, the day the prune job runs, the version restic is pinned to, the rule for unknown
facilities). A later sentence that says something changed ("stg api moved, its
api-stg2.tipjar.dev:8443 now", "Change: prune runs now on Saturday night, not Sunday", "the
gw_ratelimit_v2 flag has been removed") names that slot and gives it another value, or rules out
what the entry asked for. Such a sentence carries no cue of its own for the board (it is no rule,
and no to-do is open about it), so the offline extractor sends it as an ``update`` candidate and
the board keeps it only when it updates an entry: then it takes the entry's place and its kind.

An update's slot is matched on the board by

- **a new value for the same slot**: the entry has a value (a version, host, port, path,
  identifier, an amount with its unit, a day of the week) and the sentence one of the same shape
  that the entry lacks, and a word that names the entry's value (up to four meaningful words before
  it in its clause, two after: "money is i128 minor units") is in the sentence; the entry's value
  may be named again only as ruled out or old ("not Sunday", "the 8081 was the old one"); a word of
  its own before the shared name on both sides makes them two slots ("staging cluster", "prod
  cluster");
- **what it asks for ruled out**: a word the sentence rules out ("not rejected", "moved off 4.3",
  "X has been removed") that the entry asks for, compared by root ("rejected" is "reject"), or a
  port by its address ("not 8443" and "fhir.internal:8443").

Not by :func:`.supersede.supersedes`' looser words (which a plain new entry also replaces by):
measured on the tuned splits, they let "eu is going back to envoy 1.30" take back the rule "we
never reload envoy by restarting the pod" ("back to" and "envoy"), and made no right update more.

A new entry of its own (a fact, rule or decision the cues read) that says something changed and
that :mod:`.supersede` finds nothing for is matched the same way: "The cache moved with the
cluster migration: grpcs://cache2.build.internal:9092 now" names the slot ("cache") in another
clause than its value, where :mod:`.supersede` looks.

The sentence said that something changed, so one shared name suffices here where a plain entry
needs more (:mod:`.supersede`); but only one entry may be updated: when two fit equally, neither is
(a wrong replacement removes a good entry from every later session). To-dos are never updated (a
sentence that says one is done closes it: :func:`.supersede.closed`).

An update first closes the one open to-do it names (:func:`done_by`): two of the to-do's own
words, not counting the verbs that say what happened nor the words that only ask for a to-do
("remind me", "next wk"), no word that says it was not done or only begun ("not", "still",
"looked at", "tried"), and a word that says it is finished ("built", "is up", "works", "... now")
or the to-do's own verb ("ssh key rotated" for "rotate the ops ssh key"): "the billing client
crashed again" closes no "add retries to the billing client". :func:`.supersede.closed` is
stricter (its sentence carries a word for "done" already); this one reads what the cues leave:
"ssh key rotated btw", "the march backfill ran overnight".

Pure: must not import the store or anything that does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kairosd.consolidation.board.supersede import (
    _CHANGE,
    _CLAUSE,
    _PLANNED,
    _SLOT_GENERIC,
    _STOP,
    _SUFFIX,
    _TODO_HEAD,
    _WORD,
    FAMILY,
    Item,
    _named,
    _own_before,
    _roots,
    _said_to_be_old,
    _same_shape,
    _stem,
    _values,
    ruled_out,
    words,
)
from kairosd.core import lazyre

__all__ = ["done_by", "says_changed", "updated"]


def says_changed(text: str) -> bool:
    """Whether ``text`` says that something changed ("now", "moved", "switched", "no longer", ...)."""
    return _CHANGE.search(text) is not None


# Words that name no slot, though they are no stop words elsewhere ("the old one", "their lead").
_VAGUE = frozenset(["one", "ones", "their", "them", "they", "thing", "things", "stuff", "way", "part", "bit", "lot"])


def _root(word: str) -> str:
    return _SUFFIX.sub("", word) if len(word) > 4 else word


def _names_after(text: str, value: str) -> list[str]:
    """The meaningful words right after ``value`` in its clause ("i128 minor units" -> minor, unit)."""
    lower = text.lower().replace("\u2019", "'")
    at = lower.find(value.split(" ")[0])
    if at < 0:
        return []
    rest = _CLAUSE.split(lower[at + len(value) :])[0]
    after = [w for w in _WORD.findall(rest) if w not in _STOP and w not in _SLOT_GENERIC and not w[0].isdigit()]
    return [_stem(w) for w in after[:2]]


def _new_value(new_text: str, old_text: str) -> int:
    """How many names a new value of one of ``old_text``'s slots shares with it (0: none)."""
    new_lower, old_lower = new_text.lower(), old_text.lower()
    new_values = [(v, n) for v, n in _values(new_text) if v.split(" ")[0] not in old_lower]
    if not new_values:
        return 0
    said = {_stem(w) for w in words(new_text)} - _VAGUE
    out = ruled_out(new_text)
    best = 0
    for old_value, old_names in _values(old_text):
        if old_value in new_lower and old_value not in out and not _said_to_be_old(old_value, new_lower):
            continue  # the entry's value still holds
        named = set(old_names) | set(_names_after(old_text, old_value))
        shared = named & said
        if not shared:
            continue
        for new_value, new_names in new_values:
            if not _same_shape(new_value, old_value):
                continue
            old_own = bool(set(old_names) & shared) and _own_before(old_names, shared, new_lower)
            new_own = bool(set(new_names) & shared) and _own_before(new_names, shared, old_lower)
            if old_own and new_own:
                continue  # "the prod cluster" after "the staging cluster": two slots
            best = max(best, len(shared))
    return best


def _asked_out(new_text: str, old_text: str) -> int:
    """How many words ``new_text`` rules out that ``old_text`` asks for (by their roots)."""
    asked_new, asked_old = words(new_text) - ruled_out(new_text), words(old_text) - ruled_out(old_text)
    said = [_root(w) for w in _WORD.findall(new_text.lower())]
    # a word said again outside what is ruled out still holds ("the icons are exported from
    # src/index.ts now, the icons folder is gone": the folder is gone, not the icons)
    out = {w for w in ruled_out(new_text) - asked_new if len(w) >= 3 and w not in _SLOT_GENERIC}
    out = {w for w in out if said.count(_root(w)) < 2}
    if not out:
        return 0
    by_root = {_root(w) for w in out} & {_root(w) for w in asked_old} - {_root(w) for w in asked_new}
    return max(len(by_root), len(_named(out, asked_old)))  # a port by its address: "not 8443"


def updated(text: str, current: Iterable[Item]) -> list[Item]:
    """The one entry (rule, preference, correction, decision or fact) whose slot ``text``, a
    sentence that says something changed, gives a new value; [] if none or two fit equally.

    The most specific evidence wins: a new value of the same slot, then a word ruled out that the
    entry asks for; each by how many names it shares."""
    if _PLANNED.search(text):
        return []  # "moving to Java 21 next quarter": what holds now holds until then
    scored: list[tuple[tuple[int, int], Item]] = []
    for old in current:
        if FAMILY.get(old.kind) not in ("rule", "fact"):
            continue
        value, out = _new_value(text, old.text), _asked_out(text, old.text)
        if value:
            scored.append(((3, value), old))
        elif out:
            scored.append(((2, out), old))
    if not scored:
        return []
    top = max(s for s, _ in scored)
    best = [old for s, old in scored if s == top]
    return best if len(best) == 1 else []


# Words that name no to-do: when it is due, and how a person asks for one.
_WHEN_TEXT = """monday tuesday wednesday thursday friday saturday sunday week wk month today tomorrow later
    someday soon next point time morning night"""
_WHEN = frozenset(_WHEN_TEXT.split())
# Words that say it was not done, or only begun: "I looked at the fuzzing setup" closes nothing.
_NOT_DONE = lazyre.compile(
    r"\b(?:not|isn'?t|aren'?t|wasn'?t|weren'?t|didn'?t|haven'?t|hasn'?t|never|yet|still|almost|nearly|once|when|if|"
    r"until|tried|trying|started|starting|began|looked|looking|wondered|planned|planning|need|needs|needed|want|wanted|"
    r"failed|failing|broke|broken|stuck|blocked|should|will|going\s+to|maybe|probably)\b",
    re.IGNORECASE,
)
_ASK_WORDS = _roots(" ".join(_TODO_HEAD)) | _roots(" ".join(_WHEN))
_IRREGULAR_PAST = frozenset(["built", "sent", "ran", "made", "wrote", "done", "set", "did"])
# What says a thing is finished whatever it was ("built", "is up", "works now"); else the to-do's
# own verb must say it ("ssh key rotated" for "rotate the ssh key").
_FINISHED_TEXT = """done finished built set up live works working shipped ran tested automated merged landed deployed
    released fixed sorted complete completed sent answered handled installed configured enabled added created wrote
    written signed approved accepted confirmed received delivered paid submitted resolved closed published finalized
    in place"""
_FINISHED = frozenset(_FINISHED_TEXT.split()) - {"in", "place", "set"}  # alone, these say nothing
_NOW_AT_END = lazyre.compile(r"\bnow\W*$")
MIN_SHARED = 2  # names a to-do: two of its own words at least ("ssh key", "allergen badges")


# The words before a to-do's verb ("remind me to PING legal", "we gotta DO keyboard shortcuts"), and
# words that name nothing ("some point", "about the DPA").
_LEAD_TEXT = """todo fixme remind me to put please pls we i i'd id gotta need needs should must have let's lets
    can you could note self remember don't dont forget we'll will also"""
_LEAD = frozenset(_LEAD_TEXT.split())
_FILLER_TEXT = "about some every all gotta like thing things stuff action item"
_FILLER = frozenset(_FILLER_TEXT.split())
_MAKING = frozenset(["added", "created", "wrote", "written"])
_DATE = lazyre.compile(r"\d{4}(?:-\d\d){0,2}$")  # a due date made absolute names no to-do


def _verb(todo: str) -> str | None:
    """The root of a to-do's verb: its first word after the ones that only ask ("add", "ping")."""
    for word in _WORD.findall(todo.lower().replace("\u2019", "'")):
        if word not in _LEAD and word not in _STOP:
            return next(iter(_roots(word)), None)
    return None


def done_by(text: str, current: Iterable[Item]) -> list[Item]:
    """The one open to-do ``text`` (a sentence that says something happened, with no word for
    "done" the cues read: "ssh key rotated btw", "the march backfill ran overnight, all good")
    says is done: the to-do that shares the most of its own words with it, at least
    :data:`MIN_SHARED` besides the verbs that say what happened ("renewed the staging cert" does
    not name "renew the wildcard cert"), if only one does; none if the sentence says it was not
    done, or only begun."""
    if _NOT_DONE.search(text) or text.rstrip().endswith("?"):
        return []
    # the words that say it happened ("renewed the staging cert") do not name the to-do: its object does
    lower = text.lower()
    past = _roots(" ".join(w for w in _WORD.findall(lower) if w.endswith("ed") or w in _IRREGULAR_PAST))
    said = _roots(text) - _ASK_WORDS - past
    finishing = set(_WORD.findall(lower)) & _FINISHED
    said_finished = bool(finishing) or "\u2705" in text
    # "added", "wrote": a thing now exists, and it need not be the to-do's ("I added a test for the
    # parser" for "add fuzz tests for the parser"); like "... now", such a sentence must name all of it
    strict = not (finishing - _MAKING) and "\u2705" not in text
    finished = said_finished or _NOW_AT_END.search(lower) is not None
    best: list[Item] = []
    most = MIN_SHARED - 1
    for old in current:
        if old.kind != "todo":
            continue
        own = {w for w in _roots(old.text) - _ASK_WORDS - _FILLER if not _DATE.match(w)}  # "the week of 2026-11-23"
        if not finished and not past & own:
            continue  # "the billing client crashed again": something happened to it, not what it asked
        shared = len(said & own)  # what it names: "renewed the staging cert" names no "renew the wildcard cert"
        if shared < MIN_SHARED:
            continue
        # It must name the to-do, not another thing with two words in common ("I added a test for the
        # parser" is not "add fuzz tests for the parser"): all of its words, or all but one of four or
        # more. A word for finished, or its verb in the past, stands in for its verb ("legal signed off
        # on the DPA" for "ping legal about the DPA"); "... now" alone says what is so, verb and all.
        verb, hit = _verb(old.text), said | past
        if strict and (finishing or verb not in past):  # its own verb in the past says it ("specs quarantined")
            named = own - {verb} if said_finished else own
            if not any(len(hit & words) >= len(words) - (len(words) >= 4) for words in (own, named)):
                continue
        if shared > most:
            best, most = [old], shared
        elif shared == most and best:
            best.append(old)
    return best if len(best) == 1 else []
