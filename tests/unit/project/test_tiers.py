"""scripts/tiers.py: the rules that put a test file in its tier and package folder, and the tree obeys them."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import pytest
from paths_support import REPO, TESTS


def _tiers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiers_script", REPO / "scripts" / "tiers.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tiers = _tiers()


@pytest.mark.parametrize(
    ("text", "tier"),
    [
        ("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.stress]\nimport subprocess\n", "stress"),
        ("import subprocess\n\nimport pytest\n\npytestmark = pytest.mark.packaging\n", "packaging"),
        ("import subprocess\n\ndef test_x():\n    subprocess.run(['kairos'])\n", "integration"),
        ("from reliability_support import Home, wait_for\n", "integration"),
        ("done = await asyncio.create_subprocess_exec('x')\n", "integration"),
        ("from reliability_support import InProcessDaemon\nfrom kairosd.testing import FakeClock\n", "unit"),
        ("from kairosd.core.models import new_task\n# mentions a subprocessor\n", "unit"),
    ],
)
def test_the_tier_follows_from_what_the_file_does(text: str, tier: str) -> None:
    assert tiers.tier_of(text) == tier


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ("from kairosd.core.models import Task\nfrom kairosd.store.store import JsonStore\n", "kairosd/store"),
        ("from kairosd.core.models import Task\nfrom kairosd.core.errors import E\n", "kairosd/core"),
        ("from kairosd.testing import FakeClock\nfrom kairos.commands import common\n", "kairos/commands"),
        ("from kairosd.config import load_config\n", "kairosd"),
        ("from kairos.client import Client\nfrom kairos.app import main\nimport kairos.ui.views\n", "kairos"),
        ("import json\n", "project"),
    ],
)
def test_the_folder_is_the_package_imported_most(text: str, folder: str) -> None:
    assert tiers.package_of(text) == folder


def test_every_test_file_is_in_its_tiers_folder() -> None:
    """A test file added flat (tests/test_x.py) fails here until ``python3 scripts/tiers.py`` places it."""
    assert tiers.loose_files() == [], "run python3 scripts/tiers.py"
    for path in TESTS.rglob("test_*.py"):
        tier = path.relative_to(TESTS).parts[0]
        assert tier in tiers.TIERS, path


def test_test_file_names_are_unique_across_the_tiers() -> None:
    """pytest imports each test file under its bare name: two of one name would collide."""
    names = [p.name for p in TESTS.rglob("test_*.py") if "compat" not in p.relative_to(TESTS).parts[:1]]
    assert sorted(names) == sorted(set(names))


GATE = ("unit", "integration")


def test_the_default_gate_is_unit_and_integration_and_ci_runs_every_other_tier() -> None:
    """scripts/check leaves out exactly the tiers outside the gate, and .ci/run runs each of them (a
    tier added to tiers.py and the gate's exclusions but not to .ci/run would go untested in CI)."""
    check = (REPO / "scripts" / "check").read_text()
    (default,) = re.findall(r'^\s*"unit and integration"\) tiers="([^"]+)"', check, re.M)
    assert set(re.findall(r"not (\w+)", default)) == set(tiers.TIERS) - set(GATE)
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^export KAIROS_TEST_SIZE=full$", ci, re.M)
    assert re.search(r"^bash scripts/check$", ci, re.M), "the gate, with lint and types"
    for tier in set(tiers.TIERS) - set(GATE) - {"compat"}:
        assert re.search(rf"^KAIROS_TIERS={tier} bash scripts/check --no-lint$", ci, re.M), tier
    assert re.search(r"^bash scripts/compat$", ci, re.M)
    assert "pytest tests/compat -m compat" in (REPO / "scripts" / "compat").read_text()


IMPORTS_A_TEST_MODULE = re.compile(r"^\s*(?:from|import)\s+test_\w+", re.M)
# A flat path to a test file, as docstrings wrote them before the tiers (the corpus' transcripts and
# tiers.py's own description of the flat layout quote such paths on purpose).
FLAT_PATH = re.compile(r"\btests/(?:reliability/)?test_\w+\.py\b")
PROSE = ("daemon", "cli", "docs", "scripts", "tests", ".ci")
QUOTED = {
    "scripts/tiers.py",
    "tests/unit/project/test_tiers.py",
    "tests/unit/kairosd/consolidation/test_consolidation_cues.py",
}


def test_no_test_file_imports_another() -> None:
    """Shared helpers live in tests/*_support.py. A test file imported by another ties the two files (and
    their tiers) together, and nothing finds it any more: the tiers put test files in folders that are
    not on the path, and conftest has no finder for them."""
    offenders = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if "compat" not in path.relative_to(TESTS).parts[:1] and IMPORTS_A_TEST_MODULE.search(path.read_text())
    ]
    assert offenders == [], "move the shared helpers into a tests/*_support.py module"


def test_no_docstring_names_a_flat_test_path() -> None:
    """A path like tests/test_x.py names a file the tiers moved: say where it is now."""
    found = []
    for top in PROSE:
        for path in (REPO / top).rglob("*"):
            rel = path.relative_to(REPO).as_posix()
            if not path.is_file() or path.suffix not in (".py", ".md", "") or rel in QUOTED:
                continue
            if "consolidation_corpus" in rel or "__pycache__" in rel:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            found += [f"{rel}: {m.group(0)}" for m in FLAT_PATH.finditer(text)]
    assert found == []
