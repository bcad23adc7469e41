"""What one sentence a person typed is worth on the board, and as what: the offline cues.

Precision first: an entry is given to every later session as an instruction, so a sentence
becomes one only on a clear cue, and whatever is unsure stays out. The cues, in the order they
are tried:

- **close**: a to-do said done ("the iam thing is fixed", "cross that off", "done with the retry
  cleanup", "shipped the migration", "Done: QA-512", "dark mode \u2705", "we won't need X anymore"), also
  with the to-do's own verb ("flaky specs are quarantined now") or as what is so now ("the helper
  reuses the cookie now"): no new entry, the board closes the open to-do it names;
- **correction**: "wait no, ...", "oops no, ...", "sorry, I was wrong: ...", "scratch that, ...",
  "forget what I said about X. <what holds>", "scrap the X rule, ..." anywhere, and
  "no, ..." / "actually ..." at the start of a turn that answers the agent; only when what
  follows is durable (a contrast "not X", "should", a fact), never a one-off ("use a dict there").
  A corrected fact is kept as a fact, so it replaces the old fact;
- questions are dropped, except a polite request that is a rule ("could you stop using any?")
  or a to-do ("would it be possible to add X at some point?");
- **decision**: "decided with the team: ...", "we agreed in standup: ...", "change of plan: ...",
  "let's go with ...", "we're switching to ...";
- **todo**: "todo: ...", "put X on the list", "add X to the backlog", "remind me next week to ...",
  "don't forget to ...", "note to self", "... later";
- **rule**: "always/never/don't/make sure/from now on ..." at the start or mid-sentence after a
  subject, and rules with no such word: "we use uv not poetry", "new code should use polars",
  "CSS modules only. no tailwind", "X is deprecated, use Y";
- **preference**: "I prefer ...", "use X instead of Y", "I'd rather ...";
- **fact**: "X is at host:port", "X listens on :8002", "X is pinned to 1.5.7", "X is behind the F
  flag", "X was renamed to Y", "X lives in / runs on Y", and plain statements that open with
  "fyi", "heads up" or "by the way".

Pure: no I/O. Must not import the board, the extractor or anything that does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kairosd.consolidation.offline.letters import letter_runs
from kairosd.consolidation.offline.noise import refused
from kairosd.core import lazyre

MIN_TEXT = 8


@dataclass(frozen=True)
class Signal:
    """What a sentence says for the board: its kind, the entry's text, and "add" or "close"."""

    kind: str
    text: str
    action: str = "add"


_I = re.IGNORECASE
# Words that open a sentence without changing what it says; the second group marks a notice.
_LEAD = lazyre.compile(
    r"^(?:(?:ok(?:ay)?|also|and|but|so|plus|nah|actually|furthermore|moreover|additionally|in\s+addition|oh|ah|oops|whoops|ugh|urgh|argh|hmm+|alright|right|hey|hi|pls|please|then|next(?=\s*[:,])|important|"
    r"reminder(?=\s*[:,!-])|(?:nit|nitpick)(?=\s*:)|"
    r"one\s+more\s+thing|fyi|f\.y\.i\.?|heads[\s-]*up|btw|by\s+the\s+way|note(?!\s+that)|quick\s+context|context|"
    r"for\s+the\s+record|for\s+your\s+(?:awareness|information|info|reference)|just\s+so\s+you\s+know|(?:let'?s\s+)?note\s+that|ps|p\.s\.|for\s+context|as\s+context|"
    r"(?:small|quick|tiny)\s+(?:update|change)|update(?:\s+(?:to|on|about)\s+[^:,.]{1,40}(?=:))?|"
    r"i\s+(?:checked|looked|asked|confirmed)|(?:my|our|the)\s+(?:lead|mentor|manager|boss|team\s+lead|tl|cto|team)\s+"
    r"(?:said|says|wants|told\s+me)(?:\s+that)?)\b[,:!.-]*\s+)+",
    _I,
)
# "Dana says we're on React 19 now", "Dana also wants every PR to have screenshots": someone's
# words relayed; what they say is read (a capitalised name, so "it says" is not one).
_RELAYED = lazyre.compile(
    r"^(?:[A-Z][a-z]+|(?:my|our)\s+(?:senior|lead|manager|boss|mentor|cto|ceo|pm|po|architect))(?:\s+also)?\s+"
    r"(?:said|says|told\s+(?:me|us)|confirmed|mentioned)(?:\s+that|\s*:)?\s+(?:(?:yes|yeah|yep)[,!.]*\s+)?(?=\w)"
)
_WANTS = lazyre.compile(
    r"^(?:[A-Z][a-z]+|(?:my|our)\s+(?:senior|lead|manager|boss|mentor|cto|ceo|pm|po|architect))(?:\s+also)?\s+"
    r"(?:wants|expects|requires|asks\s+for)\s+((?:every|all|each|any)\s+(?:new\s+)?\S+(?:\s+\S+)?)\s+to\s+(?=\w)"
)
_RELAYING = frozenset(["said", "says", "told", "confirmed", "mentioned", "wants", "expects", "requires", "asks"])
_NOTICE = lazyre.compile(
    r"^(?:\S+\s+){0,2}(?:fyi|f\.y\.i|heads[\s-]*up|btw|by\s+the\s+way|note|quick\s+context|context|for\s+the\s+record|"
    r"just\s+so\s+you\s+know|let'?s\s+note|for\s+context|as\s+context)\b",
    _I,
)
_NOT_A_SUBJECT = lazyre.compile(
    r"^(?:i|i'?m|i'?ve|i'?d|you|you'?re|it|it'?s|its|this|that|that'?s|these|those|there|there'?s|here|here'?s|he|she|they|"
    r"they'?re|what|what'?s|why|how|when|"
    r"where|who|which|can|could|should|would|will|do|does|did|is|are|was|were|let'?s|lets|pls|please|maybe|"
    r"perhaps|ok|okay|hmm+|so|just|if|and|but|or|then|also|now|well|yes|no|yeah|yep|nah|nope|lol|thanks|thx|ty|"
    r"sure|cool|great|nice|looks?|seems?|sounds?|not|any|some|one|idk|eh|ugh|huh|wow|anyway|still)\b",
    _I,
)
_HEDGE = lazyre.compile(
    r"\b(?:i\s+think|i\s+guess|i\s+believe|i\s+wonder|maybe|probably|perhaps|seems?|might|apparently|not\s+sure|"
    r"idk|i\s+forget|failed|broke|again|yesterday|right\s+now|last\s+time|earlier\s+today)\b",
    _I,
)
# "envoy bumped to 1.30 yesterday": a time word says when a change was made, not that it is unsure.
_TIME_WORD = lazyre.compile(r"^(?:yesterday|right\s+now|last\s+time|earlier\s+today|again)$", _I)
_SINCE = lazyre.compile(
    r"\b(?:we'?re|we\s+are|it'?s|is|are)\s+(?:now\s+)?on\s+\S+(?:\s+\S+)?\s+since\s+yesterday\b", _I
)
_UPGRADED = lazyre.compile(
    r"^(?:we|i)(?:'ve|\s+have)?\s+(?:upgraded|bumped|moved|switched|migrated)\s+(?:[\w.-]+\s+){0,3}?to\s+[a-z][\w.-]*"
    r"(?:\s+[a-z][\w.-]*)?\s+v?\d",
    _I,
)
_SUPERSEDED_BY = lazyre.compile(
    r"\b(?:is|are|was|were|got|has\s+been|have\s+been)\s+(?:now\s+)?(?:superseded|replaced)\s+by\s+\S", _I
)
_SUPERSEDED_NEEDS = frozenset(["superseded", "replaced"])  # an exact prefilter (:mod:`.letters`)
# "since yesterday": when a change happened (a time word then says when, not that it is unsure).
_SINCE_WHEN = lazyre.compile(r"\bsince\s+(yesterday|last\s+time|earlier\s+today)\b", _I)
_CHANGED_TO = lazyre.compile(
    r"\b(?:bumped|upgraded|updated|downgraded|moved|migrated|switched|renamed|merged\s+the\s+upgrade|"
    r"the\s+(?:upgrade|migration|switch)\s+(?:went|is|was)\b)\b",
    _I,
)
_DECIDED = lazyre.compile(r"\b(?:decided|agreed|voted)\b", _I)
_WE_CHANGED = lazyre.compile(r"^we(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:moved|switched|migrated)\b", _I)
_UNSURE = lazyre.compile(
    r"\b(?:i\s+think|i\s+guess|maybe|probably|perhaps|might|not\s+sure|hopefully|should\s+be)\b", _I
)
_PAST = lazyre.compile(r"\b(?:was|were)\b(?!\s+(?:renamed|moved|migrated|replaced|split|merged\s+into))", _I)
_CHATTER = lazyre.compile(
    r"\b(?:don'?t|do\s+not|never)\s+(?:worry|bother|mind|care|know|think|understand|see\s+why)\b"
    r"|^(?:i\s+)?(?:never|always)\s+(?:seen|heard|had|been|liked|understood|thought|fun|nice|great|happy|good|"
    r"a\s+pleasure|would\s+have|could\s+have)\b|\b(?:see|talk|catch)\s+(?:you|ya)\s+later\b|^later[!.]*$"
    r"|\balways\s+happy\b",
    _I,
)
# A one-off: about this spot, this once ("use a dict there", "make it horizontal").
_ONE_OFF = lazyre.compile(
    r"\b(?:there|this\s+one|that\s+one|just\s+this\s+once|this\s+once|for\s+now|this\s+time|"
    r"in\s+this\s+(?:file|function|one|commit|pr|test|line|cell)|just\s+for\s+this|"
    r"(?:make|put|rename|move|set|change|turn|call|do)\s+(?:it|that|this|them)\b)",
    _I,
)
_STANDING = lazyre.compile(
    r"\b(?:always|never|from\s+now\s+on|from\s+here\s+on|going\s+forward|make\s+it\s+a\s+rule|every\s+time|whenever|in\s+this\s+(?:repo|project|codebase))\b",
    _I,
)
_CONTRAST = lazyre.compile(
    r"\bnot\s+(?!(?:like|that|this|it|what|quite|sure|really|so|too|yet|now|a\s+big|the\s+way|bad|great)\b)"
    r"[\w`'\"./:@-]+|\binstead\s+of\b|\brather\s+than\b|\bno\s+longer\b|\bpin(?:ned)?\s+(?:it\s+)?(?:to|at)\b",
    _I,
)
_RESTRICTION = lazyre.compile(r"\b\w+\s+only\b|\beverything\s+else\b", _I)  # "for hero assets only"
_MODAL = lazyre.compile(r"\b(?:should|must|needs?\s+to|has\s+to|have\s+to|always|never)\b", _I)

# ---- corrections ---------------------------------------------------------------------------
_FILLER = (
    r"(?:(?:ugh|urgh|oh+|och|oops|argh|hmm+|ah+|uh+|um+|eh|damn|ok|okay|and|so|also|whoops|wait|hold\s+on|sorry)"
    r"[,.!]*\s+){0,2}"
)
_STRONG_CORRECTION = lazyre.compile(
    _FILLER + r"(?:"
    r"(?:wait|hold\s+on|oops|whoops|ugh|argh)[,.!]*\s+(?:actually[,.!]*\s+)?(?:no+|nope)\b"
    r"|no+[,.!]*\s+wait\b"
    r"|(?:wait[,.!]*\s+)?(?:sorry[,.!]*\s+)?(?:turns\s+out\s+)?(?:i\s+was\s+(?:wrong|mistaken)|i\s+misspoke|i\s+said\s+(?:it\s+)?wrong|i\s+tell\s+a\s+lie|my\s+mistake"
    r"|my\s+bad|i\s+(?:got|had)\s+(?:it|that|(?P<got>(?:the|our)\s+[^,;:]{1,30}?))\s+wrong)"
    r"(?:\s+(?:earlier|yesterday|before|there|about\s+(?P<about>[^:,;]{1,40})))?"
    r"|(?:sorry[,.!]*\s+)?(?P<wrong>(?:the|my|that)\s+[^,;:]{1,30}?)\s+(?:i\s+(?:gave\s+you|said|used)\s+)?(?:earlier\s+)?"
    r"(?:was|is)\s+(?:wrong|incorrect|a\s+typo)"
    r"|(?:a\s+|one\s+)?(?:(?:small|quick|minor)\s+)?correction(?:\s+(?:on|to|about|for)\s+(?P<on>[^:.]{1,30}))?(?=\s*[:,-])|(?:a\s+|one\s+)?(?:(?:small|quick|minor)\s+)?correction(?:\s+(?:on|to|about|for)\s+[^:]{1,30})?(?=\s*[:,-])"
    # "sorry, I told you pnpm before but ...": what was told before is taken back
    r"|i\s+(?:told\s+you|said)\s+(?P<told>[^,;:]{1,30}?)\s+(?:before|earlier)(?:[,\s]+but\b)?"
    r"|(?:scratch|forget|ignore|disregard)\s+what\s+i\s+(?:said|told\s+you)"
    r"(?:\s+(?:about|re)\s+(?P<scratched>[^,;:]{1,30}))?|scratch\s+that(?:\s+(?:about|re)\s+(?P<that>[^,;:]{1,30}))?"
    r"|(?:scrap|forget|ignore|disregard|drop|ditch)\s+(?:the|that|my)\s+(?P<dropped>[^,;:]{1,30}?)\s+(?:rule|thing|part|bit|idea)"
    r"|correction(?:\s+(?:on|to|about|for)\s+[^:]{1,30})?(?=\s*[:,-])"
    r")[\s,.:;!-]*",
    _I,
)
_WEAK_CORRECTION = lazyre.compile(
    r"^(?:(?:ugh|urgh|argh|oh|hmm+|ah)[,.!]*\s+)?(?:(?:no+[\s,.!]+)*no+(?=\s*[,.!:;-])|no+\s+no+\b|nope\b|wrong\b|incorrect\b|not\s+quite\b|actually\b|that'?s\s+(?:not|wrong|incorrect)\b"
    r"|that\s+is\s+(?:not|wrong|incorrect)\b|you\s+(?:forgot|missed|misunderstood)\b"
    r"|i\s+(?:said|meant|told\s+you)\b)[\s,.!:;-]*(?:what\s+i\s+meant[\s,.!:;-]*)?",
    _I,
)
_RE_ABOUT = lazyre.compile(
    r"^(?:re|regarding|about|as\s+for)[:\s]\s*(?P<about>(?:the\s+)?[^:,;]{1,40}):\s*(?:it'?s|it\s+is|they'?re|they\s+are)\s+",
    _I,
)
# How a match of _RE_ABOUT opens ("re", "regarding", "about", "as for"), lower-cased: an exact prefilter
# for an ASCII sentence (IGNORECASE matches "\u017f" to "s", which ``lower()`` leaves).
_ABOUT_OPENS = frozenset(["re", "ab", "as"])
# A quoted sentence (three words or more) after a speech verb or a colon is someone else's words:
# 'the designer said: "always use the primary color"' (a quoted title, 'add "X" to the backlog', is kept).
_QUOTED = lazyre.compile(
    r"((?:\b(?:said|says|wrote|writes|commented|replied|asked|told\s+(?:me|us))\s*:?|:)\s*)"
    r"[\"\u201c][^\"\u201d\n]*?\s[^\"\u201d\n]*?\s[^\"\u201d\n]*?[\"\u201d]",
    _I,
)
_FINE = lazyre.compile(r"^(?:it'?s|its|that'?s|this\s+is)\s+(?:fine|ok|okay|good|great|alright|not\s+needed)\b", _I)
_STATED_VALUE = lazyre.compile(
    r"^(?:the\s+|our\s+)?(?:[\w./-]+\s+){0,5}(?:is|are)\s+(?:now\s+)?(?:[a-z]+\s+){0,3}?[\w-]*(?:\d|\w[./:@]\w)", _I
)
_IT_IS = lazyre.compile(r"^(?:it'?s|it\s+is|they'?re|they\s+are)\s+", _I)

# ---- to-dos said done -----------------------------------------------------------------------
_DONE = lazyre.compile(
    r"\b(?:is|are|'s|was|were|got|has\s+been|have\s+been)\s+(?:all\s+|now\s+|finally\s+|already\s+)?(?:done|fixed|"
    r"finished|sorted|resolved|merged|written|documented|updated|migrated|complete|completed|shipped|landed|closed|gone|live|"
    r"rotated|renewed|cleaned\s+up|removed|archived|"
    r"checked|handled|approved|released|out|created|deployed|implemented|added|clarified|rolled\s+out|configured|"
    r"enabled|published|set\s+up)\b"
    r"(?:\s+and\s+(?:deployed|merged|released|shipped|tested))?"
    r"(?!\s+(?:in|with|by|on|at|into|against|for|from|under|as|of|to)\b)"
    r"|^(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,3}\s+(?:done|fixed|finished|sorted|merged|shipped|landed)"
    r"(?:\s+in\s+(?:#|pr\s*#?|v)?\d[\w.-]*)?(?:\s+(?:yesterday|today|this\s+morning|last\s+night|now|btw|already|too))?(?:\s*[,.!;]|$)"
    r"|^(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,3}\s*\u2705\s*(?:done)?[.!]*$"
    r"|^(?:done|fixed|finished|shipped|closed|resolved|completed)\s*[:\u2013-]\s*\S"
    r"|,\s*(?:all\s+)?(?:sorted|done|fixed|finished|shipped|merged|landed)(?:\s+(?:it|that|them))?"
    r"(?:\s+(?:this\s+morning|yesterday|today|last\s+night))?[.!]*$|\b(?:is|are)\s+in(?:\s*[,.!;]|$)"
    r"|\b(?:is|are|was|were|got|has\s+been|have\s+been)\s+(?:now\s+)?(?:shipped|released|landed|merged|out)\s+in\s+v?\d"
    r"|\bthat'?s\s+(?:done|sorted|fixed|finished|settled|off\s+(?:my|the|our)\s+(?:plate|list))\b|\bcross\s+(?:that|it|this)\s+off\b"
    # "take it off the list", "strike it", "so that one's done", "that's the bootstrap item done"
    r"|\b(?:take|strike|cross|drop|remove|scratch)\s+(?:it|that|this|them)\s+(?:off|out|from)\s+(?:the|my|our)\s+"
    r"(?:list|board|to-?do(?:\s+list)?|backlog)\b|\bstrike\s+(?:it|that)(?:\s+off)?[.!]*$|\b(?:strike|cross)\s+(?:it|that|this)\s+one\s+off\b"
    r"|\bthat\s+one'?s\s+(?:done|sorted|fixed)\b|\bthat'?s\s+the\s+[\w\s'-]{1,40}?\s+(?:item|one|thing|part|bit)\s+done\b"
    r"|\bclosing\s+(?:that|it|this)\s+out\b|^(?:the\s+)?(?:[\w-]+\s+){1,4}(?:is\s+|are\s+)?(?:now\s+)?in\s+place[.!]*$|\b(?:is|are)\s+(?:now\s+)?(?:documented\s+)?in\s+the\s+(?:wiki|docs|readme)\b"
    r"|\b(?:is|are)\s+(?:now\s+)?live\s+(?:in|on)\s+(?:production|prod)\b"
    r"|\b(?:is|are|was|were|has\s+been|have\s+been)\s+(?:now\s+)?(?:taken\s+care\s+of|(?:documented|written\s+up)\s+in\s+"
    r"(?:the\s+)?(?:wiki|docs|readme|runbook|confluence|notion)\b)",
    _I,
)
_PASSIVE_DONE = lazyre.compile(
    r"^(?:the\s+)?(?:[\w'-]+\s+){1,4}(?:(?:is|are|got|has\s+been|have\s+been)\s+)?(?:now\s+|all\s+|finally\s+)?(?:[a-z]{3,}ed|split|rebuilt|built|"
    r"rewritten)\b"
    r"(?:\s+(?:up|out|off|away))?(?:\s+(?:now|today|yesterday|this\s+morning|last\s+night|last\s+week|finally|at\s+last))?"
    r"(?:\s*[,.!;]|$)"
    r"|^(?:(?:i|we)\s+(?:just\s+|finally\s+|already\s+)?)?(?:[a-z]{3,}ed|wrote|rewrote|built|rebuilt|made|sent|set\s+up|"
    r"ran|did)\s+(?:the\s+|a\s+|an\s+|our\s+)?[\w-]+",
    _I,
)
_IRREGULAR_PAST = frozenset(["wrote", "rewrote", "built", "rebuilt", "made", "sent", "set", "ran", "did"])
_RESTATED = lazyre.compile(
    r"^(?:the\s+|our\s+)?(?:[\w-]+\s+){1,4}(?:[a-z]{3,}s|has|is|are)\s+\S.{2,80}?\s+now[.!]*$", _I
)
_CHANGED_VALUE = lazyre.compile(r"\b(?:changed|switched|moved|migrated|renamed)\s+to\b", _I)
_EMOJI = lazyre.compile(r"[\U0001f300-\U0001faff\u2600-\u27bf\ufe0f]+(?<!\u2705)")
# "done with the retry cleanup", "shipped the migration", "took care of the flaky test": the person did
# it (read once the opening words are set aside).
_DONE_LEAD = lazyre.compile(
    r"^(?:(?:i|we)(?:'ve|'m|'re|\s+have|\s+am|\s+are)?\s+)?(?:just\s+|finally\s+|already\s+|now\s+)?(?:done\s+with|"
    r"finished(?:\s+up)?|shipped|completed|wrapped\s+up|took\s+care\s+of|sorted\s+out|crossed\s+off|knocked\s+out|"
    r"closed\s+out)\s+(?:the|that|our|my)\s+\w",
    _I,
)
# A to-do dropped is closed as well: "let's not bother with the screenshots", "forget about that reminder".
_DROPPED = lazyre.compile(
    r"(?:^|[,;]\s+)(?:(?:actually|ok(?:ay)?|so|oh|and|you\s+know\s+what)[,.!\s]+)*(?:let'?s\s+not\s+bother\s+with|"
    r"(?:we\s+can\s+|you\s+can\s+)?forget\s+about|never\s*mind|no\s+need\s+for|(?:we|i)\s+no\s+longer\s+need)\s+"
    r"(?:the|that|this|those)\s+\w"
    r"|^(?:we|i)\s+(?:won'?t|will\s+not|don'?t|do\s+not)\s+need\s+(?:the|that|this|those)\s+[^.]*?\b(?:anymore|any\s+more)\b",
    _I,
)
# What every strong correction says somewhere, tried first (cheap): most sentences correct nothing.
_MAY_CORRECT_WORDS = """wait hold no nope sorry wrong mistaken misspoke mistake bad correction scratch lie typo
    incorrect forget ignore disregard scrap drop ditch"""
_MAY_CORRECT = frozenset(_MAY_CORRECT_WORDS.split())
_MAY_DROP = frozenset(["bother", "forget", "mind", "nevermind", "need"])  # what _DROPPED needs, tried first
_NOT_DONE = lazyre.compile(
    r"\b(?:(?:fixed|locked|closed)\s+(?:to|at|on)|not|isn'?t|aren'?t|wasn'?t|never|yet|still|almost|nearly|once|when|if|until)\b",
    _I,
)

# ---- polite questions ----------------------------------------------------------------------
_POLITE_RULE = lazyre.compile(
    r"^(?:could|would)\s+(?:you|u)\s+(?:(?:please|pls|kindly|also|just)\s+)*(?:be\s+so\s+kind\s+as\s+to\s+)?(?:mind\s+)?"
    r"(?:always|never|stop|not|no\s+longer|avoid)\b",
    _I,
)
_POLITE_CLOSE = lazyre.compile(
    r"\b(?:could|can|would)\s+(?:you|u)\s+(?:please\s+)?(?:take|strike|cross|drop|remove)\s+(?:it|that|this|them)\s+"
    r"(?:off|out\s+of|from)\s+(?:the|my|our)\s+(?:list|board|to-?do(?:\s+list)?|backlog)\b",
    _I,
)
_POLITE_HEAD = lazyre.compile(r"^(?:could|would)\s+(?:you|u)\s+(?:please\s+|pls\s+|kindly\s+)?(?:mind\s+)?", _I)
_POLITE_TODO = lazyre.compile(
    r"^(?:would\s+it\s+be\s+possible\s+to|could\s+(?:you|we)|can\s+(?:you|we))\b.*"
    r"\b(?:at\s+some\s+point|eventually|later|next\s+(?:week|sprint|time))\b"
    # "could you put on the list that we should add analytics events?": a to-do asked for politely
    r"|^(?:would\s+it\s+be\s+possible\s+to|(?:could|can|would)\s+(?:you|u|we))\s+(?:please\s+)?(?:put|add|write|note)\s+"
    r"(?:(?:it|this|that)\s+)?(?:(?:on|to)\s+(?:the|our|my)\s+(?:list|backlog|to-?do(?:\s+list)?)|down\s+somewhere)\b",
    _I,
)

# ---- decisions, to-dos, rules, preferences ---------------------------------------------------
_DECISION = lazyre.compile(
    r"^(?:decided|agreed)\s+(?:with|in|at|on)\b[^:]{0,40}:|^(?:the\s+)?outcomes?\s+of\b[^:]{0,40}:|^(?:we|i|the\s+team)(?:'ve|\s+have)?\s+(?:all\s+)?"
    r"(?:decided|agreed)\b|^(?:new\s+)?decision\b[^:]{0,50}:"
    r"|^no\s+more\s+[\w.-]+(?:\s+[\w.-]+)?[,;]\s+(?:now\s+)?we(?:'ve|\s+have|\s+did)?\s+\w"
    r"|^(?:we|i)(?:'re|\s+are)?\s+(?:upgrad(?:e|ing)|bump(?:ing)?|mov(?:e|ing)|switch(?:ing)?|"
    r"migrat(?:e|ing))\s+(?:\w+\s+){0,2}?to\s+[a-z][\w.-]*\s+v?\d|^(?:a\s+)?(?:change\s+of\s+plans?|new\s+plan|plan\s+change)\b|\b(?:is|are)\s+(?:now\s+)?(?:in|out\s+of)\s+scope\b"
    r"|\b(?:we'?re|we\s+are)\s+(?:going\s+with|switching\s+to|moving\s+to|standardi[sz]ing\s+on)\b"
    r"|\b(?:let'?s|we'?ll|we\s+will|i'?ll)\s+(?:go\s+with|use|stick\s+with|switch\s+to|adopt)\b"
    r"|^(?:let'?s\s+)?go\s+with\b|\b(?:we|i)(?:'ve|\s+have)?\s+(?:settled\s+on|chose|picked|went\s+with|opted\s+for)\b"
    r"|^change\s+of\s+heart\b|\bchanged\s+(?:my|our)\s+minds?\b|\bsigned\s+off\s+on\b|\b(?:is|are)\s+off\s+the\s+table\b"
    r"|\bwe\s+(?:stay|stick)\s+with\b|^plans?\s+(?:have\s+|has\s+)?changed\b|\b(?:we'?re|we\s+are)\s+(?:dropping|ditching|retiring|replacing|killing)\b|\b(?:we'?re|we\s+are)\s+(?:gonna|going\s+to)\s+(?:use|go\s+with|switch\s+to)\b"
    r"|\b(?:we'?re|we\s+are)\s+moving\s+(?:away\s+)?from\b"
    r"|\b(?:we'?re|we\s+are)\s+(?:moving|bumping|raising|upgrading)\s+(?:the\s+|our\s+)?[\w.-]+\s+to\s+v?\d|\band\s+(?:decided|agreed)\s+"
    r"(?:to|on|that)\b|\band\s+(?:we|the\s+team)\s+(?:decided|agreed)\b|^(?:decided|change)\s*:\s*\S|,\s+(?:the\s+team|we\s+all)\s+agreed\b|\b(?:the\s+team|we\s+all|we)\s+voted\b",
    _I,
)
# "we moved the alerts from #ops-alerts to #sre-pager", "switched db from neon to supabase yesterday": a
# change made, a decision whatever time word comes with it.
_CHANGED_FROM = lazyre.compile(
    r"^(?:we(?:'ve|\s+have)?\s+|(?:we'?re|we\s+are)\s+|(?:the\s+)?[\w#.-]+(?:\s+[\w#.-]+)?\s+"
    r"(?:(?:was|were|got|have\s+been|has\s+been)\s+)?)?(?:moved|switched|migrated|moving|switching|migrating)\s+(?:(?:the\s+)?[\w#.-]+\s+){0,3}?(?:from|off(?:\s+of)?)\s+(?:\S+\s+){1,4}?(?:to|onto|->|\u2192)\s+\S",
    _I,
)
_CHANGING = frozenset(["moved", "switched", "migrated", "moving", "switching", "migrating"])
_TODO = lazyre.compile(
    r"^(?:todo|fixme)\b(?:\([^)]{0,20}\))?[:\s]|\b(?:(?:don'?t|do\s+not)\s+forget\s+(?:to|that\s+we|we|about)|(?:remind|ping|nudge)\s+me\s+(?:to|about|next|tomorrow|on|in|later|this|(?:mon|tues|wednes|thurs|fri)day)|"
    r"still\s+need\s+to)\b|^note\s+to\s+self\b|^reminder\s+for\s+(?:next|later|tomorrow|the\s+next|monday|friday)\b"
    r"|^.{12,}?[,;]\s*(?:park|put|stick|throw|add)\s+(?:it|that|this)\s+(?:in|on|to)\s+the\s+(?:backlog|list|to-?do\s+list)\b"
    r"|\b(?:we|i)\s+(?:should|need\s+to|have\s+to|must|gotta)\b.{3,80}\bnext\s+(?:sprint|week|month|quarter|release)\b"
    r"|^(?:we|i)\s+(?:should|need\s+to|have\s+to|gotta)\s+\w.{3,80}\bbut\s+not\s+(?:today|now|right\s+now|yet)\b"
    r"|^(?:we|i)\s+(?:need\s+to|have\s+to|must|should)\s+\w.{3,80}\bbefore\s+(?:the\s+)?(?:next\s+)?(?:release|launch|"
    r"deadline|demo|cutover|freeze|go-?live)\b|\b(?:i|we)\s+(?:need|have|got)\s+to\s+remember\s+to\b"
    r"|^(?:jot\s+(?:this\s+|that\s+)?down|note\s+down|for\s+the\s+(?:list|backlog)|need\s+to\s+remember)\s*:"
    r"|\bput\s+(?!(?:that|this|it)\s+on\b).{1,60}?\s+(?:on|in)\s+the\s+(?:list|backlog|to-?do\s+list|board)\b"
    r"|^(?:post-?mortem\s+)?action\s+items?\s*:\s*\S"
    r"|\badd\s+.{1,80}?\s+to\s+(?:the|our|my)\s+(?:backlog|list|to-?do\s+list)\b|^to-?do\s+for\s+me\b"
    r"|^(?:(?:add|put|stick|throw)\s+(?:(?:it|this|that)\s+)?(?:to|on|in)\s+(?:the|our|my)\s+(?:to-?dos?(?:\s+list)?|list|backlog)"
    r"|add\s+(?:a\s+|an?\s+item\s+to\s+the\s+)?to-?do)\s*(?::|that\b)\s*\S",
    _I,
)
_TODO_THAT = lazyre.compile(r"\bput\s+(?:that|this|it)\s+on\s+the\s+(?:list|backlog|to-?do\s+list|board)\b", _I)
_TODO_VAGUE = lazyre.compile(
    # "later" as when, not as what a thing became ("the export got later")
    r"\b(?:(?<!got\s)(?<!gets\s)(?<!is\s)(?<!was\s)(?<!much\s)(?<!bit\s)(?<!even\s)(?<!not\s)later(?!\s+(?:versions?|releases?|builds?|ones|models|editions)\b)|next\s+time|follow[\s-]?up|"
    r"at\s+some\s+point|someday|some\s+day|eventually)\b",
    _I,
)
_RULE = lazyre.compile(
    r"^(?:(?:in|for)\s+this\s+(?:project|repo|repository|codebase)[,:]?\s+|in\s+general[,:]?\s+)?(?:(?:you|we)\s+(?:should\s+|must\s+)?)?"
    r"(?:always|never|don'?t|dont|do\s+not|must(?:\s+not)?|make\s+sure|from\s+now\s+on|going\s+forward|avoid)\b"
    r"|^(?:remember|keep\s+in\s+mind|note\s+for\s+the\s+future)\b",
    _I,
)
# Rules with no rule word: the shapes people use for standing instructions.
_RULE_PLAIN = lazyre.compile(
    r"^(?:we|i)\s+(?:only\s+)?use\s+[^,.;]{1,40}?,?\s+(?:not|never|instead\s+of|rather\s+than)\s+\S"
    r"|^(?:we'?re|we\s+are)\s+using\s+[^,.;]{1,40}?,?\s+(?:not|instead\s+of|rather\s+than)\s+\S"
    r"|^(?:we|i)\s+(?:build|test|deploy|format|lint|write|ship|package|host|run)\s+(?:\w+\s+)?with\s+[^,.;]{1,40}?,?\s+"
    r"(?:not|never|instead\s+of|rather\s+than)\s+\S"
    r"|^(?:(?:the|our|all)\s+)?(?:[\w-]+\s+){0,2}[\w-]+s\s+use\s+[^,.;]{1,40}?,\s+(?:not|never|instead\s+of|rather\s+than)\s+\S"
    r"|^(?:(?:for|in)\s+(?:the\s+|our\s+)?[\w-]+(?:\s+[\w-]+)?,\s+)?(?:new|all|every|each)\s+(?:\S+\s+){0,5}?"
    r"(?:should|must|shall|needs?|has\s+to|have\s+to|gets?|stays?)\b"
    r"|\bmake\s+it\s+a\s+rule\b|\bas\s+a\s+rule\b|\bhouse\s+rule\b"
    r"|^no\s+.{3,60}[.;,]\s+\S+(?:\s+\S+){0,3}\s+only[.!]*$"
    r"|^no\s+(?!(?:worries|problem|idea|luck|clue|rush|way|thanks|need|matter|biggie|wonder|one|not|no|wait)\b)[\w-]+"
    r"(?:\s+[\w-]+)?\s+(?:after|before|in|on|during|inside|outside|at|from|to|into)\s+[\w./-]+(?:\s+[\w./-]+)?[.!]*$"
    r"|^no\s+(?:[\w-]+\s+){1,3}(?:should|must|may|can|shall)\s+(?:ever\s+)?\w"
    r"|\bdeprecated\b.{0,60}\b(?:use|switch\s+to|prefer)\s+\S"
    r"|\bonly[.,;]?\s+no\s+\w|^(?:\S+\s+){0,4}\S+\s+only[.!]?$"
    r"|\b(?:going\s+forward|from\s+now\s+on|from\s+here\s+on|moving\s+forward|in\s+(?:the\s+)?future|henceforth)\b"
    r"|\bstop\s+using\b|[,;]\s*always[.!]*$|(?<=\S.{8})\bno\s+exceptions\b"
    r"|^it\s+is\s+(?:not\s+(?:possible|allowed|permitted|ok|okay)|forbidden)\s+to\s+\w"
    r"|\b(?:not|no\s+longer|don'?t|never)\b[^.;]{1,40}\b(?:anymore|any\s+more)\b"
    r"|^it\s+is\s+(?:important|essential|crucial|mandatory|required|vital)\s+that\s+(?:all|every|each|we|you|the)\b"
    r"|\b(?:for|in)\s+(?:all\s+|any\s+)?(?:the\s+)?new\s+(?:code|screens?|pages?|components?|files?|modules?|services?|features?|"
    r"tests?|endpoints?|projects?|repos?)\b|^no\s+[\w.-]+(?:\s+[\w.-]+)?[,.;]\s*(?:we\s+)?use\s+\S"
    r"|[,;]\s+(?:but\s+|and\s+|so\s+)?(?:please\s+)?(?:don'?t|dont|do\s+not|never|always|make\s+sure)\s+\w"
    r"|^no\s+(?!(?:worries|problem|idea|luck|clue|rush|way|thanks|need|matter|biggie|wonder|one|not|no|wait)\b)[\w-]+"
    r"(?:\s+[\w-]+){0,2}[,;]\s+(?:just\s+)?(?:use|pass|keep|put|go|write|do)\b"
    r"|^(?:(?:a|one|our|the|some|a\s+few|two|three)\s+)?(?:(?:team|general|project|repo|standing|house)\s+)?(?:conventions?|rules?|guidelines?|house\s+rules?|style\s+guide|rule\s+of\s+thumb|ground\s+rules?|"
    r"(?:security\s+)?polic(?:y|ies))"
    r"(?:\s+(?:for|in)\s+(?:this|the|our)\s+\w+)?(?:,?\s+(?:for\s+good|going\s+forward|from\s+now\s+on))?\s*:\s*\S"
    r"|\b(?:is|are)\s+(?:now\s+)?deprecated\b"
    r"|^not\s+(?:to\s+)?(?:commit|push|use|run|add|touch|change|edit|delete|merge|deploy)\b|\bnever[.!]*$"
    r"|^(?:use|stick\s+(?:to|with)|go\s+with)\s+[^,;]{1,60}?,?\s+not\s+\S"  # "use X instead of Y": a preference
    r"|^(?:(?:the\s+)?one\s+thing\s+(?:that\s+is|that'?s|is)\s+)?non-?negotiable\s*:\s*\S|\bonly\s+ever\b|\b\d+\s*[a-z]*\s+(?:max|maximum|tops|at\s+most|minimum|at\s+least)[.!]*$"
    r"|\b(?:nothing|nobody|no\s+one)\s+else\s+(?:touches|writes|reads|uses|calls|should|may|can)\b"
    r"|\bgo(?:es)?\s+through\s+.{1,40}\bonly\b"
    r"|\b(?:is|are)\s+(?:mandatory|required|compulsory|forbidden|banned|not\s+allowed|disallowed)\b"
    r"|^no\s+.{1,40}\b(?:ever|anywhere|allowed)\b|^no\s+(?:new\s+|more\s+)?[\w-]+(?:\s+[\w-]+)?\s+without\b",
    _I,
)
# "jobs must finish in 15 minutes", "Random seed is always 42": a subject, then the rule word.
_RULE_MID = lazyre.compile(
    r"^(?:\S+\s+){1,5}?(?:should|must|shall)(?:\s+not|n'?t)?\s+(?:always\s+|never\s+|only\s+)?(?:be|use|go|run|do|have|"
    r"finish|stay|live|take|get|pass|land|come|point)\b|^(?:\S+\s+){1,10}?(?:always|never)\b",
    _I,
)
_OBSERVED = lazyre.compile(
    r"\b(?:fail(?:s|ed|ing)?|break(?:s|ing)?|crash(?:es|ed)?|happens?|flak\w*|times?\s+out)\b", _I
)
_PREFERENCE = lazyre.compile(
    r"(?:^|\b(?:i|we)(?:\s+would\s+|'d\s+|\s+))prefer\b|\bi'?d\s+rather\b|\b(?:i|we)\s+like\s+to\s+use\b"
    r"|\buse\s+\S+(?:\s+\S+)?\s+(?:instead\s+of|rather\s+than|over)\b",
    _I,
)

_ID_LIKE = lazyre.compile(
    r"^(?:(?:going\s+forward|from\s+now\s+on|in\s+future)[,:]?\s+)?i'?d\s+(?:like|love|prefer)\b", _I
)
_I_PREFER = lazyre.compile(
    r"^(?:i|we)(?:\s+would|'d|\s+much)?\s+(?:prefer|rather)\b"
    r"|^(?:one\s+(?:last|more|other)\s+|another\s+|a\s+)?preference\s*:\s*\S",
    _I,
)

# ---- facts ---------------------------------------------------------------------------------
_FACT = lazyre.compile(
    r"\b(?:is|are)\s+(?:at|on|in)\s+(?:the\s+)?(?!line\b|row\b|step\b|page\b)(?:\w+\s+)?"
    r"(?:https?://\S|[\w.-]*\d[\w.:/-]*|[\w-]+\.[\w.-]+|[\w.-]+/[\w./-]*|:\d{2,5})"
    r"|\b(?:listens?|binds?)\s+(?:on|to)\s+\S|\bport\s+:?\d{2,5}\b|\bbehind\s+(?:the\s+|a\s+)?(?:[\w.-]+\s+){1,2}(?:feature\s+)?(?:flag|toggle)\b"
    r"|\b(?:is|are)\s+(?:hashed|encrypted|signed|encoded|serialized|generated|compiled|bundled|formatted|linted|"
    r"validated|cached|rendered|scheduled|triggered|provisioned|orchestrated|audited|logged|routed|proxied|sent|delivered|collected|processed)\s+(?:with|by|using|via|through|in|on)\s+\S"
    r"|\b(?:was|were|has\s+been|have\s+been|got|is|are)\s+renamed\s+(?:to|from|as)\b|\bpinned\s+(?:to|at)\s+\S|\b(?:fixed|locked|held|frozen)\s+(?:to|at)\s+v?\d"
    r"|\b(?:moved|migrated)\s+(?:over\s+)?to\b|\btalks?\s+to\s+\S|\bcomes?\s+from\s+[\w.-]"
    r"|\b(?:is|are)\s+(?:powered|backed|served|fronted|owned|maintained)\s+by\b"
    r"|\b(?:is|are)\s+(?:partitioned|sharded|keyed|indexed)\s+(?:by|on)\b"
    r"|\b(?:is|are)\s+(?:published|pushed|uploaded)\s+to\b|\b(?:is|are)\s+(?:being\s+)?(?:decommissioned|retired)\b"
    r"|\b(?:is|are)\s+(?:called|named)\s+\S"
    r"|\b(?:runs?|lives?|sits?|(?:is|are)\s+(?:hosted|deployed|stored|kept|managed|built|configured|defined|"
    r"tracked|written))\s+(?:on|in|at|under|with|by|via|through)\s+\S"
    r"|\bgo(?:es)?\s+(?:out\s+)?(?:to|from)\s+\S|\b(?:is|are)\s+(?:read-only|frozen|protected|locked)\b"
    r"|\b(?:owns?|maintains?|uses)\s+(?:the\s+)?\S|\buse\s+(?:\S+\s+){1,4}?for\s+\S"
    r"|\b(?:is|are)\s+(?:\w+\s+)?[\w-]+[:@][\w.-]*\d|\b(?:is|are)\s+(?:[a-z]\w*\s+)?v?\d+(?:\.\d+)*\b(?!\s*(?:%|x\b|times|"
    r"seconds|minutes|hours|ms\b|s\b|percent))|\b(?:is|are)\s+our\s+\w|\b(?:is|are)\s+vendored\b"
    r"|\b(?:reads?|writes?|pulls?|push(?:es)?|publish(?:es)?|emits?|sends?)\s+(?:from|to|into)\s+\S|\b(?:deployed|hosted|running)\s+(?:on|in|at)\s+[A-Z\w]|\b(?:lands?|landing|arrives?|ends\s+up)\s+(?:in|into|on|at)\s+\S|\bgo(?:es)?\s+(?:out\s+)?(?:through|via)\s+\S"
    r"|\bdeploys?\s+(?:with|via|through|from|to|on)\s+(?!(?:mon|tue|wed|thu|fri|sat|sun)\w*day|weekends?\b|every\b|each\b)\S"
    r"|\btargets?\s+(?:[a-z]+\s+)?v?\d|\bin\s+front\s+of\s+\S"
    r"|\b(?:is|are)\s+(?:a|an)\s+(?:[\w.+-]+\s+){0,4}?[a-z][\w.-]*\s+v?\d+(?:\.\d+)*\b(?!\s*(?:%|x\b|times|minutes|hours))|\b(?:is|are)\s+(?:the\s+)?(?:single\s+)?source\s+of\s+truth\b"
    r"|\b(?:is|are)\s+(?:deployed|published|released)\s+to\s+\S|\b(?:is|are)\s+(?:now\s+)?(?:reduced|increased|raised|"
    r"lowered|set|capped|limited|bumped|cut)\s+to\s+\d|\bexpires?\s+(?:after|in)\s+\d"
    r"|\b(?:upgraded|updated|bumped|downgraded|moved|migrated)\s+(?:(?:the|our)\s+)?(?:[\w.-]+\s+)?to\s+(?:[\w.-]+\s+)?v?\d+(?:\.\d+)+\b"
    r"|\b(?:with|using)\s+[a-z][\w.-]*\s+v?\d+\.\d+(?:\.\d+)?\b|\b(?:is|are)\s+(?:loaded|read|fetched|pulled|sourced|synced|"
    r"imported)\s+from\s+\S|\b(?:is|are)\s+[\w.-]+\s+(?:on|at)\s+[\w-]+(?:\.[\w-]+)+"
    r"|\buse\s+[\w.-]+\s+v?\d+(?:\.\d+)+\b"
    r"|\bgo(?:es)?\s+(?:in|into)\s+(?:the\s+)?[\w/-]*[._/][\w./-]*\w|\b(?:build|builds|built|compiled?)\s+with\s+\S+\s+v?\d"
    r"|\b(?:is|are)\s+registered\s+(?:in|with|at)\s+\S|\bat\s+[\w-]+(?:\.[\w-]+)+:\d{2,5}\b|\bchanged\s+to\s+\S"
    r"|\bbehind\s+(?:the\s+)?[\w.-]*[_\d][\w.-]*\b|\b(?:is|are)\s+(?:a|an)\s+(?:string|int|integer|float|uuid|bool|boolean|"
    r"timestamp|date|enum|bigint|decimal|json)\b|\bhandles\s+(?:all\s+)?(?:our|the)\s+\S|\b(?:is|are)\s+(?:\S+\s+)?(?:https?://\S+|[\w-]+(?:\.[\w-]+)+:\d{2,5})"
    r"|\b(?:is|are)\s+(?:now\s+)?[\w-]+(?:\.[\w-]+)*\.(?:com|io|dev|net|org|internal|local|app|cloud|tech|ai)\b",
    _I,
)
# "the module path is github.com/acme/billing", "our SDK package on PyPI is acme-sdk": a name's value.
_NAMED_VALUE = lazyre.compile(
    r"^(?:(?:the|our|my)\s+)?(?:[\w-]+\s+){0,3}(?:name|path|url|host|hostname|port|package|module|repo|bucket|table|"
    r"topic|queue|branch|image|registry|namespace|cluster|db|database|endpoint|version|account|project|service|domain|"
    r"channel|index|region|prefix|org|team|address|email|sender|alias|dsn|uri|toolchain|compiler|runtime|framework|sdk|"
    r"bootloader|platform|kernel|id|dataset|schema|space|selector|workspace|tenant|instance|pool|zone|tag|label|"
    r"environment|env|server|site|website)\s+(?:(?:on|in|for|of)\s+\S+\s+)?(?:is|are)\s+(?:now\s+)?"
    r"[`'\"]?[\w.:/@-]*[.:/@_\d-][\w.:/@-]*",
    _I,
)
# An imperative is not a statement about the project ("kill the thing on port 8080").
_IMPERATIVE = lazyre.compile(
    r"^(?:kill|run|fix|add|make|use|keep|check|open|close|restart|stop|start|bump|set|change|update|remove|delete|try|look|"
    r"write|create|move|rename|deploy|build|test|show|print|give|put|help|find|grep|print|revert|merge|push|pull|"
    r"install|drop|call|send|ping|curl|ssh|go|get|see)\b",
    _I,
)
# "For PLR0912 split the handler into its own function": an order about one thing, not a statement.
_ORDER_FOR = lazyre.compile(
    r"^(?:for|in|on)\s+[\w./-]+(?:\s+[\w./-]+)?,?\s+(?:split|move|rename|add|make|put|change|extract|pull|fix|remove|"
    r"drop|inline|wrap|bump|pin|replace|rewrite|refactor)\b",
    _I,
)
# "msrv -> 1.75 now": a name given a new version, arrow-style.
_ARROW = lazyre.compile(
    r"^(?:[\w./-]+\s+){0,5}[\w./-]+\s*(?:->|\u2192|=)\s*v?\d+(?:\.\d+)*(?:\s*[a-z]+/[a-z]+|\.\d+)?\b", _I
)
_DIGIT = lazyre.compile(r"\d")
_FRAGMENT_WORDS = frozenset(["via", "we"])
_VERSION_WORDS = frozenset(["with", "using"])
_VERSIONED = lazyre.compile(r"\b(?:with|using)\s+[a-z][\w.-]*\s+v?\d+\.\d", _I)
# Fragments that state what the project is made of: "Postgres 15 on RDS", "tls certs via cert-manager",
# "for the DI we are using Hilt".
_FRAGMENT = lazyre.compile(
    r"^[\w.-]+\s+v?\d+(?:\.\d+)*\s+(?:on|in|at|via|with|behind)\s+\S"
    r"|^(?:[\w.-]+\s+){1,3}via\s+[\w.-]+"
    r"|^(?:for|in)\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s*,?\s+we\s+(?:are\s+using|use|run|have)\s+\S",
    _I,
)
_CLAUSES = lazyre.compile(r"[,;]\s+")
_AND = lazyre.compile(r"^(?:and|also|plus)\s+", _I)
# What "here" is in "in this repo we use ...": the project, or the part of it the session works in.
_HERE = r"(?:repo|repository|project|codebase|team|service|app|module|package|crate|library|monorepo|workspace)"
# A statement of how things are done here, not of what is: "we use pnpm, not npm", "every tool comes
# from a pinned archive", "new deps go in MODULE.bazel", "new rule from the review: ..." (a rule).
_NORM = lazyre.compile(
    r"^(?:(?:in|for)\s+(?:this|the|our)\s+" + _HERE + r"[,:]?\s+|(?:for\s+)?new\s+[\w-]+(?:\s+[\w-]+)?,?\s+)?"
    r"(?:we|i)\s+(?:only\s+)?use\s+\S(?=.*(?:\bnot\b|\bnever\b|\bno\s+\w|\binstead\b|\brather\b|\bonly\b|\bhere\b|"
    r"\bthis\s+(?:repo|project)\b|\beverywhere\b|\beverything\b|\bfor\s+\w+ing\b))"
    r"|^(?:(?:in|for)\s+(?:this|the|our)\s+" + _HERE + r"[,:]?\s+|(?:for\s+)?new\s+[\w-]+(?:\s+[\w-]+)?,\s+)"
    r"(?:we|i)\s+(?:only\s+)?use\s+\S"
    r"|^(?:all|every|each)\s+(?:[\w.-]+\s+){1,3}?(?:goes|go|comes?|gets?|uses?|lands?|needs?)\b"
    r"|^new\s+[\w.-]+(?:\s+[\w.-]+)?\s+(?:go|goes|use|uses|get|gets|land|lands)\b"
    r"|^(?:a\s+)?(?:new|general|house|team)\s+rule\b[^:]{0,30}:\s*\S",
    _I,
)
# A statement of what is that also says what must not be done ("calls go through the breaker; no
# hand-written retry loops", "... never run migrations against it"): an instruction, so a rule.
_PRESCRIBES = lazyre.compile(
    r"(?:[;:]\s*|,\s+(?:and\s+|but\s+)?|\.\s+)no\s+(?!(?:worries|problem|idea|one|longer|more|need|matter)\b)[\w-]+"
    r"|\bnever\b|\bno\s+longer\s+use\b|\bone\s+[\w-]+\s+per\s+[\w-]+\b|(?<!\()\b(?:don'?t|do\s+not)\s+\w"
    r"|\b\d+\s*[a-z]*\s+(?:minimum|maximum)\b|\b(?:we|i)\s+use\s+\S[^.;]{0,60},\s+not\s+\w",
    _I,
)
_WE_ARE_ON_NAME = lazyre.compile(r"^(?:we'?re|we\s+are)\s+(?:now\s+)?(?:on|using|going\s+with)\s+\S", _I)
_WE_ARE_ON = lazyre.compile(
    r"(?:^|[,;]\s+(?:(?:so|and|but)\s+)?)(?:we'?re|we\s+are)\s+(?:now\s+)?(?:on|using|running)\s+[\w.+-]+\s+v?\d", _I
)
_FACT_WE_USE = lazyre.compile(r"^(?:we|i)\s+use\s+\S+(?:\s+\S+){0,3}?\s+for\s+\S", _I)
_STATEMENT = lazyre.compile(
    r"\b(?:is|are|will|has|have|changes?|moves?|moving|goes|runs|uses|gets|needs|wants|requires|expects)\b", _I
)


# Every word (as [a-z]+ runs: "don't" is "don" and "t") that some cue after the question test needs.
_TRIGGER_WORDS = """
is are s was were got has have been that cross closing gone todo fixme forget remind still note put add do to backlog
list decided agreed decision change plan plans let lets ll will go going switching moving standardising standardizing
settled chose picked went opted heart gonna team prefer rather always never don dont not must make from avoid remember
keep use using uses new all every each deprecated only forward future stop no should later next follow followup point
like listens listen behind pinned moved migrated talks talk runs run lives live sits sit goes owns own maintains
maintain reads read writes write pulls pull pushes push handles vendored called named hosted deployed stored kept
managed built configured defined tracked written powered backed served fronted owned maintained partitioned sharded
keyed indexed published pushed uploaded decommissioned retired changes moves gets needs needs read-only frozen
protected locked instead over binds bind port reminder ever anywhere allowed plate jot re dropping ditching retiring
replacing killing without toggle conventions convention rules guidelines style
fixed locked held push publish publishes emits emit sends send deployed hosted running signed
table stay stick ping nudge max maximum tops least most ever landed lands land arrives ends
here henceforth park someday eventually thumb scratch string int integer nothing nobody
wants requires expects correction through in registered changed voted mandatory required
compulsory forbidden banned disallowed sprint shall toolchain checked handled switched important essential crucial
exceptions targets target targeting deploys deploy build builds id landing truth expire expires audited logged
routed proxied upgraded updated bumped downgraded approved released out outside reduced increased raised lowered
capped limited cut anymore possible front via release launch deadline scope loaded fetched sourced synced imported
done fixed finished sorted resolved merged documented migrated complete completed shipped landed closed
took taken care wrapped crossed knocked disregard ignore outcome outcomes strike
"""
_TRIGGERS = frozenset(_TRIGGER_WORDS.split())
_DONE_WORDS_TEXT = """strike list board settled
done fixed finished sorted resolved merged written documented migrated complete completed shipped
landed closed gone cross closing wiki docs readme plate in live checked handled approved released out place took taken
care wrapped crossed knocked created deployed implemented added clarified rolled configured enabled published set
updated rotated renewed cleaned removed archived"""
# Done words whose cue needs "is/are ... cleaned up": said bare ("retries cleaned up this morning") they
# close a to-do only as its own verb does (:func:`_done_own_verb`).
_DONE_BY_OWN_VERB = frozenset(["updated", "rotated", "renewed", "cleaned", "removed", "archived"])
_DONE_WORDS = frozenset(_DONE_WORDS_TEXT.split())


# The costly unanchored patterns, each run only when the sentence has a word it needs.
def _needs(words: str) -> frozenset[str]:
    return frozenset(words.split())


_NEEDS = {
    "hedge": _needs(
        "think guess believe wonder maybe probably perhaps seem seems might apparently sure idk forget failed broke "
        "again yesterday now time today"
    ),
    "chatter": _needs("don dont do never always see talk catch later happy"),
    "decision": _needs(
        "decided agreed decision change plan plans new let lets ll will go going switching moving standardising scope "
        "more upgrade upgraded upgrading bump bumped move migrate "
        "standardizing settled chose picked went opted heart gonna team i we dropping ditching retiring replacing "
        "killing moved switched migrated outcome outcomes"
    ),
    "vague": _needs("later next follow followup point someday some eventually"),
    "preference": _needs("prefer rather like instead over"),
}
# A word each of _TODO's alternatives needs, a whole run of letters wherever it matches ("to-?dos?"
# may run into "that": "add to the todothat ..."; its exact word is the "add"/"put"/... it opens with).
# The body _TODO reads is the sentence less a lead (_LEAD, _RELAYED) that ends in a space: its words are
# the sentence's. Only for an ASCII sentence (IGNORECASE matches "\u017f" to "s"; ``lower()`` does not).
_TODO_NEEDS = _needs(
    "todo fixme forget remind ping nudge still note reminder backlog list remember jot board action me add put "
    "stick throw"
)
# "next", "but" and "before" count only with "we" or "i": the alternatives that need them open with one.
_TODO_WE_NEEDS = _needs("next but before")


def _may_be_todo(sentence: str, tokens: set[str]) -> bool:
    if not sentence.isascii() or not _TODO_NEEDS.isdisjoint(tokens):
        return True
    return not _TODO_WE_NEEDS.isdisjoint(tokens) and ("we" in tokens or "i" in tokens)


def _shaped(sentence: str, tokens: set[str]) -> bool:
    """A statement with no trigger word that an arrow, a version or a fragment shape still makes one
    ("msrv -> 1.75", "Postgres 15 on RDS", "we train with lightgbm 4.1"); cheap tests first."""
    if ("-" in sentence or "=" in sentence or "\u2192" in sentence) and _ARROW.match(sentence):
        return True
    digit = _DIGIT.search(sentence) is not None
    if (digit or _FRAGMENT_WORDS & tokens) and _FRAGMENT.match(sentence):
        return True
    return digit and bool(_VERSION_WORDS & tokens) and _VERSIONED.search(sentence) is not None


def _hedged(body: str) -> bool:
    """Unsure or about an event, not a standing fact ("I think", "it failed again"); a time word in
    a change statement only says when it was made."""
    found = [m[0] for m in _HEDGE.finditer(body)]
    if not found:
        return False
    # "we decided in the meeting yesterday: ...": a time word says when a change or a decision was made
    change = any(p.search(body) is not None for p in (_CHANGED_TO, _SINCE, _DECIDED))
    since = {m[1].lower() for m in _SINCE_WHEN.finditer(body)}
    return any(not ((change or word.lower() in since) and _TIME_WORD.match(word)) for word in found)


def _subject_first(body: str, start: int, most: int = 10) -> bool:
    """A thing names the statement: at most ``most`` words before ``start``, not a pronoun."""
    return start > 0 and len(body[:start].split()) <= most and _NOT_A_SUBJECT.match(body) is None


def _named_value_after(body: str) -> bool:
    """ "the rotation is in pagerduty, schedule name is OPS-PRIMARY": a name's value in a later clause."""
    return any(_NAMED_VALUE.match(_AND.sub("", part)) for part in _CLAUSES.split(body)[1:])


def is_fact(body: str, notice: bool = False) -> bool:
    """A statement about the project worth a ``fact`` entry (see the module docstring)."""
    if _hedged(body) or body.endswith("?") or _IMPERATIVE.match(body) or _ORDER_FOR.match(body):
        return False
    if _NAMED_VALUE.match(body) or _WE_ARE_ON.search(body) or _named_value_after(body) or _ARROW.match(body):
        return True
    if _FRAGMENT.match(body) and not _PAST.search(body):
        return True
    if _FACT_WE_USE.match(body) and not _PAST.search(body):
        return True
    match = _FACT.search(body)
    if match is not None and _subject_first(body, match.start()) and not _PAST.search(body[: match.end()]):
        return True
    if notice:  # "fyi the staging account id changes next month"
        said = _STATEMENT.search(body)
        return said is not None and _subject_first(body, said.start(), 5) and len(body.split()) >= 4
    return False


def _rule(body: str) -> bool:
    if _RULE.match(body) or _RULE_PLAIN.search(body):
        return True
    mid = _RULE_MID.match(body)
    return mid is not None and _NOT_A_SUBJECT.match(body) is None and _OBSERVED.search(body) is None


def _one_off(text: str) -> bool:
    """About this spot, this once ("use a dict there, not a list"), with no word that makes it standing."""
    return _ONE_OFF.search(text) is not None and _STANDING.search(text) is None


def _durable(rest: str) -> bool:
    """What a correction says is worth keeping: a contrast, a "should", not a one-off tweak."""
    if _one_off(rest):
        return False
    if _CONTRAST.search(rest) or _RESTRICTION.search(rest):
        return True
    return (
        _MODAL.search(rest) is not None
        or re.match(r"^(?:use|switch\s+to|stick\s+with|pin|keep)\b", rest, _I) is not None
    )


# What a named correction is about, without the word that only says what kind of thing it was
# ("correction on the alloc rule" corrects what was said about "alloc").
_KIND_OF_SAYING = lazyre.compile(r"\s+(?:rule|thing|part|bit|idea|stuff|one|decision|plan)s?$", _I)


_NAMES_NOTHING = lazyre.compile(
    r"(?:(?:what|i|you|we|said|told|wrote|meant|it|that|this|earlier|before|yesterday|last|time|there|here)\b\s*)+", _I
)


def retracting(said: Signal | None, about: str | None) -> Signal | None:
    """A correction that names what it corrects ("correction on the alloc rule: k_malloc is ok in
    SYS_INIT hooks") keeps it named, so the board replaces what was said about it, even where the
    new words do not name it again."""
    if said is None or not about:
        return said
    about = _KIND_OF_SAYING.sub("", re.sub(r"^(?:the|my|our|that)\s+", "", about.strip(), flags=_I)).strip()
    if not about or _NAMES_NOTHING.fullmatch(about):
        return said
    if re.search(rf"(?<![\w-]){re.escape(about)}(?![\w-])", said.text, _I):
        return said  # it names it again ("k_malloc" does not name "alloc")
    return Signal(said.kind, f"{said.text.rstrip('.!')} (corrects what was said about {about})", said.action)


def _tidy(text: str) -> str:
    text = re.sub(r"^(?:please|pls)[,\s]+", "", text.strip(), flags=_I).strip()
    return text[:1].upper() + text[1:]


def _correction(
    rest: str, about: str | None, forgot: bool = False, scratched: str | None = None, strong: bool = False
) -> Signal | None:
    rest = rest.strip()
    if scratched:
        # "scratch what I said about Tanstack, the sync went the other way: we're on SWR"
        rest = rest.rsplit(":", 1)[-1].strip().rstrip(".!")
        if _FINE.match(rest):
            return None  # "drop the retry thing, it's fine": nothing holds instead
        if _IT_IS.match(rest):  # "forget what I said about the db: it's on db-2" -> "the db is on db-2"
            rest = f"{scratched.strip()} is {_IT_IS.sub('', rest, count=1)}"
        if _WE_ARE_ON_NAME.match(rest):
            return Signal("decision", _tidy(f"{rest} (not {scratched.strip()})"))
        said = _correction(rest, about)
        if said is None:
            # what follows a retraction is what holds instead, whatever its words ("forget what I said
            # about decimal for money: we store integer cents now"); a question or a hedge is not
            if len(rest.split()) < 3 or rest.endswith("?") or _hedged(rest) or _one_off(rest):
                return None
            said = Signal("correction", _tidy(_LEAD.sub("", rest)))
        # what it corrects stays named, so the board replaces what was said about it
        return Signal(said.kind, f"{said.text.rstrip('.!')} (corrects what was said about {scratched.strip()})")
    if about and _IT_IS.match(rest):  # "I was wrong about the pool: it's called X" -> "the pool is called X"
        rest = f"{about.strip()} is {_IT_IS.sub('', rest, count=1)}"
    body = _LEAD.sub("", rest)
    if len(body) < MIN_TEXT or not re.search(r"[A-Za-z]{3}", body) or body.endswith("?"):
        return None
    if is_fact(body):
        # "we moved to bun last week": a change the team made is a decision (what was said before is
        # not a fact that a fact replaces)
        return Signal("decision" if _WE_CHANGED.match(body) else "fact", _tidy(body))
    if _DECISION.search(body) and not _HEDGE.search(body):  # "actually, let's use GraphQL after all"
        return Signal("decision", _tidy(body))
    if _durable(body) or (forgot and not _ONE_OFF.search(body)):
        return Signal("correction", _tidy(sentence_of(body, forgot)))
    if strong and _STATED_VALUE.match(body) and not _hedged(body) and not _one_off(body):
        # "wait no the small model vocab is 48k": a thing said to be another value, after a clear
        # "I was wrong", is what holds now
        return Signal("correction", _tidy(body))
    return None


def sentence_of(body: str, forgot: bool) -> str:
    """ "you forgot to update the .nvmrc" is kept whole: "to update the .nvmrc" says nothing alone."""
    return f"You forgot {body}" if forgot else body


def read(sentence: str, *, after_agent: bool, first: bool) -> Signal | None:
    """What ``sentence`` says for the board, or None. ``after_agent``/``first``: it opens a turn
    that answers the agent (only then do "no, ..." and "actually ..." correct it). A cue's words
    in a hypothetical, someone else's words, an observation or a one-off give nothing
    (:func:`.noise.refused`)."""
    signal = _read(sentence, after_agent=after_agent, first=first)
    if signal is not None and signal.action == "add" and refused(sentence.strip(), signal.kind) is not None:
        return None
    return signal


def _read(sentence: str, *, after_agent: bool, first: bool) -> Signal | None:
    sentence = sentence.strip()
    if '"' in sentence or "\u201c" in sentence:
        sentence = _QUOTED.sub(r"\1", sentence).strip()
    about = _RE_ABOUT.match(sentence) if not sentence.isascii() or sentence[:2].lower() in _ABOUT_OPENS else None
    if about is not None:  # "re the limiter: it's 200 rps now" says "the limiter is 200 rps now"
        sentence = f"{about.group('about').strip()} is {sentence[about.end() :]}"
    tokens = set(letter_runs(sentence))
    if _MAY_DROP & tokens and _DROPPED.search(sentence) and not sentence.endswith("?"):
        return Signal("todo", sentence, "close")
    strong = _STRONG_CORRECTION.match(sentence) if _MAY_CORRECT & tokens else None
    if strong is not None and strong.end() < len(sentence):
        about_what = strong.group("about") or strong.group("got") or strong.group("wrong")
        if strong.group("wrong"):
            about_what = re.sub(r"^(?:my|that)\s+", "the ", about_what, flags=_I)
        rest = sentence[strong.end() :]
        named = strong.group("on")
        if named and re.match(r"\s*\d", rest) and not _one_off(rest):
            # "Correction on the SLA: 48 hours for ..." says "the SLA is 48 hours for ..."
            return Signal("correction", _tidy(f"{named.strip()} is {rest.strip()}"))
        scratched = strong.group("scratched") or strong.group("dropped") or strong.group("that") or strong.group("told")
        said = _correction(rest, about_what, scratched=scratched, strong=True)
        return said if scratched else retracting(said, named or strong.group("about"))
    if first and after_agent:
        weak = _WEAK_CORRECTION.match(sentence)
        if weak is not None:
            forgot = re.match(r"you\s+(?:forgot|missed)\b", sentence, _I) is not None
            return _correction(sentence[weak.end() :], None, forgot)
    if sentence.endswith("?"):
        if _POLITE_CLOSE.search(sentence):  # "..., so could you take that off the list?"
            return Signal("todo", sentence, "close")
        if _POLITE_RULE.match(sentence) and not _HEDGE.search(sentence):
            return Signal("rule", _tidy(_POLITE_HEAD.sub("", sentence).rstrip("?").strip()))
        if _POLITE_TODO.match(sentence) and not _HEDGE.search(sentence):
            return Signal("todo", _tidy(sentence))
        return None  # a question asks; it does not decide or instruct
    # the done cues read the sentence without its emoji ("dark mode \u2705", "FOO-231 fixed in 2.3.1 \U0001f389")
    plain = _EMOJI.sub("", sentence).strip() if not sentence.isascii() else sentence
    if "\u2705" in sentence:
        tokens.add("done")
    if not _TRIGGERS.intersection(tokens) and not _shaped(sentence, tokens):
        # no word any cue below needs: most sentences ("fix the test") stop here
        maybe_done = "ed" in sentence or "now" in tokens or not _IRREGULAR_PAST.isdisjoint(tokens)
        return _done_own_verb(sentence, _LEAD.sub("", sentence)) if maybe_done else None
    if (
        _DONE_WORDS.intersection(tokens)
        and (_DONE.search(plain) or _DONE_LEAD.match(_LEAD.sub("", plain)))
        and not _NOT_DONE.search(sentence)
        and not _UNSURE.search(sentence)
        and not _DECISION.search(_LEAD.sub("", sentence))
        and not _CHANGED_VALUE.search(sentence)  # "font changed to Geist, Inter is out": a change, not a close
        and not _WE_ARE_ON.search(_LEAD.sub("", sentence))  # "we're on envoy 1.31 now, 1.29 is gone": what holds now
    ):
        return Signal("todo", sentence, "close")
    notice = _NOTICE.match(sentence) is not None
    body = _LEAD.sub("", sentence) if not re.match(r"^note\s+to\s+self\b", sentence, _I) else sentence
    if _RELAYING & tokens:
        wants = _WANTS.match(body)
        if wants is not None and not _HEDGE.search(body):  # "Dana wants every PR to have screenshots"
            return Signal("rule", _tidy(f"{wants[1]} must {body[wants.end() :]}"))
        body = _RELAYED.sub("", body)
    if len(body) < MIN_TEXT:
        return None
    if _may_be_todo(sentence, tokens) and _TODO.search(body):
        return Signal("todo", _tidy(body))
    if _CHANGING & tokens and _CHANGED_FROM.match(body) and not _UNSURE.search(body):
        return Signal("decision", _tidy(body))
    if (_NEEDS["chatter"] & tokens and _CHATTER.search(body)) or (_NEEDS["hedge"] & tokens and _hedged(body)):
        return None  # chit-chat, or not sure: when unsure, keep nothing
    if _UPGRADED.match(body) and not _UNSURE.search(body):
        return Signal("fact", _tidy(body))  # "we have upgraded to Spring Boot 3.3": what the project is on now
    if (
        (not sentence.isascii() or not _SUPERSEDED_NEEDS.isdisjoint(tokens))
        and _SUPERSEDED_BY.search(body)
        and not _hedged(body)
    ):
        return Signal("fact", _tidy(body))  # "the Vault path secret/prod/ is superseded by kv/prod/": what holds now
    if _NEEDS["decision"] & tokens and _DECISION.search(body):
        return Signal("decision", _tidy(body))
    if _I_PREFER.search(body):
        return Signal("preference", _tidy(body))
    if _rule(body) and not _one_off(body):
        # "Going forward I'd like review comments with suggestion blocks": a standing wish, a preference
        return Signal("preference" if _ID_LIKE.search(body) else "rule", _tidy(body))
    if _NEEDS["vague"] & tokens and _TODO_VAGUE.search(body) and not _PREFERENCE.search(body):
        # "i prefer plugins, someone else takes it over eventually": the "eventually" is not a to-do
        return Signal("todo", _tidy(body))
    if _NEEDS["preference"] & tokens and _PREFERENCE.search(body) and not _one_off(body):
        return Signal("preference", _tidy(body))
    if is_fact(body, notice):
        return Signal("rule" if _NORM.search(body) or _PRESCRIBES.search(body) else "fact", _tidy(body))
    return _done_own_verb(sentence, body)


def _done_own_verb(sentence: str, body: str) -> Signal | None:
    """ "flaky specs are quarantined now", "compared bpe vs unigram": done, if an open to-do asks
    for that verb (the board closes one only then: :func:`..board.supersede.closed`)."""
    first = body.split(",")[0]  # "renewed the certificate, valid until 2027": "until" is about the rest
    if _NOT_DONE.search(first) or _UNSURE.search(body) or _hedged(first):
        return None
    if _RESTATED.match(body) and not _IMPERATIVE.match(body):
        # "login helper reuses the session cookie now": a to-do said as what is so now (the board
        # closes one only if the sentence says nearly all the to-do says)
        return Signal("todo", sentence, "close")
    said = _PASSIVE_DONE.match(body)
    if said is None:
        return None
    verb = re.search(
        r"\b(?:[a-z]{3,}ed|wrote|rewrote|built|rebuilt|made|sent|set\s+up|ran|did|split|rewritten)\b", said[0].lower()
    )
    if verb is None or (verb[0] in _DONE_WORDS and verb[0] not in _DONE_BY_OWN_VERB):
        return None  # "I added a test": the words for done have cues of their own, with what they need
    return Signal("todo", sentence, "close")


def context_item(item: str, kind: str = "fact") -> Signal | None:
    """A short item of a context list the person typed ("ctx:\n- crate is no_std\n- msrv 1.70"): a
    statement about the project (or, in a spec, a rule: ``kind``), unless it asks, orders or hedges."""
    item = item.strip().rstrip(".")
    words = item.split()
    if not 2 <= len(words) <= 14 or item.endswith("?") or _IMPERATIVE.match(item) or _HEDGE.search(item):
        return None
    if _NOT_A_SUBJECT.match(item) and not re.match(r"^no\s", item, _I):
        return None
    return Signal(kind, _tidy(item))


def refers_back(sentence: str) -> bool:
    """ "put that on the list": a to-do whose subject is the sentence before it."""
    return _TODO_THAT.search(sentence) is not None and not sentence.endswith("?")


# A clause after the first that opens with a rule's word: "names aren't unique across regions so
# never join partners on the name", "the others belong to the analytics team and we don't touch their dags".
_CLAUSE_SPLIT = lazyre.compile(
    r"(?:[,;:]\s+|\s+(?=(?:so|and|but)\s+(?:we\s+|you\s+|please\s+)?(?:never|always|don'?t|dont)\b))"
)
_CLAUSE_OPEN = lazyre.compile(r"^(?:(?:so|and|but|then|also|because|plus|in\s+general)[,\s]+)*", _I)


def clause_rule(sentence: str) -> Signal | None:
    """A rule said in a later clause of a sentence that gives nothing as a whole: the entry is the
    whole sentence (it names what the rule is about), if the clause is a rule and no noise."""
    if sentence.endswith("?") or len(sentence) > 300 or _hedged(sentence):
        return None
    for clause in _CLAUSE_SPLIT.split(sentence)[1:]:
        clause = _CLAUSE_OPEN.sub("", clause).strip()
        if not _RULE.match(clause) or len(clause.split()) < 3:
            continue
        said = read(clause, after_agent=False, first=False)
        if said is not None and said.action == "add" and said.kind == "rule" and refused(sentence, "rule") is None:
            return Signal("rule", _tidy(_LEAD.sub("", sentence)))
    return None


def classify(sentence: str, *, after_agent: bool, first: bool) -> str | None:
    """The kind of a sentence a person wrote (None: nothing for the board, or a to-do said done)."""
    signal = read(sentence, after_agent=after_agent, first=first)
    return signal.kind if signal is not None and signal.action == "add" else None
