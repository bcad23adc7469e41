"""The agent adapters: command lines, permission mapping, and parsing real output shapes.

The slow tests run the command each adapter builds against the fake CLIs of
``fake_agents`` (which reject unknown flags like the real ones) and feed what
they print to ``progress()`` and ``result()``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_agents import write_fake_agents
from hypothesis import given, settings
from hypothesis import strategies as st
from sizes_support import sized

from kairosd.agents.adapters import (
    BUILTIN,
    adapter_for,
)
from kairosd.agents.base import AgentAdapter, Permissions, Progress, TurnOutcome, TurnRequest, narrow
from kairosd.agents.claude import ClaudeAdapter
from kairosd.agents.codex import CodexAdapter
from kairosd.agents.common import AdapterSettings, exit_reason
from kairosd.agents.copilot import CopilotAdapter
from kairosd.agents.custom import CustomAdapter, CustomSpec
from kairosd.agents.gemini import GeminiAdapter
from kairosd.agents.opencode import OpencodeAdapter, permission_config
from kairosd.config import Config
from kairosd.core.errors import UsageError

RESUMABLE = ("claude", "copilot", "codex", "gemini", "opencode")


@pytest.fixture(scope="module")
def fakes(tmp_path_factory) -> dict[str, Path]:
    return write_fake_agents(tmp_path_factory.mktemp("bin"))


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)  # codex insists on a Git repository
    return folder


def make(name: str, fakes: dict[str, Path], **settings) -> AgentAdapter:
    adapter: AgentAdapter = BUILTIN[name](AdapterSettings(binary=str(fakes[name]), **settings))
    return adapter


def run(
    adapter: AgentAdapter, request: TurnRequest, cwd: Path, **env: str
) -> tuple[TurnOutcome, list[Progress], subprocess.CompletedProcess[str]]:
    command = adapter.command(request)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_AGENT_")}
    done = subprocess.run(
        command.argv,
        input=command.stdin or "",
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environ, **command.env, **env},
        timeout=30,
        check=False,
    )
    progress = [p for line in done.stdout.splitlines() if (p := adapter.progress(line)) is not None]
    return adapter.result(done.stdout, done.stderr, done.returncode), progress, done


# ---- real runs against the fakes -----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_a_turn_gives_the_final_text_the_session_and_the_tool_calls(name, fakes, project):
    adapter = make(name, fakes)
    prompt = "-summarise the open PRs"  # a leading dash must still be the prompt
    outcome, progress, _ = run(adapter, TurnRequest(prompt, cwd=str(project)), project, FAKE_AGENT_TOOLS="2")
    assert outcome.ok, outcome.error
    assert outcome.final_text == f"{name} turn 1: {prompt}"
    assert outcome.session_id
    assert outcome.tool_calls == 2
    assert outcome.error is None
    sessions = {p.session_id for p in progress if p.session_id}
    assert sessions == {outcome.session_id}
    assert [p.tool_call for p in progress if p.tool_call], "progress reports tool calls"
    assert any(p.text for p in progress)


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_a_follow_up_resumes_the_same_session(name, fakes, project, tmp_path):
    adapter = make(name, fakes)
    state = str(tmp_path / "sessions")
    first, _, _ = run(adapter, TurnRequest("first"), project, FAKE_AGENT_STATE=state)
    assert first.ok, first.error
    second, _, done = run(
        adapter, TurnRequest("second", resume_session=first.session_id), project, FAKE_AGENT_STATE=state
    )
    assert second.ok, second.error
    assert second.session_id == first.session_id
    assert second.final_text == f"{name} turn 2: second"
    assert first.session_id in " ".join(adapter.command(TurnRequest("x", resume_session=first.session_id)).argv)
    assert done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_resuming_an_unknown_session_fails_with_the_clis_message(name, fakes, project, tmp_path):
    outcome, _, _ = run(
        make(name, fakes), TurnRequest("again", resume_session="nope-1234"), project, FAKE_AGENT_STATE=str(tmp_path)
    )
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error.startswith(f"{name}:")
    assert "nope-1234" in outcome.error


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("claude", "Invalid API key"),
        ("copilot", "token expired"),
        ("codex", "401 Unauthorized"),
        ("gemini", "exhausted your daily quota"),
        ("opencode", "Invalid API key"),
    ],
)
def test_an_in_band_error_is_a_failure_with_the_agents_words(name, message, fakes, project):
    outcome, _, done = run(make(name, fakes), TurnRequest("hi"), project, FAKE_AGENT_MODE="error_json")
    assert done.returncode != 0
    assert not outcome.ok
    assert outcome.error is not None
    assert message in outcome.error
    assert "exited with 1" in outcome.error
    assert outcome.session_id  # still known: a follow-up can retry in the same session


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_a_crash_before_any_json_reports_stderr(name, fakes, project):
    outcome, _, _ = run(make(name, fakes), TurnRequest("hi"), project, FAKE_AGENT_MODE="fail")
    assert not outcome.ok
    assert outcome.error is not None
    assert "stderr:" in outcome.error or "Error" in outcome.error
    assert "exited with 1" in outcome.error


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_unparseable_output_is_a_failure(name, fakes, project):
    outcome, _, done = run(make(name, fakes), TurnRequest("hi"), project, FAKE_AGENT_MODE="garbage")
    assert done.returncode == 0
    assert not outcome.ok
    assert outcome.error is not None
    assert "not JSON" in outcome.error  # the output is quoted, so the user sees what came back


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_an_unknown_flag_is_a_usage_error_like_the_real_cli(name, fakes, project):
    adapter = make(name, fakes, extra_args=("--no-such-flag",))
    outcome, _, done = run(adapter, TurnRequest("hi"), project)
    assert done.returncode in (1, 2, 42)
    assert not outcome.ok
    assert outcome.error is not None
    assert "--no-such-flag" in outcome.error


@pytest.mark.slow
def test_codex_without_a_final_message_failed(fakes, project):
    outcome, _, done = run(make("codex", fakes), TurnRequest("hi"), project, FAKE_AGENT_MODE="empty")
    assert done.returncode == 0
    assert not outcome.ok
    assert outcome.error == "codex: the turn completed without a final message"


@pytest.mark.slow
def test_codex_outside_a_git_repository_needs_the_configured_flag(fakes, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    outcome, _, _ = run(make("codex", fakes), TurnRequest("hi"), plain)
    assert not outcome.ok
    assert outcome.error is not None
    assert "skip-git-repo-check" in outcome.error
    allowed = make("codex", fakes, extra_args=("--skip-git-repo-check",))
    assert run(allowed, TurnRequest("hi"), plain)[0].ok


@pytest.mark.slow
def test_claude_forks_and_chooses_session_ids(fakes, project, tmp_path):
    adapter = make("claude", fakes)
    state = str(tmp_path / "s")
    fixed = "0cb916db-26aa-40f2-86b5-1ba81b225fd2"
    first, _, _ = run(adapter, TurnRequest("one", new_session_id=fixed), project, FAKE_AGENT_STATE=state)
    assert first.session_id == fixed
    forked, _, _ = run(adapter, TurnRequest("two", resume_session=fixed, fork=True), project, FAKE_AGENT_STATE=state)
    assert forked.ok, forked.error
    assert forked.session_id not in (None, fixed)
    assert forked.final_text == "claude turn 2: two"  # the fork carries the conversation on
    chosen = "7167c730-5662-49bd-9d80-8a206275968e"
    again, _, _ = run(
        adapter,
        TurnRequest("three", resume_session=fixed, fork=True, new_session_id=chosen),
        project,
        FAKE_AGENT_STATE=state,
    )
    assert again.session_id == chosen


@pytest.mark.slow
def test_copilot_starts_a_session_under_a_chosen_id(fakes, project):
    chosen = "7167c730-5662-49bd-9d80-8a206275968e"
    outcome, _, _ = run(make("copilot", fakes), TurnRequest("hi", new_session_id=chosen), project)
    assert outcome.session_id == chosen


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_the_agent_definition_reaches_the_agent(name, fakes, project, tmp_path):
    log = tmp_path / "runs.jsonl"
    request = TurnRequest("do the thing", agent_definition="You are a careful reviewer.")
    outcome, _, _ = run(make(name, fakes), request, project, FAKE_AGENT_LOG=str(log))
    assert outcome.ok, outcome.error
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    seen = " ".join(entry["argv"]) + entry["stdin"]
    assert "You are a careful reviewer." in seen
    assert "do the thing" in seen


@pytest.mark.slow
@pytest.mark.parametrize("name", RESUMABLE)
def test_the_model_comes_from_the_request_else_the_config(name, fakes, project, tmp_path):
    log = tmp_path / "runs.jsonl"
    adapter = make(name, fakes, model="configured-model")
    run(adapter, TurnRequest("a"), project, FAKE_AGENT_LOG=str(log))
    run(adapter, TurnRequest("b", model="asked-model"), project, FAKE_AGENT_LOG=str(log))
    first, second = (" ".join(json.loads(line)["argv"]) for line in log.read_text().splitlines())
    assert "configured-model" in first
    assert "asked-model" in second
    assert "configured-model" not in second


@pytest.mark.slow
def test_a_hanging_fake_reports_its_session_first(fakes, project):
    # For the registry's cancellation tests: the session id arrives, then nothing.
    adapter = make("claude", fakes)
    command = adapter.command(TurnRequest("hi"))
    proc = subprocess.Popen(
        command.argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=project,
        env={**os.environ, "FAKE_AGENT_MODE": "hang"},
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(command.stdin or "")
        proc.stdin.close()
        progress = adapter.progress(proc.stdout.readline())
        assert progress is not None
        assert progress.session_id
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.3)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert (
        adapter.result("", "", proc.returncode).error
        == "claude: failed before it produced a result (killed by SIGKILL)"
    )


# ---- command lines and permissions (pure) ----------------------------------------


def argv_of(adapter: AgentAdapter, **request) -> list[str]:
    return adapter.command(TurnRequest("p", **request)).argv


def test_claude_maps_every_permission_onto_its_flags():
    claude = ClaudeAdapter()
    perms = Permissions("acceptEdits", frozenset({"Read", "Bash(git log:*)"}), frozenset({"WebFetch"}))
    argv = argv_of(claude, permissions=perms)
    assert argv[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert "--permission-mode=acceptEdits" in argv
    assert "--tools=Bash,Read" in argv
    assert argv[argv.index("--allowedTools") + 1 : argv.index("--disallowedTools")] == ["Bash(git log:*)", "Read"]
    assert argv[argv.index("--disallowedTools") + 1 :] == ["WebFetch"]
    # Plan mode pre-approves nothing; an empty list means no built-in tool at all.
    plan = argv_of(claude, permissions=Permissions("plan", frozenset({"Read"})))
    assert "--allowedTools" not in plan
    assert "--tools=Read" in plan
    assert "--tools=" in argv_of(claude, permissions=Permissions("default", frozenset()))
    assert claude.command(TurnRequest("the prompt")).stdin == "the prompt"


def test_claude_refuses_session_requests_it_cannot_honour():
    claude = ClaudeAdapter()
    with pytest.raises(UsageError, match="fork needs a session"):
        claude.command(TurnRequest("p", fork=True))
    with pytest.raises(UsageError, match="must be a UUID"):
        claude.command(TurnRequest("p", new_session_id="not-a-uuid"))
    with pytest.raises(UsageError, match="keeps its id"):
        claude.command(TurnRequest("p", resume_session="a", new_session_id="0cb916db-26aa-40f2-86b5-1ba81b225fd2"))


def test_copilot_allows_only_what_the_mode_or_the_list_allows():
    copilot = CopilotAdapter()
    # Only kairos' own MCP server (headless Copilot refuses every MCP call it was not told to allow).
    assert [a for a in argv_of(copilot) if a.startswith(("--allow", "--deny"))] == ["--allow-tool=kairos"]
    assert "--allow-tool=kairos" not in argv_of(
        copilot, permissions=Permissions("default", None, frozenset({"kairos"}))
    )
    assert "--allow-tool=kairos" not in argv_of(copilot, permissions=Permissions("plan"))
    assert "--allow-tool=write" in argv_of(copilot, permissions=Permissions("acceptEdits"))
    assert "--allow-all-tools" in argv_of(copilot, permissions=Permissions("bypassPermissions"))
    plan = argv_of(copilot, permissions=Permissions("plan", frozenset({"shell(git:*)", "read"})))
    assert "--allow-tool=read" in plan
    assert "--allow-tool=shell(git:*)" not in plan
    assert {"--deny-tool=shell", "--deny-tool=write"} <= set(plan)
    # A list never widens: bypass with a list allows only the list.
    listed = argv_of(copilot, permissions=Permissions("bypassPermissions", frozenset({"read"}), frozenset({"url"})))
    assert "--allow-all-tools" not in listed
    assert {"--allow-tool=read", "--deny-tool=url"} <= set(listed)
    with pytest.raises(UsageError, match="cannot fork"):
        copilot.command(TurnRequest("p", resume_session="s", fork=True))
    assert argv_of(copilot)[-1] == "--prompt=p"


@pytest.mark.parametrize(
    ("mode", "sandbox"),
    [("plan", "read-only"), ("default", "read-only"), ("acceptEdits", "workspace-write"),
     ("bypassPermissions", "danger-full-access")],
)  # fmt: skip
def test_codex_maps_modes_to_sandboxes(mode, sandbox):
    argv = argv_of(CodexAdapter(), permissions=Permissions(mode))
    assert argv[argv.index("--sandbox") + 1] == sandbox
    resumed = argv_of(CodexAdapter(), resume_session="t-1")
    assert resumed[-3:] == ["resume", "t-1", "-"]


@pytest.mark.parametrize("adapter", [CodexAdapter(), GeminiAdapter()], ids=["codex", "gemini"])
def test_clis_without_tool_switches_refuse_tool_lists(adapter):
    with pytest.raises(UsageError, match="cannot deny single tools"):
        adapter.command(TurnRequest("p", permissions=Permissions(denied_tools=frozenset({"Bash"}))))
    with pytest.raises(UsageError, match="cannot limit"):
        adapter.command(TurnRequest("p", permissions=Permissions(allowed_tools=frozenset({"Read"}))))
    with pytest.raises(UsageError, match="cannot fork"):
        adapter.command(TurnRequest("p", resume_session="s", fork=True))
    with pytest.raises(UsageError, match="chosen id"):
        adapter.command(TurnRequest("p", new_session_id="0cb916db-26aa-40f2-86b5-1ba81b225fd2"))


# Each CLI's own spelling of the model and session options, on a fresh turn and on a resumed one.
@pytest.mark.parametrize(
    ("adapter", "fresh", "resumed"),
    [
        (ClaudeAdapter(), ["--model", "m1"], ["--model", "m1", "--resume=s-1"]),
        (CodexAdapter(), ["--model", "m1", "-"], ["--model", "m1", "resume", "s-1", "-"]),
        (GeminiAdapter(), ["--model=m1", "--prompt=p"], ["--model=m1", "--resume=s-1", "--prompt=p"]),
        (
            CopilotAdapter(),
            ["--model=m1", "--session-id=i-1", "--prompt=p"],
            ["--model=m1", "--resume=s-1", "--prompt=p"],
        ),
        (OpencodeAdapter(), ["--model", "m1"], ["--model", "m1", "--session", "s-1"]),  # the prompt: stdin
    ],
    ids=["claude", "codex", "gemini", "copilot", "opencode"],
)
def test_each_cli_spells_the_model_and_session_options_its_own_way(adapter, fresh, resumed):
    def options(argv: list[str]) -> list[str]:
        return [a for a in argv if a in ("m1", "s-1", "i-1", "p", "-", "resume", "--", "--model", "--session")
                or a.startswith(("--model=", "--resume=", "--session-id=", "--prompt="))]  # fmt: skip

    new_id = {"new_session_id": "i-1"} if isinstance(adapter, CopilotAdapter) else {}
    assert options(argv_of(adapter, model="m1", **new_id)) == fresh
    assert options(argv_of(adapter, model="m1", resume_session="s-1")) == resumed
    # No model asked for or configured: no model option at all.
    assert not [a for a in argv_of(adapter) if a.startswith("--model")]


def test_gemini_maps_modes_to_approval_modes():
    for mode, approval in [("plan", "plan"), ("default", "default"), ("acceptEdits", "auto_edit"),
                           ("bypassPermissions", "yolo")]:  # fmt: skip
        assert f"--approval-mode={approval}" in argv_of(GeminiAdapter(), permissions=Permissions(mode))


def test_opencode_permissions_never_ask_and_never_widen():
    assert permission_config(Permissions("plan")) == {"edit": "deny", "bash": "deny", "webfetch": "deny"}
    assert permission_config(Permissions("default")) == {"edit": "deny", "bash": "deny", "webfetch": "deny"}
    assert permission_config(Permissions("acceptEdits"))["edit"] == "allow"
    assert set(permission_config(Permissions("bypassPermissions")).values()) == {"allow"}
    listed = permission_config(Permissions("acceptEdits", frozenset({"bash", "edit", "read"}), frozenset({"grep"})))
    assert listed == {"*": "deny", "bash": "deny", "edit": "allow", "read": "allow", "grep": "deny", "webfetch": "deny"}
    command = OpencodeAdapter().command(TurnRequest("-p"))
    assert json.loads(command.env["OPENCODE_PERMISSION"])["bash"] == "deny"


def test_opencode_gets_its_prompt_on_stdin_so_it_reaches_the_model_unquoted(tmp_path):
    """`opencode run` wraps a message argument that holds a space in quotes; stdin is passed as it is."""
    fake = write_fake_agents(tmp_path / "bin", ("opencode",))["opencode"]
    prompt = 'check the build -- and say "done"'
    adapter = OpencodeAdapter(AdapterSettings(binary=str(fake)))
    command = adapter.command(TurnRequest(prompt))
    assert prompt not in command.argv
    assert command.stdin == prompt
    proc = subprocess.run(
        command.argv, input=command.stdin, env={**os.environ, **command.env, "FAKE_AGENT_STATE": str(tmp_path / "s")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    outcome = adapter.result(proc.stdout, proc.stderr, proc.returncode)
    assert outcome.ok, (outcome.error, proc.stderr)
    assert outcome.final_text == f"opencode turn 1: {prompt}"


def test_narrowed_permissions_stay_narrow_through_an_adapter():
    parent = Permissions("acceptEdits", None, frozenset({"Bash"}))
    child = narrow(parent, Permissions("bypassPermissions", frozenset({"Bash", "Read"})))
    argv = argv_of(ClaudeAdapter(), permissions=child)
    assert "--permission-mode=acceptEdits" in argv
    assert "--tools=Read" in argv
    assert argv[argv.index("--disallowedTools") + 1 :] == ["Bash"]


def test_unknown_modes_and_huge_prompts_are_refused():
    with pytest.raises(UsageError, match="unknown permission mode"):
        ClaudeAdapter().command(TurnRequest("p", permissions=Permissions("yolo")))
    with pytest.raises(UsageError, match="too long for a command line"):
        CopilotAdapter().command(TurnRequest("x" * 200_000))
    assert ClaudeAdapter().command(TurnRequest("x" * 200_000)).stdin  # stdin has no such limit


def test_definitions_go_in_front_of_the_prompt_only_on_a_first_turn():
    first = CodexAdapter().command(TurnRequest("task", agent_definition="Be brief."))
    assert first.stdin is not None
    assert first.stdin.index("Be brief.") < first.stdin.index("task")
    follow_up = CodexAdapter().command(TurnRequest("more", agent_definition="Be brief.", resume_session="t"))
    assert follow_up.stdin == "more"
    claude = ClaudeAdapter().command(TurnRequest("more", agent_definition="Be brief.", resume_session="s"))
    assert "--append-system-prompt=Be brief." in claude.argv  # a system prompt is per process


# ---- parsing edge cases (pure) ----------------------------------------------------


def test_claude_result_variants():
    claude = ClaudeAdapter()
    max_turns = json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True, "session_id": "s"})
    outcome = claude.result(max_turns + "\n", "", 1)
    assert (outcome.ok, outcome.session_id) == (False, "s")
    assert outcome.error == "claude: error_max_turns: the run failed (exited with 1)"
    during = {"type": "result", "subtype": "error_during_execution", "is_error": True, "errors": ["boom", 3]}
    assert "boom" in (claude.result(json.dumps(during), "", 1).error or "")
    # --output-format json: the single result object
    single = {"type": "result", "subtype": "success", "is_error": False, "result": "hi", "session_id": "s"}
    assert claude.result(json.dumps(single), "", 0) == TurnOutcome(ok=True, final_text="hi", session_id="s")
    assert claude.result(json.dumps(single), "", 143).error == (
        "claude: reported success but did not exit cleanly (exited with 143 (SIGTERM))"
    )
    assert claude.progress("") is None
    assert claude.progress("a warning line") == Progress(text="a warning line")
    assert claude.progress('{"type": "user"}') is None


def test_copilot_counts_requested_tools_when_no_execution_events_exist():
    lines = [
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}, {"name": "view"}]}},
        {"type": "assistant.message", "data": {"content": [{"text": "all "}, {"text": "done"}]}},
        {"type": "result", "sessionId": "s", "exitCode": 0},
    ]
    outcome = CopilotAdapter().result("\n".join(json.dumps(line) for line in lines), "", 0)
    assert outcome == TurnOutcome(ok=True, final_text="all done", session_id="s", tool_calls=2)


def test_exit_reasons():
    assert exit_reason(1) == "exited with 1"
    assert exit_reason(-15) == "killed by SIGTERM"
    assert exit_reason(130) == "exited with 130 (SIGINT)"


# ---- custom agents -----------------------------------------------------------------

_CUSTOM = """\
import json, sys
args = sys.argv[1:]
if args and args[0] == "--fail":
    sys.stderr.write("my-agent: broken\\n")
    sys.exit(3)
print(json.dumps({"reply": {"text": "custom: " + " ".join(args)}, "sid": "c-1"}))
"""


@pytest.fixture
def custom_script(tmp_path) -> Path:
    script = tmp_path / "my_agent.py"
    script.write_text(_CUSTOM)
    return script


@pytest.mark.slow
def test_a_custom_template_runs_and_its_json_is_read(custom_script, tmp_path):
    spec = CustomSpec(
        argv=(sys.executable, str(custom_script), "{prompt}", "--model={model}", "{cwd}", "{{literal}}"),
        resume_argv=(sys.executable, str(custom_script), "resume", "{session}", "{prompt}"),
        output="json",
        text_field="reply.text",
        session_field="sid",
        model="m1",
    )
    adapter = CustomAdapter("mine", spec)
    outcome, progress, _ = run(adapter, TurnRequest("hello", cwd=str(tmp_path)), tmp_path)
    assert outcome == TurnOutcome(
        ok=True, final_text=f"custom: hello --model=m1 {tmp_path} {{literal}}", session_id="c-1"
    )
    assert progress
    again, _, _ = run(adapter, TurnRequest("more", resume_session="c-1"), tmp_path)
    assert again.final_text == "custom: resume c-1 more"
    failing = CustomAdapter("mine", CustomSpec(argv=(sys.executable, str(custom_script), "--fail", "{prompt}")))
    bad, _, _ = run(failing, TurnRequest("x"), tmp_path)
    assert bad.error == "mine: the run failed (exited with 3) stderr: my-agent: broken"


def test_custom_templates_refuse_what_they_cannot_do():
    plain = CustomAdapter("mine", CustomSpec(argv=("a", "{prompt}", "{model}")))
    assert not plain.supports_resume
    with pytest.raises(UsageError, match=r"needs \{model\}"):
        plain.command(TurnRequest("p"))
    with pytest.raises(UsageError, match="no follow-ups"):
        plain.command(TurnRequest("p", model="m", resume_session="s"))
    wide = CustomAdapter("wide", CustomSpec(argv=("a", "{prompt}"), permission_mode="acceptEdits"))
    with pytest.raises(UsageError, match="wider than this task's 'default'"):
        wide.command(TurnRequest("p"))
    passes_mode = CustomAdapter("pm", CustomSpec(argv=("a", "--mode", "{permission_mode}", "{prompt}")))
    assert passes_mode.command(TurnRequest("p", permissions=Permissions("plan"))).argv == ["a", "--mode", "plan", "p"]
    stdin = CustomAdapter("s", CustomSpec(argv=("a",), prompt_stdin=True)).command(TurnRequest("hi"))
    assert (stdin.argv, stdin.stdin) == (["a"], "hi")
    text = CustomAdapter("t", CustomSpec(argv=("a", "{prompt}")))
    assert text.result("  answer\n", "", 0) == TurnOutcome(ok=True, final_text="answer")
    assert text.result("", "", 0).error == "t: no output"
    jsonl = CustomAdapter("j", CustomSpec(argv=("a", "{prompt}"), output="jsonl", text_field="t", session_field="s"))
    assert jsonl.result('{"t": "one"}\nnoise\n{"t": "two", "s": "x"}\n', "", 0).final_text == "two"
    assert jsonl.progress('{"t": "working"}') == Progress(text="working")
    assert "not the JSONL" in (jsonl.result("nothing\n", "", 0).error or "")


# ---- picking adapters from the config -----------------------------------------------


def test_adapter_for_applies_the_config(fakes):
    config = Config.model_validate(
        {
            "agents": {
                "claude": {"binary": str(fakes["claude"]), "model": "opus", "extra_args": ["--max-turns", "9"]},
                "gemini": {"enabled": False},
            },
            "custom": {"mine": {"argv": ["my-agent", "{prompt}"]}},
        }
    )
    claude = adapter_for("claude", config)
    assert claude.binary == str(fakes["claude"])
    argv = claude.command(TurnRequest("p")).argv
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--max-turns") + 1] == "9"
    assert adapter_for("mine", config).binary == "my-agent"
    with pytest.raises(UsageError, match="disabled"):
        adapter_for("gemini", config)
    with pytest.raises(
        UsageError, match=r"no agent CLI named 'claud' \(available: claude, copilot, codex, opencode, mine\)"
    ):
        adapter_for("claud", config)
    assert [name for name in config.agent_names()] == ["claude", "copilot", "codex", "opencode", "mine"]
    for name in Config().agent_names():
        assert adapter_for(name, Config()).supports_resume


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
_KEYS = ["type", "subtype", "message", "content", "data", "item", "part", "error", "result", "session_id", "text"]
_shaped = st.fixed_dictionaries(
    {},
    optional={
        key: _json
        | st.sampled_from(["assistant", "result", "tool_use", "text", "item.completed", "agent_message", "init"])
        for key in _KEYS
    },
)


@settings(max_examples=sized(120, 40), deadline=None, derandomize=True)  # 120 in .ci/run (KAIROS_TEST_SIZE=full)
@given(lines=st.lists(_shaped | _json, max_size=6), exit_code=st.integers(-20, 300))
def test_agent_output_never_crashes_a_parser(lines, exit_code):
    # Agent output is untrusted: any JSON at all gives a Progress or None, and an outcome.
    stdout = "\n".join(json.dumps(line) for line in lines)
    adapters = [cls() for cls in BUILTIN.values()]
    adapters.append(CustomAdapter("c", CustomSpec(argv=("a", "{prompt}"), output="jsonl", text_field="text.0")))
    for adapter in adapters:
        for line in stdout.splitlines():
            adapter.progress(line)
        outcome = adapter.result(stdout, "", exit_code)
        assert outcome.ok or outcome.error


def test_gemini_answer_after_an_afteragent_block_is_the_final_text():
    """Gemini 0.61: a hook that denies the end of a turn shows as an error warning; the answer after it counts."""
    lines = [
        {"type": "init", "session_id": "s1"},
        {"type": "message", "role": "assistant", "content": "first", "delta": True},
        {"type": "error", "severity": "warning", "message": "Agent execution blocked: Scheduled reminder ..."},
        {"type": "message", "role": "assistant", "content": "second", "delta": True},
        {"type": "result", "status": "success"},
    ]
    outcome = GeminiAdapter().result("\n".join(json.dumps(x) for x in lines), "", 0)
    assert outcome.ok
    assert outcome.final_text == "second"


def test_gemini_untrusted_folder_exit_says_what_to_do():
    outcome = GeminiAdapter().result("", "Gemini CLI is not running in a trusted directory. Use --skip-trust", 55)
    assert not outcome.ok
    assert outcome.error is not None
    assert "not trusted" in outcome.error
    assert "GEMINI_CLI_TRUST_WORKSPACE" in outcome.error
    assert "--skip-trust" not in outcome.error


def test_claude_waits_for_mcp_servers_unless_the_user_says_otherwise():
    """claude -p otherwise sends the first request before `kairos mcp` has started (seen with 2.1.330)."""
    assert ClaudeAdapter().command(TurnRequest("p")).env == {"MCP_CONNECTION_NONBLOCKING": "false"}
    mine = ClaudeAdapter(AdapterSettings(env={"MCP_CONNECTION_NONBLOCKING": "true", "X": "1"}))
    assert mine.command(TurnRequest("p")).env == {"MCP_CONNECTION_NONBLOCKING": "true", "X": "1"}
