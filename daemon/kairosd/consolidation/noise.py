"""What a person typed that carries a cue's words and is still not for the board.

The cues (:mod:`.cues`) look for the words of rules, decisions and preferences ("always", "never",
"should", "let's use", "instead of"). People use the same words for things that are no standing
instruction, and a board entry is given to every later session, so these are refused whatever
cue they carry (precision first; a missed entry is only missing):

- **hypotheticals**: "if we ever add a second provider, we'd need an adapter", "suppose we switch
  to grpc, ...", "what if we never cache the tokens" (a conditional rule, "if the tests fail, never
  merge", says what to do and is kept);
- **reported opinions and tool output**: "the docs say always call close() first", "someone on
  slack said never deploy on fridays", "my colleague thinks we should use poetry", "according to
  the linter ...": someone else's words, not the person's (a lead's or a named teammate's
  statement relayed as the team's, "Dana says we're on React 19", is read by the cues);
- **observations**: "we always forget this step", "you always do this", "the old team always used
  jenkins", "thanks, always helpful": "always"/"never" about what happens or happened, not what
  must be done ("tokens are never logged" is a rule: a passive after "are" stays);
- **one-offs about the code at hand**: "use a set here instead of a list", "let's use that approach
  for this bug" (the cues' own one-off test covers "there", "for now", "make it ...");
- **task instructions**: "write a test that checks we always retry": the rule word is in what the
  agent is asked to make, not in an instruction to remember.

Pure: no I/O; must not import the board or the extractor.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE
_OPENER = r"^(?:(?:and|but|so|ok(?:ay)?|also|hmm+|well|just|like)[,.!]*\s+)*"
_HYPOTHETICAL = re.compile(
    _OPENER + r"(?:suppose|supposing|hypothetically|imagine|what\s+if|let'?s\s+say|say\s+we|in\s+theory|"
    r"in\s+case|assuming|were\s+we\s+to|should\s+we\s+ever)\b"
    r"|\bif\s+(?:we|you|i|they|it)\s+(?:ever|one\s+day|someday|eventually)\b"
    r"|" + _OPENER + r"if\b[^.;]*\b(?:would|could|might|'d)\b",
    _I,
)
_SOURCE = (
    r"(?:docs?|documentation|readme|man\s+page|linter|compiler|warning|error|log|logs|output|message|tool|ci|bot|"
    r"reviewer|someone|somebody|people|colleague|coworker|co-worker|teammate|intern|chatgpt|gpt|copilot|"
    r"stack\s*overflow|blog(?:\s+post)?|article|tutorial|internet|guy|person|thread|comment)"
)
_REPORTED = re.compile(
    _OPENER
    + r"(?:(?:the|a|an|this|that|my|our|some|one|another)\s+)?(?:[\w-]+\s+){0,2}?"
    + _SOURCE
    + r"(?:\s+(?:on|in|from)\s+[\w#.-]+)?\s+(?:said|says|say|wrote|writes|write|thinks?|suggest(?:s|ed)?|"
    r"recommend(?:s|ed)?|claims?|claimed|told\s+(?:me|us)|mentioned|commented|proposed|argued|insists?|"
    r"complains?|complained)\b"
    r"|^according\s+to\b"
    r"|^(?:[\w-]+\s+){1,3}(?:thinks?|suggest(?:s|ed)?|proposed|wonders?|wondered|argued)\s+(?:that\s+)?"
    r"(?:we|you|i)\s+(?:should|could|might|must|need)\b",
    _I,
)
# "always"/"never" then what happens or happened: an observation. Not after a word that makes it
# a standing passive or a modal ("tokens are never logged", "must never be").
_OBSERVATION = re.compile(
    r"(?:^|(?P<before>\S+)\s+)(?:always|never)\s+(?:(?:seems?|seemed|to)\s+)?(?:(?P<past>\w*[a-df-z]ed)|had|did|was|were|forget|forgets|"
    r"breaks?|fails?|happens?|works?|gets?\s+(?:confused|stuck|lost|it\s+wrong)|do\s+(?:this|that)|does\s+(?:this|that)|"
    r"helpful|great|nice|fun|good|slow|fast|annoying|painful|flaky|happy|welcome|"
    r"a\s+(?:pleasure|pain|joy|nightmare))\b",
    _I,
)
_STANDING_BEFORE = frozenset(
    "is are be been being get gets must should shall will would to have has 've can may".split()  # noqa: SIM905
)
_DEICTIC = re.compile(
    r"^(?:actually\s+|just\s+|then\s+)?(?:use|put|add|make|do|try|keep|call|return|pass|inline|switch\s+to|"
    r"change|go\s+with|stick\s+with|let'?s\s+use|let'?s\s+go\s+with)\b[^,;.]{0,60}?\bhere\b(?!\s+on\b)"
    r"|\bfor\s+(?:this|that)\s+(?:bug|issue|pr|ticket|fix|task|change|commit|one|case|story|branch|function|method|"
    r"test|snippet|cell|line|query|approach)\b"
    r"|\b(?:in|on)\s+(?:this|that)\s+(?:line|function|method|snippet|cell|block|loop|branch|hunk|diff)\b",
    _I,
)
_STANDING = re.compile(r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|every\s+time|whenever)\b", _I)
_TASK = re.compile(
    r"^(?:please\s+)?(?:write|add|create|implement|generate|draft|build|set\s+up)\s+(?:a|an|the|some|one|two|more)\s+"
    r"(?:[\w-]+\s+){0,3}?(?:that|which|to\s+(?:check|make\s+sure|ensure|verify|assert))\b",
    _I,
)


def refused(sentence: str, kind: str) -> str | None:
    """Why ``sentence``, read by the cues as ``kind``, is not for the board (see the module
    docstring), or None. To-dos and facts are only refused as hypotheticals or reported words."""
    if _HYPOTHETICAL.search(sentence):
        return "hypothetical"
    if _REPORTED.search(sentence):
        return "reported"
    if kind in ("todo", "fact"):
        return None
    for match in _OBSERVATION.finditer(sentence):
        said = match.group("before") or ""
        if match.group("past") and (not said or said.endswith((",", ";", ":"))):
            continue  # "..., never hardcoded hex colors": a participle in a list of rules, not a past
        before = said.lower().strip(",.;:!")
        if before not in _STANDING_BEFORE and not before.endswith("'ve"):
            return "observation"
    if _DEICTIC.search(sentence) and not _STANDING.search(sentence):
        return "one-off"
    if _TASK.search(sentence):
        return "task"
    return None
