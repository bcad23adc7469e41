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
  the linter ...", "A colleague, Mr. X, thinks we should ..." (an opinion in the third person,
  whoever holds it): someone else's words, not the person's (a lead's or a named teammate's
  statement relayed as the team's, "Dana says we're on React 19", is read by the cues);
- **observations**: "we always forget this step", "you always do this", "the old team always used
  jenkins", "thanks, always helpful": "always"/"never" about what happens or happened, not what
  must be done ("tokens are never logged" is a rule: a passive after "are" stays);
- **one-offs about the code at hand**: "use a set here instead of a list", "let's use that approach
  for this bug" (the cues' own one-off test covers "there", "for now", "make it ...");
- **task instructions**: "write a test that checks we always retry", "refactor the module to always
  use decimals", "it should always return a list, fix it": the rule word is in what the agent is
  asked to make or mend, not in an instruction to remember;
- **review comments on a diff**: "nit: ...", "suggestion: ...", "+1 to ...", "LGTM but ...";
- **counterfactuals, broken rules and behaviour**: "you should never have deleted that", "it should
  never return None but it does", "this never closes the connection", "the cron never fires on
  sundays, weird" ("the frontend never talks to the db" says how the system is, and is kept);
- **for now**: "don't commit yet", "don't push until I say", "I'll use my own token for now" (a
  fact that holds for now, "Spring Boot is at 3.2.4 for now", is still the project's state);
- **this conversation**: "Rhetorical question, don't answer.";
- **a choice among what the agent offered**: "let's go with your second suggestion", "I prefer the
  other one", unless it names what it chose ("go with catboost instead of lightgbm");
- **the work at hand as a fact**: "the bug is in src/x.ts", "my laptop is on macos 14", "the build
  is green now", "it's on port 5432 on my machine"; and a to-do that names nothing ("todo: check this").

Pure: no I/O; must not import the board or the extractor.
"""

from __future__ import annotations

import re

from kairosd.consolidation.offline.letters import letter_runs
from kairosd.core import lazyre

_I = re.IGNORECASE
_OPENER = r"^(?:(?:and|but|so|ok(?:ay)?|also|hmm+|well|just|like)[,.!]*\s+)*"
_HYPOTHETICAL = lazyre.compile(
    _OPENER + r"(?:suppose|supposing|hypothetically|imagine|what\s+if|let'?s\s+say|say\s+we|in\s+theory|"
    r"in\s+case|assuming|were\s+we\s+to|should\s+we\s+ever)\b"
    r"|\bif\s+(?:we|you|i|they|it)\s+(?:ever|one\s+day|someday|eventually)\b"
    r"|" + _OPENER + r"if\b[^.;]*\b(?:would|could|might|'d)\b"
    # "In Java I would use BigDecimal": what they would do elsewhere, not what is done here
    r"|" + _OPENER + r"(?:in|with)\s+[\w#+.-]+\s+(?:i|we)\s+(?:would|'d)\s+(?!prefer|like|rather|love|want)",
    _I,
)
_SOURCE = (
    r"(?:docs?|documentation|readme|man\s+page|linter|compiler|warning|error|log|logs|output|message|tool|ci|bot|"
    r"reviewer|someone|somebody|people|colleague|coworker|co-worker|teammate|intern|friend|buddy|classmate|chatgpt|gpt|"
    r"copilot|"
    r"stack\s*overflow|blog(?:\s+post)?|article|tutorial|internet|guy|person|thread|comment)"
)
_REPORTED = lazyre.compile(
    _OPENER
    + r"(?:(?:the|a|an|this|that|my|our|some|one|another)\s+)?(?:[\w-]+\s+){0,2}?"
    + _SOURCE
    + r"(?:\s+(?:on|in|from|at)\s+(?:the\s+|our\s+|my\s+)?[\w#.-]+)?"
    r"\s+(?:said|says|say|wrote|writes|write|thinks?|suggest(?:s|ed)?|"
    r"recommend(?:s|ed)?|claims?|claimed|told\s+(?:me|us)|mentioned|commented|proposed|argued|insists?|"
    r"complains?|complained)\b"
    r"|^according\s+to\b"
    # an opinion said in the third person, whoever holds it ("A colleague, Mr. Patel, thinks we should ...")
    r"|\b(?:thinks|believes|feels|reckons|suggests|suggested|argues|argued)\s+(?:that\s+)?(?:we|you|i)\b"
    r"|^(?:[\w-]+\s+){1,3}(?:thinks?|suggest(?:s|ed)?|proposed|wonders?|wondered|argued)\s+(?:that\s+)?"
    r"(?:we|you|i)\s+(?:should|could|might|must|need)\b",
    _I,
)
# "always"/"never" then what happens or happened: an observation. Not after a word that makes it
# a standing passive or a modal ("tokens are never logged", "must never be").
_OBSERVATION = lazyre.compile(
    r"(?:^|(?P<before>\S+)\s+)(?:always|never)\s+(?:(?:seems?|seemed|to)\s+)?(?:(?P<past>\w*[a-df-z]ed)|had|did|was|were|forget|forgets|"
    r"breaks?|fails?|happens?|works?|gets?\s+(?:confused|stuck|lost|it\s+wrong)|do\s+(?:this|that)|does\s+(?:this|that)|"
    r"helpful|great|nice|fun|good|slow|fast|annoying|painful|flaky|happy|welcome|"
    r"a\s+(?:pleasure|pain|joy|nightmare))\b",
    _I,
)
_STANDING_BEFORE = frozenset(
    "is are be been being get gets must should shall will would to have has 've can may".split()  # noqa: SIM905
)
# A short order whose only object is a word for what was just said ("Don't bump either without me.",
# "Only there, never to a cloud.", "Kebab-case, always in that order."): read alone, it names nothing.
_ONLY_A_PRONOUN = lazyre.compile(
    r"^(?=(?:\S+\s+){0,6}\S+$)(?=.*\b(?:it|either|them|there|that\s+order|those|these)\b)", _I
)
# What makes a short order name its thing: a digit, a path or a dotted name, or a name written with
# capitals past the first word (waitForTimeout, Postgres).
_A_NAME = lazyre.compile(r"[\d/_@:]\w|\w\.\w|(?<=\s)\S*[A-Z]|\b[a-z]+[A-Z]\w*")
_DEICTIC = lazyre.compile(
    r"^(?:actually\s+|just\s+|then\s+)?(?:use|put|add|make|do|try|keep|call|return|pass|inline|prefer|switch\s+to|"
    r"change|go\s+with|stick\s+with|let'?s\s+use|let'?s\s+go\s+with)\b[^,;.]{0,60}?\bhere\b(?!\s+on\b)"
    r"|\bfor\s+(?:this|that)\s+(?:bug|issue|pr|ticket|fix|task|change|commit|one|case|story|branch|function|method|"
    r"test|snippet|cell|line|query|approach|run|time|demo|spike|prototype|experiment|session)\b"
    r"|\b(?:in|on)\s+(?:this|that)\s+(?:line|function|method|snippet|cell|block|loop|branch|hunk|diff|pr|commit|"
    r"ticket|task|story)\b",
    _I,
)
_STANDING = lazyre.compile(r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|every\s+time|whenever)\b", _I)
_TASK = lazyre.compile(
    r"^(?:please\s+)?(?:write|add|create|implement|generate|draft|build|set\s+up)\s+(?:a|an|the|some|one|two|more)\s+"
    r"(?:[\w-]+\s+){0,3}?(?:that|which|to\s+(?:check|make\s+sure|ensure|verify|assert))\b"
    # "refactor the payment module to always use decimals": a change to make, once
    r"|^(?:please\s+)?(?:refactor|update|change|modify|rewrite|fix|adjust|tweak|patch|make(?!\s+sure))\s+"
    r"(?:the|this|that|these|those|our|my|its?|[\w.-]+\(\))\b[^,;.]{0,60}?\b(?:always|never)\b"
    # "it should always return a list, fix it": a rule the code at hand breaks
    r"|[,;]\s*(?:so\s+)?(?:please\s+)?(?:fix|change|correct)\s+(?:it|that|this)\b",
    _I,
)
# A chore to do now, whatever reason or restriction follows it ("k, fix cors one only", "delete
# scripts/x.sh then, nobody should be using it"), unless a word makes it standing or a clause of its
# own says how we work ("fix it in the loader, we never patch the data").
_CHORE = lazyre.compile(
    r"^(?:(?:ok(?:ay)?|k|so|then|yeah|yes|and|also|pls|please)[,.!\s]+)*(?:delete|remove|drop|fix|revert|rename|move|bump|"
    r"kill|restart)\b",
    _I,
)
_FOR_GOOD = lazyre.compile(
    r"\b(?:always|never|ever|from\s+now\s+on|going\s+forward|every\s+time|whenever|in\s+general)\b"
    r"|\b(?:we|you)\s+(?:don'?t|do\s+not|never|always|only)\b",
    _I,
)
# A review's label opens a comment on a diff: "nit: ...", "suggestion: ...", "+1 to ...", "LGTM but ...".
_HOUSE_WIDE = lazyre.compile(
    r"\beverywhere\b|\bin\s+(?:this|the|our)\s+(?:project|repo|codebase)\b|\balways\b.*\bnever\b", _I
)
_REVIEW = lazyre.compile(
    r"^(?:(?:nit|nitpick|suggestion|blocking|minor|major|q|question|praise|issue|thought|optional)\s*(?:\([^)]*\))?\s*:"
    r"|\+1\b|lgtm\b|re\s+(?:the|your|this|that|my)\s+(?:comment|review|suggestion|thread|note)\b)",
    _I,
)

# What the observations above miss: a counterfactual ("you should never have deleted that"), a rule
# the code breaks ("it should never return None but it does"), a sigh ("always the same story").
_COUNTERFACTUAL = lazyre.compile(
    r"\b(?:should|must|could|would)(?:\s+never|\s+not|n'?t)?\s+have\s+(?:been\s+)?(?:\w+ed|done|gone|made|seen|told|said|"
    r"known|thought|broken|forgotten|written|taken|given)\b"
    r"|\b(?:always|never)\s+(?:told|said|gave|wrote|broke|forgot|ran|saw|went|took|knew|thought|got|made)\b"
    r"|\bbut\s+(?:it|they|this|that|he|she)\s+(?:does|do|did|is|are|was|were|isn'?t|doesn'?t|didn'?t|won'?t|can'?t)\b"
    r"|^(?:always|never)\s+(?:the\s+same|something|like\s+this)\b|\b(?:always|never)\s+end(?:s|ed)?\s+up\b"
    # what the code at hand does ("this never closes the connection", "your change always sends two"),
    # or a thing does to the person's surprise ("the cron never fires on sundays, weird"); "the
    # frontend never talks to the db" says how the system is, and is kept
    r"|(?:^|\b(?:but|and|so)\s+)(?:it|this|that|your\s+(?:last\s+)?[\w-]+)\s+(?:always|never)\s+(?!(?:is|was|has|does|goes)\b)"
    r"[a-z]+[^s\W]s\b"
    r"|\b(?:always|never)\s+(?!(?:is|was|has|does|goes)\b)[a-z]+[^s\W]s\b.*\b(?:weird|strange|odd|annoying|for\s+some\s+reason|"
    r"no\s+idea\s+why|wtf|lol|somehow)\b",
    _I,
)
# About this conversation, not the project: "Rhetorical question, don't answer."
_THIS_TALK = lazyre.compile(r"\b(?:don'?t|do\s+not|no\s+need\s+to)\s+(?:answer|reply|respond)\b|\brhetorical\b", _I)
# Until when it holds says it is not standing: "don't commit yet", "I'll use my own token for now".
_DECIDED_THEN = lazyre.compile(r"^(?:decided|agreed)\s+(?:with|in|at|on)\b[^:]{0,40}:\s*\S", _I)
_FOR_NOW = lazyre.compile(
    r"\b(?:yet|for\s+now|for\s+the\s+moment|today(?!'s)|tonight|this\s+(?:afternoon|morning|evening)|"
    r"until\s+(?:i|we|you)\s+(?:say|tell|confirm|check|review|approve)\w*|until\s+(?:tomorrow|later|monday|next\s+week))\b"
    r"|^(?:please\s+)?make\s+sure\s+(?:it|this|that|they)\b",
    _I,
)
# A choice among what the agent offered: "let's go with your second suggestion", "I prefer the other one".
_THAT_ONE = lazyre.compile(
    r"\b(?:use|go\s+with|going\s+with|stick\s+with|switch(?:ing)?\s+to|prefer|take|pick)\s+(?:(?:that|this|it|those|these)"
    # "prefer that you cite ..." opens a clause; "let's use that" / "use that one" points at something
    r"(?=\s*(?:[.!?,;]|$|one\b|approach\b|option\b|version\b|way\b|fix\b|solution\b|idea\b|proposal\b))|"
    r"yours|your\s+\w+|the\s+(?:other|same|second|first|last|previous|latter|former|\w+\s+one)\b|option\s+\w+)",
    _I,
)
_NAMES_A_THING = lazyre.compile(
    r"[\d./_`@:]|\b(?:instead\s+of|rather\s+than|not|over|from\s+now\s+on|going\s+forward)\b", _I
)
# A fact about the work at hand, not the project: "the bug is in src/x.ts", "the build is green now".
_NOTICE = r"^(?:(?:so|and|ok(?:ay)?|also|but|fyi|btw|heads[\s-]*up|note\s+that|by\s+the\s+way)[,:.!]*\s+)*"
_TRANSIENT = lazyre.compile(
    _NOTICE + r"(?:the|this|that|my|your)\s+(?:[\w-]+\s+)?(?:bug|error|failure|crash|issue|problem|pr|diff|"
    r"stack\s*trace|traceback|laptop|machine|fix|typo|exception|regression|failing\s+[\w-]+|build|test\s+run|output)s?"
    r"\s+(?:is|are|was|were)\b"
    r"|" + _NOTICE + r"my\s+(?:[\w-]+\s+)?(?:branch|machine|laptop|box|computer|setup|env|environment|terminal|shell)\b"
    r"|\b(?:on|in)\s+my\s+(?:machine|laptop|box|computer|setup|env|environment|terminal|shell|branch)\b"
    r"|\b(?:is|are)\s+(?:now\s+|still\s+|all\s+)?(?:green|red|passing|failing|broken|flaky|slow|stuck|at\s+\d+\s*%)\b"
    # "the file is in src/test/x.xml": the one at hand (a named one, "the config file is in ...", is kept)
    r"|^(?:the|this|that)\s+(?:file|files|example|sample|screenshot|attachment|snippet|fixture)\s+(?:is|are)\b"
    # "The host name is correct.": a confirmation of what was said, nothing new
    r"|^(?:the|this|that|it|everything\s+else|the\s+rest)\s+(?:[\w-]+\s+){0,2}(?:is|are|was|looks?|seems?)\s+"
    r"(?:still\s+)?(?:correct|right|fine|ok(?:ay)?|good|accurate|unchanged)[.!]*$",
    _I,
)
_EMPTY_TODO = frozenset(
    "todo fixme this that these those it them check look fix later the and for into thing things stuff just "  # noqa: SIM905
    "idea ideas maybe something thought some day someday".split()
)
_WORD = lazyre.compile(r"[a-z0-9][a-z0-9_.-]{2,}", _I)


# Exact prefilters (:mod:`.letters`): a word each alternative of the pattern needs.
_HYPOTHETICAL_NEEDS = frozenset(
    "suppose supposing hypothetically imagine if say theory case assuming were ever would d".split()  # noqa: SIM905
)
_REPORTED_NEEDS = frozenset(
    "said says say wrote writes write think thinks suggest suggests suggested recommend recommends recommended "  # noqa: SIM905
    "claim claims claimed told mentioned commented proposed argued insist insists complain complains complained "
    "according believes feels reckons argues wonder wonders wondered".split()
)
# _COUNTERFACTUAL: "have" or "but", or "always"/"never" with a word the alternative holding it needs
_COUNTERFACTUAL_NEEDS = frozenset(["have", "but"])
_ALWAYS_NEVER = frozenset(["always", "never"])
_ALWAYS_NEVER_WITH = frozenset(
    "told said gave wrote broke forgot ran saw went took knew thought got made "  # noqa: SIM905  (what they did)
    "same something this up it that your "  # "always the same", "never ends up", "it never works"
    "weird strange odd annoying reason why wtf lol somehow".split()  # a thing does, to the person's surprise
)
# _FOR_NOW reads the sentence or its part before the last ", ": a part's words are the sentence's.
_FOR_NOW_NEEDS = frozenset("yet now moment today tonight afternoon morning evening until make".split())  # noqa: SIM905
_THIS_TALK_NEEDS = frozenset(["answer", "reply", "respond", "rhetorical"])
_THAT_ONE_NEEDS = frozenset(["use", "with", "switch", "switching", "prefer", "take", "pick"])
_DEICTIC_NEEDS = frozenset(["here", "this", "that"])
_TASK_NEEDS = frozenset(
    "write add create implement generate draft build set always never fix change correct".split()  # noqa: SIM905
)


def refused(sentence: str, kind: str) -> str | None:
    """Why ``sentence``, read by the cues as ``kind``, is not for the board (see the module
    docstring), or None. To-dos and facts are only refused as hypotheticals or reported words."""
    words = letter_runs(sentence) if sentence.isascii() else None
    if (words is None or not _HYPOTHETICAL_NEEDS.isdisjoint(words)) and _HYPOTHETICAL.search(sentence):
        return "hypothetical"
    if (words is None or not _REPORTED_NEEDS.isdisjoint(words)) and _REPORTED.search(sentence):
        return "reported"
    deictic = words is None or not _DEICTIC_NEEDS.isdisjoint(words)
    if kind == "fact":
        if deictic and _DEICTIC.search(sentence):
            return "one-off"  # "in this cell use a log scale": an order about the code at hand
        return "transient" if _TRANSIENT.search(sentence) else None
    if kind == "todo":
        named = [w for w in _WORD.findall(sentence.lower()) if w.rstrip(".-") not in _EMPTY_TODO]
        return "says nothing" if not named else None
    if _REVIEW.match(sentence) and not _HOUSE_WIDE.search(sentence):
        return "review"  # "nit: we use httpx everywhere in this project, not aiohttp" is a rule all the same
    if (words is None or not _TASK_NEEDS.isdisjoint(words)) and _TASK.search(sentence):
        return "task"
    if kind in ("rule", "preference") and _CHORE.match(sentence) and not _FOR_GOOD.search(sentence):
        return "task"  # "delete scripts/x.sh then, nobody should be using it": a chore, its reason after it
    if _may_be_counterfactual(words) and _COUNTERFACTUAL.search(sentence):
        return "observation"
    # "owner is required, lifecycle optional for now": a last clause for now qualifies only itself
    # (after a clause of its own: "ok, don't commit yet" is for now)
    head, _, last = sentence.rpartition(", ")
    if (
        (words is None or not _FOR_NOW_NEEDS.isdisjoint(words))
        and _FOR_NOW.search(head if last and len(head.split()) >= 3 else sentence)
        and not _DECIDED_THEN.match(sentence)
    ):
        return "for now"  # "decided with the client this morning: ..." says when it was decided
    if (words is None or not _THIS_TALK_NEEDS.isdisjoint(words)) and _THIS_TALK.search(sentence):
        return "one-off"
    picked = _THAT_ONE.search(sentence) if words is None or not _THAT_ONE_NEEDS.isdisjoint(words) else None
    rest = (sentence[: picked.start()] + sentence[picked.end() :]).rstrip(".!?") if picked is not None else ""
    if picked is not None and not _NAMES_A_THING.search(rest):
        return "one-off"
    for match in _OBSERVATION.finditer(sentence):
        said = match.group("before") or ""
        if match.group("past") and (not said or said.endswith((",", ";", ":"))):
            continue  # "..., never hardcoded hex colors": a participle in a list of rules, not a past
        before = said.lower().strip(",.;:!")
        if before not in _STANDING_BEFORE and not before.endswith("'ve"):
            return "observation"
    if deictic and _DEICTIC.search(sentence) and not _STANDING.search(sentence):
        return "one-off"
    return None


def _may_be_counterfactual(words: frozenset[str] | None) -> bool:
    if words is None or not _COUNTERFACTUAL_NEEDS.isdisjoint(words):
        return True
    return not _ALWAYS_NEVER.isdisjoint(words) and not _ALWAYS_NEVER_WITH.isdisjoint(words)


def names_nothing(text: str) -> bool:
    """A short order whose only object is a word for what was just said ("Don't build anything for it.",
    "Only there, never to a cloud."): given alone to a later session, it says nothing. Read once the
    sentences of an order are joined (:mod:`.joined`): "Don't fix it with waitForTimeout. Ever." names its
    thing, and "Errors: thiserror ... Don't mix them." is one entry."""
    return _ONLY_A_PRONOUN.match(text) is not None and _A_NAME.search(text) is None
