"""A fixed kairosd store for ``kairos timeline``: tasks with fixed ids, runs and missed fires at fixed times.

The same store and fake clock always give the same timeline document, so the suite can regenerate
``docs/timeline.svg`` from it and compare (the README's picture is what the code draws).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from session_support import Kairosd

from kairosd.core.records import MissedRecord, Outcome, Run
from kairosd.scheduling.firing import NOT_RUNNING

# Saturday noon UTC; Europe/Berlin falls back from +02:00 to +01:00 at 01:00 UTC the next night.
NOW = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
INBOX = {"kind": "inbox", "session": "work"}
DOWN_FROM = NOW - timedelta(hours=18, minutes=20)
DOWN_UNTIL = NOW - timedelta(hours=14, minutes=10)


def _run(task_id: str, at: datetime, outcome: Outcome, **fields: Any) -> Run:
    return Run(
        run_id=f"r{task_id}{int(at.timestamp())}",
        task_id=task_id,
        scheduled_for=fields.pop("scheduled_for", at),
        planned_for=fields.pop("planned_for", at),
        dispatched_at=at,
        finished_at=at + timedelta(seconds=20),
        outcome=outcome,
        **fields,
    )


def fill(kd: Kairosd) -> dict[str, str]:
    """Add the fixed tasks and their history to ``kd`` (its clock at :data:`NOW`); their ids by name."""
    ids = (f"{n:08x}" for n in itertools.count(0x7A1E0001))
    kd.service.new_id = lambda: next(ids)

    def add(name: str, cron: str, **fields: Any) -> str:
        body = {"prompt": name, "cron": cron, "tz": "Europe/Berlin", "target": INBOX, "name": name, **fields}
        return str(kd.run(kd.service.add(body))["id"])

    made = {
        "hourly-sync": add("hourly-sync", "0 * * * *"),
        "standup-notes": add("standup-notes", "30 9 * * *"),
        "watch-ci": add("watch-ci", "*/2 * * * *", jitter="max:1m"),
        "nightly-backup": add("nightly-backup", "0 2 * * *", tz="America/New_York"),
    }
    hourly, standup, watch, backup = made.values()
    runs: list[Run] = []
    for hours in range(1, 24):
        at = NOW - timedelta(hours=hours)
        if DOWN_FROM <= at <= DOWN_UNTIL:
            continue
        runs.append(_run(hourly, at, Outcome.FAILED if hours == 7 else Outcome.DELIVERED))
    # Caught up once kairosd was back: the newest slot it missed, delivered late.
    late_slot = NOW - timedelta(hours=15)
    runs.append(
        _run(hourly, DOWN_UNTIL, Outcome.DELIVERED, scheduled_for=late_slot, planned_for=late_slot, catch_up=True)
    )
    for minutes in range(5, 6 * 60, 5):
        outcome = Outcome.SKIPPED if minutes in (95, 100) else Outcome.DELIVERED
        runs.append(_run(watch, NOW - timedelta(minutes=minutes), outcome))
    runs.append(_run(standup, NOW - timedelta(hours=4, minutes=30), Outcome.DELIVERED))
    runs.append(_run(backup, NOW - timedelta(hours=4), Outcome.DELIVERED))
    kd.call(lambda: kd.ledger.record_many(runs))
    missed = MissedRecord(
        task_id=hourly,
        prompt="hourly-sync",
        schedule="0 * * * *",
        first_scheduled_for=NOW - timedelta(hours=18),
        scheduled_for=NOW - timedelta(hours=16),
        count=3,
        detected_at=DOWN_UNTIL,
        reason=NOT_RUNNING,
        action="caught up",
    )
    kd.call(lambda: kd.scheduler.missed.add([missed]))
    return made
