"""The README's shell lines run as written on a fresh account (issue 15, item 4).

Every ```sh block of README.md is preceded by a marker line:

- ``<!-- readme-test: run -->``: the block runs here, line by line as one bash script
  with ``set -e``, in a fresh temporary HOME (no XDG or KAIROS variables), with this
  checkout's ``kairos`` first on PATH and no agent CLI on it;
- ``<!-- readme-test: skip REASON -->``: it does not (systemctl, the network, a real
  agent CLI, a daemon, or a command that runs until Ctrl-C), and REASON says why.

A block without a marker fails :func:`test_every_shell_block_is_marked`, naming its
line: mark it when you add it (or when merging someone else's).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths_support import REPO

ROOT = REPO
README = ROOT / "README.md"
MARKER = re.compile(r"<!-- readme-test: (run|skip (\S.*)) -->")


def blocks() -> list[tuple[int, str | None, str]]:
    """(line of the opening fence, "run" / "skip" / None for no marker, the block's text)."""
    lines = README.read_text().split("\n")
    found: list[tuple[int, str | None, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start = i
            end = lines.index("```", i + 1)
            marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
            kind = None if marker is None else ("run" if marker.group(1) == "run" else "skip")
            found.append((start + 1, kind, "\n".join(lines[start + 1 : end])))
            i = end
        i += 1
    return found


def test_every_shell_block_is_marked():
    unmarked = [line for line, kind, _text in blocks() if kind is None]
    assert unmarked == [], (
        f"README.md shell blocks at lines {unmarked} have no '<!-- readme-test: run -->' or "
        "'<!-- readme-test: skip REASON -->' line before them (see tests/integration/project/test_readme.py)"
    )


def _fresh_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KAIROS_", "XDG_", "CLAUDE_", "CODEX_", "COPILOT_", "GEMINI_"))
    }
    bin_dir = str(Path(sys.executable).parent)  # this checkout's kairos and kairosd
    env.update(HOME=str(home), PATH=f"{bin_dir}:/usr/bin:/bin", TZ="UTC")
    return env


RUN = [(line, text) for line, kind, text in blocks() if kind == "run"]


@pytest.mark.parametrize(("line", "text"), RUN, ids=[f"line-{line}" for line, _ in RUN])
def test_a_run_block_runs_on_a_fresh_home(tmp_path, line, text):
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=ROOT,
        env=_fresh_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"README.md block at line {line} failed:\n{done.stderr[-3000:]}"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_the_webhook_key_line_and_the_receiver_start_on_a_fresh_home(tmp_path):
    """The Webhook block's first line makes the key; its receiver reads it (it serves until stopped)."""
    ((_line, text),) = [(n, t) for n, k, t in blocks() if "webhook.secret" in t]
    key_line = text.splitlines()[0]
    home = tmp_path / "home"
    home.mkdir()
    env = _fresh_env(home)
    subprocess.run(["bash", "-euo", "pipefail", "-c", key_line], cwd=ROOT, env=env, check=True, timeout=60)
    assert len((home / ".config" / "kairos" / "webhook.secret").read_text().strip()) == 64
    receiver = next(x for x in text.splitlines() if x.startswith("python3 examples/webhook_receiver.py"))
    command = receiver.split("#")[0].strip().replace("8765", "0")  # any free port
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2)  # serving, not dead with a KeyError
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        assert "Error" not in proc.stderr.read()
        proc.stderr.close()
