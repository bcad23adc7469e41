"""The import budget of the CLI's hot paths: a hook call, ``kairos list`` and a TAB on an id; and of two verbs
off them, ``kairos status`` and ``kairos add``, which read one answer each as its model.

Each runs against a real kairosd. The child records ``sys.modules`` as the call ends, and the test
fails if a heavy module got in: these are the imports that made the hot paths slow before
(docs/performance.md says what each path avoids and why). A new import on the path shows here as
a named module, not as a few milliseconds that nobody notices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import kairosd_answers
from session_support import fixture, remove_home, short_home, wait_for

# What neither path may import: the daemon's and the wire's heavy machinery.
HEAVY = (
    "pydantic",
    "asyncio",
    "httpx",
    "anyio",
    "argparse",  # the list path and the hook path are parserless (kairos.app.PARSERLESS)
    "email",
    "typing",
    "zoneinfo",
    "datetime",  # in a UTC shell: kairos list shows kairosd's UTC times without it (kairos.output._utc_text)
    "kairosd.store",
    "kairosd.config",
    "kairosd.api",
    "kairosd.scheduling",
    "kairosd.app",
    "shtab",  # only `kairos completion` writes a script; a TAB runs it without Python or calls kairos.dynamic
)

# Runs kairos' console script in-process and writes sys.modules as the call ends: the hot paths leave
# through os._exit (kairos.__main__._end), the others through sys.exit. Only os and sys are used here.
SNAPSHOT = """
import os, sys
out = sys.argv.pop(1)
sys.argv[0] = "kairos"
exit_now = os._exit


def dump():
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, "\\n".join(sorted(sys.modules)).encode())
    os.close(fd)


def quick_exit(code):
    dump()
    exit_now(code)


os._exit = quick_exit
from kairos.__main__ import main

try:
    main()
except SystemExit:
    dump()
    raise
"""


@pytest.fixture(scope="module")
def daemon_home() -> Iterator[dict[str, str]]:
    """A real kairosd on a short KAIROS_HOME, with one task; yields the environment to call kairos in.

    One for the module: each test only reads which modules a kairos process imported, and what the others
    did to the daemon (a task added, a session's hook) takes no other path through kairos' code. A start
    per test was ~0.5 s of CPU each, for eight tests."""
    home = short_home()
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC", "KAIROS_DISABLE_CRON": "1", "COLUMNS": "80"}
    for name in ("KAIROS_SPAWNED", "KAIROS_CONSOLIDATE", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"):
        env.pop(name, None)
    log = (home / "kairosd.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "kairosd"], env=env, stdout=log, stderr=log)
    try:
        wait_for(lambda: kairosd_answers(env) or daemon.poll() is not None, "kairosd")
        assert daemon.poll() is None, (home / "kairosd.log").read_text()
        added = subprocess.run(
            [sys.executable, "-m", "kairos", "add", "0 4 * * *", "look at CI"], env=env, capture_output=True
        )
        assert added.returncode == 0, added.stderr
        yield env
    finally:
        daemon.terminate()
        daemon.wait(30)
        log.close()
        remove_home(home)


# The snapshots taken, by (KAIROS_HOME, argv, stdin): a line run twice (`kairos add 0 5 * * * another`, by the
# budget's own check and by the one-answer test) is run once; its modules do not depend on which test asked.
_SNAPSHOTS: dict[tuple[str, tuple[str, ...], str], frozenset[str]] = {}


def imported(env: dict[str, str], tmp_path: Path, argv: list[str], stdin: str = "") -> set[str]:
    key = (env["KAIROS_HOME"], tuple(argv), stdin)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = frozenset(_snapshot(env, tmp_path, argv, stdin))
    return set(_SNAPSHOTS[key])


def _snapshot(env: dict[str, str], tmp_path: Path, argv: list[str], stdin: str) -> set[str]:
    """The modules a real ``kairos ARGV`` process held as it ended."""
    out = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT, str(out), *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(out.read_text().split("\n"))


# What a verb that reads one answer as its model (kairos.answers) needs none of: the daemon's machinery, the
# other front ends, and pydantic's plugin scan (kairos.answers.skip_plugin_scan).
NOT_FOR_ONE_ANSWER = (
    "asyncio",
    "httpx",
    "anyio",
    "importlib.metadata",
    "kairosd.store",
    "kairosd.config",
    "kairosd.api",
    "kairosd.scheduling",
    "kairosd.app",
    "kairos.integrations",
    "kairos.ui",
    "kairos.timeline",
    "mcp",
    "textual",
    "shtab",
)


def over_budget(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in heavy))


@pytest.mark.parametrize("argv", [["list"], ["list", "--json"]])
def test_kairos_list_stays_within_its_imports(daemon_home: dict[str, str], tmp_path: Path, argv: list[str]) -> None:
    modules = imported(daemon_home, tmp_path, argv)
    assert "kairos.commands.tasks" in modules  # the snapshot is of the real list path
    assert over_budget(modules) == []


def test_a_hook_call_stays_within_its_imports(daemon_home: dict[str, str], tmp_path: Path) -> None:
    stop = fixture("claude", "Stop", cwd=str(tmp_path))
    modules = imported(daemon_home, tmp_path, ["hook", "claude", "Stop"], json.dumps(stop))
    assert "kairos.integrations.hook" in modules  # the snapshot is of the real hook path
    assert over_budget(modules) == []


def test_a_tab_that_asks_for_ids_stays_within_its_imports(daemon_home: dict[str, str], tmp_path: Path) -> None:
    """`kairos __complete tasks`, which the completion scripts run at each TAB on an id: no parser, no shtab."""
    modules = imported(daemon_home, tmp_path, ["__complete", "tasks"])
    assert "kairos.dynamic" in modules  # the snapshot is of the real completion path
    assert over_budget(modules) == []


def test_the_budget_catches_a_heavy_import(daemon_home: dict[str, str], tmp_path: Path) -> None:
    """The check can fail: ``kairos add``, off the hot paths, builds the full parser, and that is caught."""
    modules = imported(daemon_home, tmp_path, ["add", "0 5 * * *", "another"])
    assert "argparse" in over_budget(modules)


# Each verb's own modules: its command module (and what it prints with) and the wire's modules of its answer
# (issue 25: ``status`` built 64 models to read an answer of 11, ``add`` 41 to read one of 24).
OWN_MODULES = [
    (["status"], {"kairos.commands.status", "kairos.commands.common"}, {"base", "sections", "status"}),
    (
        ["add", "0 5 * * *", "another"],
        {"kairos.commands.add", "kairos.commands.common", "kairos.commands.tasks"},
        {"base", "records", "tasks"},
    ),
]


@pytest.mark.parametrize(("argv", "commands", "wire"), OWN_MODULES, ids=["status", "add"])
def test_a_verb_that_reads_one_answer_imports_that_answers_models_only(
    daemon_home: dict[str, str], tmp_path: Path, argv: list[str], commands: set[str], wire: set[str]
) -> None:
    """``kairos status`` and ``kairos add`` (off the hot paths: argparse and pydantic are theirs) import the
    wire's modules of their own answer and nothing of the daemon's; a module one of them, or one of those
    models' modules, imports at the top shows here by its name."""
    modules = imported(daemon_home, tmp_path, argv)
    assert "kairos.answers" in modules  # the snapshot is of a verb that read its answer as its model
    assert {m for m in modules if m.startswith("kairos.commands.")} == commands
    assert {m.removeprefix("kairosd.core.wire.") for m in modules if m.startswith("kairosd.core.wire.")} == wire
    assert over_budget(modules, NOT_FOR_ONE_ANSWER) == []


def test_kairos_mcp_starts_without_the_models_of_its_tools_answers(daemon_home: dict[str, str], tmp_path: Path) -> None:
    """Every agent session starts ``kairos mcp`` and most call none of its tools: a tool imports the wire's
    models of its answers when called (the start is the mcp SDK's)."""
    modules = imported(daemon_home, tmp_path, ["mcp"])
    assert "kairos.integrations.mcpwire" in modules  # the snapshot is of a server that ran (and met EOF)
    assert "kairos.answers" in modules
    assert sorted(m for m in modules if m.startswith("kairosd.core.wire.")) == []
