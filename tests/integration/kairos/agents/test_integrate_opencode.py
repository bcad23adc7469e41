"""``kairos integrate opencode``: the plugin file and ``mcp.kairos`` in opencode.json, merged, undone.

The command runs in this process (tests/cli_inprocess_support.py): what it prints and writes is the test
(tests/integration/kairosd/consolidation/test_integrate.py runs ``kairos integrate`` as a process).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_inprocess_support import kairos_here

from kairos.integrations.settings import opencode
from kairos.integrations.settings.agents import Context
from kairos.integrations.settings.merge import Refused
from kairosd.consolidation.remagent import modes

KAIROS = "/opt/kairos/bin/kairos"
USER_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "model": "anthropic/claude-sonnet-4-5",
    "mcp": {"github": {"type": "remote", "url": "https://example.invalid/mcp", "enabled": True}},
    "plugin": ["opencode-notify"],
}


def kairos(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    drop = ("KAIROS_HOME", "XDG_CONFIG_HOME", "OPENCODE_CONFIG", "OPENCODE_DB")
    environ = {k: v for k, v in os.environ.items() if k not in drop}
    environ.update(HOME=str(home), **(env or {}))
    return kairos_here("integrate", "opencode", *args, env=environ)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_install_merges_into_the_users_config_and_uninstall_gives_it_back(tmp_path):
    folder = tmp_path / ".config" / "opencode"
    folder.mkdir(parents=True)
    config = folder / "opencode.json"
    original = json.dumps(USER_CONFIG, indent=4) + "\n"
    config.write_text(original)

    proc = kairos(tmp_path, "--kairos", KAIROS, env={"KAIROS_HOME": str(tmp_path / "k")})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(config.read_text())
    env = {"KAIROS_HOME": str(tmp_path / "k")}
    assert data["mcp"]["kairos"] == {"type": "local", "command": [KAIROS, "mcp"], "enabled": True, "environment": env}
    assert {k: v for k, v in data.items() if k != "mcp"} == {k: v for k, v in USER_CONFIG.items() if k != "mcp"}
    assert data["mcp"]["github"] == USER_CONFIG["mcp"]["github"]
    assert config.read_text().startswith('{\n    "$schema"')  # the file's own indentation
    plugin = folder / "plugin" / "kairos.js"
    text = plugin.read_text()
    assert f"const KAIROS = {json.dumps(KAIROS)}" in text
    assert f"const KAIROS_HOME = {json.dumps(str(tmp_path / 'k'))}" in text
    assert "__KAIROS" not in text
    assert "hook opencode SessionEnd" in text
    assert [p.name for p in folder.glob("opencode.json.kairos-backup-*")]

    again = kairos(tmp_path, "--kairos", KAIROS, env={"KAIROS_HOME": str(tmp_path / "k")})
    assert again.stdout.count("unchanged") == 2, again.stdout  # converged

    proc = kairos(tmp_path, "--uninstall")
    assert proc.returncode == 0, proc.stderr
    assert config.read_text() == json.dumps(USER_CONFIG, indent=4) + "\n"
    assert not plugin.exists()


def test_dry_run_shows_both_files_and_writes_nothing(tmp_path):
    proc = kairos(tmp_path, "--dry-run", "--kairos", KAIROS)
    assert proc.returncode == 0, proc.stderr
    assert f"+++ {tmp_path}/.config/opencode/plugin/kairos.js" in proc.stdout
    assert f"+++ {tmp_path}/.config/opencode/opencode.json" in proc.stdout
    assert "dry run: nothing was written" in proc.stdout
    assert tree(tmp_path) == {}


def test_an_empty_home_gets_both_files_and_uninstall_removes_both(tmp_path):
    assert kairos(tmp_path, "--kairos", KAIROS).returncode == 0
    config = json.loads((tmp_path / ".config" / "opencode" / "opencode.json").read_text())
    entry = opencode.mcp_entry(ctx(tmp_path))
    assert config == {"$schema": "https://opencode.ai/config.json", "mcp": {"kairos": entry}}
    assert kairos(tmp_path, "--uninstall").returncode == 0
    assert [p for p in tree(tmp_path) if "kairos-backup" not in p] == []


def test_xdg_config_home_moves_the_files_and_auto_mode_sees_the_plugin(tmp_path):
    """Consolidation's auto mode takes opencode as integrated when kairos' plugin is where opencode loads it."""
    xdg = tmp_path / "xdg"
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)}
    assert modes.integrated("opencode", env)[0] is False
    assert kairos(tmp_path, "--kairos", KAIROS, env={"XDG_CONFIG_HOME": str(xdg)}).returncode == 0
    assert (xdg / "opencode" / "plugin" / "kairos.js").is_file()
    assert (xdg / "opencode" / "opencode.json").is_file()
    assert not (tmp_path / ".config").exists()
    ok, why = modes.integrated("opencode", env)
    assert ok, why
    assert modes.integrated("opencode", {"HOME": str(tmp_path)})[0] is False  # another config folder
    assert kairos(tmp_path, "--uninstall", env={"XDG_CONFIG_HOME": str(xdg)}).returncode == 0
    assert modes.integrated("opencode", env)[0] is False


def test_a_config_with_comments_is_refused_with_the_entry_to_add(tmp_path):
    folder = tmp_path / ".config" / "opencode"
    folder.mkdir(parents=True)
    (folder / "opencode.jsonc").write_text('{\n  // my model\n  "model": "a/b", /* old */\n  "share": "disabled",\n}\n')
    before = tree(tmp_path)
    proc = kairos(tmp_path, "--kairos", KAIROS)
    assert proc.returncode == 1
    assert f"{folder}/opencode.jsonc has comments" in proc.stderr
    assert f'"{KAIROS}"' in proc.stderr  # the entry, to paste by hand
    assert tree(tmp_path) == before  # nor was the plugin written


@pytest.mark.parametrize(
    ("text", "match"),
    [('{"mcp": {"kairos": {"type": "local", "command": ["/usr/bin/other-server"]}}}', "does not run 'kairos mcp'"),
     ('{"mcp": ["kairos"]}', "'mcp' is not a JSON object"), ('{"mcp": ', "is not valid JSON"),
     ('{"a": "// not a comment", "b": 1,, }', "is not valid JSON")],
)  # fmt: skip
def test_configs_kairos_cannot_extend_are_refused(tmp_path, text, match):
    with pytest.raises(Refused, match=match):
        transform(tmp_path, tmp_path / ".config" / "opencode" / "opencode.json", text)


def test_a_plugin_file_of_the_same_name_that_is_not_kairos_is_left_alone(tmp_path):
    path = tmp_path / ".config" / "opencode" / "plugin" / "kairos.js"
    with pytest.raises(Refused, match="is not kairos' plugin"):
        transform(tmp_path, path, "export const Mine = async () => ({})\n")
    assert transform(tmp_path, path, "export const Mine = async () => ({})\n", install=False)[0] is not None


def test_an_mcp_kairos_of_the_users_own_survives_an_uninstall(tmp_path):
    text = '{"mcp": {"kairos": {"type": "remote", "url": "https://example.invalid"}}}\n'
    path = tmp_path / ".config" / "opencode" / "opencode.json"
    assert transform(tmp_path, path, text, install=False)[0] == text


def ctx(home: Path, **kw: object) -> Context:
    return Context(home=home, kairos=KAIROS, environ={}, **kw)  # type: ignore[arg-type]


def transform(home: Path, path: Path, text: str | None, install: bool = True) -> tuple[str | None, list[str]]:
    plans, _ = opencode.plan(ctx(home, install=install))
    [item] = [p for p in plans if p.path == path]
    return item.transform(text)
