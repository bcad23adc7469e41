"""The import rules of pyproject.toml's ``[tool.importlinter]``, checked on every test run.

- ``daemon-layers``: each kairosd package imports only the layers below it (imports inside
  functions count, so a lazy import cannot dodge the rule).
- ``cli-public-face``: the CLI uses only kairosd's shared kernel (core, system, the doctor's report).
- ``no-cycles``: no import cycle among the modules of any package.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAIROSD = REPO / "daemon" / "kairosd"


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the tree at ``root`` with its pyproject.toml.

    In a child process: import-linter configures logging, which would silence the loggers
    of the tests that run after this one in the same process.
    """
    run = "import sys, importlinter.cli as c; sys.exit(c.lint_imports(no_cache=True, no_logo=True))"
    env = {**os.environ, "PYTHONPATH": f"{root / 'daemon'}{os.pathsep}{root / 'cli'}"}
    return subprocess.run([sys.executable, "-c", run], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_the_import_contracts_are_kept() -> None:
    done = lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    for contract in ("each package imports only the layers below it", "shared kernel", "no import cycles"):
        assert contract in done.stdout


def test_a_lazy_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The contract sees imports inside functions: a core module reaching up lazily is reported."""
    # The same contracts over a copy of the tree, with one upward import added inside a function.
    shutil.copytree(KAIROSD, tmp_path / "daemon" / "kairosd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "cli", tmp_path / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    plan = tmp_path / "daemon" / "kairosd" / "core" / "plan.py"
    plan.write_text(plan.read_text() + "\n\ndef _reach_up() -> None:\n    from kairosd.scheduling import scheduler\n")
    run = "import sys, importlinter.cli as c; sys.exit(c.lint_imports(no_cache=True, no_logo=True))"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'daemon'}{os.pathsep}{tmp_path / 'cli'}"}
    done = subprocess.run(
        [sys.executable, "-c", run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kairosd.core.plan -> kairosd.scheduling.scheduler" in done.stdout


def test_every_package_says_what_it_may_import() -> None:
    """Each package's docstring states its import rule, so a reader need not open pyproject.toml."""
    for init in sorted(KAIROSD.glob("*/__init__.py")):
        if init.parent.name.startswith("_") or init.parent.name == "data":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "Imports:" in doc, f"{init.relative_to(REPO)} does not say what it may import"
