"""Entry point of the ``kairos`` console script."""

from __future__ import annotations

import sys

from kairos.app import run


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
