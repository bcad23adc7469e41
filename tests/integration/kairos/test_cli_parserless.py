"""``kairos list [--json]`` is handed to its handler without building the parser (see ``kairos.app``).

It must mean exactly what the parser would make of the same line, and must really skip argparse
(the point of it: ``bench/bench_cli.py``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from kairos.app import PARSERLESS, _list_args, build_parser


def _parsed(argv: list[str]) -> dict[str, object]:
    """What ``run`` hands the handler after the parser: --json before the verb counts as the verb's own."""
    args = build_parser(argv[0] if argv[0] != "--json" else argv[1]).parse_args(argv)
    if args.global_json:
        args.json = True
    return vars(args)


@pytest.mark.parametrize("line", sorted(PARSERLESS))
def test_parserless_lines_mean_what_the_parser_makes_of_them(line):
    assert vars(_list_args(list(line))) == _parsed(list(line))


@pytest.mark.parametrize(
    ("argv", "argparse_loaded"),
    [(["list"], False), (["ls", "--json"], False), (["list", "--problems"], True), (["list", "-h"], True)],
)
def test_list_runs_without_argparse(tmp_path, argv, argparse_loaded):
    """No daemon here (kairos reads the store from disk, issue 24 item 9, after its one line saying so); what
    counts is what the CLI itself imported."""
    code = (
        "import sys\n"
        "from kairos.app import run\n"
        "try:\n"
        f"    code = run({argv!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "sys.stderr.write(repr('argparse' in sys.modules))\n"
        "sys.exit(code)\n"
    )
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", "KAIROS_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.stderr.endswith(repr(argparse_loaded)), done.stderr
    if "-h" not in argv:
        offline = "--problems" not in argv  # the quarantine is the daemon's to read
        assert done.returncode == (0 if offline else 3), done.stderr
        assert "kairosd is not running" in done.stderr


@pytest.mark.parametrize("argv", [["list"], ["ls", "--json"]])
def test_the_quick_exit_keeps_the_exit_code_and_what_was_printed(tmp_path, argv):
    """`kairos list` ends with os._exit (kairos.__main__._end): its output and exit code must survive it."""
    code = f"import sys\nsys.argv = ['kairos', *{argv!r}]\nfrom kairos.__main__ import main\nmain()\n"
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", "KAIROS_HOME": str(tmp_path), "PYTHONUNBUFFERED": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("kairos: kairosd is not running")
    if "--json" in argv:
        assert done.stdout.startswith("{")  # printed before the quick exit, not lost
