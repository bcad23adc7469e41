"""``kairos integrate``: merging into existing agent settings, uninstall, dry-run, backups, refusals, examples.

The command runs in this process (tests/cli_inprocess_support.py: what it prints and writes is the
test), and as a real ``python -m kairos`` process where it finds the kairos script of this installation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess_support import kairos_here
from paths_support import REPO

from kairos.integrations.settings import agents, merge
from kairos.integrations.settings.merge import Refused

KAIROS = "/opt/kairos/bin/kairos"
EXAMPLES = REPO / "examples" / "integrations"


def ctx(home: Path, **kw: Any) -> agents.Context:
    kw.setdefault("kairos", KAIROS)
    return agents.Context(home=home, **kw)


def transform(agent: str, context: agents.Context, path: Path, text: str | None) -> tuple[str | None, list[str]]:
    plans, _ = agents.plan(agent, context)
    [item] = [p for p in plans if p.path == path]
    return item.transform(text)


USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
        "Stop": [
            {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]},
        ],
    },
}


# ---- recognising kairos' entries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "ours"),
    [("/opt/kairos/bin/kairos hook claude stop", True), ("kairos hook codex prompt", True),
     ("KAIROS_HOME=/tmp/k '/my dir/kairos' hook gemini stop", True), ("/opt/kairos/bin/kairos mcp", False),
     ("/usr/bin/notkairos hook claude stop", False), ("echo kairos hook", False), ("kairos", False),
     ("'unbalanced", False), (None, False)],
)  # fmt: skip
def test_kairos_hook_commands_are_recognised_by_what_they_run(command, ours):
    """A hook is kairos' when its program is a file named kairos and its first argument is 'hook'."""
    assert merge.is_kairos_hook_command(command) is ours


# ---- Claude Code ---------------------------------------------------------------------------------------


def test_claude_install_keeps_every_other_entry_and_appends_ours(tmp_path):
    """The user's keys and hooks survive; kairos adds one group per event, after the user's."""
    path = tmp_path / ".claude" / "settings.json"
    text = json.dumps(USER_SETTINGS, indent=2)
    new, _ = transform("claude", ctx(tmp_path), path, text)
    data = json.loads(new)
    assert data["model"] == "opus"
    assert data["permissions"] == {"allow": ["Bash(git status)", "mcp__kairos"]}  # kairos' tools, no prompt
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert data["hooks"]["Stop"][1] == {
        "hooks": [
            {"type": "command", "command": f"{KAIROS} hook claude Stop", "timeout": 10},
            {
                "type": "command",
                "command": f"{KAIROS} hook claude wait --max-wait 86340",
                "asyncRewake": True,
                "timeout": 86400,
            },
        ]
    }
    assert set(data["hooks"]) == {"PreToolUse", "Stop", "SessionStart", "UserPromptSubmit", "SessionEnd"}
    assert list(data["hooks"])[:2] == ["PreToolUse", "Stop"]  # the user's order is kept


def test_claude_install_twice_changes_nothing_the_second_time(tmp_path):
    """Installing again converges: the second run leaves the text byte for byte."""
    path = tmp_path / ".claude" / "settings.json"
    once, _ = transform("claude", ctx(tmp_path), path, json.dumps(USER_SETTINGS, indent=4))
    twice, _ = transform("claude", ctx(tmp_path), path, once)
    assert twice == once
    assert once.splitlines()[1].startswith("    ")  # the file's 4-space indent is kept


def test_claude_uninstall_removes_exactly_kairos_entries(tmp_path):
    """Install then uninstall gives back the user's settings; a mixed group keeps the user's handler."""
    path = tmp_path / ".claude" / "settings.json"
    settings = json.loads(json.dumps(USER_SETTINGS))
    # A kairos handler the user put into their own group by hand.
    settings["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "kairos hook claude Stop"})
    installed, _ = transform("claude", ctx(tmp_path), path, json.dumps(settings))
    removed, _ = transform("claude", ctx(tmp_path, install=False), path, installed)
    assert json.loads(removed) == USER_SETTINGS


def test_claude_uninstall_of_a_kairos_only_file_leaves_no_hooks_key(tmp_path):
    """Hooks kairos alone put there are removed with their now-empty containers."""
    path = tmp_path / ".claude" / "settings.json"
    installed, _ = transform("claude", ctx(tmp_path), path, '{"theme": "dark"}')
    removed, _ = transform("claude", ctx(tmp_path, install=False), path, installed)
    assert json.loads(removed) == {"theme": "dark"}


def test_claude_waiter_is_installed_by_default_for_a_day_and_no_rewake_removes_it(tmp_path):
    """By default 'kairos hook claude wait' (asyncRewake) is armed at SessionStart and Stop for a whole idle day."""
    path = tmp_path / ".claude" / "settings.json"
    with_waiter, _ = transform("claude", ctx(tmp_path), path, None)
    hooks = json.loads(with_waiter)["hooks"]
    for event in ("SessionStart", "Stop"):
        [waiter] = [h for h in hooks[event][0]["hooks"] if " wait " in h["command"]]
        assert waiter["asyncRewake"] is True
        assert waiter["timeout"] == 86_400  # Claude ends an async hook at its timeout
        assert waiter["command"].endswith(" hook claude wait --max-wait 86340")  # it exits first, by itself
    short, _ = transform("claude", ctx(tmp_path, rewake_lifetime=30), path, None)
    [waiter] = [h for h in json.loads(short)["hooks"]["Stop"][0]["hooks"] if " wait " in h["command"]]
    assert (waiter["timeout"], waiter["command"].split()[-1]) == (30, "27")
    without, _ = transform("claude", ctx(tmp_path, with_rewake=False), path, with_waiter)
    assert " wait" not in without


def test_kairos_home_reaches_the_hooks_and_the_mcp_server(tmp_path):
    """A KAIROS_HOME set while integrating is passed on, and the entries stay recognisable as kairos'."""
    context = ctx(tmp_path, environ={"KAIROS_HOME": "/tmp/my kairos"})
    settings, _ = transform("claude", context, tmp_path / ".claude" / "settings.json", None)
    command = json.loads(settings)["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command == f"KAIROS_HOME='/tmp/my kairos' {KAIROS} hook claude Stop"
    assert merge.is_kairos_hook_command(command)
    mcp, _ = transform("claude", context, tmp_path / ".claude.json", None)
    assert json.loads(mcp)["mcpServers"]["kairos"]["env"] == {"KAIROS_HOME": "/tmp/my kairos"}


def test_claude_mcp_registration_keeps_other_servers_and_state(tmp_path):
    """~/.claude.json keeps its other keys and servers; uninstall removes only kairos."""
    path = tmp_path / ".claude.json"
    state = {"numStartups": 7, "mcpServers": {"other": {"command": "npx", "args": ["x"]}}, "projects": {"/p": {}}}
    installed, _ = transform("claude", ctx(tmp_path), path, json.dumps(state))
    assert json.loads(installed)["mcpServers"] == {
        "other": {"command": "npx", "args": ["x"]},
        "kairos": {"type": "stdio", "command": KAIROS, "args": ["mcp"]},
    }
    removed, _ = transform("claude", ctx(tmp_path, install=False), path, installed)
    assert json.loads(removed) == state


def test_an_mcp_server_named_kairos_that_is_not_ours_is_refused(tmp_path):
    """A foreign 'kairos' server is not overwritten on install, and not removed on uninstall."""
    path = tmp_path / ".claude.json"
    text = json.dumps({"mcpServers": {"kairos": {"command": "python", "args": ["other.py"]}}})
    with pytest.raises(Refused, match="does not run 'kairos mcp'"):
        transform("claude", ctx(tmp_path), path, text)
    assert transform("claude", ctx(tmp_path, install=False), path, text)[0] == text


@pytest.mark.parametrize(
    ("text", "match"),
    [("{not json", "not valid JSON"), ("[1, 2]", "JSON object at the top"), ('{"hooks": []}', "'hooks' is not"),
     ('{"hooks": {"Stop": {"hooks": []}}}', "hooks.Stop is not a list")],
)  # fmt: skip
def test_settings_kairos_cannot_parse_are_refused(tmp_path, text, match):
    """Invalid JSON or an unexpected shape is refused with the reason, never rewritten."""
    with pytest.raises(Refused, match=match):
        transform("claude", ctx(tmp_path), tmp_path / ".claude" / "settings.json", text)


# ---- Copilot CLI, Codex, Gemini CLI ------------------------------------------------------------------


def test_copilot_hook_file_is_kairos_own_and_goes_on_uninstall(tmp_path):
    """~/.copilot/hooks/kairos.json is created, and removed again when nothing else is in it."""
    path = tmp_path / ".copilot" / "hooks" / "kairos.json"
    installed, _ = transform("copilot", ctx(tmp_path), path, None)
    data = json.loads(installed)
    assert data["version"] == 1
    assert data["hooks"]["agentStop"] == [
        {"type": "command", "bash": f"{KAIROS} hook copilot agentStop", "timeoutSec": 10}
    ]
    assert transform("copilot", ctx(tmp_path, install=False), path, installed)[0] is None


def test_copilot_hook_file_with_foreign_entries_keeps_them(tmp_path):
    """Entries someone else added to kairos.json stay, and so does the file."""
    path = tmp_path / ".copilot" / "hooks" / "kairos.json"
    mine = {"type": "command", "bash": "./audit.sh"}
    installed, _ = transform("copilot", ctx(tmp_path), path, json.dumps({"version": 1, "hooks": {"agentStop": [mine]}}))
    assert json.loads(installed)["hooks"]["agentStop"][0] == mine
    removed, _ = transform("copilot", ctx(tmp_path, install=False), path, installed)
    assert json.loads(removed) == {"version": 1, "hooks": {"agentStop": [mine]}}


def test_copilot_honours_copilot_home(tmp_path):
    """COPILOT_HOME moves Copilot's folder, and kairos' files with it."""
    plans, _ = agents.plan("copilot", ctx(tmp_path, environ={"COPILOT_HOME": str(tmp_path / "cp")}))
    assert {p.path for p in plans} == {tmp_path / "cp" / "hooks" / "kairos.json", tmp_path / "cp" / "mcp-config.json"}


CODEX_CONFIG = """\
# my codex settings
model = "o3"  # the default

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
"""


def test_codex_config_keeps_the_rest_byte_for_byte(tmp_path):
    """kairos' block is appended and its unload-delay line put first; comments and layout stay; uninstall
    gives back the exact text."""
    path = tmp_path / ".codex" / "config.toml"
    installed, _ = transform("codex", ctx(tmp_path), path, CODEX_CONFIG)
    assert installed.startswith(merge.UNLOAD_LINE + CODEX_CONFIG)
    parsed = tomllib.loads(installed)
    expected = {"command": KAIROS, "args": ["mcp"], "default_tools_approval_mode": "approve", "required": True}
    assert parsed["mcp_servers"]["kairos"] == expected
    assert parsed["mcp_servers"]["docs"]["command"] == "npx"
    assert transform("codex", ctx(tmp_path), path, installed)[0] == installed
    assert transform("codex", ctx(tmp_path, install=False), path, installed)[0] == CODEX_CONFIG


def test_codex_config_registration_by_hand_is_left_alone(tmp_path):
    """A [mcp_servers.kairos] the user wrote that runs kairos mcp is kept, with a note."""
    path = tmp_path / ".codex" / "config.toml"
    text = f'[mcp_servers.kairos]\ncommand = "{KAIROS}"\nargs = ["mcp"]\n'
    new, notes = transform("codex", ctx(tmp_path), path, text)
    assert new == merge.UNLOAD_LINE + text
    assert "added by hand" in notes[0]


def test_codex_tables_written_inside_kairos_block_survive_reintegrate_and_uninstall(tmp_path):
    """Codex appends its own tables at the end of config.toml, which lands them before kairos' end marker."""
    path = tmp_path / ".codex" / "config.toml"
    installed, _ = transform("codex", ctx(tmp_path), path, 'model = "o3"\n')
    assert installed is not None
    codex_state = (
        '\n[hooks.state]\n\n[hooks.state."/h/.codex/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:ab"\n'
        '\n[projects."/h/p"]\ntrust_level = "trusted"\n'
    )
    marker = merge.TOML_END + "\n"
    with_state = installed.replace(marker, codex_state + marker)  # where Codex 0.169 puts them
    again, _ = transform("codex", ctx(tmp_path), path, with_state)
    assert again is not None
    parsed = tomllib.loads(again)
    assert parsed["hooks"]["state"]["/h/.codex/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:ab"}
    assert parsed["projects"]["/h/p"] == {"trust_level": "trusted"}
    assert merge.is_kairos_mcp_server(parsed["mcp_servers"]["kairos"])
    assert transform("codex", ctx(tmp_path), path, again)[0] == again  # converged
    removed, _ = transform("codex", ctx(tmp_path, install=False), path, with_state)
    assert removed is not None
    parsed = tomllib.loads(removed)
    assert "mcp_servers" not in parsed
    assert parsed["hooks"]["state"]["/h/.codex/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:ab"}
    assert parsed["projects"]["/h/p"] == {"trust_level": "trusted"}
    assert merge.TOML_BEGIN not in removed
    assert merge.TOML_END not in removed


def test_codex_uninstall_removes_the_hooks_file_it_created(tmp_path):
    path = tmp_path / ".codex" / "hooks.json"
    installed, _ = transform("codex", ctx(tmp_path), path, None)
    assert installed is not None
    assert set(json.loads(installed)["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert transform("codex", ctx(tmp_path, install=False), path, installed) == (None, [])
    kept, _ = transform("codex", ctx(tmp_path, install=False), path, '{"hooks": {"Stop": []}, "x": 1}')
    assert kept is not None


@pytest.mark.parametrize(
    ("text", "match"),
    [("model = ", "not valid TOML"), ('mcp_servers = { docs = { command = "x" } }\n', "with kairos' block"),
     ("# >>> kairos >>>\n# >>> kairos >>>\n[mcp_servers.kairos]\n", "block .* is broken"),
     ('[mcp_servers.kairos]\ncommand = "python"\n', "does not run 'kairos mcp'")],
)  # fmt: skip
def test_codex_configs_kairos_cannot_extend_are_refused(tmp_path, text, match):
    """Invalid TOML, an inline mcp_servers table, a broken block or a foreign 'kairos' server: refused."""
    with pytest.raises(Refused, match=match):
        transform("codex", ctx(tmp_path), tmp_path / ".codex" / "config.toml", text)


def test_gemini_settings_keep_the_hooks_switches_and_other_servers(tmp_path):
    """Gemini's non-event keys under hooks (disabled) and other MCP servers survive install and uninstall."""
    path = tmp_path / ".gemini" / "settings.json"
    settings = {"hooks": {"disabled": ["old-hook"]}, "mcpServers": {"x": {"command": "x"}}, "ui": {"theme": "GitHub"}}
    installed, _ = transform("gemini", ctx(tmp_path), path, json.dumps(settings))
    data = json.loads(installed)
    assert data["hooks"]["disabled"] == ["old-hook"]
    assert data["hooks"]["AfterAgent"][0]["hooks"][0]["name"] == "kairos-AfterAgent"
    assert data["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] == 10_000  # milliseconds
    assert set(data["mcpServers"]) == {"x", "kairos"}
    removed, _ = transform("gemini", ctx(tmp_path, install=False), path, installed)
    assert json.loads(removed) == settings


# ---- the command, on real files ----------------------------------------------------------------------


def _environ(home: Path, env: dict[str, str] | None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("KAIROS_HOME", "COPILOT_HOME", "CODEX_HOME")}
    environ.update(HOME=str(home), **(env or {}))
    return environ


def kairos(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``kairos integrate ARGS`` in this process, with HOME=home (and ``env``)."""
    return kairos_here("integrate", *args, env=_environ(home, env))


def kairos_process(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = _environ(home, env)
    return subprocess.run(
        [sys.executable, "-m", "kairos", "integrate", *args], env=environ, capture_output=True, text=True, timeout=60
    )


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_dry_run_prints_a_unified_diff_and_writes_nothing(tmp_path):
    """--dry-run shows the change as a diff against the existing file and leaves the folder as it was."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    before = tree(tmp_path)
    proc = kairos(tmp_path, "claude", "--dry-run", "--kairos", KAIROS)
    assert proc.returncode == 0, proc.stderr
    assert f"--- {tmp_path}/.claude/settings.json" in proc.stdout
    assert f"+++ {tmp_path}/.claude/settings.json" in proc.stdout
    assert f'+            "command": "{KAIROS} hook claude Stop",' in proc.stdout
    assert "--- /dev/null" in proc.stdout  # ~/.claude.json would be created
    assert "dry run: nothing was written" in proc.stdout
    assert tree(tmp_path) == before


def test_install_backs_up_and_uninstall_restores(tmp_path):
    """Install writes both files and backs up the one that existed; uninstall brings back the user's settings."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(USER_SETTINGS, indent=2) + "\n"
    settings.write_text(original)
    settings.chmod(0o644)
    proc = kairos(tmp_path, "claude", "--kairos", KAIROS)
    assert proc.returncode == 0, proc.stderr
    [backup] = list(settings.parent.glob("settings.json.kairos-backup-*"))
    assert backup.read_text() == original
    assert "backup: " + str(backup) in proc.stdout
    assert oct(settings.stat().st_mode & 0o777) == "0o644"  # the file keeps its mode
    assert json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["kairos"]["command"] == KAIROS
    assert kairos(tmp_path, "claude", "--kairos", KAIROS).stdout.count("unchanged") == 2  # converged
    proc = kairos(tmp_path, "claude", "--uninstall")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(settings.read_text()) == USER_SETTINGS


def test_a_file_that_cannot_be_parsed_stops_the_run_with_nothing_written(tmp_path):
    """One unparseable file: exit 1, the reason names it, and the other file is not written either."""
    (tmp_path / ".claude.json").write_text("{broken")
    before = tree(tmp_path)
    proc = kairos(tmp_path, "claude", "--kairos", KAIROS)
    assert proc.returncode == 1
    assert f"{tmp_path}/.claude.json is not valid JSON" in proc.stderr
    assert tree(tmp_path) == before


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path):
    """A dotfiles symlink is written through; the link itself stays."""
    dotfiles = tmp_path / "dotfiles" / "gemini.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"ui": {"theme": "GitHub"}}\n')
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").symlink_to(dotfiles)
    proc = kairos(tmp_path, "gemini", "--kairos", KAIROS)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".gemini" / "settings.json").is_symlink()
    assert "kairos-AfterAgent" in dotfiles.read_text()


def test_the_default_kairos_is_the_absolute_path_of_this_installation(tmp_path):
    """Without --kairos, the entries run the kairos script next to this interpreter."""
    doc = json.loads(kairos_process(tmp_path, "codex", "--dry-run", "--json").stdout)  # a real `python -m kairos`
    config = tomllib.loads(next(c["after"] for c in doc["changes"] if c["path"].endswith("config.toml")))
    command = config["mcp_servers"]["kairos"]["command"]
    assert os.path.isabs(command)
    assert os.path.basename(command) == "kairos"
    assert os.access(command, os.X_OK)


@pytest.mark.parametrize(
    ("args", "message"),
    [(["codex", "--with-rewake"], "for claude only"), (["claude", "--kairos", "kairos"], "absolute path"),
     (["claude", "--uninstall", "--with-rewake"], "leave out --with-rewake"),
     (["claude", "--no-rewake", "--rewake-lifetime", "60"], "neither"), (["gemini", "--no-rewake"], "claude only")],
)  # fmt: skip
def test_bad_option_combinations_are_usage_errors(tmp_path, args, message):
    """Options that make no sense together exit 2 with the reason."""
    proc = kairos(tmp_path, *args)
    assert proc.returncode == 2
    assert message in proc.stderr


# ---- examples/ -----------------------------------------------------------------------------------------

EXAMPLE_FILES = {
    ("claude", False): {".claude/settings.json": "claude/settings.json", ".claude.json": "claude/claude.json"},
    ("claude", True): {
        ".claude/settings.json": "claude/settings.no-rewake.json",
        ".claude.json": "claude/claude.json",
    },
    ("copilot", False): {
        ".copilot/hooks/kairos.json": "copilot/hooks/kairos.json",
        ".copilot/mcp-config.json": "copilot/mcp-config.json",
    },
    ("codex", False): {".codex/hooks.json": "codex/hooks.json", ".codex/config.toml": "codex/config.toml"},
    ("gemini", False): {".gemini/settings.json": "gemini/settings.json"},
}


@pytest.mark.parametrize(("agent", "rewake"), list(EXAMPLE_FILES))
def test_examples_parse_and_match_what_integrate_writes_into_an_empty_home(tmp_path, agent, rewake):
    """Each example is valid JSON/TOML and equals `kairos integrate --dry-run` for an empty HOME (path as 'kairos')."""
    args = [agent, "--dry-run", "--json", "--kairos", KAIROS] + (["--no-rewake"] if rewake else [])
    proc = kairos(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    written = {
        str(Path(c["path"]).relative_to(tmp_path)): c["after"].replace(KAIROS, "kairos")
        for c in json.loads(proc.stdout)["changes"]
    }
    assert set(written) == set(EXAMPLE_FILES[(agent, rewake)])
    for target, example in EXAMPLE_FILES[(agent, rewake)].items():
        text = (EXAMPLES / example).read_text()
        parsed = tomllib.loads(text) if example.endswith(".toml") else json.loads(text)
        assert parsed, example
        assert written[target] == text, f"examples/integrations/{example} differs from what integrate writes"
    assert tree(tmp_path) == {}


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_every_installed_hook_names_an_event_kairos_hook_knows(tmp_path, agent):
    """Each installed command is `kairos hook AGENT EVENT` with an AGENT and EVENT that `kairos hook` handles."""
    from kairos.integrations import hook

    plans, _ = agents.plan(agent, ctx(tmp_path))
    commands = []
    for item in plans:
        text, _ = item.transform(None)
        if text is None or item.path.suffix != ".json":
            continue
        for groups in json.loads(text).get("hooks", {}).values():
            for entry in groups:
                for handler in entry.get("hooks", [entry]):
                    commands.append(handler.get("command") or handler.get("bash"))
    assert commands
    for command in commands:
        program, verb, hook_agent, event, *options = command.split()
        assert options in ([], ["--max-wait", "86340"])
        assert (program, verb, hook_agent) == (KAIROS, "hook", agent)
        assert hook_agent in hook.AGENTS
        # kairos hook matches events case- and separator-insensitively.
        assert "".join(ch for ch in event.lower() if ch.isalnum()) in hook.EVENTS, event


# ---- what consolidation will cost ------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "copilot"])
def test_integrate_says_consolidation_uses_the_agents_cli_what_it_costs_and_how_to_opt_out(tmp_path, agent):
    proc = kairos(tmp_path, agent, "--kairos", KAIROS, env={"KAIROS_HOME": str(tmp_path / "k")})
    assert proc.returncode == 0, proc.stderr
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("consolidation:")]
    from kairosd.consolidation.remagent.modes import DEFAULT_MODELS

    assert f"kairos asks {agent} itself (headless, read-only, model {DEFAULT_MODELS[agent]})" in line
    assert re.search(r"about \d+(\.\d)?k input tokens for a typical session of 30 turns", line)
    assert f'Opt out with [consolidation] mode = "offline" in {tmp_path}/k/config/config.toml' in line
    doc = json.loads(kairos(tmp_path, agent, "--dry-run", "--json", env={"KAIROS_HOME": str(tmp_path / "k")}).stdout)
    assert doc["consolidation"] == line


def test_integrate_follows_the_configs_consolidation_choices(tmp_path):
    from consolidation_support import write_config

    home = {"KAIROS_HOME": str(tmp_path / "k")}
    write_config(tmp_path / "k", '[consolidation]\nmodels = { claude = "sonnet" }\nmax_agent_runs_per_day = 5\n')
    line = kairos(tmp_path, "claude", "--kairos", KAIROS, env=home).stdout.splitlines()[-1]
    assert "model sonnet" in line
    assert "at most 5 runs a day" in line
    write_config(tmp_path / "k", '[consolidation]\nmode = "offline"\n')
    line = kairos(tmp_path, "claude", "--kairos", KAIROS, env=home).stdout.splitlines()[-1]
    assert line == 'consolidation: offline ([consolidation] mode = "offline"): no model reads your claude sessions'


def test_the_clis_cost_figures_follow_the_daemons_prompt_and_models():
    """The CLI may not import kairosd.consolidation: its copies of the model table and of the prompt's
    size must follow the daemon's. The estimate is checked against a real prompt: 30 typed turns of
    the typical length, a board of 15 entries, and the definition sent with it."""
    from datetime import UTC, datetime

    from kairos.commands import integrate
    from kairosd.agents.catalog import builtin_definition
    from kairosd.consolidation.board.store import Board, Entry
    from kairosd.consolidation.remagent.modes import DEFAULT_MODELS
    from kairosd.consolidation.remagent.protocol import chunks, prompt_for

    assert {a: DEFAULT_MODELS[a] for a in integrate.CHEAP_MODELS} == integrate.CHEAP_MODELS
    now = datetime(2026, 11, 20, tzinfo=UTC)
    board = Board("/p", [Entry(f"b{i:06x}", f"Entry {i}: " + "w" * 80, "rule", "kairos", now, now) for i in range(15)])
    turns = [f"turn {i} " + "t" * (integrate.TYPICAL_TURN_CHARS - 9) for i in range(integrate.TYPICAL_TURNS)]
    [pieces] = chunks(turns, 60_000)
    prompt = prompt_for("/home/me/project", board, pieces, total_turns=len(turns), ended_at=now, now=now)
    sent = len(builtin_definition().prompt) + len(prompt)
    assert abs(integrate.estimate_tokens() * integrate.CHARS_PER_TOKEN - sent) <= sent * 0.1


# ---- versions -----------------------------------------------------------------------------------------


def fake_cli(folder: Path, name: str, prints: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && echo '{prints}'\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("agent", "old", "new", "lacks"),
    [
        ("claude", "2.1.197 (Claude Code)", "2.1.332 (Claude Code)", "turn-end delivery (the Stop hook's reason)"),
        ("codex", "codex-cli 0.150.0", "codex-cli 0.170.1", "idle wake (codex queue"),
        ("copilot", "GitHub Copilot CLI 1.0.61.", "GitHub Copilot CLI 1.0.102.", "hooks file"),
        ("gemini", "0.60.9", "0.61.0", "BeforeAgent, AfterAgent"),
    ],
)
def test_integrate_says_when_the_installed_cli_is_older_than_kairos_supports(tmp_path, agent, old, new, lacks):
    """Issue 23: Claude Code 2.1.197 (a plain npm install could still give it) got neither Stop-hook delivery
    nor kairos' MCP tools, and integrate said nothing. It now asks the CLI on PATH for its --version."""
    bin_dir = tmp_path / "bin"
    home = tmp_path / "home"
    home.mkdir()
    fake_cli(bin_dir, agent, old)
    proc = kairos(home, agent, "--dry-run", "--kairos", KAIROS, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stdout.splitlines() if " is older than " in line]
    assert len(notes) == 1, proc.stdout
    assert lacks in notes[0]
    assert "the oldest kairos supports" in notes[0]

    fake_cli(bin_dir, agent, new)
    proc = kairos(home, agent, "--json", "--dry-run", "--kairos", KAIROS, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert not [n for n in json.loads(proc.stdout)["notes"] if "version" in n or "older" in n]


def test_integrate_says_when_it_could_not_check_the_version(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    proc = kairos(home, "codex", "--json", "--dry-run", "--kairos", KAIROS, env={"PATH": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stderr
    assert (
        "codex is not on PATH, so its version was not checked (kairos supports 0.169.0 or newer)"
        in (json.loads(proc.stdout)["notes"])
    )
    broken = tmp_path / "bin"
    (broken).mkdir()
    (broken / "codex").write_text("#!/bin/sh\necho 'codex: missing optional dependency' >&2\nexit 1\n")
    (broken / "codex").chmod(0o755)
    proc = kairos(home, "codex", "--json", "--dry-run", "--kairos", KAIROS, env={"PATH": str(broken)})
    notes = json.loads(proc.stdout)["notes"]
    assert any(n.startswith("could not check codex's version") and "exited with 1" in n for n in notes), notes


# ---- Codex: a quit TUI ends its session at once ---------------------------------------------------------


def test_codex_gets_thread_unload_delay_0_first_and_uninstall_takes_only_that_line(tmp_path):
    """Issue 23: with Codex's shared app-server, /quit fired SessionEnd only when the thread was unloaded, 60 s
    later. thread_unload_delay_secs = 0 (a top-level key, so before every table) ends it at once."""
    path = tmp_path / ".codex" / "config.toml"
    installed, notes = transform("codex", ctx(tmp_path), path, CODEX_CONFIG)
    assert installed.splitlines()[0] == merge.UNLOAD_LINE.rstrip("\n")
    parsed = tomllib.loads(installed)
    assert parsed["thread_unload_delay_secs"] == 0
    assert parsed["model"] == "o3"
    assert notes == []
    assert transform("codex", ctx(tmp_path), path, installed)[0] == installed
    # The user's own lines after kairos' line survive an uninstall untouched.
    edited = installed.replace('model = "o3"', 'model = "o4"')
    removed, _ = transform("codex", ctx(tmp_path, install=False), path, edited)
    assert removed == CODEX_CONFIG.replace('model = "o3"', 'model = "o4"')


@pytest.mark.parametrize("value", ["0", "120"])
def test_codex_unload_delay_the_user_set_is_left_alone(tmp_path, value):
    path = tmp_path / ".codex" / "config.toml"
    text = f"thread_unload_delay_secs = {value}\n" + CODEX_CONFIG
    installed, notes = transform("codex", ctx(tmp_path), path, text)
    assert installed.startswith(text)
    assert tomllib.loads(installed)["thread_unload_delay_secs"] == int(value)
    unload_notes = [n for n in notes if "thread_unload_delay_secs" in n]
    if value == "0":
        assert unload_notes == []
    else:
        assert "a quit Codex TUI ends its session" in unload_notes[0]
    assert transform("codex", ctx(tmp_path, install=False), path, installed)[0] == text


def test_codex_dry_run_shows_the_unload_delay_and_writes_nothing(tmp_path):
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    before = tree(tmp_path)
    proc = kairos(tmp_path, "codex", "--dry-run", "--kairos", KAIROS)
    assert proc.returncode == 0, proc.stderr
    assert "+" + merge.UNLOAD_LINE in proc.stdout
    assert tree(tmp_path) == before
