"""Entry point of the ``kairos`` console script.

``kairos hook ...`` runs on every turn of every agent session that has kairos'
hooks installed, so it is dispatched here before argparse or any verb module is
imported (see :mod:`kairos.hook`). ``kairos --version`` is answered here too: the
full parser would import every verb module to print one line. Everything else goes
through :mod:`kairos.app`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from kairos.hook import main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv == ["--version"]:
        # Kept because it is measured (BENCHMARKS.md, Session 5): 15 ms here against 54 ms through the parser.
        version = _version_line()
        if version is not None:
            sys.stdout.write(version)
            sys.exit(0)
    from kairos.app import run

    sys.exit(run(argv))


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
