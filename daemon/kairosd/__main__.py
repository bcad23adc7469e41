"""Entry point of the ``kairosd`` console script."""

from __future__ import annotations

import argparse
import sys

from kairosd import __version__


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="kairosd", description="The kairos scheduler daemon.")
    parser.add_argument("--version", action="version", version=f"kairosd {__version__}")
    parser.parse_args(argv)
    sys.stderr.write("kairosd: the daemon loop arrives with the daemon issue; nothing to run yet\n")
    sys.exit(1)


if __name__ == "__main__":
    main()
