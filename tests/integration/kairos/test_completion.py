"""The scripts `kairos completion SHELL` prints complete what the parser has: every verb, subcommand,
option and choice, checked in each shell against the parser itself (not against the script's text).

The ids kairosd holds are tested with a real kairosd in test_completion_dynamic.py.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kairos.app import VERBS, build_parser
from kairos.commands.completion import SHELLS, generate

BIN = str(Path(sys.executable).parent)


@dataclass
class Command:
    """What the parser says one (sub)command accepts: the oracle the scripts are checked against."""

    words: tuple[str, ...]
    subcommands: list[str] = field(default_factory=list)
    options: set[str] = field(default_factory=set)
    choices: dict[str, list[str]] = field(default_factory=dict)  # an option's first flag -> its choices
    positional_choices: list[str] = field(default_factory=list)


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[Command]:
    command = Command(words)
    nested: list[Command] = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                command.subcommands.append(name)
                nested.extend(commands(sub, (*words, name)))
        elif action.option_strings:
            command.options.update(action.option_strings)
            if action.choices is not None:
                command.choices[action.option_strings[0]] = [str(c) for c in action.choices]
        elif action.choices is not None and not command.positional_choices:
            command.positional_choices = [str(c) for c in action.choices]
    yield command
    yield from nested


TREE = list(commands(build_parser()))


def _env(tmp_path: Path) -> dict[str, str]:
    # No kairosd (an empty KAIROS_HOME) and an empty folder: no id and no file is offered, only what the parser has.
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "KAIROS_HOME": str(tmp_path / "home")}


def _cases() -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(what, the words typed, what must be offered) for every command of the parser."""
    cases = []
    for command in TREE:
        if command.subcommands or command.positional_choices:
            cases.append(("words", (*command.words, ""), sorted(command.subcommands + command.positional_choices)))
        cases.append(("options", (*command.words, "-"), sorted(command.options)))
        for flag, choices in command.choices.items():
            cases.append(("choices", (*command.words, flag, ""), sorted(choices)))
    # A value that is also a verb's name is a value, not a verb.
    cases.append(
        (
            "choices",
            ("add", "--name", "daemon", "--catch-up", ""),
            sorted(TREE[VERB_INDEX["add"]].choices["--catch-up"]),
        )
    )
    return cases


VERB_INDEX = {command.words[0]: i for i, command in enumerate(TREE) if len(command.words) == 1}


def test_the_oracle_sees_every_verb_and_some_nesting():
    """The walk the scripts are checked against is the whole parser."""
    assert set(VERBS) <= set(TREE[0].subcommands)
    assert any(len(command.words) == 2 and command.choices for command in TREE)
    assert len(TREE) > 40  # verbs, aliases and subcommands


def _check(found: list[list[str]], cases: list[tuple[str, tuple[str, ...], list[str]]]) -> None:
    assert len(found) == len(cases)
    wrong = [(words, expected, got) for (_, words, expected), got in zip(cases, found, strict=True) if got != expected]
    assert wrong == []


BASH_DRIVER = """
source "$1"
shift
comp() {
    COMP_WORDS=(kairos "$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
    _shtab_kairos kairos "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\\n' "${COMPREPLY[*]}"
}
"""


def test_bash_completes_every_verb_subcommand_option_and_choice(tmp_path: Path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "kairos.bash"
    script.write_text(generate("bash", build_parser()))
    cases = _cases()
    driver = BASH_DRIVER + "\n".join("comp " + " ".join(shlex.quote(w) for w in words) for _, words, _ in cases)
    (tmp_path / "empty").mkdir()
    out = subprocess.run(
        [bash, "-c", driver, "driver", str(script)],
        env=_env(tmp_path),
        cwd=tmp_path / "empty",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split("\n")[:-1]
    _check([sorted(line.split()) for line in out], cases)


def test_bash_falls_back_to_paths_for_a_free_value(tmp_path: Path):
    """A free value (a file, a folder) completes paths, as `complete -o default` did before shtab."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "kairos.bash"
    script.write_text(generate("bash", build_parser()))
    (tmp_path / "transcript.jsonl").write_text("")
    (tmp_path / "project").mkdir()
    lines = ["comp consolidate --transcript tr", "comp consolidate --transcript ''", "comp consolidate --cwd ''"]
    driver = BASH_DRIVER + "\n".join([*lines, "complete -p kairos"])
    out = subprocess.run(
        [bash, "-c", driver, "driver", str(script)],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "transcript.jsonl"
    assert sorted(out[1].split()) == ["kairos.bash", "project", "transcript.jsonl"]
    assert out[2] == "project"  # --cwd DIR: folders only
    assert out[3] == "complete -o bashdefault -o default -F _shtab_kairos kairos"


def test_fish_completes_every_verb_subcommand_option_and_choice(tmp_path: Path):
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    script = tmp_path / "kairos.fish"
    script.write_text(generate("fish", build_parser()))
    cases = _cases()
    lines = [f"source {shlex.quote(str(script))}"]
    for _, words, _ in cases:
        line = " ".join(["kairos", *words])
        lines += [f"complete -C {shlex.quote(line)}", "echo ==="]
    (tmp_path / "empty").mkdir()
    out = subprocess.run(
        [fish, "--no-config", "-c", "\n".join(lines)],
        env=_env(tmp_path),
        cwd=tmp_path / "empty",
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    blocks = out.split("===\n")[:-1]
    _check([sorted(entry.split("\t")[0] for entry in block.splitlines()) for block in blocks], cases)


def test_fish_describes_a_subcommand_by_its_one_line_help(tmp_path: Path):
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    script = tmp_path / "kairos.fish"
    script.write_text(generate("fish", build_parser()))
    out = subprocess.run(
        [fish, "--no-config", "-c", f"source {shlex.quote(str(script))}; complete -C 'kairos daemon st'"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "start\tstart kairosd in the background" in out.splitlines()


ZSH_DRIVER = """
compdef() { : }
_arguments() { : }  # the script completes the line it was loaded for: none here
_describe() { print -r -- "${(j: | :)${(P)2}}" }
source "$1"
shift
for fn in "$@"; do $fn; done
print -- '==='
for name in ${(ok)parameters[(I)_shtab_kairos*_options]}; do print -r -- "$name ${(j: | :)${(P)name}}"; done
"""


def _zsh_name(words: tuple[str, ...]) -> str:
    return "_".join(["_shtab_kairos", *(w.replace("-", "_") for w in words)])


def test_zsh_offers_every_verb_subcommand_option_and_choice(tmp_path: Path):
    """zsh's completion system is stubbed: each command's subcommand list (as _describe gets it) and its
    _arguments specs (every flag, and each option's choices) are read from the sourced script."""
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    script = tmp_path / "_kairos"
    script.write_text(generate("zsh", build_parser()))
    assert script.read_text().startswith("#compdef kairos\n")
    with_subs = [command for command in TREE if command.subcommands]
    out = subprocess.run(
        [zsh, "-f", "-c", ZSH_DRIVER, "driver", str(script), *(_zsh_name(c.words) + "_commands" for c in with_subs)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    described, _, specs = out.partition("===\n")
    for command, line in zip(with_subs, described.splitlines(), strict=True):
        names = [entry.split(":")[0] for entry in line.split(" | ")]
        assert sorted(names) == sorted(command.subcommands), command.words
    by_name = dict(line.split(" ", 1) for line in specs.splitlines())
    for command in TREE:
        spec = by_name[_zsh_name(command.words) + "_options"]
        for flag in command.options:
            assert flag in spec, (command.words, flag)
        for flag, choices in command.choices.items():
            (option,) = [s for s in spec.split(" | ") if flag + "[" in s or "," + flag + "}" in s]
            # A colon inside the list would end it (`--target webhook:`): _arguments needs it escaped.
            escaped = " ".join(choice.replace(":", "\\:") for choice in choices)
            assert option.endswith(":(" + escaped + ")"), (command.words, flag, option)
    assert "start:start kairosd in the background" in described


@pytest.mark.parametrize("shell", SHELLS)
def test_the_script_says_how_it_was_made(shell: str):
    script = generate(shell, build_parser())
    assert f"generated by `kairos completion {shell}`" in script
    assert script.endswith("\n")


def test_an_unknown_shell_is_refused():
    with pytest.raises(ValueError, match="tcsh"):
        generate("tcsh", build_parser())
