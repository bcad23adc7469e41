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
