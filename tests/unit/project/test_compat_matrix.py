"""``scripts/compat_matrix.py``: the README's matrix from the compat suite's results, pinned and newest."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from paths_support import REPO

SCRIPT = REPO / "scripts" / "compat_matrix.py"
_spec = importlib.util.spec_from_file_location("compat_matrix", SCRIPT)
assert _spec is not None
assert _spec.loader is not None
matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(matrix)


def run(versions: dict[str, str], cells: dict[tuple[str, str], tuple[str, str]]) -> dict[str, Any]:
    return {
        "versions": versions,
        "results": [{"cli": c, "feature": f, "status": s, "detail": d} for (c, f), (s, d) in cells.items()],
    }


PINNED = run(
    {"codex": "0.169.0", "gemini": "0.61.0"},
    {("codex", "idle wake"): ("verified", ""), ("gemini", "idle wake"): ("unsupported", "no way in")},
)
NEWEST = run(
    {"codex": "0.171.0", "gemini": "0.61.0"},
    {("codex", "idle wake"): ("failing", "queue refused"), ("gemini", "idle wake"): ("unsupported", "no way in")},
)


def rows(table: str, name: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines() if line.startswith(f"| {name} ")]


def test_one_row_per_cli_without_a_latest_run():
    table = matrix.render(PINNED)
    [codex] = rows(table, "Codex")
    assert codex[1] == "`0.169.0`"
    assert codex[2 + matrix.FEATURES.index("idle wake")] == "✅ verified"
    assert "[1] Gemini CLI, idle wake: no way in" in table


def test_with_a_latest_run_each_cli_has_a_pinned_and_a_newest_row_each_as_its_run_found_it():
    table = matrix.render(PINNED, NEWEST)
    pinned, newest = rows(table, "Codex")
    idle = 2 + matrix.FEATURES.index("idle wake")
    assert (pinned[1], pinned[idle]) == ("`0.169.0` pinned", "✅ verified")
    assert (newest[1], newest[idle]) == ("`0.171.0` newest", "❌ failing [1]")
    gemini = rows(table, "Gemini CLI")
    assert [g[idle] for g in gemini] == ["➖ not supported [2]", "➖ not supported [2]"]  # one note, not two
    assert "[1] Codex, idle wake: queue refused" in table


def test_the_latest_results_beside_the_pinned_ones_are_picked_up(tmp_path, capsys):
    (tmp_path / "last-run.json").write_text(json.dumps(PINNED))
    assert matrix.main(["--results", str(tmp_path / "last-run.json")]) == 0
    assert len(rows(capsys.readouterr().out, "Codex")) == 1
    (tmp_path / "last-run-latest.json").write_text(json.dumps(NEWEST))
    assert matrix.main(["--results", str(tmp_path / "last-run.json")]) == 0
    assert len(rows(capsys.readouterr().out, "Codex")) == 2
    assert matrix.main(["--results", str(tmp_path / "last-run.json"), "--latest", str(tmp_path / "none.json")]) == 1
