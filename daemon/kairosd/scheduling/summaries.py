"""A listed task's summary (``GET /tasks?view=summary``, what ``kairos list`` prints), as a document and as
JSON text for many tasks at once.

A summary is the few fields a table shows (:func:`summary_document`). ``GET /tasks`` sends it as text
made by :class:`Summaries`, which is what ``compact_json`` gives for the document
(``tests/unit/kairosd/scheduling/test_summaries.py`` compares, for every kind of target): the strings go
through json's C escaper and the rest is written out. Building the dict and running the encoder on it,
once per task on every listing, was 7 of the 8 ms kairosd took to answer ``kairos list`` with 1,000
tasks, which took the whole call past 3x a bare interpreter (``bench/bench_cli.py``). (And a listing
asked for again with nothing in it changed is the last one's text: :mod:`kairosd.scheduling.kept`.)

Pure: must not import the store, the server or the CLI.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _escape
from typing import Any

from kairosd.core.models import AgentTarget, InboxTarget, SessionTarget, ShellTarget, Target, Task, WebhookTarget
from kairosd.core.plan import Fire

PROMPT_CHARS = 200  # of the prompt in a summary: a table cuts it anyway


def summary_document(task: Task, fire: Fire | None, running: bool) -> dict[str, Any]:
    """The summary of ``task`` whose shown fire is ``fire`` (None: paused, or none left), as a document."""
    return {
        "id": task.id,
        "name": task.name,
        "prompt": task.prompt[:PROMPT_CHARS],
        "cron": task.cron,
        "at": task.at.isoformat() if task.at else None,
        "recurring": task.recurring,
        "tz": task.tz,
        "target": _target_document(task.target),
        "status": "paused" if task.paused else ("scheduled" if fire else "done"),
        "paused_reason": task.paused_reason,
        "planned_for": fire.planned_for.isoformat() if fire else None,
        "running": running,
    }


def _target_document(target: Target) -> dict[str, Any]:
    """What a summary shows of a task's target: its kind and what names it, nothing else."""
    if isinstance(target, ShellTarget):
        return {"kind": "shell", "argv": target.argv[:1]}
    if isinstance(target, AgentTarget):
        return {"kind": "agent", "agent": target.agent}
    if isinstance(target, WebhookTarget):
        return {"kind": "webhook", "url": target.url}
    if isinstance(target, SessionTarget):
        return target.model_dump(mode="json", include={"kind", "session_id", "project", "user", "agent"})
    return {"kind": target.kind, "session": getattr(target, "session", None)}


class Summaries:
    """Makes the JSON text of listed summaries; one per piece of a listing (its memo goes with it)."""

    def __init__(self) -> None:
        # A fire's text by the Fire object, which the scheduler shares among the tasks of one schedule and
        # anchor. The object is kept, so its id is not reused while the memo lives.
        self._fires: dict[int, tuple[Fire, str]] = {}

    def text(self, task: Task, fire: Fire | None, running: bool) -> str:
        """:func:`summary_document` as ``compact_json`` writes it."""
        if fire is None:
            planned = "null"
        else:
            known = self._fires.get(id(fire))
            if known is not None and known[0] is fire:
                planned = known[1]
            else:
                planned = _escape(fire.planned_for.isoformat())
                self._fires[id(fire)] = (fire, planned)
        # The escaper is called directly, not through a helper that also writes None: a Python call per
        # field was a quarter of the time.
        name, cron, at, reason = task.name, task.cron, task.at, task.paused_reason
        status = '"paused"' if task.paused else '"scheduled"' if fire is not None else '"done"'
        return (
            f'{{"id":{_escape(task.id)},"name":{"null" if name is None else _escape(name)},'
            f'"prompt":{_escape(task.prompt[:PROMPT_CHARS])},"cron":{"null" if cron is None else _escape(cron)},'
            f'"at":{"null" if at is None else _escape(at.isoformat())},'
            f'"recurring":{"true" if task.recurring else "false"},"tz":{_escape(task.tz)},'
            f'"target":{_target_text(task.target)},"status":{status},'
            f'"paused_reason":{"null" if reason is None else _escape(reason)},"planned_for":{planned},'
            f'"running":{"true" if running else "false"}}}'
        )


def _null_or(text: str | None) -> str:
    return "null" if text is None else _escape(text)


def _target_text(target: Target) -> str:
    """:func:`_target_document` as ``compact_json`` writes it."""
    if type(target) is InboxTarget:  # most tasks' target: checked first
        return f'{{"kind":"inbox","session":{_escape(target.session)}}}'
    if isinstance(target, ShellTarget):
        return f'{{"kind":"shell","argv":[{_escape(target.argv[0]) if target.argv else ""}]}}'
    if isinstance(target, AgentTarget):
        return f'{{"kind":"agent","agent":{_escape(target.agent)}}}'
    if isinstance(target, WebhookTarget):
        return f'{{"kind":"webhook","url":{_escape(target.url)}}}'
    if isinstance(target, SessionTarget):
        return (
            f'{{"kind":"session","session_id":{_null_or(target.session_id)},"project":{_null_or(target.project)},'
            f'"user":{"true" if target.user else "false"},"agent":{_null_or(target.agent)}}}'
        )
    return f'{{"kind":{_escape(target.kind)},"session":{_null_or(getattr(target, "session", None))}}}'
