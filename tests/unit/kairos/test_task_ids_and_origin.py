"""Task ids as a user types them, and who made a task (issue 15, items 5, 12 and 14)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_support import Kairosd, hook_home

from kairos.app import run
from kairosd.core.errors import NotFoundError, UsageError

__all__ = ["hook_home"]  # the fixture `home`, used below


@pytest.fixture
def kd(home: Path) -> Iterator[Kairosd]:
    ids = itertools.chain(["3f2a9c1d", "3f2a0000", "77aa0b12"], (f"{n:08x}" for n in itertools.count(0x100)))
    daemon = Kairosd(home).start()
    daemon.service.new_id = lambda: next(ids)
    try:
        for prompt in ("one", "two", "three"):
            daemon.run(daemon.service.add({"prompt": prompt, "cron": "0 4 * * *", "tz": "UTC", "created_by": "cli"}))
        yield daemon
    finally:
        daemon.stop()


def test_a_unique_prefix_names_the_task(kd, capsys):
    assert run(["show", "77aa"]) == 0
    assert "77aa0b12" in capsys.readouterr().out
    assert run(["pause", "3f2a9"]) == 0
    assert kd.call(lambda: kd.book.get("3f2a9c1d").paused)
    assert run(["--json", "rm", "77aa0"]) == 0
    assert '"removed":["77aa0b12"]' in capsys.readouterr().out.replace(" ", "").replace("\n", "")


def test_an_ambiguous_prefix_lists_the_matches(kd, capsys):
    assert run(["show", "3f2a"]) == 2
    assert capsys.readouterr().err == "kairos: task id prefix '3f2a' is ambiguous: matches 3f2a0000, 3f2a9c1d\n"


def test_a_short_or_unknown_prefix_is_not_found(kd):
    with pytest.raises(UsageError, match="too short: give at least 4 characters"):
        kd.call(lambda: kd.service.get("3f2"))  # shorter than 4: says so (issue 24, item 10)
    with pytest.raises(NotFoundError):
        kd.call(lambda: kd.service.get("deadbeef"))
    with pytest.raises(UsageError):
        kd.run(kd.service.run_now("3f2a"))


def test_history_of_an_unknown_id_exits_1_as_show_does(kd, capsys):
    assert run(["history", "deadbeef"]) == 1
    history_err = capsys.readouterr().err
    assert run(["show", "deadbeef"]) == 1
    assert history_err == capsys.readouterr().err == "kairos: no task starts with 'deadbeef' (see 'kairos list')\n"
    assert run(["history", "77aa0b12"]) == 0  # known, no runs yet
    assert "no runs yet" in capsys.readouterr().out


def test_history_of_a_removed_task_still_lists_its_runs(kd, capsys):
    kd.fire("77aa0b12")
    kd.run(kd.service.remove(["77aa0b12"]))
    assert run(["history", "77aa0b12"]) == 0
    assert "77aa0b12" in capsys.readouterr().out


def test_a_task_posted_without_created_by_is_recorded_as_api(kd):
    """curl -d '{"prompt": ..., "in": "2m"}' is not the CLI; kairos add says it is."""
    task = kd.run(kd.service.add({"prompt": "from curl", "in": "2m"}))
    assert task["created_by"] == "api"
    assert task["expires_after_days"] is None  # like the CLI's: only agents' tasks expire by default


def test_json_before_the_verb_is_accepted(kd, capsys):
    assert run(["--json", "list"]) == 0
    out = capsys.readouterr().out
    assert run(["list", "--json"]) == 0
    assert out == capsys.readouterr().out
    assert out.startswith('{"tasks":')


def test_list_sorts_by_instant_not_by_text(kd, capsys):
    """15:00+05:30 is 09:30 UTC: before 10:00 UTC, although its text sorts after."""
    for prompt, cron, tz in (("utc", "0 10 * * *", "UTC"), ("kolkata", "0 15 * * *", "Asia/Kolkata")):
        kd.run(kd.service.add({"prompt": prompt, "cron": cron, "tz": tz}))
    prompts = [t["prompt"] for t in kd.call(kd.service.list_tasks)]
    assert prompts.index("kolkata") < prompts.index("utc")
