"""A shell target's output is capped per run, and nothing it started outlives its run (issue 27, findings 3 and 8).

The red-team cases: ``yes`` with a 3 s timeout wrote 1 GB into its run log;
processes left in the group after the leader exited were never killed.
"""

from __future__ import annotations

from pathlib import Path

from shell_support import delivery, gone, handoff, kill_leftover, pid_in, run, script, wait_until

CAP = 64 << 10

# The leader starts a grandchild in its own group that ignores SIGTERM, records it, and exits at once.
LEAVER = """#!/bin/sh
(trap '' TERM; exec sleep 60) &
echo $! > "$1"
exit 0
"""


def test_a_flood_is_cut_at_the_cap_and_the_log_says_how_much(tmp_path: Path) -> None:
    flood = 4 << 20
    shell = delivery(tmp_path, max_output=CAP)
    result = run(shell.deliver(handoff(["sh", "-c", f"echo start; yes | head -c {flood}; echo gone >&2"])))
    assert result.outcome == "delivered", result.reason
    assert result.output_path is not None
    data = Path(result.output_path).read_bytes()
    assert data.startswith(b"start\ny\ny\n")
    lines = data.decode().splitlines()
    cut = len("start\n") + flood + len("gone\n") - CAP
    assert lines[-1] == f"[kairos: output cut after {CAP} bytes; {cut} more bytes discarded]"
    assert CAP < len(data) < CAP + 200


def test_output_under_the_cap_is_kept_whole_in_order(tmp_path: Path) -> None:
    shell = delivery(tmp_path, max_output=CAP)
    result = run(shell.deliver(handoff(["sh", "-c", "echo one; echo two >&2; printf three"])))
    assert result.outcome == "delivered", result.reason
    assert result.output_path is not None
    assert Path(result.output_path).read_text() == "one\ntwo\nthree"


def test_a_timed_out_flood_stays_within_the_cap(tmp_path: Path) -> None:
    shell = delivery(tmp_path, max_output=CAP, kill_grace_s=0.5)
    result = run(shell.deliver(handoff(["yes"], timeout_s=0.5)))
    assert result.reason == "killed by SIGTERM after the 0.5s timeout, with its process group"
    assert result.output_path is not None
    data = Path(result.output_path).read_text()
    assert data.splitlines()[-1].startswith(f"[kairos: output cut after {CAP} bytes; ")
    assert len(data) < CAP + 200


def test_processes_left_in_the_group_when_the_leader_exits_are_stopped(tmp_path: Path) -> None:
    leaver = script(tmp_path, "leaver.sh", LEAVER)
    pid_file = tmp_path / "left.pid"
    shell = delivery(tmp_path, kill_grace_s=0.3)
    try:
        result = run(shell.deliver(handoff([str(leaver), str(pid_file)], timeout_s=30)))
        assert result.outcome == "delivered", result.reason
        left = int(pid_file.read_text())
        assert wait_until(lambda: gone(left)), "a process the command left in its group outlived the run"
    finally:
        kill_leftover(pid_file)


# The leader starts a process that leaves its group and session (setsid), ignores SIGTERM, and exits.
ESCAPER = """#!/bin/sh
setsid sh -c 'trap "" TERM; echo $$ > "$1"; exec sleep 60' escaper "$1" &
while [ ! -s "$1" ]; do sleep 0.02; done
exit 0
"""


def test_a_process_that_left_the_group_with_setsid_is_stopped_at_the_end(tmp_path: Path) -> None:
    escaper = script(tmp_path, "escaper.sh", ESCAPER)
    pid_file = tmp_path / "escaped.pid"
    shell = delivery(tmp_path, kill_grace_s=0.3)
    try:
        result = run(shell.deliver(handoff([str(escaper), str(pid_file)], timeout_s=30)))
        assert result.outcome == "delivered", result.reason
        escaped = int(pid_file.read_text())
        assert wait_until(lambda: gone(escaped)), "a process that left the group with setsid outlived the run"
    finally:
        kill_leftover(pid_file)


def test_a_setsid_escapee_is_stopped_on_timeout_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    argv = ["sh", "-c", f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 60' & exec sleep 60"]
    shell = delivery(tmp_path, kill_grace_s=0.3)
    try:
        result = run(shell.deliver(handoff(argv, timeout_s=0.5)))
        assert result.reason == "killed by SIGTERM after the 0.5s timeout, with its process group"
        assert wait_until(lambda: pid_in(pid_file) is not None)
        escaped = pid_in(pid_file)
        assert escaped is not None
        assert wait_until(lambda: gone(escaped)), "a setsid child outlived its run's timeout"
    finally:
        kill_leftover(pid_file)
