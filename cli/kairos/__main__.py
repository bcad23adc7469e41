"""Entry point of the ``kairos`` console script.

``kairos hook ...`` runs on every turn of every agent session that has kairos'
hooks installed, so it is dispatched here before argparse or any verb module is
imported (see :mod:`kairos.integrations.hook`). ``kairos --version`` is answered here too: the
full parser would import every verb module to print one line. Everything else goes
through :mod:`kairos.app`.

A hook call and ``kairos list`` end without the interpreter's teardown (see :func:`_end`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        import gc

        # A hook call makes no garbage cycles (docs/performance.md). The long-lived waiter turns the
        # collector back on (kairos.integrations.hook._wait).
        gc.disable()
        from kairos.integrations.hook import main as hook_main

        _end(hook_main(argv[1:]))
    if argv[:1] == ["__complete"]:
        # Called by the completion scripts at TAB time: no parser, no verb module (kairos.dynamic).
        from kairos.dynamic import main as complete_main

        _end(complete_main(argv[1:]))
    if argv == ["--version"]:
        # Without the parser, which imports every verb module (docs/performance.md).
        version = _version_line()
        if version is not None:
            sys.stdout.write(version)
            sys.exit(0)
    from kairos.app import PARSERLESS, run

    code = run(argv)
    if tuple(argv) in PARSERLESS:
        _end(code)
    sys.exit(code)


def _end(code: int) -> NoReturn:
    """Exit with ``code`` at once, skipping the interpreter's teardown (freeing every module and
    object, a last full collection; docs/performance.md). Only for those short calls: their work
    is done when their handler returns, and nothing they do registers an atexit handler or needs a
    finalizer; what they printed is flushed here. If that fails, the interpreter ends as usual."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # whatever it is, the usual exit reports it
        sys.exit(code)
    os._exit(code)


def _version_line() -> str | None:
    """What argparse's ``--version`` prints, or None where argparse would wrap the line.

    argparse fills the text to the terminal width less 2 (at least 11 columns); in a
    narrower terminal its output differs, so the caller leaves that case to argparse.
    """
    from kairos.output import terminal_columns
    from kairosd import __version__

    line = f"kairos {__version__}"
    return line + "\n" if len(line) <= max(terminal_columns(fallback=80) - 2, 11) else None


if __name__ == "__main__":
    main()
