"""What the verb modules share: a subcommand parser with examples and ``--json``, the client, the user's zone,
and the pieces of their list and show handlers (``--json``, a table of records, a text block).

Imported by every verb module at the top, so it imports nothing at the top: argparse
loads when a parser is built (``kairos list`` is answered without one, see
``kairos.app``), textwrap, typing and the client when used.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, TypeVar

    from kairos.client import Client

    _R = TypeVar("_R")

_formatters: tuple[type[argparse.HelpFormatter], type[argparse.HelpFormatter]] | None = None


def help_formatter(raw_description: bool = False) -> type[argparse.HelpFormatter]:
    """argparse's ``HelpFormatter`` (or ``RawDescriptionHelpFormatter``) given the terminal width without shutil.

    argparse's formatters import shutil for the width, even with no help printed: argparse
    builds a formatter to check each argument (docs/performance.md). Made on first use, so
    that a verb answered without a parser does not import argparse.
    """
    global _formatters
    if _formatters is None:
        import argparse

        class _Width:
            def __init__(
                self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
            ):
                from kairos.output import terminal_columns

                if width is None:
                    width = terminal_columns(fallback=80) - 2  # as argparse.HelpFormatter computes it
                super().__init__(prog, indent_increment, max_help_position, width)  # type: ignore[call-arg]

        class HelpFormatter(_Width, argparse.HelpFormatter):
            pass

        class RawDescriptionHelpFormatter(_Width, argparse.RawDescriptionHelpFormatter):
            pass

        _formatters = HelpFormatter, RawDescriptionHelpFormatter
    return _formatters[raw_description]


def add_wide_flag(parser: argparse.ArgumentParser) -> None:
    """``--wide`` for a verb that prints a table: no cell is cut, even at a terminal (kairos.output.WIDE)."""
    parser.add_argument("--wide", action="store_true", help="cut no column to fit the terminal (piped: never cut)")


def add_quiet_flag(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` for a verb that may wait long and shows its progress (kairos.progress)."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line (elapsed time, what it waits for): it is drawn on stderr at a terminal only, "
        "never into a pipe, a file or --json output",
    )


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document (streams: JSON lines)")


def make_parser(subparsers: Any, name: str, help_text: str, description: str, examples: str, **kw: Any) -> Any:
    """A subcommand parser with a description, an examples epilog and ``--json``."""
    parser = subparsers.add_parser(
        name,
        help=help_text,
        description=description,
        epilog="examples:\n" + _indent(_dedent(examples).strip("\n"), "  "),
        formatter_class=help_formatter(raw_description=True),
        **kw,
    )
    add_json_flag(parser)
    return parser


def _dedent(text: str) -> str:
    """``inspect.cleandoc`` for the examples of a verb (spaces only), without importing inspect.

    The first line's own indentation does not count: ``"kairos x\n  kairos y"`` (the first example
    right after the quote) is two examples at one margin, not a second one indented by two more.
    """
    first, *rest = text.split("\n")
    margin = min((len(line) - len(line.lstrip(" ")) for line in rest if line.strip()), default=0)
    return "\n".join([first.lstrip(" "), *(line[margin:] if line.strip() else "" for line in rest)])


def _indent(text: str, prefix: str) -> str:
    """``textwrap.indent``: ``prefix`` before every line that is not blank."""
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(keepends=True))


def client() -> Client:
    from kairos.client import Client

    return Client()


OFFLINE_NOTE = "kairosd is not running: showing what is on disk (kairos daemon start to run it)"
OFFLINE_TIMEOUT_S = 60.0


class ReadClient:
    """A client for the read-only views (list, show, history, missed, board show): asks kairosd, and
    when it is not running answers from the files on disk instead (issue 24, item 9).

    The files are read by ``python -m kairosd.app.offline`` in a child process, which builds the
    daemon's own views without its lock and changes nothing, so the CLI imports none of the store
    (the ``cli-public-face`` contract, as ``kairos doctor`` does). The note is said once, on stderr.
    """

    def __init__(self) -> None:
        self.offline = False

    def call(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        from kairos.client import Client, DaemonNotRunning

        if not self.offline:
            try:
                return Client().call(method, path, body, query)
            except DaemonNotRunning:
                from kairos.output import error

                self.offline = True
                error(OFFLINE_NOTE)
        return offline_call(method, path, query)

    def call_pieces(self, method: str, path: str, query: Any = None) -> Any:
        """kairosd's answer piece by piece, as :meth:`Client.call_pieces` (``list --json`` streams it);
        while kairosd is down, the document from disk as one piece."""
        import json

        from kairos.client import Client, DaemonNotRunning

        if not self.offline:
            pieces = Client().call_pieces(method, path, query)
            try:
                first = next(pieces, b"")  # connecting happens here, on the first piece
            except DaemonNotRunning:
                pass
            else:
                return _chained(first, pieces)
        # Compact and ended by a newline, as kairosd sends it.
        return iter([json.dumps(self.call(method, path, None, query), separators=(",", ":")).encode() + b"\n"])


def _chained(first: bytes, rest: Any) -> Any:
    """``first``, then the rest of the pieces it was taken from."""
    yield first
    yield from rest


def offline_call(method: str, path: str, query: Any = None) -> Any:
    """The answer kairosd would give, computed from the files on disk by a child process."""
    import json
    import subprocess
    import sys

    from kairosd.core.errors import KairosError

    argv = [sys.executable, "-m", "kairosd.app.offline", method, path]
    argv += [f"{k}={v}" for k, v in (query or {}).items()]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=OFFLINE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KairosError(f"reading the files on disk failed: {exc}") from None
    try:
        doc = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        doc = None
    if done.returncode == 0 and doc is not None:
        return doc
    problem = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(problem, dict):
        from kairosd.core.protocol import exit_code_for

        err = KairosError(str(problem.get("message")))
        err.code = str(problem.get("code") or err.code)
        err.exit_code = exit_code_for(err.code)
        raise err
    detail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    raise KairosError(f"reading the files on disk failed: {detail}")


def local_zone() -> str:
    from kairosd.core.clock import local_zone_name

    return local_zone_name()


def printed_json(args: argparse.Namespace, doc: Any) -> bool:
    """With ``--json``, print ``doc`` (all the handler has to do) and say so; else leave it to the handler."""
    if not args.json:
        return False
    from kairos.output import print_json

    print_json(doc)
    return True


def print_records(records: Sequence[_R], empty: str, headers: list[str], row: Callable[[_R, str], list[str]]) -> bool:
    """A table of ``records``, a ``row(record, zone)`` each (times in the user's zone), or the line ``empty``
    when there is none; whether there was any."""
    if not records:
        print(empty)
        return False
    from kairos.output import print_table

    zone = local_zone()
    print_table(headers, [row(record, zone) for record in records])
    return True


def print_block(label: str, text: str) -> None:
    """``label:`` with ``text`` below it, indented: a task's prompt, a background job's response."""
    print(f"{label}:")
    print(_indent(text, "  "))


def print_each(items: Iterable[Any], show: Callable[[Any], None]) -> None:
    """Follow a stream: show each item as it arrives, flushed at once (a reader at the other end
    of a pipe wants every line now, not when a buffer fills)."""
    import sys

    for item in items:
        show(item)
        sys.stdout.flush()


def installed_script(name: str, option: str) -> str:
    """The ``name`` script of this installation (``kairos`` or ``kairosd``), as an absolute path.

    Symlinks are kept, so upgrades keep working. Raises KairosError naming
    ``option``, the flag that gives the path by hand, when none is found.
    """
    import os
    import sys
    import sysconfig

    from kairosd.core.errors import KairosError

    folders: list[str] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "kairos" and os.path.dirname(argv0):
        # The console script we run as: pipx and uv put both scripts in one bin folder (~/.local/bin).
        folders.append(os.path.dirname(os.path.abspath(argv0)))
    folders.append(sysconfig.get_path("scripts"))  # the venv's bin, or the interpreter's scripts folder
    folders.append(sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user")))  # pip install --user
    folders.append(os.path.dirname(os.path.abspath(sys.executable)))
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise KairosError(
        f"cannot find the {name} script of this installation (looked in {', '.join(dict.fromkeys(folders))}); "
        f"pass {option} PATH"
    )


def user_path(path: str) -> str:
    """A path the user typed, absolute: kairosd's working directory is not the user's, so it is resolved here."""
    import os

    return os.path.abspath(os.path.expanduser(path))


def whole_number(text: str) -> int:
    """An argparse ``type`` for a count: ASCII digits, optionally signed (``int`` alone also reads
    ``"٣"``, ``"３"`` and ``"1_000"``). Out-of-range values are each verb's to refuse."""
    import argparse

    digits = text.strip().removeprefix("-")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 12):
        raise argparse.ArgumentTypeError(f"expected a whole number in ASCII digits, not {text[:40]!r}")
    return int(text)


def seconds(text: str) -> float:
    """An argparse ``type`` for a timeout: a duration as everywhere else in kairos (``90s``, ``5m``,
    ``1h30m``) or a plain number of seconds (``600``, ``2.5``; ``0`` too, for the verbs that take it)."""
    import argparse
    import re

    raw = text.strip()
    # ASCII only: float() also reads "٣" and "1_000", and "nan"/"inf" are not timeouts.
    if re.fullmatch(r"\d+(?:\.\d+)?", raw, re.ASCII):
        return float(raw)
    from kairosd.core.errors import InvalidTimeError
    from kairosd.core.schedule.durations import parse_duration

    try:
        return parse_duration(raw)
    except InvalidTimeError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
