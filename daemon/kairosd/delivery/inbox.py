"""The inbox target: a fired prompt becomes an item in a session's durable inbox.

``delivered`` means the item is fsynced in the session's log (see
:mod:`kairosd.store.inbox`); an agent picks it up later, through a hook or the CLI.
The item's id is the run id, so a retried delivery of the same run is
confirmed again without a second item, and ``on_item`` (the event fan-out) fires
only for the first.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from pydantic import ValidationError

from kairosd.core.clock import Clock
from kairosd.core.errors import UsageError
from kairosd.core.models import InboxTarget
from kairosd.core.records import InboxItem
from kairosd.delivery.base import Job, Result
from kairosd.store.inbox import InboxStore

__all__ = ["InboxDelivery"]

log = logging.getLogger(__name__)

DEFAULT_SESSION = "default"


class InboxDelivery:
    """Delivers jobs whose target is ``{"kind": "inbox", "session": S}`` to ``store``."""

    kind = "inbox"

    def __init__(
        self,
        store: InboxStore,
        clock: Clock,
        on_item: Callable[[InboxItem], None] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_item = on_item

    async def deliver(self, job: Job) -> Result:
        started = self._clock.now()
        session = job.target.session if isinstance(job.target, InboxTarget) else DEFAULT_SESSION
        try:
            item = InboxItem(
                id=job.run_id,
                session=session,
                task_id=job.task_id,
                task_name=job.task_name,
                prompt=job.prompt,
                scheduled_for=job.scheduled_for,
                delivered_at=started,
                late_by_s=job.late_by_s,
                catch_up=job.catch_up,
            )
        except ValidationError as exc:
            return self._failed(started, f"cannot build an inbox item: {exc.errors()[0]['msg']}")
        try:
            # fsync takes milliseconds to seconds; the event loop must not wait on it.
            is_new = await asyncio.to_thread(self._store.put, item)
        except UsageError as exc:  # an unusable session name
            return self._failed(started, str(exc))
        except OSError as exc:
            return self._failed(started, f"could not write the inbox of session {session!r}: {exc}")
        if is_new and self._on_item is not None:
            try:
                self._on_item(item)
            except Exception:
                # The item is durably delivered; a failing listener must not turn that into a failure.
                log.exception("inbox listener failed for run %s", job.run_id)
        return Result("delivered", started_at=started, finished_at=self._clock.now())

    async def close(self) -> None:
        """Nothing to stop: a put is short, and the scheduler awaits it before shutting down."""

    def _failed(self, started: datetime, reason: str) -> Result:
        log.warning("inbox delivery failed: %s", reason)  # the run ledger records it too; this is for the log
        return Result("failed", started_at=started, finished_at=self._clock.now(), reason=reason)
