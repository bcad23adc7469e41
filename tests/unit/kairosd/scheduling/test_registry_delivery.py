"""The agent:NAME delivery target: a fire starts a registry task (kind fire) and is delivered only when the
agent turn completed; idempotent per run id; recorded in both the run ledger and the registry."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from registry_support import FakeAdapter, fake_agent, make_registry, run, until

from kairosd.core.events import EventBus
from kairosd.core.models import AgentTarget, new_task
from kairosd.core.records import Outcome
from kairosd.delivery.base import Handoff
from kairosd.jobs.delivery import AgentDelivery
from kairosd.jobs.model import JobKind, JobStatus
from kairosd.scheduling.ledger import MissedLedger, RunLedger
from kairosd.scheduling.scheduler import Scheduler
from kairosd.scheduling.taskbook import TaskBook
from kairosd.store.store import StoreState
from kairosd.testing import FakeClock, InMemoryStore

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)


def _job(run_id: str = "r000000000001", prompt: str = "triage", **target: object) -> Handoff:
    return Handoff(
        run_id=run_id,
        task_id="3f2a9c1d",
        task_name=None,
        prompt=prompt,
        target=AgentTarget(**{"agent": "fake", **target}),
        scheduled_for=T0,
        planned_for=T0,
    )


@pytest.fixture
def adapter(tmp_path: Path) -> FakeAdapter:
    return FakeAdapter(fake_agent(tmp_path))


def test_a_completed_turn_is_delivered_and_both_records_point_at_each_other(tmp_path, adapter):
    """deliver() waits for the turn: delivered, reason names the registry task, output_path is its log."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        delivery = AgentDelivery(reg, reg._clock)
        result = await delivery.deliver(_job(cwd=str(tmp_path), model="m1"))
        (record,) = reg.list_tasks()
        assert result.outcome == "delivered"
        assert result.reason == f"agent job {record.id} completed"
        assert (result.output_path, result.exit_code) == (record.log_path, 0)
        assert (record.kind, record.status, record.multi_turn) == (JobKind.FIRE, JobStatus.COMPLETED, False)
        assert (record.scheduled_task_id, record.run_id) == ("3f2a9c1d", "r000000000001")
        assert (record.cwd, record.model, record.response) == (str(tmp_path), "m1", "echo: triage")
        await reg.stop()

    run(main())


def test_a_repeated_delivery_of_a_run_does_not_start_the_agent_again(tmp_path, adapter):
    """The same run id twice: one registry task, one agent process, the same outcome."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        delivery = AgentDelivery(reg, reg._clock)
        first = await delivery.deliver(_job())
        again = await delivery.deliver(_job())
        assert len(reg.list_tasks()) == 1
        assert len(adapter.requests) == 1
        assert (again.outcome, again.reason) == (first.outcome, first.reason)
        await reg.stop()

    run(main())


@pytest.mark.parametrize(
    ("handoff", "reason"),
    [
        (_job(prompt="fail"), "failed: the agent failed"),
        (_job(agent="nope"), "agent target: unknown agent 'nope' (available: fake)"),
        (_job(timeout_s=1, prompt="hang:/dev/null"), "failed: timed out after 1s (process group killed)"),
    ],
)
def test_failures_come_back_as_failed_results(tmp_path, adapter, handoff, reason):
    """A failed turn, an unknown agent and a timeout are failed results with a reason, never exceptions."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, kill_grace_s=0.2)
        result = await AgentDelivery(reg, reg._clock).deliver(handoff)
        assert result.outcome == "failed"
        assert result.reason is not None
        assert result.reason.endswith(reason)
        await reg.stop()

    run(main())


def test_a_run_interrupted_by_shutdown_is_failed_and_close_refuses_new_runs(tmp_path, adapter):
    """Stopping the registry mid-turn fails the delivery truthfully; after close() nothing new starts."""

    async def main() -> None:
        reg = make_registry(tmp_path, adapter, kill_grace_s=0.2)
        delivery = AgentDelivery(reg, reg._clock)
        pending = asyncio.create_task(delivery.deliver(_job(prompt=f"hang:{tmp_path / 'pid'}")))
        await until(lambda: bool(reg.list_tasks()) and reg.list_tasks()[0].pid is not None, "the agent to run")
        # The pid's change woke the delivery's wait; one turn of the loop lets it look and wait again, else
        # it would look only once the shutdown began, and give up on a turn that is about to record its end.
        await asyncio.sleep(0)
        await delivery.close()
        await reg.stop()
        result = await pending
        assert result.outcome == "failed"
        assert result.reason is not None
        assert result.reason.endswith("interrupted: kairosd stopped while it ran; it was not re-run")
        refused = await delivery.deliver(_job(run_id="r000000000002"))
        assert (refused.outcome, refused.reason) == ("failed", "agent delivery is closed (shutdown)")

    run(main())


def test_scheduler_fires_an_agent_target_into_the_registry(tmp_path, adapter):
    """kairos run of an agent:fake task: the run ledger says delivered with the registry task; the registry
    has the fire with the run id."""

    async def main() -> None:
        clock = FakeClock(T0)
        events = EventBus(clock.now)
        reg = make_registry(tmp_path, adapter, events=events, clock=clock)
        store = InMemoryStore(StoreState.empty())
        book = TaskBook(store, store.load())
        task = new_task(
            prompt="nightly triage", created_at=T0, tz="UTC", cron="0 3 * * *", target=AgentTarget(agent="fake")
        )
        book.put(task)
        ledger = RunLedger(tmp_path / "runs.jsonl", clock)
        ledger.load()
        missed = MissedLedger(tmp_path / "missed.jsonl", clock)
        missed.load()
        sched = Scheduler(book, ledger, missed, {"agent": AgentDelivery(reg, clock)}, clock, events)
        await sched.check_target(AgentTarget(agent="fake"))
        run_ = await sched.run_now(task.id)
        assert await sched.drain(20)
        (done,) = ledger.list(task.id, 10)
        (record,) = reg.list_tasks()
        assert done.outcome is Outcome.DELIVERED
        assert done.reason == f"agent job {record.id} completed"
        assert done.output_path == record.log_path
        assert (record.run_id, record.scheduled_task_id, record.prompt) == (run_.run_id, task.id, "nightly triage")
        await reg.stop()

    run(main())


def test_an_agent_target_without_a_folder_runs_in_home(tmp_path, adapter, monkeypatch):
    """Issue 24, item 1: without a recorded cwd the agent ran in kairosd's folder (/); it runs in $HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))

    async def main() -> None:
        reg = make_registry(tmp_path, adapter)
        delivery = AgentDelivery(reg, reg._clock)
        result = await delivery.deliver(_job())
        (record,) = reg.list_tasks()
        assert result.outcome == "delivered"
        assert record.cwd == str(home)
        await reg.stop()

    run(main())
