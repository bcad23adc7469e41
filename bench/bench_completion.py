"""What a TAB costs with the completion scripts, as a ratio to a bare interpreter start.

shtab's scripts are static: a TAB on a verb, an option or a choice runs no Python. Only an id asks
kairosd, through `kairos __complete KIND`. argcomplete, the alternative (docs/completion.md), runs
kairos on every TAB and builds the whole parser to read the line. Against a real kairosd holding N
tasks (default 200), each a whole process:

    baseline           python3 -c pass                        (same interpreter, timed in turn)
    bash, a verb       bash: source the script, complete `kairos pa`  (shtab; no Python)
    bash, a task id    bash: source the script, complete `kairos pause `  (calls kairos __complete)
    __complete tasks   the id helper alone
    full parser        python: build kairos' whole parser (the least an argcomplete TAB pays)

A bash row exits 1 if nothing was offered, so a broken script stops the bench instead of timing
nothing. Each repeat runs every command once, in turn, so a change in the machine's load reaches the
baseline and the commands alike; each figure is the median of R repeats. No goal is set.

    python bench/bench_completion.py [--tasks N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import Row, precompile
from bench_cli import interleaved_medians

BASH_TAB = """
source "$1"
shift
COMP_WORDS=(kairos "$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_shtab_kairos kairos "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
(( ${#COMPREPLY[@]} )) || exit 1
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=int, default=200, help="tasks kairosd holds")
    parser.add_argument("--repeats", type=int, default=21)


def measure(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """(what, median seconds, baseline seconds) for each row."""
    precompile()
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kbench"))
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC", "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
    kairos_bin = shutil.which("kairos", path=bin_dir) or "kairos"
    bash = shutil.which("bash") or "bash"
    subprocess.run([kairos_bin, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        from kairos.client import Client

        client = Client(home / "run" / "kairosd.sock")
        for i in range(args.tasks):
            client.call("POST", "/tasks", {"prompt": f"bench task {i}", "cron": f"{i % 60} */2 * * *", "tz": "UTC"})
        script = home / "kairos.bash"
        script.write_text(subprocess.run([kairos_bin, "completion", "bash"], env=env, capture_output=True,
                                         text=True, check=True).stdout)  # fmt: skip
        rows = [
            ("bash: TAB on a verb (shtab, no Python)", [bash, "-c", BASH_TAB, "tab", str(script), "pa"]),
            ("bash: TAB on a task id (kairos __complete)", [bash, "-c", BASH_TAB, "tab", str(script), "pause", ""]),
            ("kairos __complete tasks", [kairos_bin, "__complete", "tasks"]),
            ("full parser build (argcomplete's floor per TAB)", [sys.executable, "-c", PARSER]),
        ]
        base, *medians = interleaved_medians([[sys.executable, "-c", "pass"], *(cmd for _, cmd in rows)], env,
                                             args.repeats)  # fmt: skip
        return [(name, seconds, base) for (name, _), seconds in zip(rows, medians, strict=True)]
    finally:
        subprocess.run([kairos_bin, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)


PARSER = "from kairos.app import build_parser; build_parser()"


def run(args: argparse.Namespace) -> list[Row]:
    return [
        Row("completion TAB", name, seconds * 1e3, "ms", "python3 -c pass", base * 1e3)
        for name, seconds, base in measure(args)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    print(f"{'what':50s} {'median ms':>10s} {'base ms':>8s} {'ratio':>7s}")
    for name, seconds, base in measure(args):
        print(f"{name:50s} {seconds * 1000:10.1f} {base * 1000:8.1f} {seconds / base:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
