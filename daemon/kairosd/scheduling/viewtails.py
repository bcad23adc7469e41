"""The fields a listed view adds after a task's own, as JSON text, for many tasks at once (``GET /tasks``).

A full view is the task's JSON (the store's, which it keeps) with ``status``, ``schedule``,
``explanation``, ``next_fires``, ``planned_for`` and ``running`` after it. Those depend only on the
schedule, the next fire and two flags, which many tasks share (every task of ``0 9 * * *`` in one
zone fires at the same instant), and a listing is in fire order, so such tasks are neighbours: a
:class:`ViewTails` made for one piece of a listing encodes each distinct schedule and fire of the
piece once and forgets them with it. Nothing is kept per task between listings (issue 28: the
per-task view cache this replaces was a quarter of RSS after a listing of 10,000 tasks, and filling
it was most of the first listing after a start).

The text is what ``compact_json`` gives for the same fields (tests/unit/kairos/test_cli_list_json.py compares).
Pure: must not import the store, the server or the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from json.encoder import encode_basestring_ascii

from kairosd.core.models import Task
from kairosd.core.plan import Fire

_NO_FIRE = '"next_fires":[],"planned_for":null'


def rfc3339(when: datetime) -> str:
    """``when`` as the task's own fields are dumped (pydantic): ``Z`` for UTC, else the offset; one record
    does not mix ``Z`` and ``+00:00``."""
    text = when.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def quote(text: str | None) -> str:
    return "null" if text is None else encode_basestring_ascii(text)


class ViewTails:
    """Makes the text ``,"status":...,"running":false}`` of listed views; one per piece of a listing.

    ``explain`` gives a cron expression's explanation. Its memos are as big as the distinct
    schedules and fires of the views made with it (at most a piece's), and go with it.
    """

    def __init__(self, explain: Callable[[str], str]) -> None:
        self._explain = explain
        self._schedules: dict[str, str] = {}
        self._fires: dict[tuple[object, ...], str] = {}
        # By the Fire object too: the scheduler shares one among tasks of one schedule and anchor, and
        # looking it up is cheaper than making its key. The object is kept, so its id is not reused.
        self._fire_objects: dict[int, tuple[Fire, str]] = {}

    def tail(self, task: Task, fire: Fire | None, running: bool) -> str:
        """The view's fields after the task's own, from the comma to the closing brace."""
        cron = task.cron
        schedule = None if cron is None else self._schedules.get(cron)
        if schedule is None:
            schedule = self._schedule(task)
        if fire is None:
            fires = _NO_FIRE
        else:
            known = self._fire_objects.get(id(fire))
            fires = known[1] if known is not None and known[0] is fire else self._fire(fire)
        status = '"paused"' if task.paused else '"scheduled"' if fire is not None else '"done"'
        return f',"status":{status},{schedule},{fires},"running":{"true" if running else "false"}}}'

    def _schedule(self, task: Task) -> str:
        cron = task.cron
        if cron is None:
            at = quote(rfc3339(task.at.astimezone(task.zone))) if task.at else "null"
            return f'"schedule":{at},"explanation":"once, at the exact time"'
        text = self._schedules[cron] = f'"schedule":{quote(cron)},"explanation":{quote(self._explain(cron))}'
        return text

    def _fire(self, fire: Fire) -> str:
        scheduled, planned = fire.scheduled_for, fire.planned_for
        # With the offsets: aware datetimes are equal as instants (or, in one zone, as wall times, fold
        # ignored), and the same instant in another zone, or the other side of a DST fold, reads otherwise.
        key = (scheduled, scheduled.utcoffset(), planned, planned.utcoffset())
        text = self._fires.get(key)
        if text is None:
            at = quote(rfc3339(planned))
            nominal = at if planned is scheduled else quote(rfc3339(scheduled))
            fires = f'[{{"scheduled_for":{nominal},"planned_for":{at}}}]'
            text = self._fires[key] = f'"next_fires":{fires},"planned_for":{at}'
        self._fire_objects[id(fire)] = (fire, text)
        return text
