"""Run and missed-record ids: random, drawn from the OS in blocks (a catch-up pass gives 30,000 of them)."""

from __future__ import annotations

import os
import re

from kairosd.core.records import new_missed_id, new_run_id


def test_ids_are_distinct_and_keep_their_form() -> None:
    runs = [new_run_id() for _ in range(3000)]
    missed = [new_missed_id() for _ in range(3000)]
    assert len(set(runs)) == len(runs)
    assert len(set(missed)) == len(missed)
    assert all(re.fullmatch(r"r[0-9a-f]{12}", run_id) for run_id in runs)
    assert all(re.fullmatch(r"m[0-9a-f]{12}", record_id) for record_id in missed)


def test_a_forked_child_never_takes_its_parents_next_ids() -> None:
    """The ids not yet given out are forgotten in a forked child: it draws its own."""
    new_run_id()  # the block is drawn: ids are left for the next calls
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        os.write(write, " ".join(new_run_id() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [new_run_id() for _ in range(5)]
    assert len(child) == 5
    assert not set(child) & set(parent)


def test_a_missed_id_depends_on_its_task_and_first_missed_instant_only() -> None:
    """The id a kill between the pass's two appends relies on: the same for the same task and first
    missed slot (in any zone, however often asked: the slot's text is cached), another for another."""
    import hashlib
    from datetime import UTC, datetime, timedelta, timezone

    from kairosd.core.records import missed_id

    slot = datetime(2026, 3, 2, 10, 5, tzinfo=UTC)
    expected = "m" + hashlib.blake2b(b"t1\x002026-03-02T10:05:00+00:00", digest_size=6).hexdigest()
    assert missed_id("t1", slot) == expected
    assert missed_id("t1", slot.astimezone(timezone(timedelta(hours=-5)))) == expected
    assert missed_id("t1", slot) == expected  # cached
    assert missed_id("t2", slot) != expected
    assert missed_id("t1", slot + timedelta(minutes=5)) != expected
    assert len({missed_id("t1", slot + timedelta(minutes=5 * i)) for i in range(1000)}) == 1000  # past the cache
    assert missed_id("t1", slot) == expected
