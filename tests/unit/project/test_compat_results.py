"""The compat suite's results file: a partial run updates the cells it ran and keeps the rest."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("compat.conftest")
from compat.conftest import merged_results

V = {"claude": "2.1.330", "codex": "0.169.0"}


def test_a_partial_run_keeps_the_cells_it_did_not_run(tmp_path):
    path = tmp_path / "last-run.json"
    first = {("claude", "MCP"): {"status": "verified", "detail": "", "test": "a"},
             ("codex", "idle wake"): {"status": "verified", "detail": "", "test": "b"}}  # fmt: skip
    path.write_text(json.dumps(merged_results(path, V, first)))
    again = {("codex", "idle wake"): {"status": "failing", "detail": "x", "test": "b"}}
    data = merged_results(path, V, again)
    assert {(r["cli"], r["feature"]): r["status"] for r in data["results"]} == {
        ("claude", "MCP"): "verified",
        ("codex", "idle wake"): "failing",
    }


def test_other_versions_start_over(tmp_path):
    path = tmp_path / "last-run.json"
    path.write_text(json.dumps(merged_results(path, V, {("claude", "MCP"): {"status": "verified"}})))
    newer = {**V, "codex": "0.171.0"}
    data = merged_results(path, newer, {("codex", "MCP"): {"status": "verified"}})
    assert data == {"versions": newer, "results": [{"cli": "codex", "feature": "MCP", "status": "verified"}]}
