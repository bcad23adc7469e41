"""``kairos __complete KIND`` and the completion scripts that call it at TAB time (issue 24, item 18).

``kairos`` runs in this process (tests/cli_inprocess_support.py) where what it prints is the test; the
shells' tests call the installed ``kairos`` script as a process at TAB time, as a user's shell does,
and ``__complete tz`` runs once as ``python -m kairos``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import zoneinfo
from pathlib import Path

import pytest
from cli_inprocess_support import kairos_here
from session_support import Kairosd, hook_home, hook_kd, wait_for

from kairos.app import build_parser
from kairos.commands.completion import generate

__all__ = ["hook_home", "hook_kd"]  # the fixtures `home` and `kd`

BIN = str(Path(sys.executable).parent)  # where the `kairos` console script of this install is


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}


def _kairos(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``kairos ARGS`` in this process (the harness kairosd serves on its own thread)."""
    return kairos_here(*args, env=_env(), cwd=cwd)


def _process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kairos", *args], env=_env(), capture_output=True, text=True, timeout=60, cwd=cwd
    )


def _add(name: str) -> str:
    proc = _kairos("add", "0 9 * * *", f"the prompt of {name}", "--name", name, "--json")
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["task"]["id"])


def test_complete_tasks_prints_each_id_with_its_name(kd: Kairosd):
    """Every scheduled task, one a line: its id, a tab, its name."""
    first, second = _add("standup"), _add("weekly\treview")
    proc = _kairos("__complete", "tasks")
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert sorted(proc.stdout.splitlines()) == sorted([f"{first}\tstandup", f"{second}\tweekly review"])


def test_complete_board_prints_the_entries_of_the_current_project(kd: Kairosd, tmp_path: Path):
    added = _kairos("board", "add", "use uv, not pip", "--json", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    proc = _kairos("__complete", "board", cwd=tmp_path)
    ((entry_id, text),) = [line.split("\t") for line in proc.stdout.splitlines()]
    assert text == "use uv, not pip"
    assert entry_id in added.stdout


def test_complete_jobs_prints_each_background_task_with_its_prompt(kd: Kairosd):
    started = _kairos("task", "start", "--shell", "count the lines", "--json", "--", "cat")
    assert started.returncode == 0, started.stderr
    job_id = json.loads(started.stdout)["task"]["id"]
    assert _kairos("__complete", "jobs").stdout == f"{job_id}\tcount the lines\n"


def test_complete_inbox_prints_each_waiting_run_with_its_task(kd: Kairosd):
    """The runs an inbox holds (what `kairos inbox --ack` takes): the run id, a tab, its task's name."""
    task_id = _add("standup")
    fired = _kairos("run", task_id, "--json")
    assert fired.returncode == 0, fired.stderr
    run_id = wait_for(lambda: json.loads(_kairos("inbox", "--json").stdout).get("items"), "the inbox item")[0]["id"]
    assert run_id in fired.stdout
    assert _kairos("__complete", "inbox").stdout == f"{run_id}\tstandup\n"
    acked = _kairos("inbox", "--ack", run_id)
    assert acked.returncode == 0, acked.stderr
    assert _kairos("__complete", "inbox").stdout == ""


def test_complete_without_a_daemon_prints_nothing_and_exits_0(home: Path):
    for kind in ("tasks", "jobs", "board", "inbox", "nonsense"):
        proc = _kairos("__complete", kind)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_complete_gives_up_quietly_on_a_daemon_that_never_answers(home: Path):
    """A socket that takes the connection and says nothing: nothing printed, exit 0, within the timeout."""
    from kairos.dynamic import TIMEOUT_S
    from kairosd.system.paths import socket_path

    Path(socket_path()).parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as mute:
        mute.bind(socket_path())
        mute.listen(4)  # never accepted: the client's connect succeeds, its read waits
        proc = _kairos("__complete", "tasks")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert TIMEOUT_S <= 1.0


def test_complete_tz_lists_every_zone():
    proc = _process("__complete", "tz")  # a real process: __main__ dispatches it before any parser
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == sorted(zoneinfo.available_timezones())


def test_complete_tz_reads_its_cache_while_the_zone_database_is_unchanged(home: Path):
    """The zones are kept next to the socket under the database's stamp; another stamp reads it again."""
    from kairos.dynamic import ZONES_CACHE

    (home / "run").mkdir()
    cache = home / "run" / ZONES_CACHE
    first = _kairos("__complete", "tz").stdout
    key, *zones = cache.read_text().splitlines()
    assert zones == first.splitlines() == sorted(zoneinfo.available_timezones())
    cache.write_text(f"{key}\nMars/Olympus_Mons\n")
    assert _kairos("__complete", "tz").stdout == "Mars/Olympus_Mons\n"  # read from the cache
    cache.write_text("another database\nMars/Olympus_Mons\n")
    assert _kairos("__complete", "tz").stdout == first  # stale: walked again, and rewritten
    assert cache.read_text().splitlines()[0] == key


def test_complete_tz_makes_no_folder(home: Path):
    """Before kairosd ever ran, a TAB writes nothing (no runtime folder is created for a cache)."""
    assert _kairos("__complete", "tz").stdout.splitlines() == sorted(zoneinfo.available_timezones())
    assert not (home / "run").exists()


@pytest.mark.parametrize(
    ("shell", "calls"),
    [
        ("bash", ['command kairos __complete "$1"', "_pause_pos_0_COMPGEN=_kairos_complete_tasks", "_complete_tz"]),
        ("zsh", ["command kairos __complete $kind", ":_kairos_complete tasks", ":_kairos_complete tz"]),
        ("fish", ["(kairos __complete tasks 2>/dev/null)", "(kairos __complete jobs 2>/dev/null)"]),
    ],
)
def test_the_scripts_call_complete(shell: str, calls: list[str]):
    script = generate(shell, build_parser())
    for call in calls:
        assert call in script
    assert "__complete board" in script or "_kairos_complete board" in script or "_complete_board" in script
    assert "__complete inbox" in script or "_kairos_complete inbox" in script or "_complete_inbox" in script


BASH_DRIVER = """
source "$1"
comp() {
    COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
    _shtab_kairos kairos "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "${COMPREPLY[*]}"
}
comp kairos pause ''
comp kairos add --tz Europe/Par
comp kairos task cancel ''
comp kairos pause "$2" ''
comp kairos export --all --to systemd ''
"""


def test_bash_completes_pause_with_the_task_ids(kd: Kairosd, tmp_path: Path):
    """`kairos pause <TAB>` in bash offers the ids kairosd has; `--tz Europe/Par<TAB>` the zone."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    ids = sorted([_add("one"), _add("two")])
    script = tmp_path / "kairos.bash"
    script.write_text(generate("bash", build_parser()))
    out = subprocess.run(
        [bash, "-c", BASH_DRIVER, "driver", str(script), ids[0]],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert sorted(out[0].split()) == ids
    assert out[1] == "Europe/Paris"
    assert out[2] == ""  # no background task
    assert sorted(out[3].split()) == ids  # `pause` takes several
    assert sorted(out[4].split()) == ids


ZSH_DRIVER = """
compdef() { : }
_arguments() { : }  # the script completes the line it was loaded for: none here
_describe() { print -r -- "describe ${(P)${@[-1]}}" }
source "$1"
_kairos_complete tasks
print -r -- ${(M)_shtab_kairos_resume_options:#*_kairos_complete*}
"""


def test_zsh_describes_the_task_ids_with_their_names(kd: Kairosd, tmp_path: Path):
    """The function the script gives _arguments for an id describes each with its name; `resume` uses it."""
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    task_id = _add("nightly: build")
    script = tmp_path / "_kairos"
    script.write_text(generate("zsh", build_parser()))
    out = subprocess.run(
        [zsh, "-f", "-c", ZSH_DRIVER, "driver", str(script)], env=_env(), capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    assert out[0] == f"describe {task_id}:nightly: build"
    assert out[1].endswith(":_kairos_complete tasks")


def test_fish_completes_run_with_the_task_ids(kd: Kairosd, tmp_path: Path):
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    task_id = _add("fishy")
    script = tmp_path / "kairos.fish"
    script.write_text(generate("fish", build_parser()))
    out = subprocess.run(
        [fish, "--no-config", "-c", f"source {script}; complete -C'kairos run '"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert f"{task_id}\tfishy" in out.splitlines()


# zsh's completion system runs only in a terminal: a zsh on a pseudo-terminal (zpty) with compinit and the
# script on its fpath gets the keys, and `expect` reads its screen until the text shows (bounded wait).
# `ask` types a line and TAB, and types them again each 3 s the text has not shown: a TAB gives up on a
# kairosd slower than 0.8 s (kairos.dynamic.TIMEOUT_S), as it should, and a loaded test machine has one.
# no_list_ambiguous: the list shows even when the TAB also inserts a common prefix (zsh's default lists only
# when it inserts nothing: two task ids with the same first digit, one run in 16, never showed the list).
ZPTY_DRIVER = r"""
zmodload zsh/zpty
typeset -F SECONDS
expect() {
    local deadline=$(( SECONDS + ${2:-30} )) buf="" chunk
    while (( SECONDS < deadline )); do
        if zpty -r -t z chunk; then
            buf+=$chunk
            [[ $buf == *"$1"* ]] && { print -r -- "found: $1"; return 0 }
        else
            sleep 0.05
        fi
    done
    [[ -z $3 ]] && print -r -- "missing: $1"
    return 1
}
ask() {
    local tries
    for tries in 1 2 3 4 5 6 7 8 9 10; do
        zpty -w -n z $'\x15'"$1"$'\t'
        expect "$2" 3 quiet && return 0
    done
    print -r -- "missing: $2"
}
zpty z "zsh -f -i"
zpty -w z "PS1='%% '; setopt no_list_ambiguous"
zpty -w z "fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D; print RE''ADY"
expect READY
shift
while (( $# )); do
    ask "$1" "$2"
    shift 2
done
zpty -d z
"""


def test_zsh_completes_ids_zones_and_choices_in_its_completion_system(kd: Kairosd, tmp_path: Path):
    """A real zsh with compinit: a task id with its name, a zone, a choice holding a colon, a subcommand."""
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    task_id, _ = _add("nightly"), _add("weekly")
    (tmp_path / "fpath").mkdir()
    (tmp_path / "fpath" / "_kairos").write_text(generate("zsh", build_parser()))
    keys = {
        "kairos resume ": f"{task_id}  -- nightly",
        "kairos cron next --tz Europe/Par": "Europe/Paris",
        "kairos add --target ": "webhook:",
        "kairos add --overlap ": "skip",
        "kairos daemon st": "start kairosd in the background",
    }
    out = subprocess.run(
        [zsh, "-f", "-c", ZPTY_DRIVER, "driver", str(tmp_path / "fpath"), *(w for pair in keys.items() for w in pair)],
        env={**_env(), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=200,
    ).stdout.splitlines()
    assert out == ["found: READY", *(f"found: {text}" for text in keys.values())]
