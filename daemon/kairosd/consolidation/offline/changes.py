"""A sentence that says something changed, with no cue of its own for the board: an update.

"stg api moved, its api-stg2.tipjar.dev:8443 now", "Change: prune runs now on Saturday night, not
Sunday", "eu is going back to envoy 1.30": no rule, no decision, no fact by the cues' words, and
alone no instruction a later session needs. But said after an entry about the same thing, it is
that entry's new value. The extractor cannot see the board, so such a sentence leaves it as an
``update`` candidate, and the board keeps it only if it gives one entry's slot a new value, in that
entry's place (:mod:`kairosd.consolidation.board.slots`); otherwise it is dropped.

What makes one: a word of change ("now", "moved", "changed", "switched", "going back to", "no
longer", "removed", "correction", "I was wrong", "reverse") and something a slot can hold or lose: a
value (a version, host, port, path, identifier, a day of the week) or a thing ruled out ("not
rejected"). Questions and hypotheticals ("if we moved to 1.30, ...") are no change.

A sentence that says only that something happened ("ssh key rotated btw", "the march backfill
ran overnight, all good", "allergen badges done \u2705"), with no word of change and nothing that
says it did not or should not have ("you should never have deleted that file"), or that the cues
read as a to-do said done, is an update too, of kind ``todo``: the board closes the one open
to-do it names (:func:`kairosd.consolidation.board.slots.done_by`) and updates no other entry.

A short sentence that names no subject ("localhost:5440 now.") is read with the sentence before
("Dev database moved."): together they say what moved where.

Pure. Imports :mod:`.cues`' signal type and :mod:`.noise` (what is no standing fact).
"""

from __future__ import annotations

import re

from kairosd.consolidation.offline.cues import Signal
from kairosd.consolidation.offline.letters import letter_runs
from kairosd.consolidation.offline.noise import refused
from kairosd.core import lazyre

_I = re.IGNORECASE
_CHANGE = lazyre.compile(
    r"\b(?:now|moved|moving|changed|change|switch(?:ed|ing)?|migrated|going\s+back|back\s+to|no\s+longer|anymore|"
    r"instead|removed|retired|decommissioned|deleted|renamed|bumped|upgraded|downgraded|reverse|reversed|"
    r"correction|corrected|i\s+was\s+wrong|misspoke|i\s+mixed\s+up|supersedes?|replaced)\b",
    _I,
)
_VALUE = lazyre.compile(
    r"\b[\w-]*\d[\w.:/@-]*|\b[a-z][\w-]*[._:/@][\w][\w.:/@-]*|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
    r"|\bnot\s+[a-z]\w{2,}|\b(?:removed|retired|decommissioned|deleted)\b",
    _I,
)
# Something that happened ("ssh key rotated btw", "the march backfill ran overnight"): it may say an
# open to-do is done.
_HAPPENED = lazyre.compile(
    r"\b(?:[a-z]{3,}ed|done|sent|built|set\s+up|(?:is|are)\s+up|ran|made|wrote|works|working|live|answered|sorted)\b"
    r"|\u2705",
    _I,
)
# What says it did not happen, or should have: "you should never have deleted that file".
_UNDONE = lazyre.compile(r"\b(?:should|must|never|not|no|\w+n'?t|will|would|could|if|when|once|until|yet|still)\b", _I)
_NOT_A_CHANGE = lazyre.compile(
    r"^(?:if|when|once|what\s+if|should|could|would|do|does|did|can|is|are)\b|\b(?:maybe|might|probably|i\s+think|"
    r"not\s+sure|wondering|planning\s+to|will\s+be|next\s+(?:week|month|quarter|sprint))\b",
    _I,
)
_LEAD = lazyre.compile(r"^(?:(?:ok(?:ay)?|also|and|so|oh|ah|btw|fyi|update|change|heads\s+up)\b[,:!.-]*\s+)+", _I)
_SHORT = 4  # words: a sentence shorter than this names no subject of its own

# Exact prefilters (:mod:`.letters`): a word each pattern above needs.
_NOT_A_CHANGE_WORDS = frozenset(
    "if when once what should could would do does did can is are maybe might probably think sure wondering "  # noqa: SIM905
    "planning will next".split()
)
_CHANGE_WORDS = frozenset(
    "now moved moving changed change switch switched switching migrated back longer anymore instead removed "  # noqa: SIM905
    "retired decommissioned deleted renamed bumped upgraded downgraded reverse reversed correction corrected "
    "wrong misspoke mixed supersede supersedes replaced".split()
)
# "[a-z]{3,}ed", "answered" and "sorted" hold "ed"; "set up", "is up" and "are up" the word "up".
_HAPPENED_WORDS = frozenset("done sent built up ran made wrote works working live".split())  # noqa: SIM905


def update(sentence: str, previous: str | None, *, done: bool = False) -> Signal | None:
    """An ``update`` signal when ``sentence`` says something changed (see the module docstring);
    ``done``: the cues read it as a to-do said done (which the board closes only if it names one)."""
    said = sentence.strip()
    if not said or said.endswith("?"):
        return None
    low = said.lower() if said.isascii() else None
    words = letter_runs(said) if low is not None else frozenset()
    # _LEAD only strips whole words and the spaces after them: what is left has no word said lacks
    if (low is None or not _NOT_A_CHANGE_WORDS.isdisjoint(words)) and _NOT_A_CHANGE.search(_LEAD.sub("", said)):
        return None
    changed = (
        (low is None or not _CHANGE_WORDS.isdisjoint(words))
        and _CHANGE.search(said) is not None
        and _VALUE.search(said) is not None
    )
    if changed and any(refused(said, k) for k in ("fact", "rule")):
        changed = False  # one that is no standing fact ("you should never have deleted that file")
    may_have_happened = low is None or "ed" in low or not _HAPPENED_WORDS.isdisjoint(words)
    happened = not changed and (
        done or (may_have_happened and _HAPPENED.search(said) is not None and not _UNDONE.search(said))
    )
    if not (changed or happened) or refused(said, "fact") is not None:
        return None
    if len(said.split()) < _SHORT and previous is not None and not previous.rstrip().endswith("?"):
        said = f"{previous.rstrip()} {said}"  # "Dev database moved. localhost:5440 now."
    # only something that happened ("ssh key rotated btw") may say no more than that a to-do is done
    return Signal("fact" if changed else "todo", said, "update")
