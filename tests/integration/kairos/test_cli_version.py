"""``kairos --version`` is answered before the parser is built, with argparse's exact output."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kairos.__main__ import main
from kairos.app import run


def _exit_and_out(capsys: pytest.CaptureFixture[str], call: object) -> tuple[object, str]:
    with pytest.raises(SystemExit) as info:
        call()  # type: ignore[operator]
    return info.value.code, capsys.readouterr().out


@pytest.mark.parametrize("columns", ["5", "13", "14", "15", "80", "300"])
def test_version_fast_path_prints_what_argparse_prints(capsys, monkeypatch, columns):
    """Same exit code and bytes as the full parser, also where argparse wraps the line (narrow terminals)."""
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(sys, "argv", ["kairos", "--version"])
    fast = _exit_and_out(capsys, main)
    full = _exit_and_out(capsys, lambda: run(["--version"]))
    assert fast == full
    assert fast[0] == 0


def test_version_imports_no_verb_module():
    """The point of the fast path: neither argparse nor any verb module is loaded to print one line."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(repr(sorted(\n"
        "    m for m in sys.modules if m == 'argparse' or m.startswith(('kairos.commands', 'kairos.app'))))))\n"
        "sys.argv = ['kairos', '--version']\n"
        "from kairos.__main__ import main\n"
        "main()\n"
    )
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kairos ")
    assert done.stderr == "[]"


@pytest.mark.parametrize("argv", [["--version", "--json"], ["--json", "--version"]])
def test_version_json_is_a_document(capsys, argv):
    """With --json, --version prints a JSON document, not argparse's line."""
    import json

    from kairosd import __version__
    from kairosd.core.wire import verbs as documents

    assert run(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    documents.check("--version", doc)
    assert doc == {"kairos": __version__}
