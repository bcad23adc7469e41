"""What a person wrote in a turn, as sentences: pasted logs, code and quoted tool output left out.

A typed turn mixes what the person says with what they paste: fenced code, stack traces, compiler
and linter lines, CI annotations, shell prompts, quoted replies. Those carry the words of rules
("later", "use X instead of Y", "always") without being the person's words, so they go before
anything is classified; so does a line with pasted lines on both sides (a program's line that no
pattern here knows, inside a paste), a run of indented lines that is no list (a config, an output
block) and the fields of a ticket pasted from a tracker ("Summary:", "Description:"). What remains
is split into sentences, also where a lower-case writer starts the next sentence without a capital
("ok looks sane. next: dont ever ...").

Pure: no I/O; must not import the board or the extractor.
"""

from __future__ import annotations

import re

from kairosd.core import lazyre

MAX_LINE = 600  # a longer "line" is pasted text, not something a person typed

_FENCE = lazyre.compile(r"^\s*(```|~~~)")
# A line that a program printed, not a person: each alternative is a shape tools print in.
# A line that a program printed, not a person: each alternative is a shape tools print in. Most
# are anchored at the line's start (tried there only, with ``match``); a few may come anywhere.
_LOG_START = lazyre.compile(
    r"\s*(?:\[\d{1,2}:\d\d(?::\d\d)?(?:\s*[AaPp][Mm])?\]\s"  # a chat log's "[10:42] Priya: ..."
    r"|File \"|at \S+\(|\$ |>>> |\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d\b|[WEIF]\d{4} \d\d:\d\d"
    r"|(?:WARN(?:ING)?|ERROR|INFO|DEBUG|FATAL|CRITICAL|TRACE|NOTICE)\b[:\]\s-]"
    r"|\[(?:WARN(?:ING)?|ERROR|INFO|DEBUG|FATAL)\]|##\[\w+\]|\(!\)\s"
    r"|\s*\^[-~^]*(?:\s|$)"  # the caret under the code a compiler or shellcheck points at: "  ^--^ SC2115: ..."
    r"|(?:warning|error|fatal|hint|help)(?:\[[\w-]+\])?:\s"  # compilers: "warning: unused ...", "error[E0308]:"
    r"|PHP\s+(?:Deprecated|Notice|Warning|Fatal\s+error|Parse\s+error|Stack\s+trace):"  # PHP's own log lines
    r"|\w[\w./\\-]*\.(?:py|pyi|js|jsx|ts|tsx|mjs|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|scala|sh|ya?ml"
    r"|toml|json|css|scss|sql|tf|md)(?::\d+){1,2}\b"  # "app/x.py:12:5: UP006 ..."
    r"|\d+:\d+\s+(?:error|warning|warn)\b"  # eslint's "12:3  warning  ..."
    r"|(?:FAILED|PASSED|ERROR|XFAIL|SKIPPED)\s|E\s{2,}|[│┃|]\s|(?:TASK|PLAY|RUNNING HANDLER) \["
    r"|(?:fatal|ok|changed|failed|skipping):\s*\[|\w+(?:Warning|Error|Exception):\s"
    r"|(?:npm|yarn|pnpm) (?:WARN|ERR)|Error: |warning\s+\S+:\s|[-=*#]{4,}\s*$)",
)
_LOG_ANYWHERE = lazyre.compile(r"Traceback \(most recent call last\)|\blevel=\w+|\bts=\d|^[\w.-]+@[\w.-]+:.*\$ ")
_LOG_CHARS = frozenset(":[(=$|│┃>#")
_LOG_WORD = lazyre.compile(
    r"WARN|ERROR|INFO|DEBUG|FATAL|CRITICAL|TRACE|NOTICE|FAILED|PASSED|XFAIL|SKIPPED|E  |npm |yarn |pnpm |[-*]{4}"
)
_TICKET_FIELD = lazyre.compile(
    r"^\s*(?:summary|description|priority|severity|status|assignee|reporter|labels?|components?|repro|"
    r"steps\s+to\s+reproduce|expected(?:\s+result)?|actual(?:\s+result)?|environment|resolution|fix\s+versions?)\s*:\s",
    re.IGNORECASE,
)
# A markdown heading ("## Follow-up") titles what follows; it says nothing for the board itself.
_HEADING = lazyre.compile(r"^#{1,6}\s+\S")
# A diff's or a source file's line: "- retries = 3  # always 3", "+ x = never_retry()  // ...".
_CODE_LINE = lazyre.compile(r"^\s*[+-]\s*[\w.\[\]]+\s*[+*/-]?=\s*\S.*\s(?:#|//)\s|^\s*(?:#|//)\s*(?:TODO|FIXME|XXX)\b")
_BULLET = lazyre.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
# A sentence ends at . ! ? (or …) followed by a space, whatever case comes next; not after a
# short abbreviation ("e.g.", "i.e.", "etc.", "vs.").
_SPLIT = lazyre.compile(r"(?<=[.!?…])\s+")
_ABBREVIATION = lazyre.compile(
    r"(?:\b(?:etc|e\.g|i\.e|vs|approx|incl|cf|ca|dr|mr|mrs|ms|prof)|\b[A-Za-z]\.[A-Za-z])\.$", re.IGNORECASE
)
_ONLY_THEN_NO = lazyre.compile(r"\bonly[.!]?$", re.IGNORECASE)
# Both end at the end ("$": or before a last newline) and match at most 8 characters ("approx.\n"),
# so a search from this far before the end finds what a search of the whole text finds (and is exact:
# a search from a position still sees the character before it for "\b"). Long lines: no scan of all.
_TAIL = 16
_NO_NEXT = lazyre.compile(r"^no\s+\w", re.IGNORECASE)


# A linter's code opens the line: "E501 line too long", "W0611: Unused import" ("E501 is off" is typed).
_LINT_CODE = lazyre.compile(r"[A-Z]{1,3}\d{3,4}:?\s+(?!(?:is|are|was|were|has|and|or|in|on|for)\b)[A-Za-z]")


def is_log_line(line: str) -> bool:
    """Whether ``line`` looks printed by a program (a log, a compiler, a linter, CI), not typed."""
    if line[:1].isupper() and line[1:2].isalnum() and _LINT_CODE.match(line):
        return True
    if not (_LOG_CHARS.intersection(line) or line[:1].isspace() or _LOG_WORD.match(line)):
        return False  # what every shape below needs (a cheap test first: it runs on every typed line)
    return _LOG_START.match(line) is not None or _LOG_ANYWHERE.search(line) is not None


_CONTEXT_HEAD = lazyre.compile(
    r"^(?:(?:some|quick|a\s+bit\s+of|more)\s+)?(?:ctx|context|background|setup|stack|the\s+stack|facts|"
    r"for\s+context|project\s+context)(?:\s+for\s+(?:you|today|this\s+session|the\s+\w+))?\s*:\s*$",
    re.IGNORECASE,
)


_SPEC_HEAD = lazyre.compile(
    r"^(?:the\s+)?(?:spec|specs|requirements?|acceptance\s+criteria|constraints|rules)(?:\s+for\s+[^:]{1,50})?\s*:\s*$",
    re.IGNORECASE,
)


def context_items(text: str) -> dict[str, str]:
    """The bulleted items of a context list ("ctx:" then "- crate is no_std", "- msrv 1.70"), as
    :func:`sentences` gives them, each with what its list holds: ``fact`` (statements about the
    project) or ``rule`` (under "Spec for X:", "Requirements:")."""
    items: dict[str, str] = {}
    listing: str | None = None
    for line in text.replace("\u2019", "'").splitlines():
        head = line.strip()
        if _CONTEXT_HEAD.match(head):
            listing = "fact"
        elif _SPEC_HEAD.match(head):
            listing = "rule"
        elif listing is not None and _BULLET.match(line):
            items[_BULLET.sub("", line).strip()] = listing
        elif head:
            listing = None
    return items


def typed_lines(text: str) -> list[str]:
    """The lines the person typed: fenced blocks, quoted lines, log lines and walls left out, and
    a line with pasted lines on both sides (a program's line no pattern knows, inside a paste)."""
    lines = [line for line in text.splitlines() if line.strip()]
    pasted = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            pasted.append(True)
            continue
        # a quoted reply, or a markdown code block (indented four spaces or a tab): not typed prose
        quoted = line.lstrip().startswith(">") or line.startswith(("    ", "\t")) or _HEADING.match(line) is not None
        pasted.append(fenced or quoted or is_log_line(line) or _CODE_LINE.match(line) is not None)
    # a run of indented lines that are not a list (a config, an output block) is pasted
    indented = [line[:1] == " " and not _BULLET.match(line) for line in lines]
    for index in range(len(lines)):
        beside = (index > 0 and indented[index - 1]) or (index + 1 < len(lines) and indented[index + 1])
        if indented[index] and beside:
            pasted[index] = True
    # a ticket pasted from a tracker ("Summary: ...", "Description: ...", "Priority: High")
    if sum(_TICKET_FIELD.match(line) is not None for line in lines) >= 2:
        pasted = [was or _TICKET_FIELD.match(line) is not None for was, line in zip(pasted, lines, strict=True)]
    kept = []
    for index, line in enumerate(lines):
        if pasted[index] or (0 < index < len(lines) - 1 and pasted[index - 1] and pasted[index + 1]):
            continue
        line = _BULLET.sub("", line).strip()
        if line and len(line) <= MAX_LINE:
            kept.append(line)
    return kept


def sentences(text: str) -> list[str]:
    """The sentences of a typed turn, in order (see the module docstring)."""
    return [sentence for _, sentence in lined_sentences(text)]


def lined_sentences(text: str) -> list[tuple[int, str]]:
    """The sentences of a typed turn, in order, each with the number of the typed line it opens on
    (sentences of one line are one stretch of prose; two lines may be two items of a list)."""
    text = text.replace("\u2019", "'")
    out: list[tuple[int, str]] = []
    for number, line in enumerate(typed_lines(text)):
        pieces: list[str] = []
        for piece in _SPLIT.split(line):
            if pieces and _ABBREVIATION.search(pieces[-1], max(0, len(pieces[-1]) - _TAIL)):
                pieces[-1] = f"{pieces[-1]} {piece}"  # "e.g. this" goes on
            else:
                pieces.append(piece)
        for sentence in pieces:
            sentence = sentence.strip()
            if not sentence:
                continue
            # "CSS modules only. No tailwind." (or "no malloc after boot. static buffers only") is one
            # rule said in two sentences
            if out and (
                (_ONLY_THEN_NO.search(out[-1][1], max(0, len(out[-1][1]) - _TAIL)) and _NO_NEXT.match(sentence))
                or (_NO_NEXT.match(out[-1][1]) and _ONLY_THEN_NO.search(sentence, max(0, len(sentence) - _TAIL)))
            ):
                out[-1] = (out[-1][0], f"{out[-1][1]} {sentence}")
                continue
            out.append((number, sentence))
    return out
