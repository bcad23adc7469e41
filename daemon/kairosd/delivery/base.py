"""The narrow interface between the scheduler and delivery targets.

The scheduler hands a :class:`Handoff` to the :class:`Delivery` registered for the
task's target kind and records whatever :class:`Result` comes back. A target
reports ``delivered`` only once it has confirmed the prompt arrived (the inbox
after its fsync, a shell command after exit 0): that is what keeps the run
ledger truthful. A target must not raise for an ordinary failure; it returns a
failed result with a reason. Anything it does raise is recorded as a failure.

New targets (agent sessions, hooks, webhooks, MCP) implement this protocol and
are registered in the composition root; the scheduler does not change.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from kairosd.core.models import Target


# True while the service checks the target of ``kairos add --no-check``: a check of what may hold
# later (a webhook host that does not resolve now, a command not yet on the PATH) is skipped; the
# others (a missing folder, a webhook key, the loopback rule, a missing agent CLI) still refuse.
SKIP_LATER_CHECKS: ContextVar[bool] = ContextVar("kairos_skip_later_checks", default=False)


@dataclass(frozen=True)
class Handoff:
    """Everything a target needs to deliver one fire of one task."""

    run_id: str
    task_id: str
    task_name: str | None
    prompt: str
    target: Target  # the task's target, as the task holds it: parsed once, when the task was made
    scheduled_for: datetime
    planned_for: datetime
    late_by_s: float = 0.0
    catch_up: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    # The task's overlap policy ("skip" or "queue"): a target that holds runs across fires
    # (pending session items) applies it to them, since those runs no longer block the task.
    overlap: str = "skip"

    @classmethod
    def of(
        cls,
        run_id: str,
        task_id: str,
        task_name: str | None,
        prompt: str,
        target: Target,
        scheduled_for: datetime,
        planned_for: datetime,
        late_by_s: float,
        catch_up: bool,
        meta: dict[str, Any],
        overlap: str,
    ) -> Handoff:
        """``Handoff(...)`` of every field, at half its cost: a frozen dataclass's ``__init__`` sets each
        field through ``object.__setattr__`` (5 us a handoff; the dispatcher makes 10,000 in a herd).
        The same object: equal, frozen, the fields in their order."""
        handoff = object.__new__(cls)
        object.__setattr__(
            handoff,
            "__dict__",
            {
                "run_id": run_id, "task_id": task_id, "task_name": task_name, "prompt": prompt, "target": target,
                "scheduled_for": scheduled_for, "planned_for": planned_for, "late_by_s": late_by_s,
                "catch_up": catch_up, "meta": meta, "overlap": overlap,
            },
        )  # fmt: skip
        return handoff


@dataclass(frozen=True)
class Result:
    """What a target reports for one handoff.

    ``delivered`` and ``failed`` are final. Two more are optional for targets
    that need them:

    * ``pending``: the target holds the prompt durably and confirms it later on
      its own (a live agent session takes it at its next turn). The scheduler
      records the run ``queued`` with ``awaiting`` set to the target's kind and
      frees the run's concurrency slot and the task's overlap mark; the target
      settles the run in the ledger (``delivered``, ``failed`` or ``skipped``,
      with a ``run_finished`` event) when it knows.
    * ``skipped``: deliberately not delivered (a session target whose fallback
      is ``drop``); ``reason`` says why.
    """

    outcome: Literal["delivered", "failed", "pending", "skipped"]
    started_at: datetime | None = None
    finished_at: datetime | None = None
    reason: str | None = None
    output_path: str | None = None
    exit_code: int | None = None


class Delivery(Protocol):
    """A delivery target. ``kind`` matches ``target["kind"]`` of the tasks it serves."""

    kind: str

    async def deliver(self, handoff: Handoff) -> Result:
        """Deliver ``handoff``; return only when the target confirmed it or failed.

        Must be idempotent per ``handoff.run_id``: a retried delivery of the same run
        never shows the prompt twice.
        """
        ...

    async def close(self) -> None:
        """Stop in-flight work (called at shutdown, after the grace period)."""
        ...


class BatchDelivery(Delivery, Protocol):
    """A delivery that can take many handoffs at once with shared durable writes (optional).

    The dispatcher hands it the runs started in one pass (one event-loop turn)
    together: the target writes them all and syncs once, then answers for each,
    in order. Each answer means what :meth:`Delivery.deliver` would have said.
    """

    async def deliver_many(self, handoffs: list[Handoff]) -> list[Result]:
        """One result per handoff, in order; idempotent per run id like :meth:`Delivery.deliver`."""
        ...


class CheckedDelivery(Delivery, Protocol):
    """A delivery that can tell at add time that a target would fail (optional; the scheduler asks)."""

    async def check(self, target: Target) -> None:
        """Raise UsageError naming the reason when every fire of ``target`` would fail as things stand."""
        ...
