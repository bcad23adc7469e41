"""Entry point of the ``kairos`` console script.

``kairos hook ...`` runs on every turn of every agent session that has kairos'
hooks installed, so it is dispatched here before argparse or any verb module is
imported (see :mod:`kairos.hook`); everything else goes through :mod:`kairos.app`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from kairos.hook import main as hook_main

        sys.exit(hook_main(argv[1:]))
    from kairos.app import run

    sys.exit(run(argv))


if __name__ == "__main__":
    main()
