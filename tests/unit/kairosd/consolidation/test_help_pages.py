"""Every ``kairos ... --help`` page, walked from the parser tree (issue 24, item 15): the examples sit at
one margin, every positional argument says what it is, and example board ids have the length real ones have."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from kairos.app import build_parser


def _pages(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _pages(sub)


@pytest.fixture(scope="module")
def pages() -> list[argparse.ArgumentParser]:
    return list(_pages(build_parser()))


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    text = parser.format_help()
    return [line for line in text.partition("\nexamples:\n")[2].splitlines() if line.strip()]


def test_every_example_sits_at_the_same_margin(pages, monkeypatch):
    """18 pages indented their second example by 4 instead of 2 (examples written "a\\n  b")."""
    monkeypatch.setenv("COLUMNS", "200")
    wrong = {}
    for parser in pages:
        margins = {len(line) - len(line.lstrip(" ")) for line in _examples(parser)}
        if margins - {2}:
            wrong[parser.prog] = sorted(margins)
    assert wrong == {}
    assert sum(1 for parser in pages if _examples(parser)) > 40


def test_every_positional_argument_is_described(pages):
    """`pause`, `resume` and `run` left ID without a word."""
    bare = [
        f"{parser.prog} {action.metavar or action.dest}"
        for parser in pages
        for action in parser._actions
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert bare == []


def test_example_board_ids_have_the_length_of_real_ones():
    """Board ids are "b" and 6 hex digits (7 characters); the help showed 6."""
    from kairosd.consolidation.board.model import Board
    from kairosd.consolidation.board.store import _new_id

    real = {len(_new_id(Board(project="/p"))) for _ in range(20)}
    ids = [
        word
        for parser in _pages(build_parser("board"))
        for line in _examples(parser)
        for word in line.split()
        if re.fullmatch(r"b[0-9a-f]{4,}", word)
    ]
    assert len(ids) >= 5
    assert {len(word) for word in ids} == real
