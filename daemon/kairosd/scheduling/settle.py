"""At start, runs a crash left in flight whose inbox item is on disk are settled as delivered.

A herd's inbox items are written (one fsync) before the batch's outcomes reach
the run ledger (the next fsync). A crash between the two leaves runs the
ledger finalises as failed ("interrupted") at load, though their items are in
the inbox and an agent will see them. The item is the target's confirmation
(its id is the run id), so those runs are recorded ``delivered`` instead; the
others stay interrupted. Nothing is delivered again either way.

Must not import the scheduler, the server or the delivery targets.
"""

from __future__ import annotations

import logging

from kairosd.core.errors import UsageError
from kairosd.core.records import Outcome, Run
from kairosd.scheduling.ledger import RunLedger
from kairosd.store.inbox import InboxStore

__all__ = ["settle_written_items"]

log = logging.getLogger(__name__)

DELIVERED_BEFORE_STOP = "delivered before kairosd stopped (its inbox item was written; the outcome was not)"


def settle_written_items(ledger: RunLedger, inbox: InboxStore, interrupted: list[Run]) -> list[Run]:
    """Record as delivered the ``interrupted`` inbox runs whose item ``inbox`` holds; returns them."""
    settled: list[Run] = []
    for run in interrupted:
        if run.outcome is not Outcome.FAILED or run.target.get("kind") != "inbox":
            continue
        session = run.target.get("session", "default")
        try:
            written = isinstance(session, str) and inbox.has(session, run.run_id)
        except (UsageError, OSError) as exc:
            log.warning("cannot check the inbox of session %r for run %s: %s", session, run.run_id, exc)
            continue
        if written:
            settled.append(run.model_copy(update={"outcome": Outcome.DELIVERED, "reason": DELIVERED_BEFORE_STOP}))
    if settled:
        ledger.record_many(settled)
    return settled
