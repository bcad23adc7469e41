"""Per-session inboxes and the inbox delivery target: idempotency, acks, names, compaction."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from registry_support import until

from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.models import InboxTarget
from kairosd.core.records import InboxItem
from kairosd.delivery.base import Handoff
from kairosd.delivery.inbox import InboxDelivery
from kairosd.store.inbox import ACKED_RETENTION, InboxStore, session_file_name
from kairosd.store.jsonlog import JsonLog
from kairosd.testing import FakeClock, FakeDelivery

T0 = datetime(2026, 5, 4, 9, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> InboxStore:
    return InboxStore(tmp_path / "inbox", clock)


def _item(item_id: str, session: str = "default", minute: int = 0) -> InboxItem:
    when = T0 + timedelta(minutes=minute)
    return InboxItem(
        id=item_id, session=session, task_id="t1", prompt="check the build", scheduled_for=when, delivered_at=when
    )


def _ids(items: list[InboxItem]) -> list[str]:
    return [item.id for item in items]


# --- the store -------------------------------------------------------------------------------


def test_put_is_durable(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """A put item is read back by a fresh store on the same folder."""
    assert store.put(_item("r1", "main"))
    assert _ids(InboxStore(tmp_path / "inbox", clock).list("main")) == ["r1"]


def test_put_is_idempotent_by_id(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """A second put of the same id is a no-op returning False, before and after a restart."""
    assert store.put(_item("r1"))
    assert not store.put(_item("r1"))
    assert not InboxStore(tmp_path / "inbox", clock).put(_item("r1"))
    assert _ids(InboxStore(tmp_path / "inbox", clock).list()) == ["r1"]
    assert len((tmp_path / "inbox" / "default.jsonl").read_bytes().splitlines()) == 1


def test_list_is_oldest_first_across_sessions(store: InboxStore) -> None:
    """list(None) merges every session by delivery time; list(s) is one session."""
    store.put(_item("b", "s2", minute=2))
    store.put(_item("a", "s1", minute=1))
    store.put(_item("c", "s1", minute=3))
    assert _ids(store.list()) == ["a", "b", "c"]
    assert _ids(store.list("s1")) == ["a", "c"]
    assert store.list("nobody") == []
    assert store.sessions() == ["s1", "s2"]


def test_ack_ids(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """Acked ids leave the default listing, stay with include_acked, and survive a restart."""
    for i in range(3):
        store.put(_item(f"r{i}", minute=i))
    clock.advance(60)
    assert store.ack("default", ["r0", "r2"]) == ["r0", "r2"]
    assert _ids(store.list("default")) == ["r1"]
    again = InboxStore(tmp_path / "inbox", clock)
    assert _ids(again.list("default")) == ["r1"]
    acked = {item.id: item.acked_at for item in again.list("default", include_acked=True)}
    assert acked == {"r0": clock.now(), "r1": None, "r2": clock.now()}


def test_ack_is_idempotent(store: InboxStore) -> None:
    """Acking an already-acked id is not an error and reports nothing new."""
    store.put(_item("r1"))
    assert store.ack("default", ["r1"]) == ["r1"]
    assert store.ack("default", ["r1", "r1"]) == []


def test_ack_all_in_a_session(store: InboxStore) -> None:
    """ids None acks every unacked item of that session only."""
    store.put(_item("a", "s1"))
    store.put(_item("b", "s1", minute=1))
    store.put(_item("c", "s2"))
    assert store.ack("s1", None) == ["a", "b"]
    assert _ids(store.list()) == ["c"]


def test_ack_all_everywhere(store: InboxStore) -> None:
    """session None and ids None acks everything unacked in every session."""
    store.put(_item("a", "s1"))
    store.put(_item("c", "s2"))
    assert sorted(store.ack(None, None)) == ["a", "c"]
    assert store.list() == []


def test_ack_ids_without_session_finds_their_sessions(store: InboxStore) -> None:
    """With session None, each id is looked up in whichever session holds it."""
    store.put(_item("a", "s1"))
    store.put(_item("c", "s2"))
    assert store.ack(None, ["c"]) == ["c"]
    assert _ids(store.list()) == ["a"]


def test_ack_unknown_id_raises_and_acks_nothing(store: InboxStore) -> None:
    """Unknown ids raise NotFoundError naming them; the known ids in the same call stay unacked."""
    store.put(_item("r1"))
    with pytest.raises(NotFoundError, match=r"'nope'.*'gone'"):
        store.ack("default", ["r1", "nope", "gone"])
    assert _ids(store.list()) == ["r1"]
    store.put(_item("x", "other"))
    with pytest.raises(NotFoundError, match="'x'"):
        store.ack("default", ["x"])  # it exists, but in another session


@pytest.mark.parametrize(
    ("session", "file_name"),
    [
        ("default", "default.jsonl"),
        ("a/b", "a%2Fb.jsonl"),
        ("../escape", "..%2Fescape.jsonl"),
        ("..", "...jsonl"),
        ("café ☕", "caf%C3%A9%20%E2%98%95.jsonl"),
        ("50%+1", "50%25%2B1.jsonl"),
    ],
)
def test_session_names_are_encoded_into_the_folder(
    tmp_path: Path, clock: FakeClock, session: str, file_name: str
) -> None:
    """Any session name maps to one file inside the folder and is recovered from it."""
    folder = tmp_path / "inbox"
    InboxStore(folder, clock).put(_item("r1", session))
    assert [p.name for p in folder.iterdir()] == [file_name]
    again = InboxStore(folder, clock)
    assert again.sessions() == [session]
    assert _ids(again.list(session)) == ["r1"]


def test_long_unicode_session_gets_a_hashed_file_name(tmp_path: Path, clock: FakeClock) -> None:
    """A 200-character non-ASCII name fits a file name (hash suffix) and is recovered from its items."""
    session = "会話" * 100
    name = session_file_name(session)
    assert len(name.encode()) <= 255
    assert "+" in name
    folder = tmp_path / "inbox"
    InboxStore(folder, clock).put(_item("r1", session))
    again = InboxStore(folder, clock)
    assert again.sessions() == [session]
    assert _ids(again.list()) == ["r1"]
    assert session_file_name(session[:-1] + "x") != name


@pytest.mark.parametrize("session", ["", "x" * 201, "bad\ud800"])
def test_unusable_session_names_are_refused(store: InboxStore, session: str) -> None:
    """Empty, over-200-character and non-Unicode session names raise UsageError."""
    with pytest.raises(UsageError):
        store.list(session)


def test_two_hundred_characters_is_allowed(store: InboxStore) -> None:
    """The limit is inclusive."""
    assert store.put(_item("r1", "x" * 200))


def test_torn_last_line_after_crash(tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    """A put torn by a crash is ignored with a warning, and later puts still land."""
    folder = tmp_path / "inbox"
    InboxStore(folder, clock).put(_item("r1"))
    with (folder / "default.jsonl").open("ab") as f:
        f.write(b'{"id": "r2", "sess')
    again = InboxStore(folder, clock)
    with caplog.at_level(logging.WARNING):
        assert _ids(again.list()) == ["r1"]
    assert "last line" in caplog.text
    assert again.put(_item("r2", minute=1))  # the torn one never counted
    assert _ids(InboxStore(folder, clock).list()) == ["r1", "r2"]


def test_old_acked_items_are_compacted_away(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """Once the log grows, items acked over 7 days ago are dropped; unacked and recent ones stay."""
    path = tmp_path / "inbox" / "default.jsonl"
    for i in range(60):
        store.put(_item(f"old{i}", minute=i))
    store.put(_item("unread", minute=61))
    store.put(_item("recent"))
    store.ack("default", [f"old{i}" for i in range(60)])
    assert len(path.read_bytes().splitlines()) == 122  # items plus acks: nothing to drop yet
    clock.advance(ACKED_RETENTION.total_seconds() + 1)
    store.ack("default", ["recent"])  # the growing log is compacted on this append
    records: list[dict[str, Any]] = JsonLog(path).read()
    assert [r["id"] for r in records] == ["unread", "recent"]
    assert records[1]["acked_at"] == clock.now().isoformat().replace("+00:00", "Z")  # ack folded in
    again = InboxStore(tmp_path / "inbox", clock)
    assert _ids(again.list(include_acked=True)) == ["recent", "unread"]  # by delivery time
    assert _ids(again.list()) == ["unread"]


def test_a_held_inbox_compaction_waits_for_its_release(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """While held (a pass's deliveries), puts and acks past the line leave the logs as they are; the last
    release compacts each session that is due, and one told not to compact leaves it to the next append."""
    folder = tmp_path / "inbox"
    for session in ("main", "other"):
        store.put_many([_item(f"{session}{i}", session) for i in range(120)])
        store.ack(session, None)  # 240 lines for 120 records: not due
    clock.advance(ACKED_RETENTION.total_seconds() + 1)  # the acks expire: due at the next append
    store.hold_compaction()
    store.hold_compaction()  # holds nest
    store.put_many([_item("new", "main"), _item("late", "other")])
    assert store.compaction_due
    assert store.compactions == 0
    assert [len((folder / f"{s}.jsonl").read_bytes().splitlines()) for s in ("main", "other")] == [241, 241]
    store.release_compaction()
    assert store.compactions == 0  # one hold is left
    store.release_compaction()
    assert store.compactions == 2
    assert not store.compaction_due
    assert [r["id"] for r in JsonLog(folder / "main.jsonl").read()] == ["new"]  # the expired acked items dropped
    assert [r["id"] for r in JsonLog(folder / "other.jsonl").read()] == ["late"]
    assert sorted(_ids(InboxStore(folder, clock).list(include_acked=True))) == ["late", "new"]
    store.hold_compaction()
    store.put_many([_item(f"n{i}", "main") for i in range(200)])
    store.ack("main", [f"n{i}" for i in range(200)])
    clock.advance(ACKED_RETENTION.total_seconds() + 1)
    store.release_compaction(compact=False)
    assert store.compactions == 2
    store.put(_item("next", "main"))  # no hold left: this put compacts
    assert store.compactions == 3
    assert [r["id"] for r in JsonLog(folder / "main.jsonl").read()] == ["new", "next"]


def test_sessions_ignores_foreign_files(tmp_path: Path, clock: FakeClock) -> None:
    """Temp files and files not written by the store are not sessions."""
    folder = tmp_path / "inbox"
    store = InboxStore(folder, clock)
    store.put(_item("r1", "main"))
    (folder / "main.jsonl.tmp-1-ab").write_text("")
    (folder / "notes.txt").write_text("")
    (folder / "a%2fb.jsonl").write_text("")  # lowercase escape: not a name this store writes
    assert InboxStore(folder, clock).sessions() == ["main"]


def test_reads_create_nothing(tmp_path: Path, clock: FakeClock) -> None:
    """Listing an empty inbox does not create its folder."""
    store = InboxStore(tmp_path / "inbox", clock)
    assert store.list("main") == []
    assert store.sessions() == []
    assert not (tmp_path / "inbox").exists()


# --- the delivery target ---------------------------------------------------------------------


def _job(run_id: str = "r1", target: InboxTarget | None = None) -> Handoff:
    return Handoff(
        run_id=run_id,
        task_id="t1",
        task_name="build",
        prompt="check the build",
        target=target if target is not None else InboxTarget(session="main"),
        scheduled_for=T0,
        planned_for=T0,
        late_by_s=1.5,
    )


def test_delivery_puts_an_item_and_notifies_once(store: InboxStore, clock: FakeClock) -> None:
    """A delivery becomes one item (id = run id); a repeat is delivered again without a second item."""
    seen: list[InboxItem] = []
    delivery = InboxDelivery(store, clock, on_item=seen.append)
    assert delivery.kind == "inbox"

    async def main() -> None:
        first = await delivery.deliver(_job())
        second = await delivery.deliver(_job())
        assert first.outcome == "delivered"
        assert first.started_at == clock.now()
        assert second.outcome == "delivered"
        await delivery.close()

    asyncio.run(main())
    items = store.list("main")
    assert _ids(items) == ["r1"]
    assert items[0].task_name == "build"
    assert items[0].late_by_s == 1.5
    assert _ids(seen) == ["r1"]


def test_delivery_builds_items_of_valid_handoffs_without_validating_them(
    store: InboxStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatcher's handoffs hold validated values: their items are made without validation (a
    herd's 10,000 on the event loop after a long stop), and are what validation would make. A handoff
    whose values are not (a time in another zone, a whole number of seconds) is validated, and a bad
    one still fails on its own."""
    validated: list[dict[str, Any]] = []
    init = InboxItem.__init__

    def counting(self: InboxItem, **data: Any) -> None:
        validated.append(data)
        init(self, **data)

    monkeypatch.setattr(InboxItem, "__init__", counting)
    delivery = InboxDelivery(store, clock)
    elsewhere = T0.astimezone(timezone(timedelta(hours=2)))
    jobs = [
        _job("r1"),
        _job("r2", InboxTarget(session="other")),
        replace(_job("r3"), task_name=None),
        replace(_job("r4"), scheduled_for=elsewhere, late_by_s=2),  # type: ignore[arg-type]
        replace(_job("r5"), scheduled_for=T0.replace(tzinfo=None)),
    ]
    results = asyncio.run(delivery.deliver_many(jobs))
    assert [r.outcome for r in results] == ["delivered"] * 4 + ["failed"]
    assert [d["id"] for d in validated] == ["r4", "r5"]
    items = {item.id: item for item in store.list()}
    assert set(items) == {"r1", "r2", "r3", "r4"}
    for job in jobs[:4]:
        session = job.target.session if isinstance(job.target, InboxTarget) else "default"
        expected = init_item(job, session, clock.now())
        assert items[job.run_id].model_dump() == expected.model_dump()
        assert items[job.run_id].scheduled_for.tzinfo is UTC
    assert isinstance(items["r4"].late_by_s, float)
    again = {item.id: item for item in InboxStore(store.folder, clock).list()}
    assert {k: v.model_dump() for k, v in again.items()} == {k: v.model_dump() for k, v in items.items()}


def init_item(job: Handoff, session: str, at: datetime) -> InboxItem:
    return InboxItem.model_validate(
        {
            "id": job.run_id,
            "session": session,
            "task_id": job.task_id,
            "task_name": job.task_name,
            "prompt": job.prompt,
            "scheduled_for": job.scheduled_for,
            "delivered_at": at,
            "late_by_s": job.late_by_s,
            "catch_up": job.catch_up,
        }
    )


def test_delivery_defaults_to_the_default_session(store: InboxStore, clock: FakeClock) -> None:
    """A target without a session (or an empty one) goes to "default"."""
    delivery = InboxDelivery(store, clock)
    asyncio.run(delivery.deliver(_job("r1", {"kind": "inbox"})))
    asyncio.run(delivery.deliver(_job("r2", {"kind": "inbox", "session": ""})))
    assert _ids(store.list("default")) == ["r1", "r2"]


def test_delivery_reports_io_errors_as_failed(tmp_path: Path, clock: FakeClock) -> None:
    """An OSError (here: the inbox folder is a file) is a failed result with a reason, not a raise."""
    blocker = tmp_path / "inbox"
    blocker.write_text("not a folder")
    seen: list[InboxItem] = []
    delivery = InboxDelivery(InboxStore(blocker, clock), clock, on_item=seen.append)
    result = asyncio.run(delivery.deliver(_job()))
    assert result.outcome == "failed"
    assert result.reason is not None
    assert "main" in result.reason
    assert seen == []


def test_delivery_reports_bad_session_names_as_failed(store: InboxStore, clock: FakeClock) -> None:
    """An unusable session name fails the run with the name's problem as the reason (the inbox item checks
    it again: a target built without validation, as no task can hold one, still cannot write a bad item)."""
    target = InboxTarget.model_construct(session="x" * 201)
    result = asyncio.run(InboxDelivery(store, clock).deliver(_job(target=target)))
    assert result.outcome == "failed"
    assert result.reason is not None
    assert "200" in result.reason


def test_failing_listener_does_not_fail_the_delivery(store: InboxStore, clock: FakeClock) -> None:
    """The item is durable before on_item runs, so a listener error still reports delivered."""

    def broken(item: InboxItem) -> None:
        raise RuntimeError("listener bug")

    result = asyncio.run(InboxDelivery(store, clock, on_item=broken).deliver(_job()))
    assert result.outcome == "delivered"
    assert _ids(store.list("main")) == ["r1"]


# --- the fake target -------------------------------------------------------------------------


def test_fake_delivery_holds_runs_in_flight_and_is_idempotent(clock: FakeClock) -> None:
    """With a gate, deliveries wait in flight; a repeat of a run id shares the first result."""
    gate = asyncio.Event()
    fake = FakeDelivery("shell", gate=gate, clock=clock)

    async def main() -> None:
        first = asyncio.create_task(fake.deliver(_job("r1")))
        repeat = asyncio.create_task(fake.deliver(_job("r1")))
        other = asyncio.create_task(fake.deliver(_job("r2")))
        await until(lambda: fake.in_flight == {"r1", "r2"}, "both runs to be in flight")
        assert not first.done()
        gate.set()
        results = await asyncio.gather(first, repeat, other)
        assert [r.outcome for r in results] == ["delivered"] * 3
        assert results[0] is results[1]
        assert fake.in_flight == set()
        fake.outcome = "failed"
        assert (await fake.deliver(_job("r3"))).reason == "failed by FakeDelivery"
        await fake.close()

    asyncio.run(main())
    assert [handoff.run_id for handoff in fake.handoffs] == ["r1", "r2", "r3"]
    assert len(fake.calls) == 4
    assert fake.closed


def test_fake_delivery_error_is_raised_and_forgotten() -> None:
    """A configured error is raised; the run is not remembered, so a retry tries again."""
    fake = FakeDelivery(error=OSError("disk full"))

    async def main() -> None:
        with pytest.raises(OSError, match="disk full"):
            await fake.deliver(_job("r1"))
        fake.error = None
        assert (await fake.deliver(_job("r1"))).outcome == "delivered"

    asyncio.run(main())
    assert [handoff.run_id for handoff in fake.handoffs] == ["r1", "r1"]


def test_asking_for_many_sessions_keeps_the_cache_bounded(tmp_path: Path, clock: FakeClock) -> None:
    """Any client can name any session; the cache holds the recently used ones only, and a session
    dropped from it is read back whole from disk on its next use."""
    store = InboxStore(tmp_path / "inbox", clock, max_cached=8)
    store.put(_item("r1", session="kept"))
    store.put(_item("r2", session="kept", minute=1))
    for n in range(100):
        assert store.list(f"probe-{n}") == []
    assert store.cached_sessions == 8
    assert _ids(store.list("kept")) == ["r1", "r2"]  # read again from its log
    assert store.ack("kept", ["r1"]) == ["r1"]
    for n in range(100, 120):
        store.list(f"probe-{n}")
    assert _ids(store.list("kept")) == ["r2"]
    assert _ids(store.list("kept", include_acked=True)) == ["r1", "r2"]
    assert store.sessions() == ["kept"]  # asking created no files
    assert store.ack(None, None) == ["r2"]  # every session, with more on disk than the cache holds
    assert store.cached_sessions <= 8


def test_ack_takes_a_prefix_in_any_case_and_answers_whole_ids(store: InboxStore) -> None:
    """Issue 24, item 10: inbox ids resolve as task ids do (kairosd.core.ids)."""
    store.put(_item("ab12cd34"))
    store.put(_item("ab99ffff", minute=1))
    assert store.ack("default", ["AB12"]) == ["ab12cd34"]
    store.put(_item("ab12eeee", minute=2))
    with pytest.raises(UsageError, match="ambiguous: matches ab12cd34, ab12eeee"):
        store.ack("default", ["AB12"])


# --- cost per put: counters, not scans --------------------------------------------------------


class _CountingDict(dict[str, Any]):
    """A dict that counts the entries any walk over it yields."""

    touched = 0

    def __iter__(self) -> Any:
        for key in super().__iter__():
            _CountingDict.touched += 1
            yield key

    def items(self) -> Any:
        return [(key, self[key]) for key in self]

    def values(self) -> Any:
        return [self[key] for key in self]


def test_put_work_is_bounded_by_counters_not_inbox_size(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Puts into a big inbox touch a bounded number of items and lines each (compaction amortised).

    Every item walked in memory and every line read or rewritten is counted;
    1,000 puts into an inbox of 4,000 items (half acked, their retention over)
    may touch a few lines each on average, not the whole inbox every time.
    """
    folder = tmp_path / "inbox"
    seed = JsonLog(folder / "default.jsonl")
    seed.append([_item(f"old{i}", minute=i % 60).model_dump(mode="json") for i in range(4000)])
    seed.append([{"ack": f"old{i}", "at": clock.now().isoformat()} for i in range(0, 4000, 2)])
    clock.advance(ACKED_RETENTION.total_seconds() + 1)

    lines = {"n": 0}
    real_read, real_rewrite = JsonLog.read, JsonLog.rewrite

    def read(self: JsonLog) -> list[dict[str, Any]]:
        records = real_read(self)
        lines["n"] += self.lines
        return records

    def rewrite(self: JsonLog, records: list[dict[str, Any]]) -> None:
        lines["n"] += len(records)
        real_rewrite(self, records)

    store = InboxStore(folder, clock)
    store.list("default")  # loaded before counting: the first read is not a put's work
    session = store._sessions["default"]
    session.items = _CountingDict(session.items)
    monkeypatch.setattr(JsonLog, "read", read)
    monkeypatch.setattr(JsonLog, "rewrite", rewrite)
    _CountingDict.touched = 0
    puts = 1000
    for i in range(puts):
        assert store.put(_item(f"new{i}"))
    touched = lines["n"] + _CountingDict.touched
    assert touched <= 5 * puts, f"{touched} items and lines touched by {puts} puts"
    assert store.compactions == 1  # the expired half went once, in one rewrite
    assert len(store.list("default")) == 2000 + puts


def test_acked_items_leave_memory_and_stay_on_disk(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """An acknowledged item is dropped from memory at once; it is still listed (from disk) and a retried
    put of its id is still a no-op."""
    store.put_many([_item("r1"), _item("r2", minute=1)])
    clock.advance(60)
    assert store.ack("default", ["r1"]) == ["r1"]
    assert list(store._sessions["default"].items) == ["r2"]
    assert not store.put(_item("r1"))
    assert store.ack("default", ["r1"]) == []  # already acked: found, nothing new
    listed = {item.id: item.acked_at for item in store.list("default", include_acked=True)}
    assert listed == {"r1": clock.now(), "r2": None}


def test_put_many_is_one_write_and_idempotent(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """A batch of puts is one append per session; repeats in and across batches are not written twice."""
    appends: list[int] = []
    real = JsonLog.append_lines  # every append goes through it

    def append(self: JsonLog, lines: list[bytes]) -> None:
        appends.append(len(lines))
        real(self, lines)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JsonLog, "append_lines", append)
        assert store.put_many([_item("a"), _item("b", "s2"), _item("a"), _item("c")]) == [True, True, False, True]
        assert store.put_many([_item("c"), _item("d")]) == [False, True]
    assert sorted(appends) == [1, 1, 2]
    again = InboxStore(tmp_path / "inbox", clock)
    assert sorted(_ids(again.list())) == ["a", "b", "c", "d"]


def test_handed_over_items_are_kept_without_a_copy(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """The inbox target hands over the items it made for a put (10,000 a herd): kept as they are; items
    put otherwise are copies. Both are durable and read back the same."""
    mine, theirs = _item("a"), _item("b", minute=1)
    assert store.put_many([mine], handed_over=True) == [True]
    assert store.put_many([theirs]) == [True]
    held = store._sessions["default"].items
    assert held["a"] is mine
    assert held["b"] is not theirs
    assert held["b"] == theirs
    assert InboxStore(tmp_path / "inbox", clock).list() == [mine, theirs]


def test_a_handoff_made_by_of_is_the_handoff_init_makes() -> None:
    """``Handoff.of`` (the dispatcher's, without the frozen dataclass's ``__init__``) gives the object
    ``Handoff(...)`` gives: equal, the fields in their order, frozen, ``replace`` works on it."""
    import dataclasses

    values: dict[str, Any] = {
        "run_id": "r1", "task_id": "t1", "task_name": "build", "prompt": "p", "target": InboxTarget(session="main"),
        "scheduled_for": T0, "planned_for": T0, "late_by_s": 1.5, "catch_up": True, "meta": {"k": "v"},
        "overlap": "queue",
    }  # fmt: skip
    made, expected = Handoff.of(**values), Handoff(**values)
    assert made == expected
    assert list(vars(made)) == [f.name for f in dataclasses.fields(Handoff)]
    assert dataclasses.asdict(made) == dataclasses.asdict(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.prompt = "changed"  # type: ignore[misc]
    assert replace(made, prompt="q").prompt == "q"


def test_a_batchs_item_lines_come_from_their_prototypes(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The items of a batch that share a session and a fire (its slot, lateness and catch-up, as the runs of
    one fire do) are written from one prototype's line, not encoded one by one: each line on disk is the
    one json_line gives its item, whatever the strings hold, across sessions and fires."""
    from kairosd.core.records import json_line

    encoded: list[str] = []

    class Counting:
        """InboxItem's serializer, counting the items it encodes."""

        def __init__(self, real: Any) -> None:
            self.real = real

        def to_json(self, item: Any, **kw: Any) -> bytes:
            encoded.append(item.id)
            return bytes(self.real.to_json(item, **kw))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    store = InboxStore(tmp_path / "inbox", clock)
    later, late = T0 + timedelta(minutes=1), 2.25
    texts = ["plain", 'quote " back \\ slash', "caf\u00e9 \u2603 \U0001f600", "del \x7f", "100% %s", "line\nbreak"]
    jobs = [
        replace(_job(f"r{i}", InboxTarget(session=session)), prompt=text, task_name=text if i % 2 else None,
                scheduled_for=slot, late_by_s=late, catch_up=slot is later)
        for i, (session, slot, text) in enumerate(
            (session, slot, text) for session in ("main", "side") for slot in (T0, later) for text in texts * 5
        )
    ]  # fmt: skip
    InboxItem.model_rebuild()
    monkeypatch.setattr(InboxItem, "__pydantic_serializer__", Counting(InboxItem.__pydantic_serializer__))
    results = asyncio.run(InboxDelivery(store, clock).deliver_many(jobs))
    assert {r.outcome for r in results} == {"delivered"}
    assert len(encoded) <= 4 * (1 + 1 + 5)  # per session and fire: the template, the first item, the "del" ones
    monkeypatch.undo()
    items = {item.id: item for item in store.list()}
    assert len(items) == len(jobs)
    for session in ("main", "side"):
        for line in (tmp_path / "inbox" / session_file_name(session)).read_bytes().splitlines():
            item = InboxItem.model_validate_json(line)
            assert line == json_line(items[item.id])
            assert item.model_dump() == items[item.id].model_dump()


def test_put_many_writes_the_lines_it_is_given(tmp_path: Path, clock: FakeClock, store: InboxStore) -> None:
    """``put_many(lines=...)`` writes a given line for its item and encodes an item whose line is None; a
    count that does not match the items is refused, and nothing is written."""
    from kairosd.core.records import json_line

    one, two = _item("r1"), _item("r2", minute=1)
    with pytest.raises(ValueError, match="1 lines for 2 items"):
        store.put_many([one, two], lines=[json_line(one)])
    assert store.list() == []
    assert store.put_many([one, two], lines=[json_line(one), None]) == [True, True]
    path = tmp_path / "inbox" / session_file_name("default")
    assert path.read_bytes() == json_line(one) + b"\n" + json_line(two) + b"\n"
