"""The import rules of pyproject.toml's ``[tool.importlinter]``, checked on every test run.

- ``daemon-layers``: each kairosd package imports only the layers below it (imports inside
  functions count, so a lazy import cannot dodge the rule).
- ``cli-public-face``: the CLI uses only kairosd's shared kernel (core and system), directly or
  through any chain of imports.
- ``consolidation-layers``, ``consolidation-parts``, ``consolidation-offline-pure``: inside
  consolidation, offline and remagent sit above board and transcripts, no subpackage reaches up
  to the runs, service, worker or routes, and the offline extractor stays pure.
- ``no-cycles``: no import cycle among the modules of any package.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from paths_support import REPO

REPO = REPO
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


def copy_tree(tmp_path: Path) -> Path:
    """A copy of the daemon, the CLI and pyproject.toml at ``tmp_path``, to break on purpose."""
    shutil.copytree(KAIROSD, tmp_path / "daemon" / "kairosd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "cli", tmp_path / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_a_lazy_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The contract sees imports inside functions: a core module reaching up lazily is reported."""
    # The same contracts over a copy of the tree, with one upward import added inside a function.
    root = copy_tree(tmp_path)
    plan = root / "daemon" / "kairosd" / "core" / "plan.py"
    plan.write_text(plan.read_text() + "\n\ndef _reach_up() -> None:\n    from kairosd.scheduling import scheduler\n")
    done = lint(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kairosd.core.plan -> kairosd.scheduling.scheduler" in done.stdout


def test_the_cli_reaching_the_daemon_through_an_intermediary_is_caught(tmp_path: Path) -> None:
    """An indirect import counts: the CLI imports an allowed kernel module that imports the config.

    (With ``allow_indirect_imports = true`` the CLI's contract passed this; only the layers noticed.)
    """
    root = copy_tree(tmp_path)
    relay = root / "daemon" / "kairosd" / "system" / "relay.py"
    relay.write_text('"""An intermediary."""\n\nfrom kairosd.config import load_config as load_config\n')
    verb = root / "cli" / "kairos" / "commands" / "doctor.py"
    verb.write_text(verb.read_text() + "\n\ndef _via_the_kernel() -> None:\n    from kairosd.system import relay\n")
    done = lint(root)
    assert done.returncode == 1, done.stdout + done.stderr
    cli_contract = done.stdout[done.stdout.index("kairos (the CLI) uses only") :]
    assert "kairos.commands.doctor -> kairosd.system.relay" in cli_contract
    assert "kairosd.system.relay -> kairosd.config" in cli_contract


def test_a_consolidation_part_reaching_up_to_its_service_is_caught(tmp_path: Path) -> None:
    """The board sits below the consolidation service: a board module importing it breaks a contract,
    and so does the offline extractor importing the board's store (it must stay pure)."""
    root = copy_tree(tmp_path)
    package = root / "daemon" / "kairosd" / "consolidation"
    render = package / "board" / "render.py"
    render.write_text(
        render.read_text() + "\n\ndef _reach_up() -> None:\n    from kairosd.consolidation import service\n"
    )
    dates = package / "offline" / "dates.py"
    dates.write_text(
        dates.read_text() + "\n\ndef _load() -> None:\n    from kairosd.consolidation.board import store\n"
    )
    done = lint(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kairosd.consolidation.board.render -> kairosd.consolidation.service" in done.stdout
    assert "kairosd.consolidation.offline.dates -> kairosd.consolidation.board.store" in done.stdout


def test_the_cli_contract_is_an_allow_list() -> None:
    """Every kairosd package but the shared kernel is forbidden to the CLI, so a new package is too."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (cli,) = [c for c in contracts if c["id"] == "cli-public-face"]
    assert cli["allow_indirect_imports"] is False
    packages = {
        f"kairosd.{p.stem if p.is_file() else p.name}"
        for p in KAIROSD.iterdir()
        if not p.name.startswith("_") or p.name == "__main__.py"
        if (p / "__init__.py").exists() or p.suffix == ".py"
    }
    assert set(cli["forbidden_modules"]) == packages - {"kairosd.core", "kairosd.system"}


def test_type_only_imports_count() -> None:
    """A cycle hidden in annotations (config <-> agents, once) is a cycle: TYPE_CHECKING imports are checked."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert settings["exclude_type_checking_imports"] is False


def test_every_package_says_what_it_may_import() -> None:
    """Each package's docstring states its import rule, so a reader need not open pyproject.toml.

    Subpackages too (``consolidation/board``, ``core/schedule``, ...).
    """
    inits = sorted([*KAIROSD.glob("*/__init__.py"), *KAIROSD.glob("*/*/__init__.py")])
    assert KAIROSD / "consolidation" / "board" / "__init__.py" in inits
    for init in inits:
        if init.parent.name.startswith("_") or init.parent.name == "data":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "Imports:" in doc, f"{init.relative_to(REPO)} does not say what it may import"


def test_only_api_modules_serve_routes() -> None:
    """A route is built (a Response made) only in an api module: ``kairosd/api/`` or a package's ``api.py``.

    (The store's quarantine once served its own route, importing Response inside a method.)
    """
    serving = []
    for path in sorted(KAIROSD.rglob("*.py")):
        rel = path.relative_to(KAIROSD)
        if rel.parts[0] == "api" or rel.name == "api.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "kairosd.api.server":
                names = {alias.name for alias in node.names}
                if names & {"Response", "StreamResponse"}:
                    serving.append(str(rel))
    assert serving == []
