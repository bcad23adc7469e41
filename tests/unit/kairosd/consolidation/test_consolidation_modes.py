"""Which way a run goes (kairosd.consolidation.remagent.modes): integration found by kairos' session-end hook,
the model's precedence, and the daily count of agent runs."""

from __future__ import annotations

from pathlib import Path

from kairosd.consolidation.remagent import modes


def test_integrated_means_kairos_session_end_hook_is_in_the_clis_hooks_file(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert modes.integrated("claude", env)[0] is False
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": [{"command": "/bin/kairos hook claude Stop"}]}}')
    ok, why = modes.integrated("claude", env)
    assert not ok
    assert "no kairos SessionEnd hook" in why
    settings.write_text('{"hooks": {"SessionEnd": [{"command": "/bin/kairos hook claude SessionEnd"}]}}')
    assert modes.integrated("claude", env)[0] is True
    # CODEX_HOME and COPILOT_HOME move those CLIs' folders, as kairos integrate honours them
    codex_home = tmp_path / "elsewhere"
    codex_home.mkdir()
    (codex_home / "hooks.json").write_text('{"SessionEnd": [{"command": "kairos hook codex SessionEnd"}]}')
    assert modes.integrated("codex", {**env, "CODEX_HOME": str(codex_home)})[0] is True
    assert modes.integrated("codex", env)[0] is False
    assert modes.integrated("aider", env) == (False, "kairos integrate does not set up 'aider'")
    # opencode: kairos' plugin, which runs `kairos hook opencode SessionEnd`
    # (tests/integration/kairos/agents/test_integrate_opencode.py)
    assert modes.integrated("opencode", env)[1].startswith("opencode is not integrated (no ")


def test_the_model_is_the_configs_else_the_definitions_else_a_cheap_one() -> None:
    assert modes.model_for("claude", {"claude": "sonnet"}, "opus") == "sonnet"
    assert modes.model_for("claude", {"codex": "x"}, "opus") == "opus"
    assert modes.model_for("claude", {}, None) == "haiku"
    assert modes.model_for("opencode", {}, None) is None  # the user's own default there


def test_the_daily_count_stops_at_the_cap_and_starts_again_the_next_day(tmp_path: Path) -> None:
    assert [modes.take_run(tmp_path, "2026-11-20", 2) for _ in range(3)] == [(True, 0), (True, 1), (False, 2)]
    assert modes.take_run(tmp_path, "2026-11-21", 2) == (True, 0)
    assert modes.take_run(tmp_path, "2026-11-21", 0) == (False, 0)  # 0: never agent mode
    (tmp_path / modes.COUNT_FILE).write_text("not json")
    assert modes.take_run(tmp_path, "2026-11-21", 2) == (True, 0)  # a broken count starts again
