"""When a new board entry replaces an earlier one: later words about the same subject win.

A candidate supersedes a current entry of the same family (rules, preferences, corrections and
decisions are one family; facts another; to-dos a third) when

- it **rules out** what the entry asks for: "use yarn, not pnpm" rules out ``pnpm``, and an entry
  that recommends pnpm ("From now on, use pnpm instead of npm") is replaced (words after ``not``,
  ``instead of``, ``rather than``, ``no longer``, ``stop using``, ``over`` are ruled out);
- it **says the opposite**: "never run migrations on deploy" after "always run migrations on
  deploy" (the same words once the polarity words are set aside);
- it **gives the same subject a new value**: a fact "The nightly job runs on batch-02" after
  "The nightly job runs on the batch-01 host" (the same subject before the same verb);
- it **changes a value slot**: "we go to terraform 1.7.5 now" after "we are using terraform 1.6.6",
  "the state bucket moved to acme-tfstate-main" after "the state is in s3 bucket acme-tfstate-prod":
  a version, host, path or identifier that one has and the other lacks, of the same shape, named
  in both by a word they share just before it (in its clause), and with no word of its own on
  both sides before the shared name ("the staging cluster is eks-stg-2" and "the prod cluster is
  eks-prod-1" are two; "the raw layer" and "the raw bucket" are one); an amount keeps its unit and
  what it is of ("15 minutes", "30 days of logs"); a bare number is a count unless a name gives it
  ("React 18", "minSdk is 26"); a day of the week is a value ("deploy on thursdays" after "deploy
  on tuesdays"), unless its clause rules it out ("never on fridays"); two paths with a folder in
  common are of one kind; the old value may be named again as what was wrong ("5 MB, the 1 MB
  limit was too strict");
- it **rules out by change** what an older fact names: "we moved off vercel to fly.io", "the
  github actions workflows are deleted", "black is deprecated here", "1.28 gone", "no more expo",
  "X is superseded by Y", or retracts it: "(corrects what was said about cert-manager)", "forget the TaskFlow rule";
- it **moves** what a fact or decision places ("move the build cache to GCS", "the signing key moved
  to the mobile-signing entry"; a file of the same name in another folder is the same file), or
  **takes back** what one ruled out ("use GraphQL after all" after "GraphQL is off the table").

Nothing is replaced by a change planned for later ("move to Kotlin 2.0 next quarter": what holds
now holds until then), and a word ruled out only somewhere ("we don't use unsafe outside
src/ffi.rs", "not helm, for the internal apps") is not ruled out.

Words that could name anything never suffice alone: a topic is matched by a named object (the
ruled-out word, what moved, the retracted subject, a value's slot), never by a count of shared
words, because a wrong replacement removes a good entry from every later session.

A to-do is **closed** by a sentence that says it is done and names it (:func:`closed`): the one
to-do sharing the most words with it, if only one does; said with the to-do's own verb ("flaky specs
are quarantined now", "compared bpe vs unigram"), only a to-do that asks for that verb; said as what
is so now ("the login helper reuses the session cookie now"), only a to-do it says nearly all of.

Which entries may be replaced silently is the board's decision (a user's own or a pinned entry
never is: see :mod:`.store`). Pure: must not import the board or anything that does I/O.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Protocol

from kairosd.core import lazyre

FAMILY = {
    "rule": "rule",
    "preference": "rule",
    "correction": "rule",
    "decision": "rule",
    "fact": "fact",
    "todo": "todo",
}

_WORD = lazyre.compile(r"_*[a-z0-9][a-z0-9._/:@*+-]*[a-z0-9*]_*|[a-z0-9]")  # "__tests__", "checkout_v2" are one
_STOP_WORDS = """a an the this that these those it its is are be been was were to of in on at for from by with and
or but so we i you our my your us me please pls also just now here there then always never don't dont do not no use
using used make sure should must will would can let's lets go going with repo project codebase actually scratch
instead rather than over anymore longer stop drop ok okay yes only re ve ll s t m d"""
_STOP = frozenset(_STOP_WORDS.split())
_OUT = lazyre.compile(
    r"\b(?:not|instead\s+of|rather\s+than|no\s+longer(?:\s+use)?|stop\s+using|don'?t\s+use|never\s+use|"
    r"drop|dropping|dropped|ditching|ditched|killing|over|away\s+from|no\s+more|(?:moving|switching|migrating|moved|switched|migrated)\s+(?:(?:the\s+)?[\w#.-]+\s+){0,3}?"
    r"(?:from|off(?:\s+of)?)|replaces?|(?<!don't\s)(?<!dont\s)(?<!not\s)forget(?:\s+about)?(?:\s+what\s+i\s+said\s+about)?|"
    r"(?:scratch|ignore|disregard)\s+what\s+i\s+said\s+about)"
    r"\s+((?:the\s+)?[`'\"#_-]*[a-z0-9][a-z0-9._/:@*+-]*(?:\s+[`'\"_-]*[a-z0-9][a-z0-9._/:@*+-]*){0,3})",
    re.IGNORECASE,
)
# Words that make "not X" a change of what was so ("we went with postmark, not resend"), not a
# standing contrast ("use the staging db, not prod").
_CHANGE = lazyre.compile(
    r"\b(?:went\s+with|switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|replac(?:ed|ing)|instead|now|change\s+of\s+plans?|"
    r"no\s+more|no\s+longer|anymore|dropp(?:ed|ing)|ditch(?:ed|ing)|retir(?:ed|ing)|kill(?:ed|ing))\b",
    re.IGNORECASE,
)
# "the github actions workflows are deleted", "criterion is gone": what is gone is ruled out too.
# "the github workflows are deleted", "1.28 gone", "the 8081 was the old one": what is gone.
_GONE = lazyre.compile(
    r"\b((?:[\w.#/-]+\s+){1,3})(?:is|are|was|were|got|has\s+been|have\s+been)\s+(?:now\s+)?(?:deleted|removed|gone|"
    r"retired|decommissioned|dropped|deprecated|(?:the\s+)?(?:old|previous|former|wrong)(?:\s+(?:one|value|port|host|version|"
    r"address|url|path|name|endpoint))?(?=\s*(?:[,.;!]|$)))"
    r"\b|(?:^|[,;]\s+)([\w.#/-]*\d[\w.#/-]*\s+)(?:gone|removed|dropped|deleted)\b",
    re.IGNORECASE,
)
# "the Vault path secret/prod/ is superseded by kv/prod/": what is superseded is ruled out.
_SUPERSEDED = lazyre.compile(
    r"\b((?:[\w.#/-]+\s+){1,3})(?:is|are|was|were|got|has\s+been|have\s+been)\s+(?:now\s+)?(?:superseded|replaced)\s+by\b",
    re.IGNORECASE,
)
# "(corrects what was said about cert-manager)": an explicit retraction of what was said about X.
_RETRACTS = lazyre.compile(r"\(corrects what was said about ([^)]+)\)")
_POLARITY = lazyre.compile(r"\b(?:always|never|don'?t|do\s+not|must\s+not|must|no\s+longer|not)\b", re.IGNORECASE)
_FACT_SPLIT = lazyre.compile(
    r"\b(?:is|are)\s+(?:called|named)\b|\b(?:runs?|lives?|sits?|(?:is|are)\s+(?:hosted|deployed|stored|kept|"
    r"managed|built|published|configured|defined))\s+(?:on|in|at|under|with|by)\b|\bgo(?:es)?\s+(?:out\s+)?(?:to|from)\b"
    r"|\b(?:is|are)\s+(?:owned|maintained)\s+by\b|\b(?:owns?|maintains?|uses)\b"
    r"|\b(?:is|are)\s+(?:read-only|frozen|locked)\b|\bpinned\s+(?:to|at)\b|\blistens?\s+on\b|\bbehind\b"
    r"|\b(?:was|were|has\s+been|is|are|got)\s+renamed\s+to\b|\b(?:is|are)\s+(?:at|on)\b|\bmoved\s+to\b"
    r"|\b(?:binds?|listens?)\s+(?:to|on)\b|\bon\s+port\b|\bchanged\s+to\b",
    re.IGNORECASE,
)
_IS = lazyre.compile(r"\b(?:is|are)\b", re.IGNORECASE)
_DISTINCT = lazyre.compile(r"[0-9_./:@-]")  # a version, a host, a flag, a path: one thing, whatever its kind
# Words that name no subject: what a value slot's name must not be (verbs of place and change,
# and names every value has).
_SLOT_GENERIC_TEXT = """version release port number id value new old default latest current runs run lives live sits
    listens listen binds bind moved move moving migrated migrate switched switch hosted deployed stored kept pinned
    pin uses build builds built go goes went set located points pointing upgraded upgrade bumped bump targets target
    written called named renamed changed change is are was were now today agreed plan under into onto via has have
    had behind inside after before within per than keep keeps take takes need needs retain retains wait waits"""
_SLOT_GENERIC = frozenset(_SLOT_GENERIC_TEXT.split())
_CLAUSE = lazyre.compile(r"[,;:()]\s|\s[-\u2013\u2014]\s|\.\s")
# A name right before a bare number makes it a version or setting: capitalised ("React 18", "Postgres
# 15"), camelCase or snake_case ("minSdk is 26", "max_conns = 50"), or an acronym ("SLA of 24").
_PROPER_BEFORE = lazyre.compile(
    r"(?:\b[A-Z][a-z][\w.+-]*|\b[a-z]+[A-Z]\w*|\b[a-z]+_\w+|\b[A-Z]{2,}[a-z]?)"
    r"(?:\s+(?:is|are|goes\s+to|go\s+to|to|at|now|=|->|of|v))*\s*$"
)
_SHAPE_RUN = lazyre.compile(r"[a-z0-9]+")
_UNIT = lazyre.compile(
    r"\s*(ms|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|[kmgt]b|[kmgt]ib|%|percent|rps|qps|"
    r"req/s|req/min|req/h|requests?/(?:s|sec|min|minute|h|hour)|connections?|workers?|replicas?|threads?)(?![\w/])"
)


class Item(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...


def words(text: str) -> set[str]:
    """The words that carry meaning (lower case; stop words and polarity words left out)."""
    return {w for w in _WORD.findall(text.lower().replace("\u2019", "'")) if w not in _STOP}


def ruled_out(text: str) -> set[str]:
    """What ``text`` says not to use or do any more ("use yarn, not pnpm" -> {"pnpm"})."""
    found = set()
    text = text.replace("\u2019", "'")
    for match in _GONE.finditer(text):
        named = [w.strip("`'\"#").rstrip(".:/-,") for w in (match[1] or match[2]).lower().split()]
        content = [w for w in named if w and w not in _STOP]
        if content and content[0] not in ("old", "previous", "former"):
            found.add(content[0])
            found.update(w for w in content[1:] if _DISTINCT.search(w))
    for match in _SUPERSEDED.finditer(text):
        # its name: a path, version or identifier if it has one, else the last word ("the old linter")
        named = [w.strip("`'\"#").rstrip(".:/-,") for w in match[1].lower().split()]
        content = [w for w in named if w and w not in _STOP]
        distinct = {w for w in content if _DISTINCT.search(w)}
        found.update(distinct or set(content[-1:]))
    for match in _OUT.finditer(text):
        # the thing ruled out: the first word that carries meaning ("not make test" -> "test"),
        # and any version, flag or name right after it ("not draining with --delete-emptydir-data")
        if _SCOPED.match(text, match.start(1) + len(match[1].split()[0])) or _SCOPED.match(text, match.end(1)):
            continue  # "we don't use unsafe outside src/ffi.rs": ruled out only somewhere, not in general
        named = [w.strip("`'\"#").lstrip("-").rstrip(".:/-,") for w in match[1].lower().split()]
        content = [w for w in named if w and w not in _STOP]
        if content:
            found.add(content[0])
            found.update(w for w in content[1:] if _DISTINCT.search(w))
    return found


_SCOPED = lazyre.compile(
    r"[`'\"]*\s*,?\s*(?:outside|except|besides|unless|apart\s+from|other\s+than|for\s+the|in\s+the|inside|within)\b",
    re.IGNORECASE,
)


_PART = lazyre.compile(r"[:/@]")


def _named(out: set[str], asked: set[str]) -> set[str]:
    """What of ``out`` ``asked`` names: the same word, a path by its last part ("raw.rs" is
    "src/raw.rs"), or a port or host by its part of an address ("5432" in "pg.internal:5432")."""
    return {
        o
        for o in out
        if o in asked
        or any(
            a.endswith("/" + o) or o.endswith("/" + a) or ((_DISTINCT.search(o) or o.isdigit()) and o in _PART.split(a))
            for a in asked
        )
    }


def _first_words(text: str) -> set[str]:
    """What a fact is about: the meaningful words before its first "is"/"are"."""
    head = re.split(r"\b(?:is|are|was|were)\b", text.lower(), maxsplit=1)[0]
    return words(head) if len(head.split()) <= 4 else set()


def _same_subject_said_otherwise(new_text: str, old_text: str) -> bool:
    """ "Social login is now IN scope for v1" after "Social login is out of scope for v1": the same
    subject (the words before its verb), said of the same thing (a word in common after it)."""
    new_head, old_head = _first_words(_POLARITY.sub(" ", new_text)), _first_words(_POLARITY.sub(" ", old_text))
    if not new_head or new_head != old_head:
        return False
    rest = words(_POLARITY.sub(" ", new_text)) & words(_POLARITY.sub(" ", old_text))
    return bool(rest - new_head - {"scope", "now"}) or "scope" in rest


def _asks_for(text: str) -> set[str]:
    return words(text) - ruled_out(text)


def _polarity(text: str) -> int:
    negative = re.search(
        r"\b(?:never|don'?t|do\s+not|must\s+not|no\s+longer|not|out\s+of\s+scope|off\s+the\s+table)\b",
        text,
        re.IGNORECASE,
    )
    return -1 if negative else 1


def _subject(text: str) -> tuple[str, str] | None:
    """A fact's (subject, verb): the words before its verb, and the verb."""
    match = _FACT_SPLIT.search(text) or _IS.search(text)  # "the package is acme-client": a plain "is" last
    if match is None or match.start() == 0:
        return None
    subject = " ".join(sorted(words(text[: match.start()])))
    verb = " ".join(match[0].lower().split())
    return (subject, verb) if subject else None


def _next_version(new_text: str, old_text: str) -> bool:
    """ "the dag is called forecast_weekly_v2 now" after "dag name is forecast_weekly": a name that
    grew a version suffix, about the same thing (another meaningful word in common)."""
    new_words, old_words = words(new_text), words(old_text)
    for old_name in old_words - new_words:
        if len(old_name) < 5 or not _DISTINCT.search(old_name):
            continue
        for new_name in new_words - old_words:
            if re.fullmatch(re.escape(old_name) + r"[-_.]v?\d+(?:\.\d+)*", new_name):
                shared = (new_words & old_words) - {old_name}
                return bool(shared)
    return False


def _shape(value: str) -> str:
    """A value's shape: digit runs as 9, other letter-and-digit runs as a, separators kept
    ("1.6.6" and "1.7.5" are 9.9.9; "acme-tfstate-prod" and "acme-tfstate-main" are a-a-a); an
    amount keeps its unit ("15 minutes" and "10 minutes" are 9 minutes)."""
    if _WEEKDAY.fullmatch(value):
        return "weekday"
    _, _, unit = value.partition(" ")
    if unit:
        return f"9 {_stem(unit)}"  # with what it is of: "30 days of logs" and "7 days of backups" differ
    return _SHAPE_RUN.sub(lambda m: "9" if m[0].isdigit() else "a", value)


def _stem(word: str) -> str:
    """A word without its plural ("tokens" and "token" name one thing)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


_OF_WHAT = lazyre.compile(r"\s+(?:of|for)\s+(?:the\s+)?([a-z][\w-]*)")


_WEEKDAY = lazyre.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?")
_NEGATED = lazyre.compile(r"\b(?:not|never|no|don'?t|do\s+not|no\s+longer)\b")


def _values(text: str) -> list[tuple[str, list[str]]]:
    """The values of ``text`` (versions, hosts, paths, identifiers, an amount with its unit), each
    with the words that name it: the meaningful words before it in its clause (at most four, in
    order, without their plural)."""
    lower = text.lower().replace("\u2019", "'")
    out = []
    for match in _WORD.finditer(lower):
        value = match[0]
        clause = _CLAUSE.split(lower[: match.start()])[-1]
        if _WEEKDAY.fullmatch(value):
            # "we deploy on thursdays now" after "deploy on tuesdays": a day is a value; one ruled out
            # ("never on fridays") is not what the slot holds
            if _NEGATED.search(clause):
                continue
        elif value in _STOP or not _DISTINCT.search(value):
            continue
        if value.isdigit():
            unit = _UNIT.match(lower, match.end())
            if unit is not None:
                value = f"{value} {unit[1]}"
                what = _OF_WHAT.match(lower, unit.end())
                if what is not None:  # "30 days of logs": what the amount is of names it too
                    value = f"{value} of {_stem(what[1])}"
            elif not _PROPER_BEFORE.search(text[: match.start()]):
                continue  # a bare number is a count, unless a name gives it ("React 18", "minSdk is 26")
        before = [w for w in _WORD.findall(clause) if w not in _STOP and w not in _SLOT_GENERIC]
        out.append((value, [_stem(w) for w in before[-4:] if not _DISTINCT.search(w)]))
    return out


def _own_before(names: list[str], shared: set[str], other: str) -> bool:
    """A word of its own (not in ``other``) before the last shared name: a qualifier that makes it
    another thing ("staging cluster" and "prod cluster"); one after it only says more ("the raw
    layer" and "the raw bucket")."""
    last = max(i for i, w in enumerate(names) if w in shared)
    return any(w not in other for w in names[:last])


def _same_shape(new_value: str, old_value: str) -> bool:
    """Values of one kind: the same :func:`_shape`, or two paths or addresses under a common folder
    ("s3://ml/forecast/raw" and "s3://ml/forecast/v2/raw"; not "s3://a" and "s3://b")."""
    new_shape, old_shape = _shape(new_value), _shape(old_value)
    if new_shape == old_shape:
        return True
    if new_shape.startswith("9 ") and old_shape.startswith("9 "):
        # an amount of the same unit, one saying what it is of: "24 hours", "48 hours for non-urgent PRs"
        new_unit, _, new_of = new_shape.partition(" of ")
        old_unit, _, old_of = old_shape.partition(" of ")
        return _stem(new_unit) == _stem(old_unit) and not (new_of and old_of)
    common = os.path.commonprefix([new_value, old_value])  # noqa: RUF071 (by characters: "s3://" is no path)
    return "/" in common.replace("://", "")  # a folder in common ("runs/2026/" and "runs/v2/")


_WAS = lazyre.compile(
    r"\b(?:was|were|used\s+to|not|instead\s+of|rather\s+than|no\s+longer|too|deprecated|eol|end[\s-]of[\s-]life|"
    r"unsupported|out\s+of\s+(?:maintenance|support))\b"
)


def _said_to_be_old(value: str, text: str) -> bool:
    """ "payloads must be under 5 MB, the 1 MB limit was too strict": the old value named again,
    in a clause that says it was (or is not) so."""
    return all(_WAS.search(c) for c in _clauses(text) if value in c)


def _slot_changed(new_text: str, old_text: str) -> bool:
    """ "we go to terraform 1.7.5 now" after "we are using terraform 1.6.6": one value slot, a new
    value (see the module docstring)."""
    new_lower, old_lower = new_text.lower(), old_text.lower()
    new_values = [(v, n) for v, n in _values(new_text) if v not in old_lower]
    if not new_values:
        return False
    for old_value, old_names in _values(old_text):
        if old_value in new_lower and not _said_to_be_old(old_value, new_lower):
            continue
        for new_value, new_names in new_values:
            if not _same_shape(new_value, old_value):
                continue
            shared = set(old_names) & set(new_names)
            if not shared:
                continue
            if not (_own_before(old_names, shared, new_lower) and _own_before(new_names, shared, old_lower)):
                return True
    return False


def _verb_class(verb: str) -> str:
    """Verbs that say the same of a subject: its name, its place, its version."""
    if re.search(r"called|named|renamed", verb):
        return "name"
    if re.search(r"^(?:runs?|lives?|sits?|binds?|listens?|moved)\b|hosted|deployed|\b(?:at|on)$|port", verb):
        return "place"
    if verb in ("is", "are") or verb.startswith("changed"):
        return "value"  # "the sender address is X", "sender address changed to Y"
    return verb


# "we moved the build cache to GCS": what moved (at most three words) and where to.
_MOVED = lazyre.compile(
    r"\b(?:mov(?:e|ed|ing)|migrat(?:e|ed|ing)|switch(?:ed|ing)?|shift(?:ed|ing)?|port(?:ed|ing)?)\s+"
    r"(?:the\s+|our\s+|all\s+)?((?:[\w.#/-]+\s+){0,2}?[\w.#/-]+)\s+(?:from\s+\S+\s+)?(?:to|onto|over\s+to|into|->|\u2192)\s+"
    r"([\w.#/:@-]+)",
    re.IGNORECASE,
)
# "the signing key moved to the mobile-signing vault entry": the same, said of the subject.
_WAS_MOVED = lazyre.compile(
    r"^(?:the\s+|our\s+)?((?:[\w.#/-]+\s+){0,2}?[\w.#/-]+)\s+(?:(?:was|were|has\s+been|have\s+been|got|is|are)\s+)?"
    r"(?:moved|migrated|switched)\s+(?:over\s+)?(?:to|onto|into)\s+(?:the\s+)?([\w.#/:@-]+)",
    re.IGNORECASE,
)
# Where an old entry says the thing is or what it is: a place, a value.
_PLACED = lazyre.compile(
    r"\b(?:is|are|lives?|sits?|runs?|goes|go)\s+(?:in|on|at|under|to)\b|[\d/:@]|\b[a-z0-9]+[-_.][a-z0-9]", re.IGNORECASE
)
_AGAIN = lazyre.compile(r"\bafter\s+all\b|\bback\s+(?:to|on)\b|\b(?:is|are)\s+back\b", re.IGNORECASE)
_RULED_OUT_HERE = lazyre.compile(
    r"\b(?:not|no|never|don'?t|no\s+longer|off\s+the\s+table|out\s+of\s+scope|dropped|rejected|ruled\s+out)\b",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[,;:()]\s|\s[-\u2013\u2014]\s|\.\s|\s+and\s+", text.lower()) if c.strip()]


def _moved(new_text: str, old: Item) -> bool:
    """ "We decided to move the build cache to GCS" after "the build cache is in S3 under
    nx-cache-prod": what moved is named, in one clause, by a fact or decision that says where it is
    (a place or a value), and where it went is new to it."""
    if old.kind not in ("fact", "decision"):
        return False
    said = [*_MOVED.finditer(new_text), *filter(None, [_WAS_MOVED.match(new_text.strip())])]
    for match in said:
        what = _roots(" ".join(words(match[1]) - _SLOT_GENERIC))  # by their roots: "signing" is "signed"
        where = words(match[2]) - _SLOT_GENERIC  # "to the new cluster" names no place
        if not what or not where or where <= words(old.text):
            continue
        if any(what <= _roots(c) and _PLACED.search(c) for c in _clauses(old.text)):
            return True
    return False


_FILE = lazyre.compile(r"(?:[\w.~-]+/)+([\w-]+\.[a-z0-9]{1,5})\b")


def _file_moved(new_text: str, old: Item) -> bool:
    """ "the output is dist/css/tokens.css" after "... into dist/tokens.css": a file of the same name
    in another folder, each text naming only its own path, is the same file moved."""
    new_lower, old_lower = new_text.lower(), old.text.lower()
    new_files = {m[0]: m[1] for m in _FILE.finditer(new_lower)}
    for match in _FILE.finditer(old_lower):
        for path, name in new_files.items():
            if name == match[1] and path != match[0] and match[0] not in new_lower and path not in old_lower:
                return True
    return False


def _taken_back(new_text: str, old: Item) -> bool:
    """ "Let's use GraphQL after all" after "GraphQL is off the table": what the old entry ruled out,
    in the clause that names it, the new one takes back ("after all", "back to")."""
    if not _AGAIN.search(new_text) or _polarity(new_text) < 0:
        return False
    named = words(_AGAIN.sub(" ", new_text)) - _SLOT_GENERIC
    return any(
        _RULED_OUT_HERE.search(c) and named & words(_RULED_OUT_HERE.sub(" ", c)) - _SLOT_GENERIC
        for c in _clauses(old.text)
    )


# A change planned for later ("move to Kotlin 2.0 next quarter", "moving deploys to runners in
# November 2026"): what holds now still holds until then ("we moved to ASGI in September" is done).
_PLANNED = lazyre.compile(
    r"\b(?:next|coming)\s+(?:week|month|quarter|sprint|year|release|cycle)\b|\b(?:moving|migrating|switching)\b.*\bin\s+"
    r"(?:q[1-4]|(?:january|february|march|april|may|june|july|august|september|october|november|december)"
    r"(?:\s+\d{4})?)\b|\bover\s+(?:christmas|the\s+holidays|"
    r"the\s+summer)\b|\b(?:will|plan(?:ning)?\s+to|going\s+to)\s+(?:move|migrate|switch|drop|replace)\b",
    re.IGNORECASE,
)


def supersedes(new_kind: str, new_text: str, old: Item) -> bool:
    """Whether a new entry (``new_kind``, ``new_text``) replaces ``old`` (see the module docstring)."""
    if _PLANNED.search(new_text):
        return False
    out = ruled_out(new_text)
    compatible = FAMILY.get(new_kind) in ("rule", "fact") and FAMILY.get(old.kind) in ("rule", "fact")
    if compatible and (_moved(new_text, old) or _taken_back(new_text, old) or _file_moved(new_text, old)):
        return True
    retracted = _RETRACTS.search(new_text)
    if retracted and FAMILY.get(old.kind) in ("rule", "fact") and FAMILY.get(new_kind) != "todo":
        about = words(retracted[1])
        if about and about <= words(old.text):
            return True
    if FAMILY.get(new_kind) != FAMILY.get(old.kind):
        # "not 5.4.0, pin it to 5.6.1" (a correction) replaces "the client is pinned to 5.4.0" (a fact):
        # a version, host or flag ruled out by name is the same thing whatever the entry's kind
        families = {FAMILY.get(new_kind), FAMILY.get(old.kind)}
        distinct = {w for w in out if _DISTINCT.search(w)}
        if families != {"rule", "fact"}:
            return False
        if distinct & _asks_for(old.text) and not distinct & _asks_for(new_text):
            return True
        if _slot_changed(new_text, old.text):
            return True
        said = _subject(new_text) if FAMILY.get(new_kind) == "fact" else None
        if (
            said is not None
            and said[1].startswith(("changed", "moved"))
            and set(said[0].split()) == _first_words(old.text)
        ):
            return True  # "brand font changed to Geist" after the rule "our brand font is Inter, always ..."
        if old.kind != "fact" or out & _asks_for(new_text):
            return False
        # "we're moving from Hilt to Koin" replaces the fact "Hilt is our DI framework": its subject;
        # and what a change of plan rules out ("we moved off vercel to fly.io") any fact that names it
        return bool(out & _first_words(old.text)) or bool(_CHANGE.search(new_text) and out & words(old.text))
    if out and _named(out, _asks_for(old.text)) and not out & _asks_for(new_text):
        return True
    new_words, old_words = words(_POLARITY.sub(" ", new_text)), words(_POLARITY.sub(" ", old.text))
    if new_words and new_words == old_words and _polarity(new_text) != _polarity(old.text):
        return True
    if _polarity(new_text) != _polarity(old.text) and _same_subject_said_otherwise(new_text, old.text):
        return True
    if FAMILY[new_kind] != "todo" and _slot_changed(new_text, old.text):
        return True
    if FAMILY[new_kind] == "fact":
        if _next_version(new_text, old.text):
            return True
        new_subject, old_subject = _subject(new_text), _subject(old.text)
        if new_subject is None or old_subject is None or _verb_class(new_subject[1]) != _verb_class(old_subject[1]):
            return False
        # the same subject, or one named more briefly ("the worker" after "the sync worker")
        new_words, old_words = set(new_subject[0].split()), set(old_subject[0].split())
        return new_words <= old_words or old_words <= new_words
    return False


def superseded(new_kind: str, new_text: str, current: Iterable[Item]) -> list[Item]:
    """The current entries a new entry replaces, in board order."""
    return [old for old in current if supersedes(new_kind, new_text, old)]


# What a person says of a to-do that is done: not the words that name the to-do.
_DONE_WORDS_TEXT = """done fixed finished sorted closed closing close resolved merged written documented migrated
    complete completed cross crossed off out now thing stuff btw that's thats all there ready shipped landed answer got
    list"""
_DONE_WORDS = frozenset(_DONE_WORDS_TEXT.split())


_SUFFIX = lazyre.compile(r"(?:ing|ed|es|e|s)$")
_PARTS = lazyre.compile(r"[-/_.]")


def _roots(text: str) -> set[str]:
    """The words of ``text`` by their root, and the parts of a joined name ("fuzzing" and "cargo-fuzz"
    share "fuzz")."""
    out = set()
    for word in words(text) - _DONE_WORDS:
        for part in {word, *(p for p in _PARTS.split(word) if len(p) >= 3 and p not in _STOP)}:
            out.add(_SUFFIX.sub("", part) if len(part) > 4 else part)
    return out


# The word that says a thing was done, when it is an "-ed" word: after "is/are" ("flaky specs are
# quarantined now"), opening the sentence ("compared bpe vs unigram"), or after what it names
# ("SFTP credentials rotated this morning").
_DONE_BY = (
    lazyre.compile(
        r"\b(?:is|are|got|has\s+been|have\s+been)\s+(?:now\s+|all\s+|finally\s+)?([a-z]{3,}ed|split|built|rebuilt|rewritten)\b"
    ),
    lazyre.compile(
        r"^(?:(?:i|we)\s+(?:just\s+|finally\s+|already\s+)?)?([a-z]{3,}ed|wrote|rewrote|built|rebuilt|made|sent|ran|did)\b"
    ),
    lazyre.compile(
        r"^(?:the\s+)?(?:[\w'-]+\s+){1,4}([a-z]{3,}ed)\b(?:\s+(?:up|out|off|away))?"
        r"(?:\s+(?:now|today|yesterday|this\s+morning|last\s+night|last\s+week|finally|at\s+last))?\s*(?:[,.!;]|$)"
    ),
)
_IRREGULAR = {"wrote": "write", "rewrote": "rewrite", "rewritten": "rewrite", "built": "build", "rebuilt": "rebuild",
              "made": "make", "sent": "send", "ran": "run", "did": "do", "split": "split"}  # fmt: skip
_KNOWN_DONE_TEXT = """done fixed finished sorted closed resolved merged written documented migrated complete completed
    shipped landed crossed deployed created implemented added clarified checked handled approved gone live released
    configured enabled published"""
_KNOWN_DONE = frozenset(_KNOWN_DONE_TEXT.split())
_SAID_DONE = lazyre.compile(
    r"\boff\s+(?:my|the|our)\s+(?:plate|list)\b|\bcross(?:ed)?\s+(?:that|it|this)\s+off\b|\bin\s+place\b|\b(?:is|are)\s+in\b"
)  # the words for "done" (what the cues read as such)


def _own_verb(text: str) -> str | None:
    """The root of the word that says a thing is done, when it is no word for "done" but the thing's
    own verb ("flaky specs are quarantined" -> "quarantin"); None otherwise."""
    lower = text.lower().strip()
    if words(lower) & _KNOWN_DONE or _SAID_DONE.search(lower):
        return None  # "we tried the hierarchical thing, it's done": a word for done says it
    for pattern in _DONE_BY:
        match = pattern.search(lower)
        if match is not None:
            verb = _IRREGULAR.get(match[1], match[1])
            return None if verb in _KNOWN_DONE else _SUFFIX.sub("", verb)
    return None


def _asks_to(verb: str, todo: str) -> bool:
    """Whether ``todo`` asks to do ``verb`` (its root): the word as a verb ("rotate", "clean up"), not
    as a participle that names what to work on ("fix the skipped tests")."""
    return any(w in (verb, verb + "e") for w in words(todo))


_TODO_HEAD_TEXT = """todo fixme remind me put add list backlog note self need needs remember forget don't make sure
    later someday park reminder please pls should must have to"""
_TODO_HEAD = frozenset(_TODO_HEAD_TEXT.split())  # the words that only make a sentence a to-do
_NOW_AT_END = lazyre.compile(r"\bnow[.!]*$")


def _restated(text: str) -> bool:
    """ "login helper reuses the session cookie now": a to-do said as what is so now, with no word
    for done and no verb of its own."""
    lower = text.lower().strip()
    return bool(_NOW_AT_END.search(lower)) and not words(lower) & _KNOWN_DONE and _own_verb(lower) is None


def _says_nearly_all(said: set[str], todo: str) -> bool:
    """Whether ``said`` holds nearly every word the to-do names (its roots, the words that only
    make it a to-do left out): three in four, and at least two."""
    named = _roots(todo) - _roots(" ".join(_TODO_HEAD))
    common = said & named
    return len(common) >= 2 and 4 * len(common) >= 3 * len(named)


def closed(text: str, current: Iterable[Item]) -> list[Item]:
    """The open to-do ``text`` says is done: the one sharing the most words with it (by their
    roots), if only one does. Said with the to-do's own verb ("flaky specs are quarantined now"),
    only a to-do that asks for that verb ("quarantine flaky specs", not "fix the quarantined specs")."""
    said = _roots(text)
    verb = _own_verb(text)
    restated = _restated(text)
    best: list[Item] = []
    most = 0
    for old in current:
        if old.kind != "todo":
            continue
        common = said & _roots(old.text)
        if restated and not _says_nearly_all(said, old.text):
            continue
        if verb is not None:
            if not _asks_to(verb, old.text):
                continue
            if not common - {verb}:
                continue  # the verb alone: another thing done the same way
        shared = len(common)
        if shared > most:
            best, most = [old], shared
        elif shared == most and shared:
            best.append(old)
    return best if len(best) == 1 else []  # two equally likely: closing either could be wrong
