"""What an entry must carry to stand alone on the board: a general test, not a list of phrases.

Every board entry is given to every later session as an instruction, read with none of the talk it
came from. Six rounds of phrase tuning showed that the cues' and the noise filters' phrases carry
poorly to writers nobody tuned on; what does carry is the shape of what went wrong. On the blind
figures of fresh..fresh5 (each split scored by the extractor of the day before anyone read it),
nearly half of the wrong entries were fragments: one sentence of an instruction said over several
("Never float.", "Not 3.6.2.", "Stop using any"), or a to-do that names nothing ("For next time").
Read alone, such an entry says less than the person did, or nothing.

So, whatever cue made it, an entry is kept only if it carries a thing to act on:

- an order (rule, preference, correction, decision) of fewer than :data:`MIN_ORDER_WORDS` words is a
  fragment: "Never float.", "Not 3.6.2.", "Stop using any", "Dont ask" (a rule says what to do or
  not do, and to what: "never log request bodies", "No tailwind, we use vanilla-extract");
- an order that holds a question ("Is the index refresh holding the lock? Look. Don't touch.") is no
  instruction as a whole: the cues drop questions, and one joined into an order is still one;
- an order that is a bare infinitive ("To add reloader so config changes don't need a restart", what
  is left when "note to ..." loses its opener) has lost its head: it is a to-do or a reason, not a
  rule, unless a standing word says it holds for good ("pls to use the bulk api always");
- a to-do must name at least :data:`MIN_TODO_WORDS` content words beyond the words that only say it
  is a to-do ("later", "next time", "the list"): "Put the retry cleanup on the list" names what to do,
  "Later not now" does not.

And an entry's kind follows its mood: a rule that only reports a change in the past tense ("Argocd
moved to argocd.internal:8443, not 443 anymore", "The raw events moved to `landing.events`") and
orders nothing (no modal, no "always"/"never", no imperative) says what is so now: it is a fact
(:func:`kind_by_mood`). Its "not 443 anymore" is the old value, not something forbidden.

Facts are left to the cues (a short fact with a value, "Metrics are on :9090", is the common good case).

Pure: no I/O; imports nothing of the extractor.
"""

from __future__ import annotations

import re

from kairosd.core import lazyre

MIN_ORDER_WORDS = 4
MIN_TODO_WORDS = 2
ORDERS = frozenset({"rule", "preference", "correction", "decision"})

_WORD = lazyre.compile(r"[A-Za-z0-9][\w'./:@-]*")
# Words that carry no content of their own: function words, and what only says "a to-do" or "later".
_EMPTY = frozenset(
    """a an the and or but so to of in on at for with by from as is are was were be been being it its it's
    this that these those there here i we you he she they me us my our your their do does did don't dont
    not no never always only just also then than will would should must can could may might have has had
    get got make use any all every each some what which who when where why how if up out about into over
    now new one more other please pls ok okay yes yeah let's lets let i'm we're you're that's isn't
    todo to-do todos list backlog later next time times follow-up followup item items track ticket
    remind reminder remember forget note notes self add put keep someday eventually soon sometime
    maybe thing things stuff""".split()  # noqa: SIM905
)


# A question inside the entry: a word, maybe a closing quote, then "?" ending a sentence ("use ? and" is code).
_QUESTION = lazyre.compile(r"\w[\"')]?\?(?:\s|$)")
_INFINITIVE = lazyre.compile(r"^to\s+[a-z]", re.IGNORECASE)
_FOR_GOOD = lazyre.compile(r"\b(?:always|never|ever|every|from\s+now\s+on|going\s+forward)\b", re.IGNORECASE)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content: three letters or more, not in :data:`_EMPTY`."""
    return [w for w in _WORD.findall(text) if len(w) >= 3 and w.lower().strip(".'-:") not in _EMPTY]


def fragment(kind: str, text: str) -> bool:
    """Whether an entry of ``kind`` with ``text`` cannot stand alone on the board (module docstring)."""
    if kind in ORDERS:
        return (
            len(_WORD.findall(text)) < MIN_ORDER_WORDS
            or _QUESTION.search(text) is not None
            or (_INFINITIVE.match(text) is not None and _FOR_GOOD.search(text) is None)
        )
    if kind == "todo":
        return len(content_words(text)) < MIN_TODO_WORDS
    return False


# A change reported in the past tense ...
_CHANGED = lazyre.compile(r"\b(?:moved|migrated|switched|renamed)\b", re.IGNORECASE)
# ... that orders nothing: no modal or standing word, no imperative opening it or one of its clauses.
_ORDERING = lazyre.compile(
    r"\b(?:should|must|shall|needs?\s+to|has\s+to|have\s+to|always|never|please|pls|make\s+sure|from\s+now\s+on|"
    r"going\s+forward)\b"
    r"|(?:^|[,;:.]\s*)(?:don'?t|dont|do\s+not|never|always|use|avoid|keep|stop|prefer)\b",
    re.IGNORECASE,
)


def kind_by_mood(kind: str, text: str) -> str:
    """``kind``, or "fact" for a rule that only reports a change (module docstring)."""
    if kind == "rule" and _CHANGED.search(text) and not _ORDERING.search(text):
        return "fact"
    return kind
