"""Printing for the CLI: JSON documents, tables, label/value fields, times, and the one-line error.

Every verb formats through here, so there is one place that decides how a time,
a duration or a row looks. Errors go to stderr as ``kairos: <message>``;

**Untrusted text is shown safely, and nothing in it is hidden.** Prompts, names,
reasons, board entries and the daemon's messages may come from an agent or
another project; printed raw, an ESC sequence could rewrite the terminal, a
bidi override could reorder a line, and invisible characters (Unicode tags,
zero-width, BOM, other format characters) could carry text the reader never
sees but an agent acts on. :func:`clean` shows every such character as an
escape (``\\x1b``, ``\\u202e``, ``\\u200b``, ``\\U000e0063``): the set is
:mod:`kairosd.core.invisible` (C0 and C1 controls and DEL, bidi
controls, every Unicode format character, tags, variation selectors past an
emoji's one, Hangul fillers, the line and paragraph separators, and lone
surrogates: text that was not UTF-8). Newline and tab stay: a prompt is
printed as a block.
:func:`one_line` (table cells, field values, the error line) also folds
newlines into spaces. :func:`guard_stream` wraps stdout and stderr of every
human-readable verb in :func:`clean`, so no print can bypass it; ``--json``
output and ``mcp`` are left exact; ``watch`` prints JSON lines, with those
characters written as JSON escapes (:func:`json_line`), which decode to the
exact text.
``NO_COLOR`` is honoured by never adding colour when it is set (and when stdout
is not a terminal).

Imported by every CLI call (``kairos.app`` needs :func:`error`), so it imports
only os and sys at the top: json, datetime and zoneinfo load when first used,
and typing not at all (docs/performance.md; mypy still sees it).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

MIN_LAST_COLUMN = 20
DEFAULT_COLUMNS = 100

# Set from a verb's --wide (kairos.app.run): no cell is cut, even at a terminal.
WIDE = False


def print_json(document: Any) -> None:
    """One JSON document: indented for a person at a terminal, compact for a pipe
    (a script reading 10,000 tasks should not pay for indentation)."""
    import json

    # dumps, not dump: dump runs the pure-Python encoder and writes each of its pieces
    # (120,000 writes for 1,000 tasks); dumps uses the C encoder when not indenting.
    if sys.stdout.isatty():
        text = json.dumps(document, indent=2, default=str)
    else:
        text = json.dumps(document, separators=(",", ":"), default=str)
    sys.stdout.write(text + "\n")


def error(message: str) -> None:
    sys.stderr.write(f"kairos: {clean(' '.join(str(message).split()))}\n")


_replace: Any = None  # kairosd.core.invisible.replace, imported on first use (a cell may call clean 1,000 times)


def clean(text: Any) -> str:
    """``text`` with every unsafe character (see the module docstring) shown as an escape; keeps \\n and \\t."""
    shown = str(text)
    if shown.isascii() and (shown.isprintable() or shown.replace("\n", "").replace("\t", "").isprintable()):
        # The common case, checked in C: an ASCII character is unsafe only if isprintable() refuses it. The
        # second check is for whole tables: compiling and running the pattern over 1,000 rows took ~0.6 ms
        # of a `kairos list` (bench/bench_cli.py). Other text may hold characters isprintable() accepts
        # (variation selectors, Hangul fillers), so it always goes through the pattern.
        return shown
    global _replace
    if _replace is None:
        from kairosd.core.invisible import replace

        _replace = replace
    return str(_replace(shown, _escape))


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_line(document: Any) -> str:
    """``document`` as one line of JSON, non-ASCII text kept, every unsafe character written as a JSON escape.

    What ``watch`` prints: the line decodes to exactly the same document, yet no control, bidi or
    invisible character reaches the terminal raw (and a lone surrogate cannot fail the write).
    """
    import json

    line = json.dumps(document, ensure_ascii=False, default=str)
    if line.isascii():
        return line  # json.dumps escapes every ASCII control itself
    from kairosd.core.invisible import replace

    # Outside strings JSON has only ASCII, so every match is inside a string, where an escape means the same.
    return replace(line, lambda ch: json.dumps(ch)[1:-1])


class _SafeStream:
    """A text stream that passes everything written through :func:`clean`; the rest is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(clean(text)))

    @property
    def unguarded(self) -> Any:
        """The wrapped stream, for a writer that cleans its own text and must send ``\\r`` (kairos.progress)."""
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stream(stream: Any) -> Any:
    """``stream`` wrapped so that nothing written to it can carry control or bidi characters (idempotent)."""
    return stream if isinstance(stream, _SafeStream) else _SafeStream(stream)


def write_lines(lines: Iterable[str]) -> None:
    """Print ``lines`` with one write: with PYTHONUNBUFFERED, print() per row is a system call per row."""
    sys.stdout.write("".join(line + "\n" for line in lines))


def terminal_columns(fallback: int = DEFAULT_COLUMNS) -> int:
    """The width to fit: ``COLUMNS``, else the terminal's, else ``fallback``.

    What ``shutil.get_terminal_size((fallback, 24)).columns`` answers, without
    importing shutil (it pulls in the compression modules; docs/performance.md).
    """
    try:
        raw = os.environ["COLUMNS"].strip()
        columns = int(raw) if raw.isascii() else 0  # int() alone reads "٨٠" as 80
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or fallback


def fits_terminal() -> bool:
    """Whether tables are cut to the terminal's width: only when stdout is one and --wide was not given.
    A pipe or a file gets every cell whole (``kairos history | grep`` must see what it searches)."""
    return not WIDE and sys.stdout.isatty()


def cut_width(width: int) -> int:
    """``width`` when cells are cut to fit the terminal (:func:`fits_terminal`), else no limit."""
    return width if fits_terminal() else sys.maxsize


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Left-aligned columns, no colour; at a terminal the last column is cut to fit it (:func:`fits_terminal`).

    Every cell but the last of a row is shown as :func:`cell` shows it, the last as :func:`one_line`.
    Made column by column: a whole column of plain ASCII (most are) is checked at once, not cell by
    cell, which was a third of printing ``kairos list``'s 1,000 rows (docs/performance.md)."""
    *columns, last = zip(headers, *rows, strict=True)
    shown = [[column[0], *_cells(column[1:])] for column in columns]
    widths = [max(map(len, column)) for column in shown]
    room = cut_width(max(terminal_columns() - sum(widths) - 2 * (len(headers) - 1), MIN_LAST_COLUMN))
    padded = [[text.ljust(width) for text in column] for column, width in zip(shown, widths, strict=True)]
    ends = [one_line(text, room) for text in last]
    sys.stdout.write("".join(["  ".join(parts).rstrip() + "\n" for parts in zip(*padded, ends, strict=True)]))


def _cells(column: Sequence[Any]) -> list[str]:
    """A column's values as :func:`cell` shows each: as they are when the whole column is printable ASCII."""
    texts = list(map(str, column))
    joined = "".join(texts)
    return texts if joined.isascii() and joined.isprintable() else list(map(cell, texts))


def print_fields(fields: Iterable[tuple[str, Any]], width: int) -> None:
    """``label:`` padded to ``width`` characters, then the value: the body of every ``show``."""
    write_lines(f"{label + ':':<{width}}{cell(value)}" for label, value in fields)


def cell(text: Any) -> str:
    """``text`` for a table cell or a field: on one line, unsafe characters escaped, never cut."""
    shown = str(text)
    return shown if shown.isascii() and shown.isprintable() else clean(" ".join(shown.split()))


def one_line(text: Any, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis; unsafe characters escaped."""
    flat = clean(" ".join(str(text or "").split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


# (text, zone) -> what fmt_time printed: a table repeats a few fire times over many rows.
_times: dict[tuple[str, str | None], str] = {}


def fmt_time(text: Any, zone: str | None = None) -> str:
    """An ISO time as ``2026-11-23 09:00:00+01:00``, converted to ``zone`` if given."""
    if not text:
        return "-"
    key = (str(text), zone)
    shown = _times.get(key)
    if shown is None:
        shown = _times[key] = _fmt_time(key[0], zone)
    return shown


def _fmt_time(text: str, zone: str | None) -> str:
    if zone in (None, "UTC"):
        shown = _utc_text(text)
        if shown is not None:
            return shown
    from datetime import datetime

    try:
        when = datetime.fromisoformat(text)
        if zone is not None and when.tzinfo is not None:
            when = when.astimezone(_tzinfo(zone))
    except (ValueError, KeyError):
        return text  # show what the daemon sent rather than fail on display
    return when.isoformat(sep=" ", timespec="seconds")


_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _utc_text(text: str) -> str | None:
    """What :func:`_fmt_time` shows in UTC for ``text`` of exactly the form ``2026-11-23T09:00:00+00:00``
    (kairosd's for a UTC task's fire), without importing datetime; None for any other text.

    ``kairos list`` in a UTC shell would otherwise import datetime for this alone (docs/performance.md).
    The checks are those of ``datetime.fromisoformat``, which would refuse the text (and the time would
    then be shown as it came): a real date, hours, minutes and seconds in range."""
    if len(text) != 25 or text[4::3] != "--T::+:" or not text.endswith("+00:00"):
        return None
    digits = text[:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19]
    if not (digits.isascii() and digits.isdigit()):
        return None
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (year and 1 <= month <= 12 and 1 <= day <= _DAYS[month - 1] + leap):
        return None
    if int(text[11:13]) > 23 or int(text[14:16]) > 59 or int(text[17:19]) > 59:
        return None
    return text[:10] + " " + text[11:]


def _tzinfo(zone: str) -> Any:
    """The tzinfo of an IANA zone name; UTC without zoneinfo, for UTC shells (docs/performance.md)."""
    if zone == "UTC":
        from datetime import UTC

        return UTC
    from zoneinfo import ZoneInfo

    return ZoneInfo(zone)


def fmt_seconds(seconds: Any) -> str:
    """A duration as ``1h30m``; ``-`` for none, or for less than half a second."""
    from kairosd.core.schedule.durations import format_duration

    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return "-"
    return format_duration(value) if value >= 0.5 else "-"
