"""``kairos integrate AGENT [--uninstall] [--dry-run] [--no-rewake] [--[no-]idle-wake]``: hooks, MCP and more.

Installs, into the agent's user-level configuration only, the hooks that call ``kairos hook AGENT
EVENT`` and the MCP server ``kairos mcp``, both with the absolute path of this kairos (see
:mod:`kairos.integrations.settings.agents` for what goes where). Every other entry in those files is kept;
``--uninstall`` removes exactly kairos' entries. Files are backed up before they change;
``--dry-run`` prints the diff and writes nothing; a file that cannot be parsed stops the run with
nothing written. The home folder is ``$HOME`` (``COPILOT_HOME`` and ``CODEX_HOME`` are honoured).
When installing, the CLI on PATH is asked for its ``--version``; one older than the oldest kairos
supports (:mod:`kairosd.core.agentversions`) gets a note saying what will not work.

It then says what the agent's sessions cost from now on: ``[consolidation] mode = "auto"`` (the
default) consolidates an ended session through that agent's own CLI, with a cheap model, in about
:func:`estimate_tokens` tokens (see :mod:`kairosd.consolidation.remagent.modes`), and how to opt out.

Only argparse and typing are imported at the top (``kairos.app`` imports every verb module).
Must not import pydantic or asyncio.
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import installed_script, make_parser, whole_number

AGENTS = ("claude", "copilot", "codex", "gemini", "opencode")
# kairosd.consolidation.remagent.modes.DEFAULT_MODELS, which the CLI may not import (a test keeps them equal).
CHEAP_MODELS: dict[str, str | None] = {
    "claude": "haiku",
    "codex": "gpt-5.1-codex-mini",
    "gemini": "gemini-2.5-flash-lite",
    "copilot": "gpt-5-mini",
    "opencode": None,  # its models depend on the user's providers: the user's own default model
}
# What a rem-agent prompt holds besides the typed turns: the definition, the task's text and a board
# of about 15 entries (kairosd.consolidation.remagent.protocol; a test keeps this within 10% of it).
PROMPT_OVERHEAD_CHARS = 6200
TYPICAL_TURNS = 30
TYPICAL_TURN_CHARS = 250  # what a person types in a turn, on average (a pasted log is much more)
CHARS_PER_TOKEN = 4
DEFAULT_RUNS_PER_DAY = 20
VERSION_TIMEOUT_S = 5.0  # `<cli> --version`: a node CLI answers in about a second


def register(subparsers: Any) -> None:
    parser = make_parser(
        subparsers,
        "integrate",
        "install kairos' integration (hooks, MCP server) into an agent CLI",
        "Install (or with --uninstall remove) kairos' integration, its hooks and its MCP server, in the "
        "USER-level configuration of an agent CLI: Claude Code (~/.claude/settings.json, ~/.claude.json), Copilot CLI "
        "(~/.copilot/hooks/kairos.json, ~/.copilot/mcp-config.json; with --idle-wake an extension in "
        "~/.copilot/extensions/kairos/ and experimental mode in ~/.copilot/settings.json), Codex (~/.codex/hooks.json, "
        "~/.codex/config.toml, where thread_unload_delay_secs = 0 makes a quit TUI end its session at once; "
        "kairosd then wakes idle Codex sessions with codex queue), Gemini CLI (~/.gemini/settings.json) or "
        "opencode (a plugin, ~/.config/opencode/plugin/kairos.js, and ~/.config/opencode/opencode.json). "
        "Other entries are kept; kairos' own are recognised by what they run ('kairos hook ...', "
        "'kairos mcp'), so running it again replaces them. Each changed file is first copied to "
        "FILE.kairos-backup-<UTC time>. Project folders are never touched.",
        """
        kairos integrate claude --dry-run         # show the diff, write nothing
        kairos integrate claude --no-rewake       # without the waiter that wakes idle sessions
        kairos integrate codex
        kairos integrate copilot --idle-wake      # opt in: an extension wakes idle Copilot sessions
        kairos integrate gemini --uninstall
        """,
    )
    parser.add_argument("agent", choices=AGENTS, metavar="AGENT", help=f"one of {', '.join(AGENTS)}")
    parser.add_argument("--uninstall", action="store_true", help="remove kairos' hooks and MCP server")
    parser.add_argument("--dry-run", action="store_true", help="print the unified diff; write nothing")
    parser.add_argument(
        "--no-rewake",
        action="store_true",
        help="claude: leave out 'kairos hook claude wait', the asyncRewake hook that lets a due prompt wake an "
        "idle session (installed by default; running with this option removes it)",
    )
    parser.add_argument("--with-rewake", action="store_true", help="claude: the default; kept for old scripts")
    parser.add_argument(
        "--rewake-lifetime",
        type=whole_number,
        metavar="SECONDS",
        default=None,
        help="claude: how long one waiter lasts while the session is idle (default 86400, a day; every turn "
        "re-arms it)",
    )
    wake = parser.add_mutually_exclusive_group()
    wake.add_argument(
        "--idle-wake",
        action="store_true",
        help="copilot (opt-in): install kairos' Copilot extension, which starts a turn in an idle session when a "
        "prompt falls due, and turn on Copilot's experimental mode, which extensions need",
    )
    wake.add_argument(
        "--no-idle-wake",
        action="store_true",
        help="copilot: remove that extension (experimental mode is left as it is); without either option a "
        "re-run keeps what is installed",
    )
    parser.add_argument("--kairos", metavar="PATH", help="the kairos executable the entries run (default: this one)")
    parser.set_defaults(handler=cmd_integrate)


def find_kairos() -> str:
    """The ``kairos`` script of this installation (what the agents' hook and MCP entries run)."""
    return installed_script("kairos", "--kairos")


def cmd_integrate(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from kairos.integrations.settings import agents, files
    from kairos.output import print_json
    from kairosd.core.errors import UsageError

    rewake_options = [o for o, v in (("--with-rewake", args.with_rewake), ("--no-rewake", args.no_rewake),
                                     ("--rewake-lifetime", args.rewake_lifetime is not None)) if v]  # fmt: skip
    if rewake_options and args.agent != "claude":
        raise UsageError(f"{rewake_options[0]} is for claude only (asyncRewake is a Claude Code hook feature)")
    if rewake_options and args.uninstall:
        raise UsageError(f"--uninstall removes every kairos hook, the waiter too; leave out {rewake_options[0]}")
    if args.no_rewake and (args.with_rewake or args.rewake_lifetime is not None):
        raise UsageError("--no-rewake leaves the waiter out; it takes neither --with-rewake nor --rewake-lifetime")
    wake_option = "--idle-wake" if args.idle_wake else "--no-idle-wake" if args.no_idle_wake else None
    if wake_option and args.agent != "copilot":
        raise UsageError(
            f"{wake_option} is for copilot only (claude's waiter: --no-rewake; codex and opencode wake idle "
            "sessions by default; gemini cannot)"
        )
    if wake_option and args.uninstall:
        raise UsageError(f"--uninstall removes kairos' extension too; leave out {wake_option}")
    if args.rewake_lifetime is not None and args.rewake_lifetime < 2:
        raise UsageError("--rewake-lifetime must be at least 2 seconds")
    kairos = args.kairos or find_kairos()
    if not os.path.isabs(kairos):
        raise UsageError(f"--kairos must be an absolute path (agent CLIs run hooks from other folders), not {kairos!r}")
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isabs(home):
        raise UsageError("cannot tell your home folder: set HOME")
    ctx = agents.Context(
        home=Path(home), kairos=kairos, environ=dict(os.environ), install=not args.uninstall,
        with_rewake=not args.no_rewake, idle_wake=True if args.idle_wake else False if args.no_idle_wake else None,
        **({"rewake_lifetime": args.rewake_lifetime} if args.rewake_lifetime is not None else {}),
    )  # fmt: skip
    if args.agent == "opencode":
        from kairos.integrations.settings import opencode

        plans, notes = opencode.plan(ctx)
    elif args.agent == "copilot":
        from kairos.integrations.settings import copilot

        plans, notes = copilot.plan(ctx)
    else:
        plans, notes = agents.plan(args.agent, ctx)
    changes = files.plan_changes(plans)  # Refused (exit 1, nothing written) for a file it cannot use
    notes = [n for c in changes for n in c.notes] + notes
    if not args.uninstall:
        version = version_note(args.agent, os.environ)
        if version:
            notes.append(version)
    if not args.dry_run:
        from kairosd.core.clock import SystemClock

        files.apply(changes, SystemClock().now())
    if args.json:
        print_json(
            {
                "consolidation": consolidation_line(args.agent, *_consolidation_config(), uninstall=args.uninstall),
                "agent": args.agent,
                "uninstall": args.uninstall,
                "dry_run": args.dry_run,
                "changes": [
                    {
                        "path": str(c.path),
                        "what": c.what,
                        "action": c.action,
                        "backup": str(c.backup) if c.backup else None,
                        "after": c.after,
                        "diff": c.diff(),
                    }
                    for c in changes
                ],
                "notes": notes,
            }
        )
        return 0
    _print(args, changes, notes)
    print(consolidation_line(args.agent, *_consolidation_config(), uninstall=args.uninstall))
    return 0


def estimate_tokens(turns: int = TYPICAL_TURNS, turn_chars: int = TYPICAL_TURN_CHARS) -> int:
    """About how many input tokens kairos' rem-agent prompt takes for a session of ``turns`` typed turns."""
    return (PROMPT_OVERHEAD_CHARS + turns * turn_chars) // CHARS_PER_TOKEN


def consolidation_line(
    agent: str, section: dict[str, Any], config_path: str = "config.toml", *, uninstall: bool = False
) -> str:
    """What consolidating ``agent``'s sessions will cost, given the config's ``[consolidation]``."""
    mode = section.get("mode", "auto")
    if uninstall:
        return f"consolidation: {agent} sessions are no longer handed over; kairos consolidates none of them"
    if section.get("enabled") is False:
        return "consolidation: off ([consolidation] enabled = false); nothing is sent to a model"
    if mode == "offline":
        return f'consolidation: offline ([consolidation] mode = "offline"): no model reads your {agent} sessions'
    models = section.get("models")
    model = (models.get(agent) if isinstance(models, dict) else None) or CHEAP_MODELS[agent] or f"{agent}'s default"
    runs = section.get("max_agent_runs_per_day", DEFAULT_RUNS_PER_DAY)
    tokens = round(estimate_tokens() / 1000, 1)
    return (
        f"consolidation: when a {agent} session ends, kairos asks {agent} itself (headless, read-only, model "
        f"{model}) what the project's board should add, replace, close or drop: about {tokens:g}k input tokens for a "
        f"typical session of {TYPICAL_TURNS} turns (more when you paste long logs; {agent} adds its own system "
        f"prompt on top), at most {runs} runs a day; if that fails, kairos falls back to offline mode. "
        f'Opt out with [consolidation] mode = "offline" in {config_path}; choose the model with '
        f'[consolidation] models = {{ {agent} = "..." }}.'
    )


def _consolidation_config() -> tuple[dict[str, Any], str]:
    """The config's ``[consolidation]`` table (empty if none or unreadable: kairosd reports a broken
    config itself), and the config file's path."""
    import tomllib

    from kairosd.system.paths import Paths

    path = Paths.from_env().config_dir / "config.toml"
    try:
        with open(path, "rb") as file:
            section = tomllib.load(file).get("consolidation")
    except (OSError, ValueError):
        section = None
    return (section if isinstance(section, dict) else {}), str(path)


def version_note(agent: str, environ: Any) -> str | None:
    """What the installed ``agent`` CLI (on PATH) will not do with kairos because it is too old, or why its
    version could not be checked; None when it is new enough."""
    import shutil

    from kairosd.core.agentversions import OLDEST, outdated
    from kairosd.system.versionprobe import version_of

    oldest = OLDEST[agent].version
    path = shutil.which(agent, path=environ.get("PATH"))
    if path is None:
        return f"{agent} is not on PATH, so its version was not checked (kairos supports {oldest} or newer)"
    ok, output = version_of(path, environ, VERSION_TIMEOUT_S)
    if not ok:
        return f"could not check {agent}'s version ({output}); kairos supports {oldest} or newer"
    return outdated(agent, output)


def _print(args: argparse.Namespace, changes: list[Any], notes: list[str]) -> None:
    import sys

    if args.dry_run:
        for change in changes:
            sys.stdout.write(change.diff())
        if all(c.action == "unchanged" for c in changes):
            print(f"{args.agent}: nothing to change")
        for note in notes:
            print(f"note: {note}")
        print("dry run: nothing was written")
        return
    verb = {"create": "created", "update": "updated", "delete": "removed", "unchanged": "unchanged"}
    for change in changes:
        line = f"{verb[change.action]} {change.path} ({change.what})"
        if change.backup:
            line += f"; backup: {change.backup}"
        print(line)
    for note in notes:
        print(f"note: {note}")
