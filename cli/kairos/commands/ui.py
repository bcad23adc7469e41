"""``kairos ui``: the live terminal view (:mod:`kairos.ui`), from the optional ``ui`` extra.

Textual is imported only when the verb runs; without it the verb says how to install it (exit 1).
``--json`` (which every verb's parser has) is a usage error here: a full-screen view has no document.
"""

from __future__ import annotations

from argparse import SUPPRESS

from kairos.commands.common import make_parser

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

INSTALL_HINT = "kairos ui needs the ui extra (Textual): pip install 'kairos[ui]'"
JSON_HINT = (
    "kairos ui is a live view for a terminal and prints no JSON; for the data use kairos list --json, "
    "kairos timeline --json or kairos watch --json"
)


def register(subparsers: Any) -> None:
    ui = make_parser(
        subparsers,
        "ui",
        "a live terminal view of everything kairosd holds",
        "Open a live view of kairosd: tasks with their next fire counting down, the timeline of fires (the "
        "chart 'kairos timeline' draws: the past 24 hours and the next 24), "
        "the run history, missed fires, background jobs and their logs, the inbox, live agent sessions and "
        "each project's board. It follows kairosd's events (what 'kairos watch' prints). Keys: 1-8 views, "
        "p pause, r resume, n run now, x remove (asks first), a acknowledge, c cancel a job, i pin a board "
        "entry, q quit. Works with or without the mouse. Needs the ui extra: pip install 'kairos[ui]'.",
        "kairos ui\n  kairos ui --project ~/src/app     # also show that project's board",
    )
    ui.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="DIR",
        help="a project folder whose board to show (repeatable; default: this folder and live sessions' folders)",
    )
    for action in ui._actions:  # kept so that `kairos ui --json` says why it means nothing; not offered
        if "--json" in action.option_strings:
            action.help = SUPPRESS
    ui.set_defaults(handler=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    import os

    from kairos.commands.common import local_zone
    from kairosd.core.errors import KairosError, UsageError

    if args.json:  # every verb's parser has --json (and `kairos --json ui` sets it): say it means nothing here
        raise UsageError(JSON_HINT)
    try:
        import textual  # noqa: F401 - only to learn whether the extra is installed
    except ImportError:
        raise KairosError(INSTALL_HINT) from None
    from kairos.ui.app import KairosUI

    projects = [os.path.abspath(os.path.expanduser(p)) for p in args.project] or [os.getcwd()]
    KairosUI(zone=local_zone(), projects=projects).run()
    return 0
