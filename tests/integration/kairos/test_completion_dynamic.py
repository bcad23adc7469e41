"""``kairos __complete KIND`` and the completion scripts that call it at TAB time (issue 24, item 18)."""

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
from session_support import Kairosd, hook_home, hook_kd

from kairos.app import build_parser
from kairos.commands.completion import generate

__all__ = ["hook_home", "hook_kd"]  # the fixtures `home` and `kd`

BIN = str(Path(sys.executable).parent)  # where the `kairos` console script of this install is


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}


def _kairos(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
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


def test_complete_without_a_daemon_prints_nothing_and_exits_0(home: Path):
    for kind in ("tasks", "jobs", "board", "nonsense"):
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
    proc = _kairos("__complete", "tz")
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
        ("bash", ['command kairos __complete "$1"', "dyn=tasks", "_kairos_dynamic tz"]),
        ("zsh", ["command kairos __complete $1", "dyn=tasks", "_kairos_dynamic tz"]),
        ("fish", ["(kairos __complete tasks 2>/dev/null)", "(kairos __complete jobs 2>/dev/null)"]),
    ],
)
def test_the_scripts_call_complete(shell: str, calls: list[str]):
    script = generate(shell, build_parser())
    for call in calls:
        assert call in script
    assert "__complete board" in script or "dyn=board" in script


BASH_DRIVER = """
source "$1"
comp() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _kairos; echo "${COMPREPLY[*]}"; }
comp kairos pause ''
comp kairos add --tz Europe/Par
comp kairos task cancel ''
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
        [bash, "-c", BASH_DRIVER, "driver", str(script)], env=_env(), capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    assert sorted(out[0].split()) == ids
    assert out[1] == "Europe/Paris"
    assert out[2] == ""  # no background task


ZSH_DRIVER = """
compdef() { : }
_describe() { print -r -- "describe ${(P)${@[-1]}}" }
_files() { print -r -- files }
source "$1"
comp() { words=("$@"); CURRENT=${#words}; PREFIX=${words[-1]}; _kairos }
comp kairos resume ''
"""


def test_zsh_describes_the_task_ids_with_their_names(kd: Kairosd, tmp_path: Path):
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    task_id = _add("nightly: build")
    script = tmp_path / "_kairos"
    script.write_text(generate("zsh", build_parser()))
    out = subprocess.run(
        [zsh, "-f", "-c", ZSH_DRIVER, "driver", str(script)], env=_env(), capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    assert out == [f"describe {task_id}:nightly: build"]


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
