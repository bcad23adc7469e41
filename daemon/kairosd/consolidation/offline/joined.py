"""One instruction said over several sentences of one stretch of prose is one entry (pure).

People state a rule and then say what it means: "btw we never reload envoy by restarting the pod.
hot restart only, via the admin endpoint", "the invariant in this crate: a balance is never
updated in place. Every change is an append to postings ... No UPDATE accounts SET balance
anywhere.". Read sentence by sentence, that is two or three board entries, each a fragment that
says less than the turn did ("No UPDATE accounts SET balance anywhere.", "Not 3.6.2."), and the
board gives every later session each fragment as an instruction of its own. So the orders of one
typed line (rules, preferences, corrections) become one entry, with the statements between them
and the plain statements right after them that say why or how ("..., the dashboards read it"); an
order about "it", or one too short to say what it is about ("Never float."), takes the sentence
before, which says what it is. Likewise a to-do that asks to note "it" ("It is not urgent; please add
it to the list") takes the sentence before it, and a fact goes on with the next sentence when that one
is about what the fact named ("... the tax-rates service. That service is at tax-rates.internal:8080.").

What is left apart otherwise: facts, decisions and to-dos (each is one thing, and a turn that states
a port and a rule is two entries), items of a list (each line is its own), a question or an order to do
something now that follows a rule (it is the task at hand, not part of the rule), and anything
that would make the entry longer than a board entry may be.

Pure: no I/O; imports only :mod:`.cues` (the signal type, what an order is) and the board's entry
limits.
"""

from __future__ import annotations

import re

from kairosd.consolidation.board.entries import MAX_TEXT
from kairosd.consolidation.offline.cues import Signal
from kairosd.core import lazyre

_ORDERS = ("correction", "rule", "preference")  # the kind of a joined entry: the first of these it holds
# What does not go on with a rule: a question, an order to do something now, a hedge, a thank-you.
_APART = lazyre.compile(
    r"\?$|^(?:(?:ok(?:ay)?|k|so|and|then|now|also|pls|please)[,.!\s]+)*(?:kill|run|fix|add|make|check|open|close|"
    r"restart|start|bump|set|change|update|remove|delete|try|look|write|create|move|rename|deploy|build|test|show|"
    r"print|give|put|help|find|grep|revert|merge|push|pull|install|drop|call|send|ping|curl|ssh|can\s+you|could\s+you|"
    r"would\s+you|let'?s|thanks?|thx|ty|cool|great|nice|lgtm|sorry|i\s+think|i\s+guess|maybe|do(?!\s*n'?t|\s+not))\b"
    r"|\b(?:for\s+now|today|this\s+time|just\s+this\s+once)\b",
    re.IGNORECASE,
)

# An order about "it": "Don't bump it in a feature branch.", "don't fight it, use their component".
_POINTS_BACK = lazyre.compile(
    r"^(?:(?:please|pls|and|so|but|just)\s+)?(?:(?:don'?t|dont|do\s+not|never|always)\s+)?[a-z]+\s+(?:it|them|that|those)\b",
    re.IGNORECASE,
)


# A to-do about "it": "It is not urgent; please add it to the list.", "Record it as a follow-up item.".
_TODO_POINTS_BACK = lazyre.compile(
    r"\b(?:add|put|record|note|keep|log|file|track|stick|park|write)\s+(?:it|that|this|them|those)\s+"
    r"(?:on|to|in|as|down|for)\b"
    # what is left once "Please note" is read as an opener: "it as a follow-up item"
    r"|^(?:it|that|this|them|those)\s+(?:as|on|to|in|down\s+(?:as|for))\s+(?:a\s+|the\s+|my\s+|our\s+)?"
    r"(?:follow[\s-]*up|to-?do|list|backlog|later|next)",
    re.IGNORECASE,
)


def asks_to_note_it(todo: str) -> bool:
    """Whether a to-do asks to note "it" ("please add it to the list"): :func:`joined` gives it the sentence before."""
    return _TODO_POINTS_BACK.search(todo) is not None


_VALUE = lazyre.compile(r"\d|[\w-]+\.[\w-]+")  # a number, a version, a host or a file: what a fact gives
_LEFT_OVER = lazyre.compile(r"^(?:it|that|this|them|those)\s", re.IGNORECASE)
SHORT_ORDER = 4  # words: an order this short ("Never float.") says what it is about in the sentence before


def joined(lined: list[tuple[int, str]], found: list[Signal], at: list[tuple[int, int]]) -> tuple[Signal, ...]:
    """``found`` (read from the sentences ``lined``, each signal from the sentences ``at`` gives),
    the orders of each typed line joined into one entry (see the module docstring)."""
    found, at = _facts_about_it(lined, *_todos_about_it(lined, found, at))
    orders = [i for i, s in enumerate(found) if s.action == "add" and s.kind in _ORDERS]
    if not orders:
        return tuple(found)
    covered = {n for first, last in at for n in range(first, last + 1)}
    out: list[Signal] = []
    done: set[int] = set()
    for i, signal in enumerate(found):
        if i in done:
            continue
        if i not in orders:
            out.append(signal)
            continue
        line = lined[at[i][0]][0]
        group = [j for j in orders if lined[at[j][0]][0] == line]
        first, last = at[group[0]][0], at[group[-1]][1]
        between = [j for j, (a, _) in enumerate(at) if first <= a <= last and j not in group]
        if between:  # a fact or a to-do between two orders: each stays what it is
            group = [i]
            first, last = at[i]
        parts = {at[j][0]: found[j].text for j in group}
        for n in range(first, last + 1):
            if n not in covered:
                parts[n] = lined[n][1]  # what is said between two orders goes with them
        size = sum(len(p) + 1 for p in parts.values())
        if size > MAX_TEXT:
            out.append(signal)
            continue
        back = first - 1
        stated = [j for j, span in enumerate(at) if span == (back, back) and found[j].kind == "fact"]
        if (
            _POINTS_BACK.match(found[group[0]].text)
            and stated
            and out
            and out[-1] is found[stated[0]]
            and lined[back][0] == line
            and size + len(out[-1].text) < MAX_TEXT
        ):
            # "CI runs Bazel 7.4.1 ... Don't bump it in a feature branch.": the rule is about the
            # fact before it, and says it with it
            parts[back] = out.pop().text
            size += len(parts[back]) + 1
        elif (
            (_POINTS_BACK.match(found[group[0]].text) or len(found[group[0]].text.split()) <= SHORT_ORDER)
            and back >= 0
            and lined[back][0] == line
            and back not in covered
        ):
            # "Don't bump it in a feature branch.": what "it" is, is the sentence before (skipping a
            # "whatever." in between)
            if len(lined[back][1].split()) < 3 and back > 0 and lined[back - 1][0] == line and back - 1 not in covered:
                parts[back] = lined[back][1]
                back -= 1
            parts[back] = lined[back][1]
            size += sum(len(lined[n][1]) + 1 for n in range(back, first))
            if size > MAX_TEXT:
                out.append(signal)
                continue
        correcting = any(found[j].kind == "correction" for j in group)
        n = last + 1
        while n < len(lined) and lined[n][0] == line and _APART.search(lined[n][1]) is None:
            said = [j for j, (a, _) in enumerate(at) if a == n]
            # what a correction goes on to state is what it says holds now ("wait no, not 3.6.2.
            # reanimated 3.6.3 is the one that works"); after a rule, only what makes no entry of its own
            if said and not (correcting and all(found[j].kind == "fact" or found[j].action == "close" for j in said)):
                break
            if size + len(lined[n][1]) + 1 > MAX_TEXT:
                break
            parts[n] = lined[n][1]  # "..., the dashboards read it": why or how, said after the rule
            size += len(lined[n][1]) + 1
            done.update(j for j in said if found[j].action == "add")
            n += 1
        done.update(group)
        if len(parts) == 1:
            out.append(signal)
            continue
        kind = next(k for k in _ORDERS if any(found[j].kind == k for j in group))
        pieces = [parts[n].strip() for n in sorted(parts)]
        text = " ".join([*(_ended(p) for p in pieces[:-1]), pieces[-1]])
        out.append(Signal(kind, text[:1].upper() + text[1:]))
    return tuple(out)


def _ended(sentence: str) -> str:
    """A sentence that goes on with another ends as one ("hot restart only" then "via ...")."""
    return sentence if sentence[-1:] in ".!?…:;" else f"{sentence}."


def _todos_about_it(
    lined: list[tuple[int, str]], found: list[Signal], at: list[tuple[int, int]]
) -> tuple[list[Signal], list[tuple[int, int]]]:
    """A to-do that asks to note "it" takes the sentence before it on its line, which says what "it" is
    ("we should add a dead-letter queue ... It is not urgent; please add it to the list")."""
    covered = {n for first, last in at for n in range(first, last + 1)}
    out = list(found)
    for i, signal in enumerate(found):
        back = at[i][0] - 1
        if (
            signal.kind == "todo"
            and signal.action == "add"
            and _TODO_POINTS_BACK.search(signal.text)
            and back >= 0
            and len(lined[back][1].split()) >= 3  # says what "it" is ("ok." does not)
            and lined[back][0] == lined[at[i][0]][0]
            and back not in covered
            and len(lined[back][1]) + len(signal.text) + 1 <= MAX_TEXT
        ):
            before = lined[back][1].strip()
            # "it as a follow-up item" (its "Please note" read as an opener) adds nothing to what "it" is
            out[i] = Signal("todo", before if _LEFT_OVER.match(signal.text) else f"{_ended(before)} {signal.text}")
    return out, at


# A fact that goes on about the thing the fact before it named: "That service is at tax-rates.internal:8080."
_FACT_POINTS_BACK = lazyre.compile(
    r"^(?:that|this|it|the\s+same)\s+(?:[\w-]+\s+)?(?:is|are|lives|runs|listens|sits)\b", re.IGNORECASE
)


def _facts_about_it(
    lined: list[tuple[int, str]], found: list[Signal], at: list[tuple[int, int]]
) -> tuple[list[Signal], list[tuple[int, int]]]:
    """Two facts of one line, the second about what the first named, are one entry ("Tax rates come
    from the tax-rates service. That service is at tax-rates.internal:8080.")."""
    out: list[Signal] = []
    spans: list[tuple[int, int]] = []
    for signal, span in zip(found, at, strict=True):
        if (
            out
            and signal.kind == "fact"
            and signal.action == "add"
            and out[-1].kind == "fact"
            and out[-1].action == "add"
            and spans[-1][1] == span[0] - 1
            and lined[spans[-1][1]][0] == lined[span[0]][0]
            and _FACT_POINTS_BACK.match(signal.text)
            and len(out[-1].text) + len(signal.text) + 1 <= MAX_TEXT
        ):
            out[-1] = Signal("fact", f"{_ended(out[-1].text)} {signal.text}")
            spans[-1] = (spans[-1][0], span[1])
            continue
        out.append(signal)
        spans.append(span)
    covered = {n for first, last in spans for n in range(first, last + 1)}
    for i, (signal, (first, last)) in enumerate(zip(out, spans, strict=True)):
        after = last + 1
        if (
            signal.kind == "fact"
            and signal.action == "add"
            and after < len(lined)
            and after not in covered
            and lined[after][0] == lined[last][0]
            and _FACT_POINTS_BACK.match(lined[after][1].strip())
            and _VALUE.search(lined[after][1])
            and len(signal.text) + len(lined[after][1]) + 1 <= MAX_TEXT
        ):
            # the second read as no entry of its own ("That server is at docs.internal:8081."): it still
            # says where the thing the fact named is
            out[i] = Signal("fact", f"{_ended(signal.text)} {lined[after][1].strip()}")
            spans[i] = (first, after)
    return out, spans
