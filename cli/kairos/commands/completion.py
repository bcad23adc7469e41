"""``kairos completion bash|zsh|fish``: print a shell completion script.

shtab writes the script from the argparse parser at the moment it is asked for (every verb,
subcommand, option and choice), so it cannot go stale as verbs are added, and a TAB runs no
Python (docs/completion.md says why shtab and not argcomplete). This module only marks the
arguments shtab cannot know from the parser: the ids kairosd holds, named at TAB time by the
hidden ``kairos __complete KIND`` (kairos.dynamic), and the values that are paths.

``kairos.app`` imports this module to build the full parser, so only argparse and typing are
imported at the top; shtab is imported when a script is made. Must not import pydantic, asyncio
or any kairosd module but the version.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

SHELLS = ("bash", "zsh", "fish")
ROOT = "kairos"

# Arguments named at TAB time by `kairos __complete KIND` (kairos.dynamic), as git completes branches:
# the commands whose positional argument is a scheduled task, a background job or a board entry...
DYNAMIC = {
    **{f"{ROOT}/{verb}": "tasks" for verb in ("show", "pause", "resume", "run", "rm", "edit", "history", "export")},
    **{f"{ROOT}/task/{sub}": "jobs" for sub in ("show", "wait", "logs", "cancel", "send", "close")},
    **{f"{ROOT}/board/{sub}": "board" for sub in ("rm", "pin", "edit", "restore")},
}
# ... and the options whose value is one: a zone name anywhere, a run (an inbox item) to acknowledge.
DYNAMIC_OPTIONS = {"--tz": "tz", "--ack": "inbox"}
# Free values whose metavar says they are a folder (the others complete any path, as before shtab).
FOLDER_METAVARS = frozenset({"DIR"})

# The one function per shell that turns `kairos __complete KIND` lines ("NAME<TAB>description") into
# candidates. It never reports an error: kairos.dynamic prints nothing when kairosd is down or slow.
_BASH = r"""
# The names kairosd knows (ids) and zone names, from `kairos __complete KIND`: bash shows the names.
_kairos_complete() {
  local line
  while IFS= read -r line; do
    line="${line%%$'\t'*}"
    [[ $line == "$2"* ]] && printf '%s\n' "$line"
  done < <(command kairos __complete "$1" 2>/dev/null)
}"""
_ZSH = r"""
# The names kairosd knows (ids) and zone names, from `kairos __complete KIND`: "NAME<TAB>description"
# lines, made "NAME:description" for _describe (ids hold no colon; a description may: _describe
# splits at the first). KIND comes last: _arguments puts compadd's options before it.
_kairos_complete() {
  local kind=${@[-1]}
  local -a found
  found=(${(f)"$(command kairos __complete $kind 2>/dev/null)"})
  found=(${found/$'\t'/:})
  (( ${#found} )) && _describe -t $kind $kind found
}"""


def _dynamic(kind: str) -> dict[str, Any]:
    """shtab's ``.complete`` for an argument named by ``kairos __complete KIND``."""
    return {
        # shtab's bash driver calls the function with the word being completed.
        "bash": f"_kairos_complete_{kind}",
        "zsh": f"_kairos_complete {kind}",
        # fish shows the "NAME<TAB>description" lines as they are.
        "fish": f"(kairos __complete {kind} 2>/dev/null)",
        # The shared function is generate()'s preamble; shtab passes bash's function one word only.
        "preamble": {"bash": f'_kairos_complete_{kind}() {{ _kairos_complete {kind} "$1"; }}'},
    }


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script for SHELL on stdout. It is generated from kairos' own "
        "parser, so regenerate it after upgrading kairos to pick up new verbs.",
        epilog="examples:\n"
        "  kairos completion bash > ~/.local/share/bash-completion/completions/kairos\n"
        "  kairos completion zsh > ~/.zfunc/_kairos   # with fpath+=(~/.zfunc) before compinit\n"
        "  kairos completion fish > ~/.config/fish/completions/kairos.fish\n"
        "  source <(kairos completion bash)           # this shell only",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    parser.add_argument("--json", action="store_true", help='print {"shell": ..., "script": ...}')
    parser.set_defaults(handler=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    script = generate(args.shell, args.build_parser())
    if args.json:
        from kairos.output import print_json

        print_json({"shell": args.shell, "script": script})
    else:
        print(script, end="")
    return 0


def generate(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell``; marks ``parser``'s arguments for shtab (see ``mark``)."""
    import shtab

    from kairosd import __version__

    if shell not in SHELLS:
        raise ValueError(f"unknown shell {shell!r}")
    mark(parser, shell)
    header = f"# generated by `kairos completion {shell}` (kairos {__version__}); regenerate after upgrading kairos\n"
    script = shtab.complete(parser, shell, preamble={"bash": _BASH, "zsh": _ZSH}.get(shell, "")).rstrip("\n") + "\n"
    if shell == "zsh":
        # zsh's compinit reads the #compdef line only if it comes first.
        first, _, rest = script.partition("\n")
        return f"{first}\n{header}{rest}"
    if shell == "bash":
        # shtab leaves a free value to bash's own completion (variables, commands, not paths): a path is
        # what most free values are (files, folders), as `-o default` gave before shtab.
        script = script.replace("complete -o bashdefault -F", "complete -o bashdefault -o default -F")
    return header + script


def mark(parser: argparse.ArgumentParser, shell: str, path: str = ROOT) -> None:
    """Set shtab's ``complete`` on each argument of ``parser`` and its subcommands that takes a value
    and has no choices: the dynamic kinds above, folders, and otherwise any path. Changes the parser:
    give it one built for the script."""
    import shtab

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                # zsh and fish describe a subcommand by its description, whole (a paragraph), before its
                # one-line help: the parser is built for this script, so the help takes its place.
                if helps.get(name):
                    sub.description = helps[name]
                mark(sub, shell, f"{path}/{name}")
            continue
        if action.nargs == 0 or action.help == argparse.SUPPRESS:
            continue
        if action.choices is not None:
            if shell == "zsh":
                # shtab writes zsh's choices unquoted into an _arguments spec, where a colon ends the
                # list (`--target webhook:` broke every option of `kairos add`): each is escaped here.
                words = (re.sub(r"([^\w./@+-])", r"\\\1", str(choice)) for choice in action.choices)
                action.complete = {"zsh": f"({' '.join(words)})"}  # type: ignore[attr-defined]
            continue
        kind = next((DYNAMIC_OPTIONS[f] for f in action.option_strings if f in DYNAMIC_OPTIONS), None)
        if not action.option_strings and path in DYNAMIC and action.dest in ("id", "ids"):
            kind = DYNAMIC[path]
        if kind:
            action.complete = _dynamic(kind)  # type: ignore[attr-defined]
        elif action.metavar in FOLDER_METAVARS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
        else:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
