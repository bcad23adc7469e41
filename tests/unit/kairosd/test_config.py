"""The user config file: defaults, every section, and every way it can be wrong."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths_support import REPO

from kairosd.agents.base import Permissions
from kairosd.config import BUILTIN_AGENTS, HOOK_EVENTS, Config, config_path, load_config
from kairosd.core.errors import ConfigError
from kairosd.system.paths import Paths


@pytest.fixture
def paths(tmp_path) -> Paths:
    paths = Paths.from_env({"KAIROS_HOME": str(tmp_path / "home")})
    paths.config_dir.mkdir(parents=True, mode=0o700)
    return paths


def write(paths: Paths, text: str, mode: int = 0o600) -> Path:
    path = config_path(paths)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    path.chmod(mode)
    return path


def test_no_file_means_the_defaults(paths):
    config = load_config(paths, {})
    assert config.path is None
    assert config == Config()
    assert (config.limits.max_concurrent, config.limits.max_depth, config.limits.kill_grace) == (4, 5, 10.0)
    assert config.agent_names() == list(BUILTIN_AGENTS)
    for name in BUILTIN_AGENTS:
        agent = config.agent(name)
        assert (agent.enabled, agent.binary, agent.model, agent.permission_mode) == (True, None, None, "default")
        assert config.timeout_s(name) == 3600.0
        assert config.ceiling(name) == Permissions("default")
    assert all(config.hooks.for_event(event) == [] for event in HOOK_EVENTS)


def test_the_defaults_are_constructed_without_building_a_validator_and_are_valid(tmp_path):
    """Without a file the defaults are constructed, not validated (a validator built is CPU every kairosd
    start pays), so they must equal what validating nothing gives, section by section, and every value
    of theirs must pass its own field's checks."""
    script = (
        "import sys\n"
        "from kairosd.config import Config, load_config\n"
        "from kairosd.system.paths import Paths\n"
        "config = load_config(Paths.from_env({'KAIROS_HOME': sys.argv[1]}), {})\n"
        "print(Config.__pydantic_complete__)\n"
        "assert config == Config.model_validate({})\n"
        "assert config == Config.model_validate(config.model_dump())\n"
        "for name in ('agents', 'limits', 'hooks', 'webhook', 'consolidation'):\n"
        "    assert getattr(config, name) == type(getattr(config, name)).model_validate({}), name\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


def test_every_section(paths):
    path = write(
        paths,
        """
        [agents.claude]
        binary = "/opt/claude/bin/claude"
        model = "sonnet"
        extra_args = ["--max-turns", "40"]
        permission_mode = "acceptEdits"
        allowed_tools = ["Read", "Edit", "Bash"]
        denied_tools = ["Bash"]
        timeout = "45m"
        env = { CLAUDE_CONFIG_DIR = "/home/me/.claude-work" }

        [agents.codex]
        enabled = false
        timeout = 90

        [custom.my-agent]
        argv = ["my-agent", "--prompt", "{prompt}"]
        resume_argv = ["my-agent", "--resume", "{session}", "--prompt", "{prompt}"]
        output = "json"
        text_field = "result"
        session_field = "session_id"
        permission_mode = "plan"

        [limits]
        max_concurrent = 8
        max_depth = 2
        kill_grace = "3s"

        [[hooks.task_completed]]
        argv = ["notify-send", "kairos"]
        timeout = "5s"

        [[hooks.task_completed]]
        argv = ["logger", "-t", "kairos"]

        [hooks.task_created]
        argv = ["true"]

        [hooks]
        scheduled_task_missed = ["mail", "-s", "missed", "me"]
        """,
    )
    config = load_config(paths, {})
    assert config.path == path
    claude = config.agent("claude")
    assert (claude.binary, claude.model, claude.extra_args) == (
        "/opt/claude/bin/claude",
        "sonnet",
        ["--max-turns", "40"],
    )
    assert claude.env == {"CLAUDE_CONFIG_DIR": "/home/me/.claude-work"}
    assert config.timeout_s("claude") == 2700.0
    assert config.ceiling("claude") == Permissions("acceptEdits", frozenset({"Read", "Edit"}), frozenset({"Bash"}))
    assert config.agent("codex").timeout == 90.0
    assert config.agent_names() == ["claude", "copilot", "gemini", "opencode", "my-agent"]
    assert "codex" in config.agent_names(enabled_only=False)
    custom = config.custom["my-agent"]
    assert (custom.output, custom.text_field, custom.session_field) == ("json", "result", "session_id")
    assert config.ceiling("my-agent").mode == "plan"
    assert (config.limits.max_concurrent, config.limits.max_depth, config.limits.kill_grace) == (8, 2, 3.0)
    assert [(h.argv, h.timeout) for h in config.hooks.for_event("task_completed")] == [
        (["notify-send", "kairos"], 5.0),
        (["logger", "-t", "kairos"], 10.0),
    ]
    assert [h.argv for h in config.hooks.task_created] == [["true"]]
    assert [h.argv for h in config.hooks.scheduled_task_missed] == [["mail", "-s", "missed", "me"]]
    assert config.hooks.scheduled_task_fired == []
    assert config.hooks.as_specs() == {
        "task_created": [(["true"], 10.0)],
        "task_completed": [(["notify-send", "kairos"], 5.0), (["logger", "-t", "kairos"], 10.0)],
        "scheduled_task_missed": [(["mail", "-s", "missed", "me"], 10.0)],
    }
    with pytest.raises(ValueError, match="no such hook event"):
        config.hooks.for_event("task_exploded")


def test_bad_toml_names_the_file_and_the_line(paths):
    path = write(paths, "[limits]\nmax_concurrent = = 3\n")
    with pytest.raises(ConfigError, match=rf"^{path} is not valid TOML: .*line 2") as info:
        load_config(paths, {})
    assert info.value.code == "config"
    assert path.read_text() == "[limits]\nmax_concurrent = = 3\n"  # never rewritten


def test_a_file_that_is_not_utf8_is_refused(paths):
    config_path(paths).write_bytes(b"[limits]\nmax_depth = 3 # \xff\n")
    config_path(paths).chmod(0o600)
    with pytest.raises(ConfigError, match="is not UTF-8"):
        load_config(paths, {})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Issue 24, item 14: a typo names the key it probably meant.
        ("[limits]\nmax_concurent = 3", "limits.max_concurent: unknown key (did you mean 'max_concurrent'?)"),
        ("[agents.claud]\nmodel = 'x'", "agents.claud: unknown key (did you mean 'claude'?)"),
        ("[consolidation]\nenable = true", "consolidation.enable: unknown key (did you mean 'enabled'?)"),
        ("[hooks]\ntask_exploded = ['x']", "hooks.task_exploded: unknown key"),
        ("[agents.claude]\nmodle = 'x'", "agents.claude.modle: unknown key (did you mean 'model'?)"),
        ("[custom.mine]\nargv = ['x']\npromt_stdin = true", "promt_stdin: unknown key (did you mean 'prompt_stdin'?)"),
        ("path = '/etc/passwd'", "path: unknown key (check the spelling)"),
    ],
)
def test_unknown_keys_are_errors_naming_the_key(paths, text, message):
    path = write(paths, text)
    with pytest.raises(ConfigError, match=f"^{path}: ") as info:
        load_config(paths, {})
    assert message in info.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[limits]\nmax_concurrent = 0", "limits.max_concurrent: Input should be greater than or equal to 1"),
        ("[limits]\nmax_concurrent = 257", "limits.max_concurrent: Input should be less than or equal to 256"),
        ("[limits]\nmax_concurrent = '4'", "limits.max_concurrent: Input should be a valid integer"),
        ("[limits]\nmax_depth = -1", "limits.max_depth"),
        ("[limits]\nkill_grace = 'soon'", "limits.kill_grace: 'soon' is not a duration"),
        ("[limits]\nkill_grace = true", "limits.kill_grace"),
        ("[agents.claude]\npermission_mode = 'yolo'", "agents.claude.permission_mode: Input should be 'plan'"),
        ("[agents.claude]\nmodel = 3", "agents.claude.model: Input should be a valid string"),
        ("[agents.claude]\nbinary = ''", "agents.claude.binary"),
        ("[agents.claude]\nextra_args = '--verbose'", "agents.claude.extra_args: Input should be a valid list"),
        ("[agents.claude]\ntimeout = 0", "agents.claude.timeout: Input should be greater than 0"),
        ("[hooks.task_created]\nargv = []", "hooks.task_created.0.argv"),
        ("[hooks.task_created]\nargv = ['x']\ntimeout = '1h'", "hooks.task_created.0.timeout"),
        ("[custom.mine]\nargv = ['x', '{prompt}', '{bogus}']", "custom.mine: unknown placeholder {bogus}"),
        ("[custom.mine]\nargv = ['x', '{prompt']", "unmatched brace"),
        ("[custom.mine]\nargv = ['x']", "argv has no {prompt}"),
        ("[custom.mine]\nargv = ['x', '{prompt}']\noutput = 'json'", "needs text_field"),
        ("[custom.mine]\nargv = ['x', '{prompt}']\nbinary = 'y'", "do not apply to a custom agent"),
        ("[custom.claude]\nargv = ['x', '{prompt}']", "'claude' is a built-in agent"),
        ("[custom.'-bad']\nargv = ['x', '{prompt}']", "custom.-bad: not a valid agent name"),
        ("[consolidation]\noffline = 'careful'", "consolidation.offline: Input should be 'broad' or 'cautious'"),
        ("[consolidation]\noffline = true", "consolidation.offline: Input should be 'broad' or 'cautious'"),
    ],
)
def test_bad_values_are_errors_naming_the_key(paths, text, message):
    write(paths, text)
    with pytest.raises(ConfigError) as info:
        load_config(paths, {})
    assert message in info.value.message


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_file_others_can_write_is_refused(paths, mode):
    path = write(paths, "[limits]\nmax_depth = 3\n", mode=mode)
    who = "others" if mode & 0o002 else "its group"
    with pytest.raises(ConfigError, match=f"writable by {who}.*chmod go-w {path}"):
        load_config(paths, {})


def test_a_folder_others_can_write_is_refused(paths):
    write(paths, "[limits]\nmax_depth = 3\n")
    paths.config_dir.chmod(0o770)
    with pytest.raises(ConfigError, match=f"^{paths.config_dir}: this folder is writable by its group"):
        load_config(paths, {})
    paths.config_dir.chmod(0o1777)  # sticky, like /tmp: nobody else can replace the file
    assert load_config(paths, {}).limits.max_depth == 3


def test_a_symlinked_config_is_checked_where_it_points(paths, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir(mode=0o700)
    target = dotfiles / "kairos.toml"
    target.write_text("[limits]\nmax_depth = 1\n")
    target.chmod(0o600)
    config_path(paths).symlink_to(target)
    assert load_config(paths, {}).limits.max_depth == 1
    target.chmod(0o666)
    with pytest.raises(ConfigError, match="writable by others"):
        load_config(paths, {})


def test_an_unreadable_file_is_an_error(paths):
    if os.getuid() == 0:
        pytest.skip("root reads every file")
    write(paths, "", mode=0o000)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(paths, {})


def test_the_environment_overrides_the_limits(paths):
    write(paths, "[limits]\nmax_concurrent = 8\nmax_depth = 2\n")
    config = load_config(paths, {"KAIROS_MAX_CONCURRENT": "16", "KAIROS_MAX_DEPTH": "0"})
    assert (config.limits.max_concurrent, config.limits.max_depth) == (16, 0)
    assert config.path == config_path(paths)  # kept through the override
    assert load_config(paths, {"KAIROS_MAX_CONCURRENT": " "}).limits.max_concurrent == 8
    assert load_config(Paths.from_env({"KAIROS_HOME": "/nonexistent"}), {"KAIROS_MAX_DEPTH": "7"}).limits.max_depth == 7


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("KAIROS_MAX_CONCURRENT", "0", "KAIROS_MAX_CONCURRENT must be a whole number from 1 to 256, not '0'"),
        ("KAIROS_MAX_CONCURRENT", "257", "from 1 to 256"),
        ("KAIROS_MAX_CONCURRENT", "four", "not 'four'"),
        ("KAIROS_MAX_DEPTH", "-1", "KAIROS_MAX_DEPTH must be a whole number from 0 to 64"),
        # Issue 27, finding 6: isdigit() and int() read Arabic-Indic and fullwidth digits as 3.
        ("KAIROS_MAX_DEPTH", "\u0663", "KAIROS_MAX_DEPTH must be a whole number"),
        ("KAIROS_MAX_CONCURRENT", "\uff13", "KAIROS_MAX_CONCURRENT must be a whole number"),
        # Once read in the wiring, where a bad value raised SystemExit instead of a ConfigError.
        ("KAIROS_RUNS_PER_TASK", "0", "KAIROS_RUNS_PER_TASK must be a whole number from 1 to 100000, not '0'"),
        ("KAIROS_RUNS_PER_TASK", "\u0661\u0660", "KAIROS_RUNS_PER_TASK must be a whole number"),
        ("KAIROS_SESSION_TTL", "soon", "KAIROS_SESSION_TTL: "),
        ("KAIROS_SESSION_TTL", "30s", "KAIROS_SESSION_TTL must be at least 1m, not '30s'"),
    ],
)
def test_a_bad_environment_override_names_the_variable(paths, var, value, message):
    with pytest.raises(ConfigError, match=message):
        load_config(paths, {var: value})


def test_every_environment_setting_is_read_by_load_config(paths):
    """One config: the run history, the session ttl and both switches come from load_config, over the file."""
    write(paths, '[limits]\nruns_per_task = 9\nsession_ttl = "2h"\n')
    config = load_config(paths, {})
    assert (config.limits.runs_per_task, config.limits.session_ttl) == (9, 7200.0)
    assert (config.firing_disabled, config.consolidation.switched_off) == (None, None)
    env = {
        "KAIROS_RUNS_PER_TASK": "500",
        "KAIROS_SESSION_TTL": "90m",
        "KAIROS_DISABLE_CRON": "1",
        "KAIROS_CONSOLIDATE": "off",
    }
    config = load_config(paths, env)
    assert (config.limits.runs_per_task, config.limits.session_ttl) == (500, 5400.0)
    assert config.firing_disabled is not None
    assert config.firing_disabled.startswith("KAIROS_DISABLE_CRON=1 is set")
    assert config.consolidation.switched_off == "KAIROS_CONSOLIDATE=off is set in kairosd's environment"
    assert config.path == config_path(paths)
    assert load_config(paths, {"CLAUDE_CODE_DISABLE_CRON": "true"}).firing_disabled is not None
    assert load_config(paths, {"KAIROS_DISABLE_CRON": "0", "KAIROS_CONSOLIDATE": "1"}).firing_disabled is None


def test_the_defaults_of_the_environment_settings(paths):
    config = load_config(paths, {})
    assert (config.limits.runs_per_task, config.limits.session_ttl) == (50, 24 * 3600.0)


@pytest.mark.parametrize("text", ["[limits]\nkill_grace = nan\n", "[consolidation]\nmin_interval_minutes = inf\n"])
def test_config_numbers_are_finite(paths, text):
    """TOML has inf and nan; refused as what they are, not as "should be at most 600"."""
    write(paths, text)
    with pytest.raises(ConfigError, match="Input should be a finite number"):
        load_config(paths, {})


def test_config_durations_take_ascii_digits_only(paths):
    write(paths, '[limits]\nkill_grace = "\u0663s"\n')
    with pytest.raises(ConfigError, match="kill_grace"):
        load_config(paths, {})


def test_xdg_config_home_is_honoured(tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "kairos").mkdir(parents=True, mode=0o700)
    xdg.chmod(0o700)
    (xdg / "kairos" / "config.toml").write_text("[limits]\nmax_depth = 9\n")
    (xdg / "kairos" / "config.toml").chmod(0o600)
    paths = Paths.from_env({"XDG_CONFIG_HOME": str(xdg), "HOME": str(tmp_path)})
    assert load_config(paths, {}).limits.max_depth == 9


def test_many_problems_are_summarised(paths):
    write(paths, "\n".join(f"bogus{i} = 1" for i in range(8)))
    with pytest.raises(ConfigError, match=r"\(and 3 more\)$"):
        load_config(paths, {})


def test_the_example_config_is_valid(paths):
    example = REPO / "examples" / "config.toml"
    write(paths, example.read_text())
    config = load_config(paths, {})
    assert config.agent_names() == ["claude", "copilot", "codex", "opencode", "aider"]
    assert config.ceiling("claude") == Permissions("acceptEdits", None, frozenset({"WebFetch"}))


def test_every_part_shares_one_set_of_defaults(tmp_path):
    """The config said a 10 s kill grace and 4 at once; the shell target used 5 s and the scheduler 8."""
    from kairosd.config import Limits
    from kairosd.core.clock import SystemClock
    from kairosd.delivery.shell import ShellDelivery
    from kairosd.jobs.limits import RegistryLimits
    from kairosd.scheduling.scheduler import SchedulerConfig
    from kairosd.system.lifecycle import LifecycleHooks
    from kairosd.system.runner import ProcessRun

    config = Limits()
    registry = RegistryLimits()
    assert config.max_concurrent == registry.max_concurrent == SchedulerConfig().max_concurrent
    assert config.max_depth == registry.max_depth
    assert config.keep_finished == registry.keep_finished
    assert config.kill_grace == registry.kill_grace_s
    assert ShellDelivery(tmp_path, SystemClock())._kill_grace_s == config.kill_grace
    for cls in (ProcessRun, LifecycleHooks):
        import inspect

        assert inspect.signature(cls).parameters["kill_grace_s"].default == config.kill_grace


def test_client_limits_are_read_and_checked(paths):
    write(paths, "[limits]\nmax_connections = 40\nmax_streams = 10\nmax_sessions = 50\n")
    limits = load_config(paths, {}).limits
    assert (limits.max_connections, limits.max_streams, limits.max_sessions) == (40, 10, 50)
    write(paths, "[limits]\nmax_connections = 4\nmax_streams = 10\n")
    with pytest.raises(ConfigError, match="max_streams \\(10\\) must not exceed max_connections \\(4\\)"):
        load_config(paths, {})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("4096", 4096), ('"512KiB"', 512 << 10), ('"2 MiB"', 2 << 20), ('"3MB"', 3_000_000), ('"1gib"', 1 << 30)],
)
def test_max_output_takes_bytes_or_a_size(paths, value, expected):
    write(paths, f"[limits]\nmax_output = {value}\n")
    assert load_config(paths, {}).limits.max_output == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [('"1 parsec"', "not a size"), ('"1.5MiB"', "not a size"), ("100", "greater than or equal to 1024"),
     ('"2GiB"', "less than or equal to"), ("true", "number of bytes")],
)  # fmt: skip
def test_a_bad_max_output_is_an_error_naming_the_key(paths, value, message):
    write(paths, f"[limits]\nmax_output = {value}\n")
    with pytest.raises(ConfigError, match=r"limits\.max_output: .*" + message):
        load_config(paths, {})


def test_the_output_cap_defaults_to_one_mib_everywhere():
    from kairosd.config import Limits
    from kairosd.jobs.limits import RegistryLimits

    assert Limits().max_output == RegistryLimits().max_output == 1 << 20


def test_offline_mode_reads_broadly_unless_the_cautious_reading_is_asked_for(paths):
    """[consolidation] offline: "broad" (the cues alone, today's behaviour) by default; "cautious" opts in."""
    assert load_config(paths, {}).consolidation.offline == "broad"
    write(paths, '[consolidation]\nmode = "offline"\noffline = "cautious"\n')
    assert load_config(paths, {}).consolidation.offline == "cautious"
