"""``kairos completion bash|zsh|fish``: print a shell completion script.

The script is generated from the argparse parser at the moment it is asked for (every verb,
subcommand, option and choice), so it cannot go stale as verbs are added. Each shell gets a
small driver that walks the words typed so far to find the (sub)command, then offers that
command's subcommands, options, or the choices of the option just typed.

``kairos.app`` imports this module to build the full parser, so only argparse and typing are
imported at the top. Must not import pydantic, asyncio or any kairosd module but the version.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

SHELLS = ("bash", "zsh", "fish")
ROOT = "kairos"

# Arguments named at TAB time by `kairos __complete KIND` (kairos.dynamic), as git completes branches:
# the commands whose positional argument is a scheduled task, a background job or a board entry...
DYNAMIC = {
    **{f"{ROOT}/{verb}": "tasks" for verb in ("show", "pause", "resume", "run", "rm", "edit", "history", "export")},
    **{f"{ROOT}/task/{sub}": "jobs" for sub in ("show", "wait", "logs", "cancel", "send", "close")},
    **{f"{ROOT}/board/{sub}": "board" for sub in ("rm", "pin", "edit", "restore")},
}
# ... and the options whose value is one (a zone name).
DYNAMIC_OPTIONS = {"--tz": "tz"}


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


# ---- the command tree -----------------------------------------------------------------------------------


@dataclass
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    choices: list[str]


@dataclass
class Command:
    """One (sub)command; ``path`` is "kairos", "kairos/daemon", "kairos/daemon/start", ..."""

    path: str
    help: str = ""
    subcommands: dict[str, Command] = field(default_factory=dict)
    options: list[Option] = field(default_factory=list)
    # Words a positional argument accepts (``kairos completion SHELL``).
    positional_choices: list[str] = field(default_factory=list)

    def walk(self) -> list[Command]:
        found = [self]
        for sub in self.subcommands.values():
            found.extend(sub.walk())
        return found


def _help_text(action: argparse.Action) -> str:
    text = action.help or ""
    # argparse's own %-placeholders, e.g. "(default: %(default)s)".
    text = re.sub(r"%\((\w+)\)s", lambda m: str(getattr(action, m.group(1), "")), text).replace("%%", "%")
    return " ".join(text.split())


def command_tree(parser: argparse.ArgumentParser, path: str = ROOT, help_text: str = "") -> Command:
    command = Command(path, help_text)
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: _help_text(choice) for choice in action._choices_actions}
            by_parser = {id(action.choices[name]): text for name, text in helps.items() if name in action.choices}
            for name, sub in action.choices.items():
                # Aliases share a parser: each name is offered, with the help of the name it aliases.
                sub_help = helps.get(name) or by_parser.get(id(sub), "")
                command.subcommands[name] = command_tree(sub, f"{path}/{name}", sub_help)
        elif action.option_strings:
            choices = [str(c) for c in action.choices] if action.choices is not None else []
            command.options.append(Option(list(action.option_strings), _help_text(action), action.nargs != 0, choices))
        elif action.choices is not None:
            command.positional_choices.extend(str(c) for c in action.choices)
    return command


def generate(shell: str, parser: argparse.ArgumentParser) -> str:
    from kairosd import __version__

    tree = command_tree(parser)
    header = f"generated by `kairos completion {shell}` (kairos {__version__}); regenerate after upgrading kairos"
    if shell == "bash":
        return _bash(tree, header)
    if shell == "zsh":
        return _zsh(tree, header)
    if shell == "fish":
        return _fish(tree, header)
    raise ValueError(f"unknown shell {shell!r}")


def _sq_posix(text: str) -> str:
    """Single-quoted for bash and zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


def _sq_fish(text: str) -> str:
    """Single-quoted for fish, where backslash escapes a quote or a backslash inside single quotes."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _transitions(tree: Command) -> list[str]:
    """Every "parent/word" that enters a subcommand, as case patterns."""
    return [sub.path for command in tree.walk() for sub in command.subcommands.values()]


# ---- bash -----------------------------------------------------------------------------------------------


def _value_cases(
    tree: Command,
    choice: Callable[[str, list[str]], str],
    free: Callable[[str], str],
    dynamic: Callable[[str, str], str],
) -> list[str]:
    """The shell's case arms for a ``path:--option`` that takes a value: ``choice(pattern, choices)``
    for each option with choices, one ``dynamic(pattern, kind)`` arm for each kind of
    ``DYNAMIC_OPTIONS``, then one ``free(pattern)`` arm for every other option."""
    cases: list[str] = []
    free_patterns: list[str] = []
    dynamic_patterns: dict[str, list[str]] = {}
    for command in tree.walk():
        for option in command.options:
            if not option.takes_value:
                continue
            patterns = [_sq_posix(f"{command.path}:{flag}") for flag in option.flags]
            kind = next((DYNAMIC_OPTIONS[f] for f in option.flags if f in DYNAMIC_OPTIONS), None)
            if option.choices:
                cases.append(choice("|".join(patterns), list(option.choices)))
            elif kind:
                dynamic_patterns.setdefault(kind, []).extend(patterns)
            else:
                free_patterns.extend(patterns)
    cases.extend(dynamic("|".join(patterns), kind) for kind, patterns in dynamic_patterns.items())
    if free_patterns:
        cases.append(free("|".join(free_patterns)))
    return cases


def _dispatch(value_cases: list[str], word_cases: list[str]) -> str:
    """The part bash and zsh share: the arm for the word before the cursor, then the one for the command."""
    return f"""    case "$kpath:$prev" in
{chr(10).join(value_cases)}
    esac
    case "$kpath" in
{chr(10).join(word_cases)}
    esac"""


def _bash(tree: Command, header: str) -> str:
    value_cases = _value_cases(
        tree,
        lambda pattern, choices: (
            f'        {pattern}) COMPREPLY=($(compgen -W {_sq_posix(" ".join(choices))} -- "$cur")); return ;;'
        ),
        # A free value (a duration, a path): left to bash's default completion.
        lambda pattern: f"        {pattern}) return ;;",
        lambda pattern, kind: f"        {pattern}) _kairos_dynamic {kind}; return ;;",
    )
    word_cases: list[str] = []
    for command in tree.walk():
        flags = " ".join(flag for option in command.options for flag in option.flags)
        words = " ".join([*command.subcommands, *command.positional_choices])
        dyn = DYNAMIC.get(command.path, "")
        word_cases.append(
            f"        {_sq_posix(command.path)}) opts={_sq_posix(flags)}; words={_sq_posix(words)}; dyn={dyn} ;;"
        )
    transitions = "|".join(_sq_posix(path) for path in _transitions(tree))
    return f"""# bash completion for kairos, {header}
# The names kairosd knows (task ids, board entries) and zone names, from `kairos __complete KIND`:
# "NAME<TAB>description" lines, of which bash shows the names.
_kairos_dynamic() {{
    local line
    while IFS= read -r line; do
        line="${{line%%$'\\t'*}}"
        [[ $line == "$cur"* ]] && COMPREPLY+=("$line")
    done < <(command kairos __complete "$1" 2>/dev/null)
}}
_kairos() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="" kpath={ROOT} i opts="" words="" dyn=""
    (( COMP_CWORD > 0 )) && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    for (( i = 1; i < COMP_CWORD; i++ )); do
        case "$kpath/${{COMP_WORDS[i]}}" in
            {transitions}) kpath="$kpath/${{COMP_WORDS[i]}}" ;;
        esac
    done
    COMPREPLY=()
{_dispatch(value_cases, word_cases)}
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ -n $dyn ]]; then
        _kairos_dynamic "$dyn"
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}}
complete -o default -F _kairos kairos
"""


# ---- zsh ------------------------------------------------------------------------------------------------


def _zsh_entry(name: str, help_text: str) -> str:
    return _sq_posix(name.replace(":", "\\:") + (":" + help_text if help_text else ""))


def _zsh(tree: Command, header: str) -> str:
    value_cases = _value_cases(
        tree,
        lambda pattern, choices: f"        ({pattern}) compadd -- {' '.join(_sq_posix(c) for c in choices)}; return ;;",
        lambda pattern: f"        ({pattern}) _files; return ;;",
        lambda pattern, kind: f"        ({pattern}) _kairos_dynamic {kind}; return ;;",
    )
    word_cases: list[str] = []
    for command in tree.walk():
        subs = [_zsh_entry(name, sub.help) for name, sub in command.subcommands.items()]
        subs += [_zsh_entry(choice, "") for choice in command.positional_choices]
        opts = [_zsh_entry(flag, option.help) for option in command.options for flag in option.flags]
        dyn = DYNAMIC.get(command.path, "")
        word_cases.append(
            f"        ({_sq_posix(command.path)}) subs=({' '.join(subs)}); opts=({' '.join(opts)}); dyn={dyn} ;;"
        )
    transitions = "|".join(_sq_posix(path) for path in _transitions(tree))
    return f"""#compdef kairos
# zsh completion for kairos, {header}
# The names kairosd knows (task ids, board entries) and zone names, from `kairos __complete KIND`:
# "NAME<TAB>description" lines, made "NAME:description" for _describe (ids hold no colon; a
# description may: _describe splits at the first).
_kairos_dynamic() {{
    local -a found
    found=(${{(f)"$(command kairos __complete $1 2>/dev/null)"}})
    found=(${{found/$'\\t'/:}})
    (( ${{#found}} )) && _describe -t $1 $1 found
}}
_kairos() {{
    # Not "path": in zsh that is PATH itself.
    local kpath={ROOT} prev=${{words[CURRENT-1]}} i dyn=""
    local -a subs opts
    for (( i = 2; i < CURRENT; i++ )); do
        case "$kpath/${{words[i]}}" in
            ({transitions}) kpath="$kpath/${{words[i]}}" ;;
        esac
    done
{_dispatch(value_cases, word_cases)}
    if [[ $PREFIX == -* ]]; then
        _describe -t options option opts
    elif [[ -n $dyn ]]; then
        _kairos_dynamic $dyn
    elif (( ${{#subs}} )); then
        _describe -t commands command subs
    else
        _files
    fi
}}
if [[ $funcstack[1] == _kairos ]]; then
    _kairos "$@"
else
    compdef _kairos kairos
fi
"""


# ---- fish -----------------------------------------------------------------------------------------------


def _fish(tree: Command, header: str) -> str:
    transitions = " ".join(_sq_fish(path) for path in _transitions(tree))
    lines = [
        f"# fish completion for kairos, {header}",
        "function __kairos_path",
        f"    set -l kpath {ROOT}",
        "    for word in (commandline -opc)[2..-1]",
        '        switch "$kpath/$word"',
        f"            case {transitions}",
        '                set kpath "$kpath/$word"',
        "        end",
        "    end",
        "    echo $kpath",
        "end",
    ]
    for command in tree.walk():
        when = f"-n {_sq_fish(f'test (__kairos_path) = {command.path}')}"
        for name, sub in command.subcommands.items():
            lines.append(f"complete -c kairos -f {when} -a {_sq_fish(name)} -d {_sq_fish(sub.help)}")
        for choice in command.positional_choices:
            lines.append(f"complete -c kairos -f {when} -a {_sq_fish(choice)}")
        if command.path in DYNAMIC:
            # fish shows the "NAME<TAB>description" lines as they are.
            dyn = f"(kairos __complete {DYNAMIC[command.path]} 2>/dev/null)"
            lines.append(f"complete -c kairos -f {when} -a {_sq_fish(dyn)}")
        for option in command.options:
            parts = ["complete -c kairos", when]
            for flag in option.flags:
                if flag.startswith("--"):
                    parts.append(f"-l {_sq_fish(flag[2:])}")
                elif len(flag) == 2:
                    parts.append(f"-s {_sq_fish(flag[1:])}")
                else:
                    parts.append(f"-o {_sq_fish(flag[1:])}")
            kind = next((DYNAMIC_OPTIONS[f] for f in option.flags if f in DYNAMIC_OPTIONS), None)
            if option.choices:
                parts.append(f"-x -a {_sq_fish(' '.join(option.choices))}")
            elif kind and option.takes_value:
                parts.append(f"-x -a {_sq_fish(f'(kairos __complete {kind} 2>/dev/null)')}")
            elif option.takes_value:
                parts.append("-r")
            if option.help:
                parts.append(f"-d {_sq_fish(option.help)}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"
