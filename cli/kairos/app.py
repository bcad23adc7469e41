"""The ``kairos`` argument parser and dispatcher.

Each verb lives in ``kairos.commands.<verb>`` and is imported only when used,
so a hook call does not pay for the whole CLI. Every ``KairosError`` becomes one
line on stderr and its exit code (0 ok, 1 failure, 2 usage, 3 no daemon).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence

from kairosd import __version__
from kairosd.errors import EXIT_USAGE, KairosError

from kairos.output import error

# verb -> module under kairos.commands that provides register(subparsers)
VERBS = {"cron": "cron"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage()
        error(message)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kairos",
        description="kairos: durable scheduled prompts for AI coding agents. "
        "Talks to the kairosd daemon; 'kairos cron' works without it.",
    )
    parser.add_argument("--version", action="version", version=f"kairos {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for module_name in VERBS.values():
        module = importlib.import_module(f"kairos.commands.{module_name}")
        module.register(subparsers)
    return parser


def run(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return handler(args)
    except KairosError as exc:
        error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
