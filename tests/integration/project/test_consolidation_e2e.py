"""End to end through real processes: the hook and the CLI as separate processes, kairosd (the parts
this feature needs, behind the real socket) as another, and the detached worker outliving them all."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import KairosCli, kairosd_get
from consolidation_support import MiniDaemon, fake_claude, wait_until, write_config, write_transcript

pytestmark = pytest.mark.slow

ENTRY = "Always run `make check` before you commit."


class Env(KairosCli):
    def __init__(self, home: Path) -> None:
        self.home = home
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROS_", "CLAUDE"))}
        self.env = {**env, "KAIROS_HOME": str(home), "TZ": "UTC", "HOME": str(home / "home")}
        self.project = home / "proj"
        (self.project / ".git").mkdir(parents=True)
        self.daemon: MiniDaemon | None = None

    def start(self, **extra: str) -> MiniDaemon:
        self.daemon = MiniDaemon(self.home, {**self.env, **extra}).start()
        return self.daemon

    def board_texts(self) -> list[str]:
        return [e["text"] for e in self.json("board", "show", "--cwd", str(self.project))["entries"]]

    def board_texts_now(self) -> list[str]:
        """What ``board_texts`` reads, asked from this process: what a wait polls (see ``kairosd_get``)."""
        return [e["text"] for e in kairosd_get(self.env, "board", {"cwd": str(self.project)})["entries"]]


@pytest.fixture
def env() -> Iterator[Env]:
    # Short and under /tmp: AF_UNIX socket paths are limited to ~107 bytes.
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kce"))
    e = Env(home)
    yield e
    if e.daemon is not None:
        e.daemon.stop()
    shutil.rmtree(home, ignore_errors=True)


def _record(home: Path, task_id: str) -> dict[str, Any]:
    return json.loads((home / "state" / "registry" / f"{task_id}.json").read_text())


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_a_detached_run_outlives_the_cli_and_kairosd(env):
    """The asking CLI exits, kairosd is killed (-9); the worker finishes, writes the board, and the
    next kairosd records the run completed."""
    release = env.home / "release"
    binary = fake_claude(env.home / "bin")
    (env.home / "bin" / "answer.txt").write_text(f"ADD rule: {ENTRY}\n")
    (env.home / "bin" / "wait-for").write_text(str(release))
    write_config(env.home, f'[agents.claude]\nbinary = "{binary}"\n\n[consolidation]\nmode = "agent"\n')
    daemon = env.start()
    transcript = write_transcript(env.home / "t", "claude", str(env.project))
    started = env.json("consolidate", "--session", "s1", "--transcript", str(transcript), "--cwd", str(env.project))
    assert started["status"] == "started"
    run_id = started["run"]["id"]
    pid = wait_until(lambda: _record(env.home, run_id).get("pid"), "the worker's pid in the record")
    assert _alive(pid)
    assert os.getpgid(pid) == pid  # it leads its own group, in its own session
    assert os.getsid(pid) == pid

    daemon.kill()
    assert _alive(pid)  # kairosd is gone; the worker is not
    release.write_text("go")
    wait_until(lambda: not _alive(pid), "the worker to finish on its own")
    board = json.loads(next((env.home / "data" / "boards").glob("proj-*.json")).read_text())
    assert [e["text"] for e in board["entries"]] == [ENTRY]
    assert _record(env.home, run_id)["status"] == "running"  # nobody was there to record the end

    env.start()
    task = env.json("task", "show", run_id)["task"]
    assert (task["status"], task["kind"], task["detached"]) == ("completed", "consolidation", True)
    log = env.kairos("task", "logs", run_id).stdout
    assert f"kairos consolidation {run_id} ok" in log
    assert env.board_texts() == [ENTRY]
    [entry] = env.json("board", "show", "--cwd", str(env.project))["entries"]
    assert "guessed" not in entry  # the rem-agent's answer is no guess


def test_session_end_hook_to_next_session_start(env):
    """SessionEnd hook input -> the board updates -> the next SessionStart hook's output carries the entry."""
    env.start()
    transcript = write_transcript(env.home / "t", "claude", str(env.project))
    end = {
        "session_id": "6c073d8e-2bb1-45cb-90bc-a28ce44da090",
        "transcript_path": str(transcript),
        "cwd": str(env.project),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    t0 = time.monotonic()
    proc = env.kairos("hook", "claude", "SessionEnd", stdin=json.dumps(end))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert time.monotonic() - t0 < 10  # the hook only notifies (its own budget is 1 s; start-up is extra)

    wait_until(lambda: ENTRY in env.board_texts_now(), "the consolidated entry on the board")
    assert ENTRY in env.board_texts()
    runs = [t for t in env.json("task", "list")["tasks"] if t["kind"] == "consolidation"]
    assert [r["session"] for r in runs] == [end["session_id"]]

    (env.project / "src").mkdir()
    start = {
        "session_id": "0f9c2b1e-0000-4000-8000-000000000002",
        "transcript_path": str(env.home / "t" / "next.jsonl"),
        "cwd": str(env.project / "src"),  # a sub-folder of the same work tree: the same board
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    proc = env.kairos("hook", "claude", "SessionStart", stdin=json.dumps(start))
    assert proc.returncode == 0
    output = json.loads(proc.stdout)
    context = output["hookSpecificOutput"]["additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert f"- [rule] {ENTRY} (seen 1x, last " in context
    assert "not instructions" in context
    # offline mode wrote it (no agent is set up): the session is told it is an unconfirmed guess
    assert 'notes marked "guessed offline" were picked' in context, context
    [line] = [line for line in context.splitlines() if ENTRY in line]
    assert line.endswith("; guessed offline)"), line
    assert "kairos, guessed" in env.kairos("board", "show", "--cwd", str(env.project)).stdout


def test_a_session_kairos_spawned_is_not_consolidated_end_to_end(env):
    """The CLI run inside a kairos-spawned process (KAIROS_SPAWNED=1) is refused by gate 2."""
    env.start()
    transcript = write_transcript(env.home / "t", "claude", str(env.project))
    env.env["KAIROS_SPAWNED"] = "1"
    proc = env.kairos(
        "consolidate", "--session", "s1", "--transcript", str(transcript), "--cwd", str(env.project), "--json",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["gate"] == "not_spawned"
