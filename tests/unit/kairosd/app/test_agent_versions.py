"""The oldest supported version of each agent CLI (issue 23): parsing what ``--version`` prints, the
comparison, ``kairos doctor`` on fake CLIs printing old and new versions, and the table kept in step with
the versions the compatibility suite verifies."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from compat.clis import PINNED

from kairosd.app.doctor import doctor_report
from kairosd.config import Config
from kairosd.core.agentversions import OLDEST, outdated, parse_version


@pytest.mark.parametrize(
    ("printed", "version"),
    [
        ("2.1.330 (Claude Code)", (2, 1, 330)),
        ("codex-cli 0.169.0", (0, 169, 0)),
        ("GitHub Copilot CLI 1.0.102.", (1, 0, 102)),
        ("0.61.0", (0, 61, 0)),
        ("v1.18", (1, 18, 0)),
        ("opencode", None),
        ("", None),
    ],
)
def test_the_version_is_read_from_what_each_cli_prints(printed, version):
    assert parse_version(printed) == version


def test_older_is_named_with_what_will_not_work_and_newer_or_unreadable_says_nothing():
    old = outdated("claude", "2.1.197 (Claude Code)")
    assert old is not None
    assert old.startswith("claude 2.1.197 is older than 2.1.330, the oldest kairos supports: turn-end delivery")
    assert "kairos' MCP tools" in old
    assert outdated("claude", "2.1.330 (Claude Code)") is None
    assert outdated("claude", "2.1.332 (Claude Code)") is None
    assert outdated("claude", "3.0 (Claude Code)") is None
    assert outdated("codex", "codex-cli 0.99.9") is not None  # numbers, not text: 0.99 < 0.169
    assert outdated("claude", "(no version printed)") is None
    assert outdated("my-agent", "0.0.1") is None


def test_the_oldest_supported_versions_are_ones_the_compat_suite_verifies():
    """Each CLI's oldest supported version is no newer than the one tests/compat pins (verified cell by cell)."""
    assert set(OLDEST) == set(PINNED)
    for cli, (_, pinned) in PINNED.items():
        assert parse_version(OLDEST[cli].version) <= parse_version(pinned), cli


@pytest.fixture
def home(monkeypatch):
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="kv"))
    monkeypatch.setenv("KAIROS_HOME", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _fake(folder: Path, name: str, prints: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\necho '{prints}'\n")
    (folder / name).chmod(0o755)


def test_doctor_says_which_installed_cli_is_too_old_and_what_will_not_work(tmp_path, home):
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "claude", "2.1.197 (Claude Code)")
    _fake(bin_dir, "codex", "codex-cli 0.170.0")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "KAIROS_HOME": str(home), "HOME": str(home)}
    report = doctor_report(Config(), env)
    agents = {a["name"]: a for a in report["agents"]}
    assert agents["claude"]["usable"] is True  # older is a note, not a failure
    assert agents["claude"]["outdated"] == outdated("claude", "2.1.197")
    assert agents["codex"]["outdated"] is None
    assert agents["gemini"]["outdated"] is None  # not installed: nothing to compare
    assert report["notes"] == [agents["claude"]["outdated"]]
    assert report["ok"] is True
