"""The run ledger and the missed ledger: durability, last-record-wins, interrupted runs, bounds."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.records import MissedRecord, Outcome, Run
from kairosd.scheduling import ledger as ledger_module
from kairosd.scheduling.ledger import INTERRUPTED_REASON, MissedLedger, RunLedger
from kairosd.store.jsonlog import JsonLog
from kairosd.testing import FakeClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def _run(run_id: str, task_id: str = "t1", minute: int = 0, **fields: Any) -> Run:
    when = T0 + timedelta(minutes=minute)
    base: dict[str, Any] = {"run_id": run_id, "task_id": task_id, "scheduled_for": when, "planned_for": when}
    return Run(**(base | fields))


def _done(run_id: str, task_id: str = "t1", minute: int = 0) -> Run:
    when = T0 + timedelta(minutes=minute)
    return _run(run_id, task_id, minute, dispatched_at=when, finished_at=when, outcome=Outcome.DELIVERED)


def _ledger(tmp_path: Path, clock: FakeClock, keep: int = 50) -> RunLedger:
    ledger = RunLedger(tmp_path / "runs.jsonl", clock, keep_per_task=keep)
    ledger.load()
    return ledger


def test_record_survives_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    """A recorded run is read back by the next ledger on the same file."""
    _ledger(tmp_path, clock).record(_done("r1"))
    again = RunLedger(tmp_path / "runs.jsonl", clock)
    assert again.load() == []
    assert again.get("r1").outcome is Outcome.DELIVERED


def test_last_record_of_a_run_wins(tmp_path: Path, clock: FakeClock) -> None:
    """A run recorded dispatched then finished is one run in its finished state, in memory and on disk."""
    ledger = _ledger(tmp_path, clock)
    ledger.record(_run("r1", dispatched_at=T0))
    assert [r.run_id for r in ledger.running()] == ["r1"]
    ledger.record(_run("r1", dispatched_at=T0, outcome=Outcome.FAILED, reason="exit 1"))
    assert ledger.running() == []
    assert len(ledger.list()) == 1
    reloaded = _ledger(tmp_path, clock)
    assert reloaded.get("r1").reason == "exit 1"


def test_a_batch_handed_over_keeps_each_runs_last_state_under_its_own_task(tmp_path: Path, clock: FakeClock) -> None:
    """Runs handed over in one batch (a catch-up pass's 10,000) are kept as one ``record`` each would keep
    them: the same run twice is one run in its last state, a later state of a kept run replaces it (under
    the task it names now), and each task lists its runs newest first, in memory and after a reload."""
    ledger = _ledger(tmp_path, clock)
    ledger.record(_done("r0", task_id="t1"))
    batch = [
        _run("r1", task_id="t1", minute=1, dispatched_at=T0),
        _done("r2", task_id="t2", minute=2),
        _done("r1", task_id="t1", minute=1),  # r1 again, settled: one run
        _done("r0", task_id="t3", minute=3),  # a later state of r0 that names another task
    ]
    ledger.record_many(batch, handed_over=True)
    for view in (ledger, _ledger(tmp_path, clock)):
        assert [r.run_id for r in view.list("t1")] == ["r1"]
        assert view.get("r1").outcome is Outcome.DELIVERED
        assert [r.run_id for r in view.list("t2")] == ["r2"]
        assert [r.run_id for r in view.list("t3")] == ["r0"]
        assert [r.run_id for r in view.list()] == ["r0", "r2", "r1"]
        assert view.running() == []


def test_interrupted_runs_are_finalised_on_load(tmp_path: Path, clock: FakeClock) -> None:
    """A run without an outcome at load is failed as interrupted at now, returned, and written back."""
    ledger = _ledger(tmp_path, clock)
    ledger.record(_run("r1", dispatched_at=T0))
    ledger.record(_done("r2", minute=1))
    clock.advance(3600)
    after_crash = RunLedger(tmp_path / "runs.jsonl", clock)
    interrupted = after_crash.load()
    assert [r.run_id for r in interrupted] == ["r1"]
    run = after_crash.get("r1")
    assert run.outcome is Outcome.FAILED
    assert run.reason == INTERRUPTED_REASON
    assert run.finished_at == T0 + timedelta(hours=1)
    assert after_crash.get("r2").outcome is Outcome.DELIVERED
    # Written back: the next start has nothing to report.
    assert RunLedger(tmp_path / "runs.jsonl", clock).load() == []


def test_get_unknown_run_raises_not_found(tmp_path: Path, clock: FakeClock) -> None:
    """get names the missing run id."""
    with pytest.raises(NotFoundError, match="rnope"):
        _ledger(tmp_path, clock).get("rnope")


def test_list_is_newest_first_by_dispatch_else_planned(tmp_path: Path, clock: FakeClock) -> None:
    """list orders by dispatched_at, falling back to planned_for, newest first; filters and limits."""
    ledger = _ledger(tmp_path, clock)
    ledger.record_many(
        [
            _run("old", minute=0, dispatched_at=T0 + timedelta(minutes=1)),
            _run("queued", minute=5),  # never dispatched: planned_for counts
            _run("new", minute=2, dispatched_at=T0 + timedelta(minutes=9)),
            _done("other", task_id="t2", minute=3),
        ]
    )
    assert [r.run_id for r in ledger.list()] == ["new", "queued", "other", "old"]
    assert [r.run_id for r in ledger.list("t1", limit=2)] == ["new", "queued"]
    assert ledger.list("unknown-task") == []
    assert ledger.list(limit=0) == []
    with pytest.raises(UsageError):
        ledger.list(limit=-1)


def test_returned_runs_are_copies(tmp_path: Path, clock: FakeClock) -> None:
    """Mutating a recorded or returned run does not change the ledger."""
    ledger = _ledger(tmp_path, clock)
    run = _done("r1")
    ledger.record(run)
    run.reason = "changed after recording"
    ledger.get("r1").reason = "changed after reading"
    assert ledger.get("r1").reason is None


def test_runs_are_bounded_per_task(tmp_path: Path, clock: FakeClock) -> None:
    """Only the newest keep_per_task runs of each task are kept, each task separately."""
    ledger = _ledger(tmp_path, clock, keep=3)
    ledger.record_many([_done(f"a{i}", "ta", minute=i) for i in range(6)])
    ledger.record(_done("b0", "tb", minute=0))
    assert [r.run_id for r in ledger.list("ta")] == ["a5", "a4", "a3"]
    assert [r.run_id for r in ledger.list("tb")] == ["b0"]
    with pytest.raises(NotFoundError):
        ledger.get("a0")
    assert [r.run_id for r in _ledger(tmp_path, clock, keep=3).list("ta")] == ["a5", "a4", "a3"]


def test_runs_in_flight_are_never_evicted(tmp_path: Path, clock: FakeClock) -> None:
    """A run still waiting for its target is never evicted (finished ones make room for it)."""
    ledger = _ledger(tmp_path, clock, keep=2)
    ledger.record(_run("slow", minute=0, dispatched_at=T0))
    ledger.record_many([_done(f"r{i}", minute=i) for i in range(1, 5)])
    assert {r.run_id for r in ledger.list()} == {"slow", "r4"}
    assert [r.run_id for r in ledger.running()] == ["slow"]


def test_the_oldest_run_goes_by_its_latest_record(tmp_path: Path, clock: FakeClock) -> None:
    """Ages are kept as runs are recorded: a queued run dispatched later is younger than a run fired in
    between, so that run goes first; and an oldest run in flight stays while an older finished one goes."""
    ledger = _ledger(tmp_path, clock, keep=2)
    ledger.record(_run("q", minute=0, outcome=Outcome.QUEUED))
    ledger.record(_done("r1", minute=1))
    later = T0 + timedelta(minutes=5)
    ledger.record(_run("q", minute=0, dispatched_at=later, finished_at=later, outcome=Outcome.DELIVERED))
    ledger.record(_done("r2", minute=2))
    assert {r.run_id for r in ledger.list()} == {"q", "r2"}
    ledger.record(_run("slow", minute=3, dispatched_at=T0 + timedelta(minutes=3)))  # in flight
    ledger.record(_done("r6", minute=6))
    assert {r.run_id for r in ledger.list()} == {"slow", "r6"}


def test_a_full_history_lets_its_oldest_run_go_without_a_sort(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a task holds its bound, each fire lets one run go: the oldest is found in one pass over the
    task's runs, not by sorting them (51 runs a fire at 50 kept: every herd after the 50th cost 3.4
    times the CPU of the first ones)."""
    ledger = _ledger(tmp_path, clock, keep=50)
    ledger.record_many([_done(f"r{i}", minute=i) for i in range(50)])
    sorts: list[int] = []
    monkeypatch.setattr(ledger_module, "sorted", lambda *a, **kw: sorts.append(1) or sorted(*a, **kw), raising=False)
    for i in range(50, 60):
        ledger.record(_run(f"r{i}", minute=i, dispatched_at=T0 + timedelta(minutes=i)))
        ledger.record(_done(f"r{i}", minute=i))
    assert sorts == []
    monkeypatch.undo()
    assert [r.run_id for r in ledger.list(limit=100)] == [f"r{i}" for i in range(59, 9, -1)]


def test_history_of_deleted_tasks_is_kept(tmp_path: Path, clock: FakeClock) -> None:
    """The ledger knows nothing of the task list: runs of any task id survive restarts."""
    ledger = _ledger(tmp_path, clock)
    ledger.record(_done("r1", task_id="gone"))
    assert [r.run_id for r in _ledger(tmp_path, clock).list("gone")] == ["r1"]


def test_file_is_compacted_when_it_outgrows_the_kept_runs(tmp_path: Path, clock: FakeClock) -> None:
    """Past 2×kept+1000 lines the file is rewritten with only the kept runs, and reads back the same."""
    path = tmp_path / "runs.jsonl"
    ledger = _ledger(tmp_path, clock, keep=5)
    ledger.record_many([_done(f"r{i}", minute=i) for i in range(500)])
    assert len(path.read_bytes().splitlines()) == 500  # under the threshold: left alone
    ledger.record_many([_done(f"s{i}", minute=500 + i) for i in range(600)])
    assert len(path.read_bytes().splitlines()) == 5
    assert [r.run_id for r in _ledger(tmp_path, clock, keep=5).list()] == [f"s{i}" for i in range(599, 594, -1)]


def test_a_held_compaction_waits_for_its_release(tmp_path: Path, clock: FakeClock) -> None:
    """While held, appends past the line do not rewrite the file; the last release does, and the file
    reads back the same; a release told not to compact leaves it to the next append."""
    path = tmp_path / "runs.jsonl"
    ledger = _ledger(tmp_path, clock, keep=5)
    ledger.hold_compaction()
    ledger.hold_compaction()  # holds nest
    ledger.record_many([_done(f"r{i}", minute=i) for i in range(1100)])
    assert ledger.compaction_due
    assert len(path.read_bytes().splitlines()) == 1100
    ledger.release_compaction()
    assert len(path.read_bytes().splitlines()) == 1100  # one hold is left
    ledger.release_compaction(compact=False)
    assert len(path.read_bytes().splitlines()) == 1100
    ledger.record(_done("s0", minute=1100))  # no hold left: this append compacts
    assert not ledger.compaction_due
    assert len(path.read_bytes().splitlines()) == 5
    ledger.hold_compaction()
    ledger.record_many([_done(f"t{i}", minute=1101 + i) for i in range(1100)])
    ledger.release_compaction()
    assert len(path.read_bytes().splitlines()) == 5
    assert [r.run_id for r in _ledger(tmp_path, clock, keep=5).list()] == [f"t{i}" for i in range(1099, 1094, -1)]


def test_compaction_keeps_the_latest_state_of_each_run(tmp_path: Path, clock: FakeClock) -> None:
    """A compacted file holds each kept run once, in its last recorded state."""
    path = tmp_path / "runs.jsonl"
    ledger = _ledger(tmp_path, clock, keep=2)
    ledger.record_many([_run(f"r{i}", minute=i, dispatched_at=T0) for i in range(520)])
    ledger.record_many([_done(f"r{i}", minute=i) for i in range(520)])
    records = JsonLog(path).read()
    assert [r["run_id"] for r in records] == ["r518", "r519"]
    assert all(r["outcome"] == "delivered" for r in records)


def test_invalid_records_are_skipped(tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    """Records that are not runs (no run_id, bad fields) are skipped with a warning, not fatal."""
    path = tmp_path / "runs.jsonl"
    JsonLog(path).append([{"task_id": "t1"}, {"run_id": "bad", "task_id": "t1"}, _done("ok").model_dump(mode="json")])
    ledger = RunLedger(path, clock)
    with caplog.at_level(logging.WARNING):
        ledger.load()
    assert [r.run_id for r in ledger.list()] == ["ok"]
    assert "without a run_id" in caplog.text
    assert "invalid run bad" in caplog.text


def test_torn_last_record_after_crash(tmp_path: Path, clock: FakeClock) -> None:
    """A run record torn by a crash is ignored; the earlier state of that run stands."""
    path = tmp_path / "runs.jsonl"
    _ledger(tmp_path, clock).record(_run("r1", dispatched_at=T0))
    with path.open("ab") as f:
        f.write(b'{"run_id": "r1", "outcome": "deliv')
    interrupted = RunLedger(path, clock).load()
    assert [r.run_id for r in interrupted] == ["r1"]


def test_unknown_fields_are_kept(tmp_path: Path, clock: FakeClock) -> None:
    """Fields written by a newer kairosd survive a reload and a compaction."""
    path = tmp_path / "runs.jsonl"
    JsonLog(path).append([_done("r1").model_dump(mode="json") | {"future": {"x": 1}}])
    ledger = RunLedger(path, clock)
    ledger.load()
    assert ledger.get("r1").model_extra == {"future": {"x": 1}}


def test_using_before_load_is_a_bug(tmp_path: Path, clock: FakeClock) -> None:
    """record before load would hide interrupted runs, so it is refused."""
    with pytest.raises(RuntimeError, match="load"):
        RunLedger(tmp_path / "runs.jsonl", clock).record(_done("r1"))


# --- missed ledger ---------------------------------------------------------------------------


def _missed(n: int, minute: int = 0) -> MissedRecord:
    when = T0 + timedelta(minutes=minute)
    return MissedRecord(
        id=f"m{n}",
        task_id="t1",
        prompt="check the build",
        schedule="*/5 * * * *",
        scheduled_for=when,
        detected_at=when,
        reason="daemon was not running",
        action="recorded",
    )


def _missed_ledger(tmp_path: Path, clock: FakeClock, keep: int = 1000) -> MissedLedger:
    ledger = MissedLedger(tmp_path / "missed.jsonl", clock, keep=keep)
    ledger.load()
    return ledger


def test_missed_records_persist_newest_first(tmp_path: Path, clock: FakeClock) -> None:
    """Added records survive a restart and list newest first by detection time."""
    ledger = _missed_ledger(tmp_path, clock)
    ledger.add([_missed(1, minute=5), _missed(2, minute=1)])
    ledger.add([_missed(3, minute=9)])
    assert [m.id for m in ledger.list()] == ["m3", "m1", "m2"]
    assert [m.id for m in _missed_ledger(tmp_path, clock).list()] == ["m3", "m1", "m2"]


def test_missed_record_with_same_id_replaces(tmp_path: Path, clock: FakeClock) -> None:
    """Re-adding an id (a summary whose count grew) keeps one record, the latest."""
    ledger = _missed_ledger(tmp_path, clock)
    ledger.add([_missed(1)])
    ledger.add([_missed(1).model_copy(update={"count": 7})])
    assert [(m.id, m.count) for m in _missed_ledger(tmp_path, clock).list()] == [("m1", 7)]


def test_missed_ledger_is_bounded(tmp_path: Path, clock: FakeClock) -> None:
    """Only the last `keep` records added are kept, across restarts too."""
    ledger = _missed_ledger(tmp_path, clock, keep=3)
    ledger.add([_missed(i, minute=i) for i in range(5)])
    assert [m.id for m in ledger.list()] == ["m4", "m3", "m2"]
    assert [m.id for m in _missed_ledger(tmp_path, clock, keep=3).list()] == ["m4", "m3", "m2"]


def test_missed_file_is_compacted(tmp_path: Path, clock: FakeClock) -> None:
    """Past 2×keep+1000 lines the missed file is rewritten with only the kept records."""
    path = tmp_path / "missed.jsonl"
    ledger = _missed_ledger(tmp_path, clock, keep=10)
    ledger.add([_missed(i, minute=i) for i in range(1100)])
    assert len(path.read_bytes().splitlines()) == 10


def test_a_held_missed_compaction_waits_for_its_release(tmp_path: Path, clock: FakeClock) -> None:
    """As the run ledger's: while held, adds past the line leave the file as it is; the last release
    compacts it to the kept records, and one told not to compact leaves it to the next add."""
    path = tmp_path / "missed.jsonl"
    ledger = _missed_ledger(tmp_path, clock, keep=10)
    ledger.hold_compaction()
    ledger.hold_compaction()  # holds nest
    for first in range(0, 3300, 1100):  # a pass's chunks: each would have compacted on its own
        ledger.add([_missed(i, minute=i) for i in range(first, first + 1100)])
    assert ledger.compaction_due
    assert len(path.read_bytes().splitlines()) == 3300
    ledger.release_compaction()
    assert len(path.read_bytes().splitlines()) == 3300  # one hold is left
    ledger.release_compaction()
    assert not ledger.compaction_due
    assert len(path.read_bytes().splitlines()) == 10
    assert [m.id for m in _missed_ledger(tmp_path, clock, keep=10).list()] == [f"m{i}" for i in range(3299, 3289, -1)]
    ledger.hold_compaction()
    ledger.add([_missed(i, minute=i) for i in range(3300, 4400)])
    ledger.release_compaction(compact=False)
    assert len(path.read_bytes().splitlines()) == 1110
    ledger.add([_missed(4400, minute=4400)])  # no hold left: this add compacts
    assert len(path.read_bytes().splitlines()) == 10


def test_clear_empties_the_missed_ledger(tmp_path: Path, clock: FakeClock) -> None:
    """clear returns how many records it removed and leaves an empty file."""
    ledger = _missed_ledger(tmp_path, clock)
    ledger.add([_missed(1), _missed(2)])
    assert ledger.clear() == 2
    assert ledger.list() == []
    assert _missed_ledger(tmp_path, clock).list() == []
    assert ledger.clear() == 0


def test_a_batch_bigger_than_the_bound_keeps_its_newest_and_drops_what_its_older_ones_replace(
    tmp_path: Path, clock: FakeClock
) -> None:
    """One record per task after a long stop: the batch's last ``keep`` stay; an older one of the batch
    that updates a kept record (same id) removes it, as adding them one by one would."""
    ledger = _missed_ledger(tmp_path, clock, keep=3)
    ledger.add([_missed(90), _missed(91)])
    ledger.add([_missed(91).model_copy(update={"count": 5})] + [_missed(i, minute=i) for i in range(5)])
    assert [m.id for m in ledger.list()] == ["m4", "m3", "m2"]
    assert [m.id for m in _missed_ledger(tmp_path, clock, keep=3).list()] == ["m4", "m3", "m2"]


def test_recorded_records_do_not_change_with_the_objects_they_came_from(tmp_path: Path, clock: FakeClock) -> None:
    """The ledgers keep copies: a caller that changes its Run (target, extra fields) after recording
    it does not change history."""
    ledger = _ledger(tmp_path, clock)
    run = _run("r1", target={"kind": "webhook", "headers": {"a": "1"}}, note={"seen": [1]})
    ledger.record(run)
    run.target["headers"]["a"] = "changed"
    run.note["seen"].append(2)  # type: ignore[attr-defined]
    run.reason = "changed"
    kept = ledger.get("r1")
    assert (kept.target, kept.note, kept.reason) == ({"kind": "webhook", "headers": {"a": "1"}}, {"seen": [1]}, None)  # type: ignore[attr-defined]
    missed = _missed_ledger(tmp_path, clock)
    record = _missed(1).model_copy(update={"extra_info": {"n": [1]}})
    missed.add([record])
    record.extra_info["n"].append(2)  # type: ignore[attr-defined]
    assert missed.list()[0].extra_info == {"n": [1]}  # type: ignore[attr-defined]


def test_handed_over_runs_are_kept_as_they_are(tmp_path: Path, clock: FakeClock) -> None:
    """Runs handed over (the scheduler's, made for the record) are kept without a copy each: a 10k herd
    records 20,000; the ones recorded otherwise are copies, and both read back the same."""
    ledger = _ledger(tmp_path, clock)
    mine, theirs = _done("r1"), _done("r2", minute=1)
    ledger.record_many([mine], handed_over=True)
    ledger.record_many([theirs])
    kept = {run.run_id: run for run in ledger.between(T0, T0 + timedelta(minutes=1))}  # the records themselves
    assert kept["r1"] is mine
    assert kept["r2"] is not theirs
    assert kept["r2"] == theirs
    assert {r.run_id: r for r in _ledger(tmp_path, clock).list()} == {"r1": mine, "r2": theirs}


def test_runs_let_go_are_reported_so_their_logs_can_go_too(tmp_path: Path, clock: FakeClock) -> None:
    """On a new run past the bound and at load with a smaller bound (issue 27: logs were never pruned)."""
    ledger = _ledger(tmp_path, clock, keep=3)
    for minute, run_id in enumerate(("r1", "r2", "r3")):
        ledger.record(_done(run_id, minute=minute))
    evicted: list[str] = []
    smaller = RunLedger(
        tmp_path / "runs.jsonl", clock, keep_per_task=2, on_evict=lambda runs: evicted.extend(r.run_id for r in runs)
    )
    smaller.load()
    assert evicted == ["r1"]
    smaller.record(_done("r4", minute=4))
    assert evicted == ["r1", "r2"]
    assert not smaller.knows("r2")
    assert smaller.knows("r4")


def test_a_trusted_record_is_the_record_validation_makes_and_its_line_the_same_bytes() -> None:
    """``trusted`` (the scheduler's records, built without validation) gives what validating the same
    values gives: equal, every default filled in the fields' order, a fresh id each, and the same JSON;
    ``json_line`` writes the bytes json.dumps wrote, and still encodes a lone surrogate."""
    import json

    from kairosd.core.records import json_line, trusted

    values: dict[str, Any] = {"task_id": "t1", "scheduled_for": T0, "planned_for": T0, "target": {"kind": "inbox"}}
    made, validated = trusted(Run, **values), Run(**values)
    assert made == validated.model_copy(update={"run_id": made.run_id})
    assert list(made.__dict__) == list(Run.model_fields)
    assert trusted(Run, **values).run_id != made.run_id
    assert made.model_dump_json() == validated.model_copy(update={"run_id": made.run_id}).model_dump_json()
    missed = trusted(MissedRecord, task_id="t1", prompt="p", schedule="* * * * *", scheduled_for=T0,
                     detected_at=T0, reason="r", action="recorded")  # fmt: skip
    assert missed.id.startswith("m")
    assert missed.count == 1
    assert missed.first_scheduled_for is None
    for record in (made, missed, Run(**values, task_name="caf\u00e9 \u2603", reason="line\nbreak")):
        line = json_line(record)
        assert line == json.dumps(record.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=True).encode()
        assert json.loads(line) == record.model_dump(mode="json")
    odd = Run.model_validate({**values, "scheduled_for": T0.isoformat(), "planned_for": T0.isoformat(), "x": "\ud800"})
    assert json.loads(json_line(odd))["x"] == "\ud800"
    with pytest.raises(TypeError, match="no field 'nope'"):
        trusted(Run, **values, nope=1)
    with pytest.raises(TypeError, match="'planned_for' is required"):
        trusted(Run, task_id="t1", scheduled_for=T0)


def test_records_from_a_prototype_are_the_records_trusted_makes() -> None:
    """A ``Prototype`` (what many of the scheduler's records share, laid out once) makes what ``trusted``
    makes of the same values: equal, the fields in their order, a fresh id each, the same JSON line; the
    records share no dict of their own values; it refuses unknown and missing fields as trusted does."""
    from kairosd.core.records import Prototype, json_line, trusted

    shared: dict[str, Any] = {"scheduled_for": T0, "planned_for": T0, "target": {"kind": "inbox"}, "late_by_s": 2.5}
    prototype = Prototype(Run, ("task_id", "task_name"), **shared)
    one, two = prototype.make(task_id="t1", task_name="caf\u00e9"), prototype.make(task_id="t2")
    expected = trusted(Run, **shared, task_id="t1", task_name="caf\u00e9")
    assert one == expected.model_copy(update={"run_id": one.run_id})
    assert list(one.__dict__) == list(Run.model_fields)
    assert json_line(one) == json_line(expected).replace(expected.run_id.encode(), one.run_id.encode())
    assert one.run_id != two.run_id
    assert (two.task_id, two.task_name) == ("t2", None)
    assert one.__dict__ is not two.__dict__
    own = ("task_id", "prompt", "schedule")
    fixed = Prototype(MissedRecord, own, scheduled_for=T0, detected_at=T0, reason="r", action="recorded", count=3)
    missed = fixed.make(id="m1", task_id="t1", prompt="p", schedule="* * * * *")
    assert missed == MissedRecord(id="m1", task_id="t1", prompt="p", schedule="* * * * *", scheduled_for=T0,
                                  detected_at=T0, reason="r", action="recorded", count=3)  # fmt: skip
    wrong = Prototype(Run, ("task_id",), planned_for=T0, scheduled_for=T0, nope=1)
    missing = Prototype(Run, ("task_id",), scheduled_for=T0)
    for _ in range(2):  # checked by trusted() for the first record, by the prototype's layout after
        with pytest.raises(TypeError, match="no field 'nope'"):
            wrong.make(task_id="t1")
        with pytest.raises(TypeError, match="'planned_for' is required"):
            missing.make(task_id="t1")
    with pytest.raises(TypeError, match="no own field 'exit_code'"):
        prototype.make(task_id="t1", exit_code=1)
    with pytest.raises(TypeError, match="'task_id' is required"):
        prototype.make(task_name="n")


@pytest.mark.parametrize(
    "text",
    ["plain", "caf\u00e9 \u2603 \U0001f600", 'quote " back \\ slash /', "line\nbreak\ttab\x00\x1f", "del \x7f",
     "lone \ud800", "\u2028\u2029 \ufeff \U000e0041", "\x00" + "0\x01 a marker's text", "100% %s %d %%"],
)  # fmt: skip
def test_a_prototype_writes_the_line_json_line_writes(text: str) -> None:
    """A prototype's line (the JSON of what its records share, encoded once, around each record's own
    strings), for a record or as it makes one, is the bytes json_line writes, whatever the strings hold;
    a record whose shared values changed, or that holds an unknown field or an own value that is not a
    string, is encoded whole."""
    from kairosd.core.records import Prototype, json_line

    shared: dict[str, Any] = {"scheduled_for": T0, "planned_for": T0, "target": {"kind": "inbox", "s": text}}
    own = ("task_id", "task_name", "exit_code")
    plain, missed = Prototype(Run, own, **shared), Prototype(Run, own, **shared, reason=text, outcome=Outcome.MISSED)
    for prototype in (plain, missed):
        for values in ({"task_id": "t1"}, {"task_id": text, "task_name": text}, {"task_id": "t1", "run_id": text}):
            run = prototype.make(**values)
            assert prototype.line(run) == json_line(run)
            made, line = prototype.made(**values)  # the record and its line at once
            assert line == json_line(made)
        run = prototype.make(task_id="t1", task_name=text)
        run.outcome = Outcome.SKIPPED  # no longer what the prototype shares
        assert prototype.line(run) == json_line(run)
        assert b'"outcome":"skipped"' in prototype.line(run)
        odd = prototype.make(task_id="t1", exit_code=3)  # an own value that is not a string
        assert prototype.line(odd) == json_line(odd)
    own = ("task_id", "task_name", "prompt", "schedule")
    summary = Prototype(MissedRecord, own, scheduled_for=T0, detected_at=T0, reason=text, action="recorded", count=2)
    record = summary.make(task_id="t1", task_name=None, prompt=text, schedule="*/5 * * * *")
    assert summary.line(record) == json_line(record)


@pytest.mark.parametrize(
    "text",
    ["plain", "caf\u00e9 \u2603 \U0001f600", 'quote " back \\ slash /', "line\nbreak\ttab\x00\x1f", "del \x7f",
     "\u2028\u2029 \ufeff \U000e0041", "\x00" + "0\x01 a marker's text", "100% %s %d %%", "back \\u007f"],
)  # fmt: skip
def test_a_record_made_from_its_own_texts_is_the_record_and_line_made_from_its_values(text: str) -> None:
    """``made_as`` (each own value's JSON text given, as a catch-up pass gives a task's once for its three
    records) makes the record ``made`` makes and the line json_line writes; ``own_text`` refuses a text a
    line cannot hold as it is (a DEL); own fields other than the prototype's (or in another order) are
    made by ``made``; a missing own value is refused."""
    from kairosd.core.records import Prototype, json_line, own_text, trusted

    shared: dict[str, Any] = {"scheduled_for": T0, "planned_for": T0, "target": {"kind": "inbox", "s": text}}
    own = ("run_id", "task_id", "task_name")
    prototype = Prototype(Run, ("task_id", "task_name"), **shared)
    for name in (None, text, "n"):
        values = {"run_id": "r0123456789ab", "task_id": f"t {text}", "task_name": name}
        texts = tuple(own_text(values[field]) for field in own)
        if None in texts:
            assert "\x7f" in text or "\\u007f" in text  # a DEL, or text that looks like one once escaped
            continue
        run, line = prototype.made_as(own, texts, **values)  # type: ignore[arg-type]
        assert run == trusted(Run, **shared, **values)
        assert line == json_line(run)
    summary = Prototype(MissedRecord, ("id", "task_id", "task_name", "prompt", "schedule"), scheduled_for=T0,
                        detected_at=T0, reason=text, action="recorded", count=2)  # fmt: skip
    values = {"id": "m1", "task_id": "t1", "task_name": None, "prompt": "p", "schedule": "*/5 * * * *"}
    names = tuple(values)
    for _ in range(3):  # the first record is made before the prototype's layout
        missed, line = summary.made_as(names, tuple(own_text(v) or "" for v in values.values()), **values)
        assert line == json_line(missed)
        assert missed == trusted(MissedRecord, **values, scheduled_for=T0, detected_at=T0, reason=text,
                                 action="recorded", count=2)  # fmt: skip
    swapped = ("task_id", "id", "task_name", "prompt", "schedule")
    missed, line = summary.made_as(swapped, ("x",) * 5, **values)
    assert line == json_line(missed)
    with pytest.raises(TypeError, match="'prompt' is required"):
        summary.made_as(names, ("x",) * 5, id="m2", task_id="t1", task_name=None, schedule="s")


def test_runs_handed_over_are_kept_as_they_are_and_others_are_copied(tmp_path: Path, clock: FakeClock) -> None:
    """The scheduler hands its runs over (it never changes them after): the ledger keeps those objects,
    not a copy each (30,000 copies in a catch-up of 10,000 tasks). A caller that did not hand its run
    over can still change it without changing history."""
    ledger = _ledger(tmp_path, clock)
    mine, theirs = _done("r1"), _done("r2")
    ledger.record_many([mine], handed_over=True)
    ledger.record_many([theirs])
    theirs.reason = "changed afterwards"
    assert ledger._runs["r1"] is mine
    assert ledger._runs["r2"] is not theirs
    assert ledger.get("r2").reason is None
    missed = MissedLedger(tmp_path / "missed.jsonl", clock)
    missed.load()
    record = MissedRecord(task_id="t1", prompt="p", schedule="x", scheduled_for=T0, detected_at=T0, reason="r",
                          action="recorded")  # fmt: skip
    missed.add([record], handed_over=True)
    assert missed._records[record.id] is record
    reloaded = RunLedger(tmp_path / "runs.jsonl", clock)
    reloaded.load()
    assert {r.run_id: r.reason for r in reloaded.list()} == {"r1": None, "r2": None}


def test_a_revised_record_is_what_model_copy_makes() -> None:
    """``revised`` (a run's later state, as the dispatcher records a herd's outcomes) gives what
    ``model_copy(update=...)`` gives: the same values, fields set and unknown fields, the same JSON;
    the original is unchanged and shares no dict with its copy; an unknown field is refused."""
    from kairosd.core.records import json_line, revised

    loaded = Run.model_validate(
        {"run_id": "r1", "task_id": "t1", "scheduled_for": T0.isoformat(), "planned_for": T0.isoformat(), "x": [1]}
    )
    made = Run(task_id="t2", scheduled_for=T0, planned_for=T0, target={"kind": "inbox"})
    changes: dict[str, Any] = {"started_at": T0, "finished_at": T0, "outcome": Outcome.DELIVERED, "reason": None}
    for run in (loaded, made):
        before = run.model_dump()
        copy, expected = revised(run, **changes), run.model_copy(update=changes)
        assert copy == expected
        assert copy.model_fields_set == expected.model_fields_set
        assert copy.model_extra == expected.model_extra
        assert json_line(copy) == json_line(expected)
        assert run.model_dump() == before
        assert copy.__dict__ is not run.__dict__
        assert copy.model_fields_set is not run.model_fields_set
    copy = revised(loaded, outcome=Outcome.FAILED)
    assert copy.model_extra is not loaded.model_extra
    with pytest.raises(TypeError, match="no field 'nope'"):
        revised(loaded, nope=1)


@pytest.mark.parametrize(
    "text",
    [None, "plain", 'quote " back \\ slash', ',"started_at":null,"finished_at":null,"outcome":null,"reason":null,',
     "caf\u00e9 \u2603 \U0001f600", "del \x7f", "lone \ud800", "100% %s"],
)  # fmt: skip
def test_a_settled_line_is_the_line_json_line_writes(text: str | None) -> None:
    """The line of a run's settled state, spliced from its in-flight line (``Settled``: how the dispatcher
    records a herd's outcomes), is the bytes json_line writes, whatever the run's strings hold and whatever
    the outcome, reason and times; a run with an unknown field, a value that does not settle that way (an
    exit code, a pending run's ``awaiting``) or no known line is encoded whole, the same bytes."""
    from kairosd.core.records import Prototype, Settled, json_line, revised

    late = T0 + timedelta(seconds=1, microseconds=5)
    shared: dict[str, Any] = {"scheduled_for": T0, "planned_for": T0, "dispatched_at": T0, "target": {"s": text}}
    prototype = Prototype(Run, ("task_id", "task_name"), **shared)
    prototype.make(task_id="first")  # the next ones get their lines from the prototype
    settled = Settled()
    outcomes: list[dict[str, Any]] = [
        {"started_at": T0, "finished_at": late, "outcome": Outcome.DELIVERED, "reason": None},
        {"started_at": T0, "finished_at": late, "outcome": Outcome.FAILED, "reason": text},
        {"started_at": late, "finished_at": None, "outcome": Outcome.QUEUED, "reason": None, "awaiting": "session"},
        {"started_at": T0, "finished_at": late, "outcome": Outcome.FAILED, "reason": "x", "exit_code": 2},
    ]
    for changes in outcomes:
        for _ in range(3):  # the first of a kind is encoded, the others spliced
            run, line = prototype.made(task_id=text or "t1", task_name=text)
            assert line == json_line(run)
            after = revised(run, **changes)
            assert settled.line(run, line, after) == json_line(after)
            assert settled.line(run, None, after) == json_line(after)
    odd = Run.model_validate({"run_id": "r1", "task_id": "t1", "scheduled_for": T0, "planned_for": T0, "x": text})
    after = revised(odd, **outcomes[0])
    assert settled.line(odd, json_line(odd), after) == json_line(after)
    assert b'"x":' in settled.line(odd, json_line(odd), after)


def test_a_settled_line_is_spliced_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs settled with the same values (a batch's times and outcome) are encoded once: the others' lines
    are their in-flight lines with the settled values' JSON spliced in."""
    from kairosd.core import records
    from kairosd.core.records import Prototype, Settled, json_line, revised

    prototype = Prototype(Run, ("task_id", "task_name"), scheduled_for=T0, planned_for=T0, dispatched_at=T0)
    prototype.make(task_id="first")
    made = [prototype.made(task_id=f"t{i}") for i in range(50)]
    encoded: list[Run] = []
    monkeypatch.setattr(records, "json_line", lambda record: encoded.append(record) or json_line(record))
    settled, changes = Settled(), {"started_at": T0, "finished_at": T0, "outcome": Outcome.DELIVERED}
    lines = [settled.line(run, line, revised(run, **changes)) for run, line in made]
    assert len(encoded) == 1
    assert lines == [json_line(revised(run, **changes)) for run, _ in made]


def test_a_revised_trusted_record_shares_the_trusted_fields_set() -> None:
    """A trusted record's later state (a herd's outcomes) shares the fields set trusted records share (every
    field), and an assignment to it changes no other record's; any other record's copy has its own set."""
    from kairosd.core.records import revised, trusted

    one, two = (
        trusted(Run, task_id="t1", scheduled_for=T0, planned_for=T0),
        trusted(Run, task_id="t2", scheduled_for=T0, planned_for=T0),
    )
    later = revised(one, outcome=Outcome.DELIVERED)
    assert later.model_fields_set is one.model_fields_set is two.model_fields_set
    assert later.model_fields_set == set(Run.model_fields)
    later.reason = "changed"
    assert two.model_fields_set == set(Run.model_fields)
    plain = Run(task_id="t3", scheduled_for=T0, planned_for=T0)
    copy = revised(plain, outcome=Outcome.DELIVERED)
    assert copy.model_fields_set is not plain.model_fields_set
    assert "outcome" not in plain.model_fields_set


def test_runs_recorded_with_their_lines_are_written_as_those_lines(tmp_path: Path, clock: FakeClock) -> None:
    """``record_many(lines=...)`` (the dispatcher's outcomes, whose lines it spliced) writes those lines, one a
    run in order, and keeps the runs; a count that does not match is refused and nothing is written."""
    from kairosd.core.records import json_line

    ledger = _ledger(tmp_path, clock)
    runs = [_done("r1"), _done("r2", minute=1)]
    with pytest.raises(ValueError, match="1 lines for 2 runs"):
        ledger.record_many(runs, lines=[json_line(runs[0])])
    assert not (tmp_path / "runs.jsonl").exists() or (tmp_path / "runs.jsonl").read_bytes() == b""
    ledger.record_many(runs, handed_over=True, lines=[json_line(run) for run in runs])
    assert (tmp_path / "runs.jsonl").read_bytes() == b"".join(json_line(run) + b"\n" for run in runs)
    assert ledger.get("r2") == runs[1]
