"""The ``kairos`` argument parser and dispatcher.

Each verb lives in ``kairos.commands.<verb>`` and is imported only when used,
so a hook call does not pay for the whole CLI. Every ``KairosError`` becomes one
line on stderr and its exit code (0 ok, 1 failure, 2 usage, 3 no daemon).

``kairos list`` and ``kairos list --json`` (or ``ls``, or ``--json`` before the verb)
with nothing else on the line are handed to their handler without a parser:
building one imports argparse and looks up its messages' translations (docs/performance.md;
``tests/integration/kairos/test_import_budget.py`` checks argparse stays out). Any other line, ``--help``
included, goes through the parser.
"""

from __future__ import annotations

import gc
import os
import sys

from kairos.output import error, guard_stream
from kairosd import __version__
from kairosd.core.errors import EXIT_USAGE, KairosError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

# verb -> module under kairos.commands that provides register(subparsers)
VERBS = {
    "cron": "cron",
    "add": "add",
    "edit": "edit",
    "list": "tasks",
    "ls": "tasks",
    "show": "tasks",
    "rm": "tasks",
    "pause": "tasks",
    "resume": "tasks",
    "run": "tasks",
    "history": "ledger",
    "missed": "ledger",
    "inbox": "inbox",
    "watch": "inbox",
    "status": "status",
    "import": "claudeimport",
    "daemon": "daemon",
    "sessions": "sessions",
    "hook": "sessions",
    "task": "jobs",
    "consolidate": "consolidate",
    "board": "board",
    "doctor": "doctor",
    "systemd": "systemd",
    "completion": "completion",
    "integrate": "integrate",
    "mcp": "mcpserver",
    "export": "export",
    "timeline": "timeline",
    "ui": "ui",
}

# Verbs whose output is a protocol or JSON lines whatever the flags: not wrapped in guard_stream. (`watch`
# writes its JSON lines with kairos.output.json_line, which escapes what a terminal must not get raw.)
# `timeline` writes colour codes: it cleans what it prints from tasks itself (kairos.timeline.document.cleaned).
# `ui` draws the whole terminal with Textual, whose escape sequences must reach it as they are.
RAW_VERBS = frozenset({"mcp", "watch", "timeline", "ui"})


# The command lines answered without a parser.
PARSERLESS = frozenset(line for verb in ("list", "ls") for line in ((verb,), (verb, "--json"), ("--json", verb)))


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``verb`` only that verb's module is imported (the fast path)."""
    import argparse
    import importlib

    from kairos.commands.common import help_formatter

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            # One line, as every other error (the usage is one --help away, and named).
            verb = self.prog.removeprefix("kairos").strip()
            error(f"{verb + ': ' if verb else ''}{usage_message(message)} (see '{self.prog} --help')")
            raise SystemExit(EXIT_USAGE)

    parser = _Parser(
        prog="kairos",
        formatter_class=help_formatter(),
        description="kairos: durable scheduled prompts for AI coding agents. "
        "Talks to the kairosd daemon; 'kairos cron' works without it.",
    )
    parser.add_argument("--version", action="version", version=f"kairos {__version__}")
    # Also after the verb (every verb has its own --json); here so that `kairos --json list` works too.
    parser.add_argument("--json", dest="global_json", action="store_true", help="as VERB --json: print JSON")
    # `kairos completion` walks the whole tree: it gets this builder instead of importing the app.
    parser.set_defaults(build_parser=build_parser)
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    names = [VERBS[verb]] if verb in VERBS else sorted(set(VERBS.values()), key=list(VERBS.values()).index)
    for module_name in names:
        module = importlib.import_module(f"kairos.commands.{module_name}")
        module.register(subparsers)
    parser.verb_parsers = subparsers.choices  # type: ignore[attr-defined]  # for run()'s leftover arguments
    return parser


def usage_message(message: str) -> str:
    """argparse's ``message``, with the nearest choice named after an invalid one (``kairos lst``)."""
    import difflib
    import re

    found = re.match(r"argument (.+?): invalid choice: '(.*?)' \(choose from (.*)\)$", message, re.DOTALL)
    if not found:
        return message
    what, given, listed = found.groups()
    choices = re.findall(r"'([^']*)'", listed)
    near = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    if what in ("VERB", "COMMAND"):
        return f"unknown {what.lower()} {given!r}{hint}"
    return message + hint


def run(argv: Sequence[str]) -> int:
    argv = list(argv)
    if set(argv) == {"--version", "--json"}:
        # argparse's version action prints its line and exits before --json is read.
        from kairos.output import print_json

        print_json({"kairos": __version__})
        return 0
    parserless = tuple(argv) in PARSERLESS
    collector_paused = parserless and gc.isenabled()
    if parserless:
        # A listing makes no garbage cycles; the collector would only walk the answer and the modules
        # (docs/performance.md). Off while it runs.
        gc.disable()
        args = _list_args(argv)
    else:
        verb = next((a for a in argv if not a.startswith("-")), None)  # `kairos --json list`: the verb is "list"
        parser = build_parser(verb)
        args, extra = parser.parse_known_args(argv)
        if extra:
            # Reported by the verb's parser (`kairos pause A B`), not the top level's, whose usage says nothing
            # about the verb.
            verbs = getattr(parser, "verb_parsers", {})
            (verbs.get(getattr(args, "verb", None)) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
        if getattr(args, "global_json", False) and hasattr(args, "json"):
            args.json = True
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    from kairos import output

    output.WIDE = bool(getattr(args, "wide", False))  # set on every call: tests run many in one process
    streams = sys.stdout, sys.stderr
    if not getattr(args, "json", False) and args.verb not in RAW_VERBS:
        # Human-readable output: no control or bidi character from a prompt, a name or a message reaches
        # the terminal raw, whichever print writes it (see kairos.output.clean).
        sys.stdout, sys.stderr = guard_stream(sys.stdout), guard_stream(sys.stderr)
    try:
        return _dispatch(handler, args)
    finally:
        sys.stdout, sys.stderr = streams
        if collector_paused:
            gc.enable()


def _list_args(argv: list[str]) -> argparse.Namespace:
    """What the parser makes of one of the ``PARSERLESS`` lines (``kairos --json ls``, ...)."""
    from types import SimpleNamespace

    from kairos.commands.tasks import cmd_list

    verb, global_json = (argv[1], True) if argv[0] == "--json" else (argv[0], False)
    args = SimpleNamespace(
        verb=verb,
        global_json=global_json,
        json="--json" in argv,
        problems=False,
        wide=False,
        handler=cmd_list,
        build_parser=build_parser,
    )
    return args  # type: ignore[return-value]  # a Namespace in all but name: the handler reads attributes


def _dispatch(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return handler(args)
    except KairosError as exc:
        error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`kairos list | head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
