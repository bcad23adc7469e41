"""Packaging: the wheel carries the systemd units and the examples, and installs give working scripts.

The packaging tier (tests/packaging): building the wheel and making venvs cost seconds of pip on
every run and test nothing a change to kairos' code touches, so the default gate leaves them to
``.ci/run``, which runs this tier. The wheel is installed without its dependencies (no network
needed): ``--version`` and ``systemd install`` must work without them, and ``completion`` with shtab
alone. pipx and uv are exercised only where they are installed; ``.ci/run`` also installs both and
checks ``pipx install .`` and ``uv tool install .``. What ``kairos completion`` prints:
tests/integration/kairos/test_completion_verb.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shtab
from paths_support import REPO

pytestmark = pytest.mark.packaging

TIMEOUT_S = 300


def _run(argv: list[str], env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, **kw)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}: {proc.stdout}{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(REPO)]
    if importlib.util.find_spec("hatchling") is not None:
        argv.insert(4, "--no-build-isolation")  # the backend is here already: no download
    _run(argv)
    (built,) = out.glob("kairos-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with only the wheel installed (and shtab); its bin folder."""
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)])
    # `kairos completion` needs shtab, and only shtab: the one dependency copied in (pure Python, one package).
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    shutil.copytree(Path(shtab.__file__).parent, Path(site) / "shtab")
    yield venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KAIROS_HOME", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.mark.slow
def test_wheel_contains_the_units_and_the_examples(wheel):
    """Every file of systemd/ and examples/ is in the wheel under kairosd/_data/, byte for byte."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for folder in ("systemd", "examples"):
            files = [p for p in (REPO / folder).iterdir() if p.is_file()]
            assert files, folder
            for path in files:
                member = f"kairosd/_data/{folder}/{path.name}"
                assert member in names
                assert archive.read(member) == path.read_bytes()
    assert {"kairos/__main__.py", "kairosd/__main__.py"} <= names


def test_wheel_contains_the_kinds_model_of_the_cautious_offline_reading(wheel):
    """The package data kinds.load() reads (importlib.resources), byte for byte."""
    shipped = REPO / "daemon" / "kairosd" / "consolidation" / "offline" / "data" / "kinds.json.gz"
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("kairosd/consolidation/offline/data/kinds.json.gz") == shipped.read_bytes()


@pytest.mark.slow
def test_installed_wheel_reads_its_kinds_model(installed):
    """Installed, no checkout around it: the cautious reading's model loads from the package."""
    probe = "from kairosd.consolidation.offline import kinds; print(kinds.load().top('Never push directly to main.'))"
    assert _run([str(installed / "python"), "-c", probe], _clean_env()).stdout.strip() == "rule"


@pytest.mark.slow
def test_installed_wheel_has_version_flags_completion_and_finds_its_units(installed, tmp_path):
    """A plain wheel install: both --version flags, completion, and install --dry-run from the packaged units."""
    env = _clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    kairos = str(installed / "kairos")
    assert _run([kairos, "--version"], env).stdout.strip() == "kairos 0.1.0"
    assert _run([str(installed / "kairosd"), "--version"], env).stdout.strip() == "kairosd 0.1.0"
    assert (
        "complete -o bashdefault -o default -F _shtab_kairos kairos" in _run([kairos, "completion", "bash"], env).stdout
    )
    doc = json.loads(_run([kairos, "systemd", "install", "--socket", "--dry-run", "--json"], env).stdout)
    # The venv's own kairosd, not this test's: found next to the interpreter that runs kairos.
    assert doc["exec_start"] == str(installed / "kairosd")
    service = doc["contents"]["kairosd.service"]
    assert f"ExecStart={installed / 'kairosd'}\n" in service
    # The installed package has no checkout around it, so the text came from kairosd/_data.
    assert (REPO / "systemd" / "kairosd.service").read_text().split("[Unit]", 1)[1].replace(
        "ExecStart=%h/.local/bin/kairosd", f"ExecStart={installed / 'kairosd'}"
    ) == service.split("[Unit]", 1)[1]
    assert doc["unit_dir"] == str(tmp_path / "config" / "systemd" / "user")


def _tool_install(tool: str, tmp_path: Path) -> Path:
    """Install this checkout with pipx or uv into private folders; the bin folder they link the scripts into."""
    exe = shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} is not installed (.ci/run checks it)")
    bin_dir = tmp_path / "bin"
    if tool == "pipx":
        env = _clean_env(
            PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "man")
        )
        _run([exe, "install", "--python", sys.executable, str(REPO)], env)
    else:
        env = _clean_env(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(bin_dir))
        _run([exe, "tool", "install", "--python", sys.executable, str(REPO)], env)
    return bin_dir


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_tool_install_gives_working_scripts_and_a_stable_exec_start(tool, tmp_path):
    """pipx install . / uv tool install . give both scripts; ExecStart is the kairosd link in the tool's bin folder."""
    bin_dir = _tool_install(tool, tmp_path)
    env = _clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    assert _run([str(bin_dir / "kairos"), "--version"], env).stdout.startswith("kairos ")
    assert _run([str(bin_dir / "kairosd"), "--version"], env).stdout.startswith("kairosd ")
    doc = json.loads(_run([str(bin_dir / "kairos"), "systemd", "install", "--dry-run", "--json"], env).stdout)
    # The link survives `pipx upgrade` / `uv tool upgrade`, unlike a path inside the tool's venv.
    assert doc["exec_start"] == str(bin_dir / "kairosd")
