"""Run logs go with the run history, and ``kairos rm`` takes a task's logs with it (issue 27, finding 3).

The red-team case: shell-target run logs were never pruned, not even by ``kairos rm``.
"""

from __future__ import annotations

from pathlib import Path

from session_support import Kairosd, remove_home, short_home

from kairosd.delivery.shell import ShellDelivery
from kairosd.testing import FakeClock


def logs_of(kd: Kairosd, task_id: str) -> list[str]:
    folder = kd.paths.data_dir / "runs" / task_id
    return sorted(p.stem for p in folder.glob("*.log")) if folder.exists() else []


def test_logs_are_pruned_with_the_run_history_and_removed_with_the_task() -> None:
    home = short_home()
    kd = Kairosd(home, environ={"KAIROS_RUNS_PER_TASK": "2"}).start()
    try:
        task_id = kd.add("p", {"kind": "shell", "argv": ["echo", "hello"]})
        runs = [kd.fire(task_id) for _ in range(3)]
        assert [kd.run_record(r).outcome.value for r in runs[1:]] == ["delivered", "delivered"]
        # The history keeps two runs; the oldest run's log went with it.
        assert logs_of(kd, task_id) == sorted(runs[1:])
        other = kd.add("q", {"kind": "shell", "argv": ["echo", "other"]})
        kept = kd.fire(other)

        kd.run(kd.service.remove([task_id]))

        assert not (kd.paths.data_dir / "runs" / task_id).exists()
        assert logs_of(kd, other) == [kept]  # another task's logs are left alone
    finally:
        kd.stop()
        remove_home(home)


def test_the_start_up_sweep_deletes_logs_of_runs_the_history_no_longer_has(tmp_path: Path) -> None:
    """What older versions left: logs of runs compacted out of the ledger long ago."""
    runs_dir = tmp_path / "runs"
    for task_id, run_id in (("a1b2c3d4", "r1"), ("a1b2c3d4", "r2"), ("e5f6a7b8", "r3")):
        (runs_dir / task_id).mkdir(parents=True, exist_ok=True)
        (runs_dir / task_id / f"{run_id}.log").write_text("out\n")
    (runs_dir / "a1b2c3d4" / "notes.txt").write_text("not a run log")
    shell = ShellDelivery(runs_dir, FakeClock())

    assert shell.sweep(lambda run_id: run_id == "r2") == 2

    assert sorted(p.name for p in runs_dir.rglob("*") if p.is_file()) == ["notes.txt", "r2.log"]
