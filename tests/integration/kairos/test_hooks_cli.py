"""The session CLI (``kairos add`` session flags, ``kairos sessions``) in-process, and ``kairos hook`` as a
real process: the console script's fast path, its exit codes and output, and SessionEnd's time budget."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import kairosd_answers
from session_support import fixture, hook_home, hook_kd, session_of, wait_for

from kairos.app import build_parser, run
from kairos.commands.add import build_add_request
from kairosd.core.errors import UsageError
from kairosd.core.records import Outcome

KAIROS = shutil.which("kairos", path=str(Path(sys.executable).parent)) or "kairos"
# Shared with the other hook tests; pytest knows them as the fixtures ``home`` and ``kd``.
FIXTURES = (hook_home, hook_kd)


def _add_body(*argv: str) -> dict[str, Any]:
    return build_add_request(build_parser("add").parse_args(["add", *argv]))


# ---- kairos add ------------------------------------------------------------------------------


def test_add_builds_each_session_scope(tmp_path, monkeypatch):
    """--session-target, --project (made absolute) and --user-session give a session target, with
    --session-agent and --fallback carried along."""
    monkeypatch.chdir(tmp_path)
    assert _add_body("--in", "5m", "--session-target", "abc", "p")["target"] == {"kind": "session", "session_id": "abc"}
    assert _add_body("--in", "5m", "--project", ".", "--fallback", "drop", "p")["target"] == {
        "kind": "session", "project": str(tmp_path), "fallback": "drop",
    }  # fmt: skip
    assert _add_body("--in", "5m", "--user-session", "--session-agent", "codex", "p")["target"] == {
        "kind": "session", "user": True, "agent": "codex",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--project", "/a", "--session", "work"], "--session names an inbox"),
        (["--user-session", "--cmd", "true"], "--cmd do(es) not go with a live session target"),
        (["--target", "session"], "--target session needs --session-target ID, --project PATH or --user-session"),
        (["--target", "shell", "--cmd", "true", "--fallback", "drop"], "--fallback only go(es) with a live session"),
        (["--fallback", "headless"], "--target session needs"),
    ],
)
def test_add_refuses_session_flags_that_do_not_fit(argv, message):
    """Mixing a session target with inbox, shell or agent options, or giving no scope, is a usage error."""
    with pytest.raises(UsageError) as err:
        _add_body("--in", "5m", *argv, "p")
    assert message in err.value.message


def test_add_refuses_two_scopes():
    """The three scopes are mutually exclusive on the command line."""
    with pytest.raises(SystemExit):
        _add_body("--in", "5m", "--project", "/a", "--user-session", "p")


def test_add_list_and_show_a_session_task(kd, capsys):
    """kairos add --project creates the task in kairosd; list and show name the scope and the fallback."""
    assert run(["add", "--every", "1h", "--project", "/src/app", "--session-agent", "claude", "check CI"]) == 0
    assert run(["list"]) == 0
    listed = capsys.readouterr().out
    assert "project:/src/app/claude" in listed
    task_id = kd.call(lambda: next(iter(kd.book)).id)
    assert run(["show", task_id]) == 0
    assert "live session: project:/src/app/claude, fallback inbox" in capsys.readouterr().out


def test_sessions_lists_live_sessions(kd, capsys):
    """kairos sessions prints a row per live session; --json prints the API's document."""
    assert run(["sessions"]) == 0
    assert capsys.readouterr().out.startswith("no live sessions")
    kd.call(lambda: kd.hub.store.touch("claude", "s-1", kd.clock.now(), cwd="/src/app"))
    assert run(["sessions"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["AGENT", "SESSION", "LAST", "ACTIVE", "PENDING", "CWD"]
    assert out[1].split()[:2] == ["claude", "s-1"]
    assert out[1].split()[-2:] == ["0", "/src/app"]
    assert run(["sessions", "--json"]) == 0
    (session,) = json.loads(capsys.readouterr().out)["sessions"]
    assert (session["agent"], session["session_id"], session["pending"]) == ("claude", "s-1", 0)


def test_hook_is_listed_in_help(capsys):
    """kairos --help lists the hook and sessions verbs (the hook itself never goes through argparse)."""
    with pytest.raises(SystemExit):
        run(["--help"])
    out = capsys.readouterr().out
    assert "hook" in out
    assert "sessions" in out


# ---- kairos hook as a real process -------------------------------------------------------------


def _hook(agent: str, event: str, payload: Any, *extra: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [KAIROS, "hook", agent, event, *extra], input=data, capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.slow
def test_the_console_script_hook_delivers_at_stop(kd):
    """A real `kairos hook claude Stop` process: exit 0, one JSON object on stdout, the run delivered."""
    payload = fixture("claude", "Stop")
    kd.call(lambda: kd.hub.store.touch("claude", session_of(payload), kd.clock.now()))
    run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "user": True}))
    proc = _hook("claude", "Stop", payload)
    assert (proc.returncode, proc.stderr) == (0, "")
    output = json.loads(proc.stdout)
    assert output["decision"] == "block"
    assert "look at the deploy" in output["reason"]
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


@pytest.mark.slow
@pytest.mark.parametrize("stdin", ["", "not json", json.dumps(fixture("gemini", "AfterAgent"))])
def test_the_console_script_hook_is_silent_without_a_daemon(home, stdin):
    """No kairosd: the real process exits 0 and writes nothing, whatever came on stdin."""
    proc = _hook("gemini", "AfterAgent", stdin)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.slow
def test_a_real_session_end_hook_deregisters_and_hands_over(kd):
    """A real SessionEnd hook process: exit 0, silent, the session gone and handed over for consolidation.
    (Its time against Claude's 1.5 s is the budget test below plus the interpreter's start, benchmarked.)"""
    payload = fixture("claude", "SessionEnd")
    kd.call(lambda: kd.hub.store.touch("claude", session_of(payload), kd.clock.now()))
    proc = _hook("claude", "SessionEnd", payload)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert kd.sessions_view() == []
    wait_for(lambda: kd.call(lambda: len(kd.handovers)) == 1, "the hand-over")


@pytest.mark.slow
def test_session_end_gives_up_quietly_when_kairosd_hangs(home):
    """A socket that accepts but never answers: a real SessionEnd hook still ends, with exit 0, silently."""
    import socket

    (home / "run").mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(home / "run" / "kairosd.sock"))
    listener.listen(8)
    try:
        proc = _hook("claude", "SessionEnd", fixture("claude", "SessionEnd"), timeout=10)
    finally:
        listener.close()
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.parametrize("answers", [False, True])
def test_session_end_spends_at_most_its_budget(monkeypatch, answers):
    """Against a kairosd that never answers, each of SessionEnd's two calls waits its whole timeout (on a fake
    clock): together they stay within END_BUDGET_S, which leaves Python's start-up room in Claude's 1.5 s.
    A kairosd that answers at once leaves the hand-over the rest of the budget."""
    from kairos.integrations import hook

    now = [1000.0]
    calls: list[tuple[str, float]] = []

    class FakeClient:
        def __init__(self, timeout: float) -> None:
            self.timeout = timeout

        def call(self, method: str, path: str, body: Any = None) -> Any:
            calls.append((path, self.timeout))
            if answers:
                return {"transcript_path": "/t.jsonl", "cwd": "/w"}
            now[0] += self.timeout  # hung: the whole timeout passes, then the socket times out
            raise TimeoutError("timed out")

    monkeypatch.setattr(hook, "Client", FakeClient)
    monkeypatch.setattr(hook.time, "monotonic", lambda: now[0])
    monkeypatch.delenv("KAIROS_SPAWNED", raising=False)
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(fixture("claude", "SessionEnd"))))
    assert hook.main(["claude", "SessionEnd"]) == 0
    assert [path for path, _ in calls][-1] == "/consolidate"
    assert calls[0][0].endswith("/end")
    if answers:
        assert calls[1][1] == hook.END_BUDGET_S  # nothing was spent on the answered /end
    else:
        assert sum(timeout for _, timeout in calls) <= hook.END_BUDGET_S
    assert now[0] - 1000.0 <= hook.END_BUDGET_S
    assert hook.END_BUDGET_S <= 1.0  # Claude's 1.5 s, less a cold interpreter's start (see BENCHMARKS.md)


class _Stdin:
    def __init__(self, text: str) -> None:
        import io

        self.buffer = io.BytesIO(text.encode())


@pytest.mark.slow
def test_the_console_script_waiter_exits_2_with_the_prompt(kd):
    """A real `kairos hook claude wait`: it blocks, and a fire for its session makes it exit 2 with the
    reminder on stderr; with nothing due it exits 0 after --max-wait."""
    payload = fixture("claude", "Stop")
    sid = session_of(payload)
    kd.call(lambda: kd.hub.store.touch("claude", sid, kd.clock.now()))
    quiet = _hook("claude", "wait", payload, "--max-wait", "0.2")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    waiter = subprocess.Popen(
        [KAIROS, "hook", "claude", "wait", "--max-wait", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert waiter.stdin is not None
    waiter.stdin.write(json.dumps(payload))
    waiter.stdin.close()
    try:
        wait_for(lambda: kd.call(lambda: bool(kd.hub._waiters)), "the waiter to long-poll")
        run_id = kd.fire(kd.add("look at the deploy", {"kind": "session", "session_id": sid}))
        waiter.wait(15)  # the output is a few lines: no pipe fills up meanwhile
        assert waiter.stdout is not None
        assert waiter.stderr is not None
        stdout, stderr = waiter.stdout.read(), waiter.stderr.read()
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait(5)
        for stream in (waiter.stdout, waiter.stderr):
            if stream is not None:
                stream.close()
    assert (waiter.returncode, stdout) == (2, "")
    assert "look at the deploy" in stderr
    assert kd.run_record(run_id).outcome is Outcome.DELIVERED


@pytest.mark.slow
def test_a_real_kairosd_delivers_into_a_session_end_to_end(home, tmp_path):
    """Real processes only: kairosd, `kairos hook`, `kairos add --project`, `kairos run`, `kairos history`,
    `kairos sessions` (a broken ``kairos sessions --json`` fails the test: ``kairos()`` checks the exit code)."""
    env = {**os.environ, "KAIROS_HOME": str(home), "TZ": "UTC"}
    for var in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON"):
        env.pop(var, None)

    def kairos(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([KAIROS, *args], input=stdin, capture_output=True, text=True, timeout=30, env=env)
        if check:
            assert proc.returncode == 0, f"kairos {' '.join(args)}: {proc.stderr}"
        return proc

    with open(home / "kairosd.log", "w") as log:
        daemon = subprocess.Popen([sys.executable, "-m", "kairosd"], env=env, stdout=log, stderr=log)
    try:
        wait_for(lambda: kairosd_answers(env) or daemon.poll() is not None, "kairosd")
        assert daemon.poll() is None, (home / "kairosd.log").read_text()
        start = fixture("claude", "SessionStart", cwd=str(tmp_path))
        assert kairos("hook", "claude", "SessionStart", stdin=json.dumps(start)).stdout == ""
        (session,) = json.loads(kairos("sessions", "--json").stdout)["sessions"]
        assert (session["agent"], session["session_id"], session["cwd"]) == ("claude", session_of(start), str(tmp_path))
        task = json.loads(kairos("add", "0 4 * * *", "--project", str(tmp_path), "look at CI", "--json").stdout)
        task_id = task["task"]["id"]
        kairos("run", task_id)
        queued = wait_for(
            lambda: [r for r in json.loads(kairos("history", task_id, "--json").stdout)["runs"] if r.get("outcome")],
            "the run to be queued",
        )
        assert (queued[0]["outcome"], queued[0]["reason"]) == (
            "queued",
            f"waiting for claude session {session_of(start)}'s next turn",
        )
        stop = fixture("claude", "Stop", cwd=str(tmp_path))
        block = json.loads(kairos("hook", "claude", "Stop", stdin=json.dumps(stop)).stdout)
        assert block["decision"] == "block"
        assert "look at CI" in block["reason"]
        (done,) = json.loads(kairos("history", task_id, "--json").stdout)["runs"]
        assert done["outcome"] == "delivered"
        end = fixture("claude", "SessionEnd", cwd=str(tmp_path))
        assert kairos("hook", "claude", "SessionEnd", stdin=json.dumps(end)).stdout == ""
        assert json.loads(kairos("sessions", "--json").stdout)["sessions"] == []
    finally:
        daemon.terminate()
        daemon.wait(20)
