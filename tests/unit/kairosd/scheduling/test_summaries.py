"""A listed summary's JSON text (kairosd.scheduling.summaries.Summaries) is what ``compact_json`` gives for its
document, byte for byte, whatever the task holds.

``kairos list`` reads the text; ``summary_document`` is the reference it is written from. Each case
below changes one thing a summary shows: every kind of target (with and without its optional
names), a one-shot, a paused task, a running one, a fire in another zone and no fire at all,
and text that JSON must escape (quotes, a backslash, controls, bidi, zero-width and astral characters)
in each string field, including a prompt cut at 200 characters inside a run of astral characters.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from kairosd.api.http_types import compact_json
from kairosd.core.models import AgentTarget, InboxTarget, SessionTarget, ShellTarget, Task, WebhookTarget, new_task
from kairosd.core.plan import Fire
from kairosd.scheduling.summaries import Summaries, summary_document

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
NASTY = 'say "hi"\\ \x1b[31m\u202e\u200b caf\u00e9 \U0001f600 end'
BERLIN_FIRE = Fire(
    datetime(2026, 3, 2, 10, 0, tzinfo=ZoneInfo("Europe/Berlin")),
    datetime(2026, 3, 2, 10, 3, 20, tzinfo=ZoneInfo("Europe/Berlin")),
)
UTC_FIRE = Fire(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


def _task(**fields: object) -> Task:
    base: dict[str, object] = {"prompt": "p", "created_at": CREATED, "tz": "UTC", "cron": "0 9 * * *"}
    return new_task(**{**base, **fields}, task_id="0000000a")  # type: ignore[arg-type]


TARGETS = [
    InboxTarget(),
    InboxTarget(session=NASTY),
    ShellTarget(argv=["/usr/bin/make", "-C", "x"], cwd="/tmp"),
    ShellTarget(argv=[NASTY.replace("\x1b", "")]),
    AgentTarget(agent="claude", model="opus", cwd="/tmp"),
    WebhookTarget(url="https://example.org/hook?token=\u00e9"),
    SessionTarget(user=True),
    SessionTarget(session_id="s-1", agent="codex", fallback="drop"),
    SessionTarget(project="/home/me/proj \u202e"),
]

CASES = [
    *[(_task(target=target), UTC_FIRE, False) for target in TARGETS],
    (_task(name=NASTY, prompt=NASTY, cron="*/5 * * * *", tz="Europe/Berlin"), BERLIN_FIRE, True),
    (_task(prompt="\U0001f600" * 250), UTC_FIRE, False),  # cut at 200 code points, inside the run
    (_task(prompt="x" * 450, name=""), None, False),  # no fire left: done
    (_task(cron=None, at=CREATED + timedelta(days=3), tz="Europe/Berlin"), UTC_FIRE, False),  # a one-shot
    (_task(recurring=False), UTC_FIRE, True),  # once: a cron's next fire only
    (_task().model_copy(update={"paused": True, "paused_reason": NASTY}), None, False),
]


@pytest.mark.parametrize(("task", "fire", "running"), CASES)
def test_text_is_compact_json_of_the_document(task: Task, fire: Fire | None, running: bool) -> None:
    assert Summaries().text(task, fire, running) == compact_json(summary_document(task, fire, running)).decode()


def test_one_summaries_for_a_whole_piece_reads_each_task_as_itself() -> None:
    """One Summaries makes a whole piece, its fire memo shared: a Fire met twice, and a Fire equal to
    another as an instant but in another zone (UTC_FIRE's 09:00 is not BERLIN_FIRE's), read as themselves."""
    same_instant = Fire(UTC_FIRE.scheduled_for.astimezone(ZoneInfo("Europe/Berlin")), BERLIN_FIRE.planned_for)
    rows = [(task, fire, running) for task, fire, running in CASES]
    rows += [(_task(), UTC_FIRE, False), (_task(), same_instant, False), (_task(), BERLIN_FIRE, False)]
    text = Summaries().text
    got = [text(task, fire, running) for task, fire, running in rows]
    assert got == [compact_json(summary_document(task, fire, running)).decode() for task, fire, running in rows]
    assert '"planned_for":"2026-03-02T09:00:00+00:00"' in got[-3]
    assert '"planned_for":"2026-03-02T10:03:20+01:00"' in got[-1]
