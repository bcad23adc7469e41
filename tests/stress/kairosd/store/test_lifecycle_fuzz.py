"""The lifecycle fuzz: every value kairos accepts must be safe for the task's whole life.

A request fuzz only checks each answer. Here random and extreme values go in through
the three doors (``add``, ``import`` and a stored record read at start-up), and every
value that is accepted is then driven through its life on the injected clock: the
first plan, fires with jitter, a long suspend with catch-up, expiry, and a restart
from the real JSON store. No step may raise, the store must load again after every
change, and a sentinel task beside it must keep firing (one bad task stops nothing).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from reliability_support import SchedHarness
from sizes_support import sized

from kairosd.core import bounds
from kairosd.core.errors import KairosError
from kairosd.core.events import EventBus
from kairosd.core.models import new_task
from kairosd.scheduling.service import Service
from kairosd.store.inbox import InboxStore
from kairosd.store.store import JsonStore
from kairosd.testing import FakeClock

pytestmark = pytest.mark.stress

CRONS = [
    "* * * * *", "*/7 * * * *", "30 2 * * *", "0 0 29 2 *", "59 23 31 12 *", "0 0 1 1 *", "0 12 13 * 5",
    "@yearly", "@hourly", "0 9 * * mon-fri", "15 3 * * 0",
]  # fmt: skip
ZONES = [
    "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "America/Santiago",
    "Etc/GMT+12", "Etc/GMT-14", "Pacific/Kiritimati", "Asia/Kathmandu",
]  # fmt: skip
DURATIONS = ["1s", "59s", "1m", "90m", "7m", "1d", "1w", "3649d", "3650d", "3651d", "99999999d", "1e400d", "0s"]
JITTERS = ["none", "claude", "max:1s", "max:90s", "max:1d", "max:2d", "max:3650d", "max:99999999999999d"]
EXPIRIES = [None, 1, 7, 3650, 3651, 3_000_000, 0, -1, "7"]
# Where the injected clock starts: today, near the edges of the supported range, and a leap day.
STARTS = [
    datetime(2026, 11, 24, 9, 0, 30, tzinfo=UTC),
    datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
    datetime(2199, 12, 31, 23, 50, tzinfo=UTC),
    datetime(2028, 2, 29, 23, 59, 59, tzinfo=UTC),
]
EPOCH_MS = [0, -1, 1, 1_700_000_000_000, 253_402_300_799_000, 7_258_118_400_000, 1e300, -1e300, 1.5, True, "x",
            # Issue 27, finding 6: ahead of the clock (2058, year 3000), and numbers JSON has no finite value for.
            2_782_000_000_000, 32_503_680_000_000, float("inf"), float("nan")]  # fmt: skip
# Stored or imported as raw text in place of this string (json.dumps cannot write it): nested 3,000 levels.
DEEP_TEXT = "<nested 3000 levels>"
SUSPENDS_S = [0, 59, 3600, 86400 * 8, 86400 * 400, 86400 * 365 * 30]

texts = st.text(max_size=30) | st.sampled_from(["\udcff", "a\0b", "x" * (bounds.MAX_NAME_CHARS + 1), "\u202e"])


def _meta_values(depth: int) -> st.SearchStrategy[Any]:
    leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                        max_leaves=depth)  # fmt: skip


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


targets = st.sampled_from(
    [
        None,
        {"kind": "inbox", "session": "work"},
        {"kind": "inbox", "session": ""},
        {"kind": "shell", "argv": ["/bin/true"], "timeout_s": 1e-9},
        {"kind": "shell", "argv": ["/bin/true"], "timeout_s": 7 * 86400},
        {"kind": "shell", "argv": ["/bin/true"], "timeout_s": 7 * 86400 + 1},
        {"kind": "shell", "argv": ["/bin/true", "\udcff"]},
        {"kind": "webhook", "url": "http://127.0.0.1:9/x", "timeout_s": 30},
        {"kind": "session", "user": True, "fallback": "drop"},
    ]
)

AT_TIMES = ["9999-12-31T23:59:59", "2199-12-31T23:59:59", "2027-03-28T02:30", "17:30", "1970-01-01T00:00:00Z",
            "2100-02-28T12:00:00+14:00"]  # fmt: skip
# Mostly exactly one schedule (the rest of the body then decides), sometimes none or two.
schedules = st.one_of(
    st.fixed_dictionaries({"cron": st.sampled_from(CRONS)}, optional={"once": st.booleans()}),
    st.fixed_dictionaries({"every": st.sampled_from(DURATIONS)}),
    st.fixed_dictionaries({"in": st.sampled_from(DURATIONS)}),
    st.fixed_dictionaries({"at": st.sampled_from(AT_TIMES)}),
    st.fixed_dictionaries({}, optional={"cron": st.sampled_from(CRONS), "in": st.sampled_from(DURATIONS)}),
)
prompts = st.sampled_from(["check the PRs", " ", "\udcff", "x" * (bounds.MAX_PROMPT_CHARS + 1)]) | texts
add_bodies = st.builds(
    lambda schedule, rest: {**rest, **schedule},
    schedules,
    st.fixed_dictionaries(
        {"prompt": st.one_of(st.just("check the PRs"), prompts)},
        optional={
            "tz": st.sampled_from(ZONES),
            "name": texts,
            "jitter": st.sampled_from(JITTERS),
            "expires_after_days": st.sampled_from(EXPIRIES),
            "permanent": st.booleans(),
            "catch_up": st.sampled_from(["skip", "once", "all", "surface", "bogus"]),
            "overlap": st.sampled_from(["skip", "queue"]),
            "created_by": st.sampled_from(["cli", "mcp", "hook", "import"]),
            "meta": st.one_of(
                st.dictionaries(texts, _meta_values(6), max_size=3), st.sampled_from([_deep(9), _deep(300)])
            ),
            "target": targets,
        },
    ),
)

claude_items = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["aa11bb22", "cc33dd44\n", "ZZ", "0123456789", "deadbeef"]),
        "cron": st.sampled_from([*CRONS, "61 * * * *", 5]),
        "prompt": st.sampled_from(["nightly", "", "\udcff"]) | texts,
        "createdAt": st.sampled_from(EPOCH_MS),
    },
    optional={
        "lastFiredAt": st.sampled_from(EPOCH_MS),
        "recurring": st.sampled_from([True, False, "yes"]),
        "permanent": st.booleans(),
        "target": st.just({"kind": "shell", "argv": ["/bin/sh", "-c", "touch /tmp/pwned"]}),
        "meta": st.sampled_from([_deep(40), DEEP_TEXT, [float("inf")]]),
    },
)

stored_records = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["aa11bb22", "cc33dd44\n", "deadbeef"]),
        "prompt": st.sampled_from(["stored", "\udcff"]),
        "cron": st.sampled_from(CRONS),
        "tz": st.sampled_from(ZONES),
        "created_at": st.sampled_from(
            [
                "2026-11-01T00:00:00+00:00",
                "0001-01-01T00:00:00+00:00",
                "9999-12-31T23:59:59+00:00",
                "2199-12-31T00:00:00+00:00",
                "3000-01-01T00:00:00+00:00",
            ]
        ),
    },
    optional={
        "last_scheduled_for": st.sampled_from(
            [
                "9999-12-31T23:59:59+00:00",
                "2199-12-31T23:59:00+00:00",
                "1970-01-01T00:00:00+00:00",
                "2058-03-02T00:00:00+00:00",
            ]
        ),
        "last_fired_at": st.sampled_from(["2058-03-02T00:00:00+00:00", "2026-11-24T09:00:00+00:00"]),
        "expires_after_days": st.sampled_from(EXPIRIES),
        "jitter": st.sampled_from(JITTERS),
        "catch_up": st.sampled_from(["skip", "once", "all"]),
        "meta": st.sampled_from([{}, _deep(9), {"a": [1, 2, 3]}, _deep(40), DEEP_TEXT, {"a": float("inf")}]),
        "zz": st.sampled_from([float("nan"), -float("inf"), {"k": 1}]),  # an unknown field, kept if sound
    },
)


def _dumps(doc: Any) -> str:
    """``doc`` as JSON, with DEEP_TEXT replaced by 3,000 levels of nesting (Infinity and NaN as json writes them)."""
    return json.dumps(doc).replace(json.dumps(DEEP_TEXT), "[" * 3000 + "]" * 3000)


def _not_ahead(task: Any, now: datetime) -> None:
    """No task is silenced by a time that records the past yet lies ahead of the clock."""
    for name in ("created_at", "last_fired_at", "last_scheduled_for"):
        value = task[name] if isinstance(task, dict) else getattr(task, name)
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        assert value is None or value <= now + timedelta(seconds=bounds.MAX_FUTURE_SKEW_S), (name, value)


class Life:
    """A scheduler, store file, ledgers and service on a FakeClock, with a sentinel task beside the fuzzed one."""

    def __init__(self, folder: Path, start: datetime) -> None:
        self.folder = folder
        self.clock = FakeClock(start)
        self.path = folder / "scheduled_tasks.json"
        sentinel = new_task(prompt="sentinel", cron="*/10 * * * *", tz="UTC", created_at=start, permanent=True)
        self.sentinel_id = sentinel.id
        self.store = JsonStore(self.path, self.clock)
        self.harness: SchedHarness | None = None
        self._sentinel = sentinel

    async def boot(self) -> None:
        """Start (or restart) from the store file, as kairosd does."""
        if self.harness is not None:
            await self.harness.sched.shutdown(0)
        if not self.path.exists():
            from kairosd.store.store import SCHEMA_VERSION, StoreState

            self.store.save(StoreState(schema_version=SCHEMA_VERSION, tasks=[self._sentinel]))
        self.harness = SchedHarness(self.folder, self.store, self.clock)
        self.service = Service(
            self.harness.sched, InboxStore(self.folder / "inbox", self.clock), self.clock,
            EventBus(self.clock.now), "UTC",
        )  # fmt: skip
        await self.harness.start()

    @property
    def h(self) -> SchedHarness:
        assert self.harness is not None
        return self.harness

    async def live(self, suspend_s: float) -> None:
        """Fire, suspend, catch up, expire and restart; each step must not raise."""
        h = self.h
        for _ in range(3):  # the first few fires, with jitter, on time
            delay = await h.tick()
            h.clock.advance(min(max(delay, 1.0), 86400.0))
        h.clock.jump(suspend_s)  # a suspend: wall time moves alone
        await h.tick()
        await self.boot()  # a restart from the file, after everything above was saved
        h = self.h
        h.clock.jump(8 * 86400)  # past a week: expiry of agent tasks, catch-up windows
        await h.tick()
        h.clock.advance(601)
        await h.tick()
        # The restarted scheduler caught up on the sentinel (catch-up once) and fired it again after.
        assert len(h.delivered(self.sentinel_id)) >= 2, "the sentinel stopped firing"
        JsonStore(self.path, self.clock).load()  # the store still loads


def _fresh(start: datetime) -> tuple[Path, Life]:
    folder = Path(tempfile.mkdtemp(prefix="klf", dir="/tmp"))
    return folder, Life(folder, start)


FUZZ = settings(
    # 200 lives at full size (.ci/run), 30 by default; KAIROS_FUZZ_EXAMPLES=N sets it.
    max_examples=sized(200, 30, override="KAIROS_FUZZ_EXAMPLES"),
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@FUZZ
@given(body=add_bodies, start=st.sampled_from(STARTS), suspend=st.sampled_from(SUSPENDS_S))
def test_every_added_value_survives_its_whole_life(body: dict[str, Any], start: datetime, suspend: int):
    folder, life = _fresh(start)

    async def main() -> None:
        await life.boot()
        refused = await _refused(life.service.add(body))
        if refused:
            assert refused in REFUSALS
            event("add refused")
            return
        event("add accepted")
        await life.live(suspend)

    _live_through(folder, main)


@FUZZ
@given(items=st.lists(claude_items, max_size=3), start=st.sampled_from(STARTS), suspend=st.sampled_from(SUSPENDS_S))
def test_every_imported_value_survives_its_whole_life(items: list[dict[str, Any]], start: datetime, suspend: int):
    folder, life = _fresh(start)

    async def main() -> None:
        await life.boot()
        result: dict[str, Any] = {}

        async def do_import() -> None:
            result.update(await life.service.import_claude(_dumps({"tasks": items}), "Europe/Berlin"))

        refused = await _refused(do_import())
        if refused:
            assert refused in REFUSALS
            return
        for task in result["imported"]:
            assert task["target"]["kind"] in ("inbox", "session"), task  # never a shell or other target
            _not_ahead(task, life.clock.now())
        event(f"imported {len(result['imported'])}")
        await life.live(suspend)

    _live_through(folder, main)


@FUZZ
@given(record=stored_records, start=st.sampled_from(STARTS[:1]), suspend=st.sampled_from(SUSPENDS_S))
def test_every_stored_record_survives_start_up_and_its_life(record: dict[str, Any], start: datetime, suspend: int):
    """A record written by hand (or by a bug) into the store: set aside or survivable, never fatal for the rest."""
    folder, life = _fresh(start)
    sentinel = life._sentinel.model_dump(mode="json")
    life.path.write_text(_dumps({"schema_version": 2, "tasks": [sentinel, record]}))
    quarantine = folder / "scheduled_tasks.quarantine.json"

    async def main() -> None:
        await life.boot()  # never refused as a whole: a bad record is set aside, the others start
        assert life.sentinel_id in life.h.book
        kept = len(life.h.book) == 2
        set_aside = quarantine.exists() and len(json.loads(quarantine.read_text())["entries"]) == 1
        assert kept != set_aside, (kept, set_aside)  # exactly one of the two, never lost
        event("record kept" if kept else "record set aside")
        for task in life.h.book:
            _not_ahead(task, life.clock.now())
        await life.live(suspend)

    _live_through(folder, main)


REFUSALS = ("usage", "cron_syntax", "invalid_time")


async def _refused(call: Awaitable[Any]) -> str | None:
    """The error code ``call`` was refused with (a KairosError), or None when it succeeded."""
    try:
        await call
    except KairosError as exc:
        return exc.code
    return None


def _live_through(folder: Path, main: Callable[[], Awaitable[None]]) -> None:
    """Run one example's ``main`` on a fresh event loop, then remove its folder whatever happened."""
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_life_reaches_its_end_for_an_agent_task():
    """The harness itself: an agent-created task really expires after its week (so expiry is exercised)."""
    folder, life = _fresh(STARTS[0])

    async def main() -> None:
        await life.boot()
        doc = await life.service.add({"prompt": "p", "cron": "*/5 * * * *", "created_by": "mcp"})
        await life.live(0)
        assert doc["id"] not in life.h.book
        assert life.sentinel_id in life.h.book

    _live_through(folder, main)


def test_suspend_windows_stay_inside_the_supported_range():
    assert STARTS[2] + timedelta(seconds=max(SUSPENDS_S)) < datetime.max.replace(tzinfo=UTC)
