"""kairos.output.print_table shows each cell as cell() and one_line() define, whatever the column holds.

print_table checks a whole column at once when it is printable ASCII (docs/performance.md), so a
column with one hostile cell among plain ones, a value that is not a string, whitespace that
one_line folds, a None in the last column and a last column cut at a narrow terminal are each
compared with the table written cell by cell from those two functions.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from kairos import output
from kairos.output import MIN_LAST_COLUMN, cell, one_line, print_table

HEADERS = ["ID", "WHEN", "NAME"]
ROWS: list[list[Any]] = [
    ["0000000a", "2026-01-01 09:00:00+00:00", "plain name"],
    ["0000000b", "evil\x1b[31m red", "bidi \u202e reversed"],
    ["0000000c", 42, None],
    ["0000000d", "tab\there  and  spaces", "  many\n lines \t here  "],
    ["0000000e", "caf\u00e9", "zero\u200bwidth " + "x" * 150],
    ["0000000f", "", ""],
]


def _by_hand(headers: list[str], rows: list[list[Any]], columns: int) -> str:
    """The table as the spec says: every cell but the last as cell(), the last as one_line() cut to the room."""
    table = [list(headers), *([cell(value) for value in row[:-1]] + [row[-1]] for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers) - 1)]
    room = max(columns - sum(widths) - 2 * (len(headers) - 1), MIN_LAST_COLUMN)
    lines = []
    for row in table:
        parts = [text.ljust(width) for text, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*parts, one_line(row[-1], room)]).rstrip() + "\n")
    return "".join(lines)


@pytest.mark.parametrize("rows", [ROWS, ROWS[:1], ROWS[1:3], [], [row[::-1] for row in ROWS]])
def test_a_piped_table_is_each_cell_shown_whole(rows: list[list[Any]], capsys: pytest.CaptureFixture[str]) -> None:
    print_table(HEADERS, rows)
    assert capsys.readouterr().out == _by_hand(HEADERS, rows, sys.maxsize)


@pytest.mark.parametrize("columns", [40, 60, 200])
def test_at_a_terminal_the_last_column_is_cut_to_fit(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(output, "WIDE", False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    print_table(HEADERS, ROWS)
    printed = capsys.readouterr().out
    assert printed == _by_hand(HEADERS, ROWS, columns)
    assert "\u2026" in printed  # the long name was cut


def test_one_column(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(["NAME"], [["a\x07b"], ["  c  "]])
    assert capsys.readouterr().out == "NAME\na\\x07b\nc\n"


def test_a_hostile_cell_in_a_plain_column_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(HEADERS, ROWS)
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "\u200b" not in out
    assert "evil\\x1b[31m red" in out
