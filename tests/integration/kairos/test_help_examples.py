"""Every verb's --help has a description and examples, over the whole parser (issue 15, item 10)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from kairos.app import build_parser


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name == "ls":  # an alias of list
                    continue
                yield " ".join((*path, name)), sub
                yield from _commands(sub, (*path, name))


def test_every_command_has_a_description_and_examples():
    missing = [
        name
        for name, sub in _commands(build_parser())
        if not (sub.description and sub.epilog and "examples:" in sub.epilog and f"kairos {name}" in sub.epilog)
    ]
    assert missing == []


def test_kairos_hook_help_is_the_parsers_help():
    """`kairos hook` skips argparse for speed; its --help must still show the examples."""
    done = subprocess.run(
        [sys.executable, "-m", "kairos", "hook", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    assert "examples:" in done.stdout
    assert "kairos hook claude Stop" in done.stdout
