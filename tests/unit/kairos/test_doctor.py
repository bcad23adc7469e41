"""``kairos doctor``: agent CLIs found and probed on a PATH of fakes, the config state, the API route.

Without a kairosd, ``kairos doctor`` runs ``python -m kairosd.app.doctor`` from this shell: for real
once (the local fallback's first call), in this process elsewhere (tests/cli_inprocess_support.py,
children_here: what it reports is the test, and each child costs ~0.3 s of CPU).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_inprocess_support import children_here
from fake_agents import write_fake_agents

from kairos.app import run
from kairosd.api.http_types import compact_json
from kairosd.api.server import Request
from kairosd.app.api import doctor_routes
from kairosd.app.doctor import doctor_report, local_report
from kairosd.app.reload import LiveSettings
from kairosd.config import Config


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    # Short and under /tmp, like the other CLI tests: no daemon socket is ever there.
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="kd"))
    monkeypatch.setenv("KAIROS_HOME", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def bin_dir(tmp_path) -> Path:
    folder = tmp_path / "bin"
    write_fake_agents(folder, ("claude", "copilot", "codex"))
    broken = folder / "opencode"
    broken.write_text("#!/bin/sh\necho 'opencode: cannot load its runtime' >&2\nexit 1\n")
    broken.chmod(0o755)
    return folder


def env_with(bin_dir: Path, home: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "KAIROS_HOME": str(home), "HOME": str(home)}


def by_name(report) -> dict[str, dict]:
    return {agent["name"]: agent for agent in report["agents"]}


@pytest.mark.slow
def test_agents_on_the_path_are_found_and_probed(bin_dir, home):
    report = doctor_report(Config(), env_with(bin_dir, home))
    agents = by_name(report)
    assert list(agents) == ["claude", "copilot", "codex", "gemini", "opencode"]
    assert agents["claude"]["usable"]
    assert agents["claude"]["version"] == "2.1.45 (Claude Code)"
    assert agents["claude"]["path"] == str(bin_dir / "claude")
    assert "fork" in agents["claude"]["features"]
    assert agents["copilot"]["version"] == "GitHub Copilot CLI 1.0.61."
    assert agents["codex"]["version"] == "codex-cli 0.160.0"
    assert agents["gemini"] == {
        **agents["gemini"],
        "found": False,
        "usable": False,
        "reason": "gemini not found on PATH",
    }
    opencode = agents["opencode"]
    assert (opencode["found"], opencode["usable"]) == (True, False)
    assert opencode["reason"] == f"{bin_dir / 'opencode'} --version exited with 1: opencode: cannot load its runtime"
    assert report["usable_agents"] == ["claude", "copilot", "codex"]
    assert report["ok"] is True
    assert report["problems"] == []
    assert report["search_path"] == f"{bin_dir}:/usr/bin:/bin"
    assert report["paths"]["socket"] == str(home / "run" / "kairosd.sock")
    assert report["paths"]["store"] == str(home / "state" / "scheduled_tasks.json")
    assert report["config"] == {
        "path": str(home / "config" / "config.toml"),
        "exists": False,
        "ok": True,
        "error": None,
    }
    assert report["limits"] == {
        "max_concurrent": 4,
        "max_depth": 5,
        "kill_grace": 10.0,
        "keep_finished": 1000,
        "max_connections": 256,
        "max_streams": 64,
        "max_sessions": 1000,
        "runs_per_task": 50,
        "session_ttl": 86400.0,
        "max_output": 1 << 20,
    }
    json.dumps(report)  # all plain data


@pytest.mark.slow
def test_a_hanging_version_probe_times_out(tmp_path, home):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "claude").write_text("#!/bin/sh\nexec sleep 30\n")
    (folder / "claude").chmod(0o755)
    agents = by_name(doctor_report(Config(), env_with(folder, home), version_timeout=0.3))
    assert agents["claude"]["found"]
    assert not agents["claude"]["usable"]
    assert agents["claude"]["reason"].endswith("--version did not answer within 0.3s")


@pytest.mark.slow
def test_configured_binaries_custom_and_disabled_agents(bin_dir, home, tmp_path):
    config = Config.model_validate(
        {
            "agents": {
                "claude": {"binary": str(bin_dir / "claude"), "model": "opus"},
                "copilot": {"binary": str(tmp_path / "nowhere" / "copilot")},
                "codex": {"enabled": False},
            },
            "custom": {"mine": {"argv": ["claude", "{prompt}"]}, "gone": {"argv": ["no-such-agent", "{prompt}"]}},
        }
    )
    agents = by_name(doctor_report(config, {"PATH": str(bin_dir), "KAIROS_HOME": str(home)}))
    assert agents["claude"]["usable"]
    assert agents["claude"]["model"] == "opus"
    assert agents["copilot"]["reason"] == f"{tmp_path / 'nowhere' / 'copilot'} not found at that path"
    assert agents["codex"] == {**agents["codex"], "enabled": False, "usable": False}
    assert agents["codex"]["reason"] == "disabled in the config (enabled = false)"
    assert agents["mine"]["usable"]
    assert agents["mine"]["kind"] == "custom"
    assert agents["gone"]["reason"] == "no-such-agent not found on PATH"


def test_no_agent_cli_is_a_note_not_a_problem(home, tmp_path, monkeypatch, capsys):
    """An inbox-only user has no agent CLI: doctor says so and exits 0 (issue 15, item 7)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    report = local_report({"PATH": str(tmp_path), "KAIROS_HOME": str(home)})
    assert (report["ok"], report["problems"], report["usable_agents"]) == (True, [], [])
    assert report["notes"][0].startswith("no agent CLI is usable (the inbox, shell and webhook targets do not need")
    ran_here = children_here(monkeypatch, "kairosd.app.doctor")
    assert run(["doctor"]) == 0
    assert len(ran_here) == 1
    assert "note:    no agent CLI is usable" in capsys.readouterr().out


def test_a_broken_config_is_a_problem(home, tmp_path):
    (home / "config").mkdir(mode=0o700)
    (home / "config" / "config.toml").write_text("[limits]\nmax_concurent = 3\n")
    (home / "config" / "config.toml").chmod(0o600)
    report = local_report({"PATH": str(tmp_path), "KAIROS_HOME": str(home)})
    assert report["checked_by"] == "cli"
    assert report["ok"] is False
    assert report["config"]["ok"] is False
    assert "limits.max_concurent: unknown key" in report["config"]["error"]
    assert [p.split(":")[0] for p in report["problems"]] == ["config"]
    assert report["notes"][0].startswith("no agent CLI is usable")


def test_an_offline_reading_kairos_does_not_have_is_a_config_problem(home, tmp_path):
    (home / "config").mkdir(mode=0o700)
    (home / "config" / "config.toml").write_text('[consolidation]\noffline = "strict"\n')
    (home / "config" / "config.toml").chmod(0o600)
    report = local_report({"PATH": str(tmp_path), "KAIROS_HOME": str(home)})
    assert report["config"]["ok"] is False
    assert "consolidation.offline: Input should be 'broad' or 'cautious'" in report["config"]["error"]
    assert [p.split(":")[0] for p in report["problems"]] == ["config"]


@pytest.mark.slow
def test_a_tz_kairos_cannot_use_is_a_note_naming_the_zone_it_uses(home, tmp_path):
    """Issue 27, finding 6: a POSIX TZ string fell back silently; doctor now says which zone kairos uses."""
    env = {"PATH": str(tmp_path), "KAIROS_HOME": str(home), "TZ": "EST5EDT,M3.2.0,M11.1.0"}
    notes = [n for n in local_report(env)["notes"] if n.startswith("TZ=")]
    assert len(notes) == 1
    assert "is a POSIX rule string, which kairos cannot use" in notes[0]
    assert re.search(r"kairos uses \S+ as the local zone instead$", notes[0])
    env["TZ"] = "America/New_York"
    assert not [n for n in local_report(env)["notes"] if n.startswith("TZ=")]


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ('"A\\u0000B" = "x"', "variable name 'A\\x00B' contains a NUL"),
        ('"" = "x"', "must be non-empty"),
        ('"A=B" = "x"', "contain no '='"),
        ('OK = "a\\u0000b"', "the value of 'OK' contains a NUL"),
    ],
)
def test_an_agent_env_that_no_run_could_use_is_a_config_problem(home, tmp_path, env, says):
    """Issue 27, finding 6: a NUL in an env-var name passed doctor, then every run of that agent failed."""
    (home / "config").mkdir(mode=0o700)
    (home / "config" / "config.toml").write_text(f"[agents.claude.env]\n{env}\n")
    (home / "config" / "config.toml").chmod(0o600)
    report = local_report({"PATH": str(tmp_path), "KAIROS_HOME": str(home)})
    assert report["config"]["ok"] is False
    assert says in report["config"]["error"]
    assert "agents.claude.env" in report["config"]["error"]
    assert [p.split(":")[0] for p in report["problems"]] == ["config"]


def test_the_api_route_reports_from_the_daemon(bin_dir, home, monkeypatch):
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    ((pattern, methods),) = doctor_routes(LiveSettings(Config()))
    assert pattern == "doctor"
    request = Request(method="GET", path="/v1/doctor", query={}, body=None, peer_uid=os.getuid())
    response = asyncio.run(methods["GET"](request, re.fullmatch("x", "x")))  # type: ignore[arg-type]
    assert response.status == 200
    report = json.loads(compact_json(response.body))["doctor"]
    assert report["checked_by"] == "kairosd"
    assert by_name(report)["claude"]["usable"]


@pytest.mark.slow
def test_the_cli_falls_back_to_a_local_check(bin_dir, home, monkeypatch, capsys):
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert run(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["note"].startswith("kairosd is not running")
    assert report["usable_agents"] == ["claude", "copilot", "codex"]
    children_here(monkeypatch, "kairosd.app.doctor")  # the first, above, was a real child process
    assert run(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "checked by this shell" in out
    assert re.search(r"claude\s+ok\s+\S+/claude\s+2\.1\.45 \(Claude Code\)", out)
    assert re.search(r"gemini\s+missing\s+gemini not found on PATH", out)
    assert re.search(r"opencode\s+broken\s+", out)


LINGER_OFF = "enable with: loginctl enable-linger me"


def test_the_cli_shows_the_daemons_report(home, monkeypatch, capsys, tmp_path):
    from kairos import client

    # A whole report as kairosd answers it (kairosd.core.wire.doctor.DoctorDoc), with what this test shows.
    monkeypatch.setenv("PATH", str(tmp_path))  # no agent CLI to probe
    canned = {
        **local_report(),
        "ok": False,
        "problems": ["config: ..."],
        "notes": [],
        "checked_by": "kairosd",
        "pid": 4242,
        "kairos_version": "0.1.0",
        "config": {"path": "/c/config.toml", "exists": True, "ok": True, "error": None},
        "paths": {"socket": "/r/kairosd.sock", "store": "/s/scheduled_tasks.json"},
        "systemd": {"loginctl": True, "linger": False, "state": "off", "detail": LINGER_OFF},
    }
    calls = []

    def fake_call(self, method, path, body=None, query=None):
        calls.append((method, path))
        return {"doctor": canned}

    monkeypatch.setattr(client.Client, "call", fake_call)
    assert run(["doctor"]) == 1
    out = capsys.readouterr().out
    assert calls == [("GET", "/doctor")]
    assert "checked by kairosd, pid 4242" in out
    assert "note:" not in out
    assert "config:  /c/config.toml  ok" in out
    assert "linger:  no (enable with: loginctl enable-linger me)" in out
    assert "problem: config: ..." in out


def test_an_old_daemon_without_the_route_falls_back(home, monkeypatch, capsys, tmp_path):
    from kairos import client

    def not_found(self, method, path, body=None, query=None):
        raise client.ApiError(404, "not_found", "no such endpoint: /v1/doctor")

    monkeypatch.setattr(client.Client, "call", not_found)
    monkeypatch.setenv("PATH", str(tmp_path))
    children_here(monkeypatch, "kairosd.app.doctor")
    assert run(["doctor", "--json"]) == 0  # no agent CLI: a note, not a failure
    assert "no doctor endpoint" in json.loads(capsys.readouterr().out)["note"]


def test_hook_files_others_can_write_are_problems(home, tmp_path):
    """Each configured hook is checked as kairosd checks it before a run; an unsafe file is a problem with its fix."""
    hooks = tmp_path / "hooks"
    hooks.mkdir(mode=0o700)
    safe, loose, script = hooks / "safe", hooks / "loose", hooks / "loose.sh"
    for path, mode in ((safe, 0o755), (loose, 0o775), (script, 0o646)):
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(mode)
    (home / "config").mkdir(mode=0o700)
    (home / "config" / "config.toml").write_text(
        f'[hooks]\ntask_created = ["{safe}"]\ntask_completed = ["{loose}", "x"]\n'
        f'scheduled_task_fired = ["/bin/sh", "{script}"]\n'
    )
    (home / "config" / "config.toml").chmod(0o600)
    empty = tmp_path / "empty"
    empty.mkdir()

    report = local_report({"PATH": str(empty), "KAIROS_HOME": str(home)})

    assert report["config"]["ok"] is True
    by_event = {hook["event"]: hook for hook in report["hooks"]}
    assert by_event["task_created"] == {"event": "task_created", "argv": [str(safe)], "ok": True, "unsafe": []}
    assert by_event["task_completed"]["ok"] is False
    assert by_event["task_completed"]["unsafe"] == [
        {
            "path": str(loose),
            "problem": f"{loose}: this file is writable by its group (mode 775)",
            "fix": f"chmod go-w {loose}",
        }
    ]
    assert by_event["scheduled_task_fired"]["unsafe"][0]["path"] == str(script)
    hook_problems = [p for p in report["problems"] if p.startswith("hook ")]
    assert hook_problems == [
        f"hook task_completed ({loose}): {loose}: this file is writable by its group (mode 775), "
        f"so kairosd will not run it. Fix it with: chmod go-w {loose}",
        f"hook scheduled_task_fired (/bin/sh): {script}: this file is writable by others (mode 646), "
        f"so kairosd will not run it. Fix it with: chmod go-w {script}",
    ]
    assert report["ok"] is False


@pytest.mark.slow
def test_gemini_is_usable_but_doctor_says_untrusted_folders_fail_and_how_to_allow_them(tmp_path, home):
    """Gemini 0.61 exits 55 headless in a folder the user has not trusted: doctor says so, and what to do."""
    folder = tmp_path / "bin"
    write_fake_agents(folder, ("gemini",))
    agents = by_name(doctor_report(Config(), env_with(folder, home)))
    assert agents["gemini"]["usable"]
    assert "exit 55" in agents["gemini"]["note"]
    assert "GEMINI_CLI_TRUST_WORKSPACE" in agents["gemini"]["note"]
    assert agents["claude"]["note"] is None
    opted_in = Config.model_validate({"agents": {"gemini": {"env": {"GEMINI_CLI_TRUST_WORKSPACE": "true"}}}})
    assert by_name(doctor_report(opted_in, env_with(folder, home)))["gemini"]["note"] is None


def test_doctor_shows_the_settings_in_effect(home, tmp_path, monkeypatch, capsys):
    """The file's values, the environment's override over them, the defaults for the rest; no secret shown."""
    secret = "0123456789abcdef-not-for-eyes"
    (home / "config").mkdir(mode=0o700)
    config = home / "config" / "config.toml"
    config.write_text(
        f'[limits]\nmax_concurrent = 3\nkill_grace = "2m"\n[consolidation]\nmode = "agent"\noffline = "cautious"\n'
        f'[webhook]\nsecret = "{secret}"\nmax_attempts = 2\n'
    )
    config.chmod(0o600)
    env = {"PATH": str(tmp_path), "KAIROS_HOME": str(home), "KAIROS_MAX_DEPTH": "7"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = local_report(env)["settings"]
    assert settings["limits"] == {
        "max_concurrent": 3,
        "max_depth": 7,
        "kill_grace": 120.0,
        "keep_finished": 1000,
        "max_connections": 256,
        "max_streams": 64,
        "max_sessions": 1000,
        "runs_per_task": 50,
        "session_ttl": 86400.0,
        "max_output": 1 << 20,
    }
    assert settings["consolidation"] == {
        **settings["consolidation"],
        "mode": "agent",
        "offline": "cautious",
        "min_user_turns": 3,
    }
    assert settings["webhook"] == {**settings["webhook"], "secret": "**********", "max_attempts": 2, "timeout": 30.0}
    assert settings["agents"]["claude"]["timeout"] == 3600.0
    assert secret not in json.dumps(settings)

    children_here(monkeypatch, "kairosd.app.doctor")
    assert run(["doctor"]) == 0
    out = capsys.readouterr().out
    assert (
        "  limits:        max_concurrent 3, max_depth 7, kill_grace 120, keep_finished 1000, max_connections 256, "
        "max_streams 64, max_sessions 1000, runs_per_task 50, session_ttl 86400, max_output 1048576\n"
    ) in out
    assert "  consolidation: enabled yes, min_interval_minutes 10, min_user_turns 3, mode agent," in out
    assert "  webhook:       secret **********, secret_file -, allow_non_loopback no," in out
    assert secret not in out
