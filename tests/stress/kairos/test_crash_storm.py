"""Crash storm: SIGKILL kairosd 200 times at random moments while concurrent clients add and delete.

After every kill the store on disk parses and holds every acknowledged add and
no acknowledged delete; after every restart the daemon's list says the same.
One-shots due within seconds are mixed in, so fires (recorded in the run
ledger first, the store after) are cut by kills too: none may be delivered twice.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import pytest
from reliability_support import Home, wait_for
from sizes_support import sized

from kairos.client import ApiError, Client, DaemonNotRunning

pytestmark = [pytest.mark.slow, pytest.mark.stress]

# 200 kills at full size (.ci/run), 20 by default; KAIROS_STORM_KILLS=N sets it.
KILLS = sized(200, 20, override="KAIROS_STORM_KILLS")
CLIENTS = 4
SEED = 20260808
FAR_CRON = "17 3 29 2 *"  # 29 February: never due while the test runs


class Storm:
    """What the clients were told: the adds and deletes acknowledged, across all kills."""

    def __init__(self, home: Home, rng: random.Random) -> None:
        self.home = home
        self.rng = rng
        self.lock = threading.Lock()
        self.acked_adds: set[str] = set()
        self.acked_deletes: set[str] = set()
        self.tried_deletes: set[str] = set()  # a delete cut short by a kill may or may not have happened
        self.one_shots: set[str] = set()  # acknowledged adds that fire by themselves (and then leave)
        # Ids handed out twice: 8 hex digits, so a new task can get the id of one deleted earlier
        # (about once in 300 storms). The id then names two tasks and cannot be judged by id alone.
        self.reused: set[str] = set()
        self.prompts: dict[str, list[str]] = {}  # id -> the prompt of each acknowledged add (for failures)
        self.live: list[str] = []  # ids believed present, to pick deletes from
        self.requests = 0

    def client_loop(self, stop: threading.Event, seed: int) -> None:
        rng = random.Random(seed)
        client = Client(self.home.socket, timeout=10.0)
        while not stop.is_set():
            with self.lock:
                n = len(self.live)
                victim = rng.choice(self.live) if self.live else None
            delete = victim is not None and (n > 150 or (n > 50 and rng.random() < 0.5))
            try:
                with self.lock:
                    self.requests += 1
                    if delete:
                        self.tried_deletes.add(victim or "")
                if delete:
                    assert victim is not None
                    client.call("DELETE", f"/tasks/{victim}")
                    with self.lock:
                        self.acked_deletes.add(victim)
                        if victim in self.live:
                            self.live.remove(victim)
                else:
                    one_shot = rng.random() < 0.1
                    body: dict[str, Any] = {"prompt": f"storm {rng.random()}"}
                    if one_shot:
                        body["in"] = f"{rng.randint(1, 3)}s"
                    else:
                        body["cron"] = FAR_CRON
                    task_id = client.call("POST", "/tasks", body)["task"]["id"]
                    with self.lock:
                        self.prompts.setdefault(task_id, []).append(body["prompt"])
                        if task_id in self.acked_adds or task_id in self.tried_deletes:
                            self.reused.add(task_id)
                        self.acked_adds.add(task_id)
                        if one_shot:
                            self.one_shots.add(task_id)
                        else:
                            self.live.append(task_id)
            except (DaemonNotRunning, ApiError) as exc:
                if isinstance(exc, ApiError) and exc.code == "not_found":
                    with self.lock:  # another client deleted it first
                        if victim in self.live:
                            self.live.remove(victim)
                    continue
                return  # killed under us: this request is unacknowledged

    def check(self, present: dict[str, str], where: str) -> None:
        """``present``: id -> prompt of each task found."""
        must = self.acked_adds - self.tried_deletes - self.one_shots - self.reused
        lost = must - present.keys()
        assert not lost, f"{where}: {len(lost)} acknowledged add(s) lost: {sorted(lost)[:5]}"
        back = (self.acked_deletes - self.reused) & present.keys()
        found = {i: (present[i], self.prompts.get(i)) for i in sorted(back)[:5]}
        assert not back, f"{where}: {len(back)} acknowledged delete(s) came back (found, added as): {found}"


def listing(client: Client) -> dict[str, str]:
    """id -> prompt of every task the daemon lists."""
    return {t["id"]: t["prompt"] for t in client.call("GET", "/tasks", query={"view": "summary"})["tasks"]}


# The longest test: ~3 minutes alone on 2 cores, more beside other tests (xdist); the default 300 s
# timeout (pyproject.toml) would cut it short on a loaded machine.
@pytest.mark.timeout(1200)
def test_crash_storm_loses_no_acknowledged_change(home: Home) -> None:
    """200 SIGKILLs amid adds and deletes: each time the store parses, keeps every ack; no fire twice."""
    rng = random.Random(SEED)
    storm = Storm(home, rng)
    kills_while_busy = 0
    for cycle in range(KILLS):
        proc = home.start()
        listed = listing(home.client())
        storm.check(listed, f"after restart {cycle}")
        with storm.lock:
            storm.live = sorted(listed.keys() - storm.one_shots)

        stop = threading.Event()
        threads = [
            threading.Thread(target=storm.client_loop, args=(stop, rng.randrange(2**32)), daemon=True)
            for _ in range(CLIENTS)
        ]
        for t in threads:
            t.start()
        before = storm.requests
        time.sleep(rng.uniform(0.02, 0.4))  # the random moment of the kill (fault injection, not a wait)
        busy = storm.requests > before
        home.kill(proc)
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive()
        kills_while_busy += busy

        state = home.read_store()  # parses, and validates as the daemon would
        storm.check({t.id: t.prompt for t in state.tasks}, f"store after kill {cycle}")

    final = home.start()
    client = home.client()
    storm.check(listing(client), "final")

    # One-shots: each delivered at most once, however many kills fell around its fire, and none vanished:
    # each one fired (a run, delivered or cut short by a kill) or was surfaced as missed.
    def settled() -> list[dict[str, Any]] | None:
        tasks = client.call("GET", "/tasks", query={"view": "summary"})["tasks"]
        if storm.one_shots & {t["id"] for t in tasks}:
            return None  # some are not due yet
        runs: list[dict[str, Any]] = client.call("GET", "/runs", query={"limit": "10000"})["runs"]
        return runs if all(r["outcome"] is not None for r in runs) else None

    runs = wait_for(settled, what="every one-shot to be handled")
    delivered = Counter(r["task_id"] for r in runs if r["outcome"] == "delivered")
    items = Counter(i["task_id"] for i in client.call("GET", "/inbox", query={"all": "1"})["items"])
    # A reused id names two tasks, each of which may be delivered once.
    assert all(n <= 1 + (task_id in storm.reused) for task_id, n in delivered.items())
    assert all(n <= 1 + (task_id in storm.reused) for task_id, n in items.items())
    missed = {m["task_id"] for m in client.call("GET", "/missed")["missed"]}
    vanished = storm.one_shots - {r["task_id"] for r in runs} - missed
    assert not vanished, f"{len(vanished)} acknowledged one-shot(s) neither fired nor surfaced: {sorted(vanished)[:5]}"
    assert home.stop(final) == 0
    assert kills_while_busy >= KILLS * 0.8, "most kills must land while requests are in flight"
    print(
        f"\ncrash storm: {KILLS} SIGKILLs ({kills_while_busy} with requests in flight), {storm.requests} requests, "
        f"{len(storm.acked_adds)} acknowledged adds, {len(storm.acked_deletes)} acknowledged deletes, "
        f"{len(storm.one_shots)} one-shots ({sum(delivered.values())} delivered, none twice, the rest interrupted "
        f"or surfaced as missed); {len(storm.reused)} id(s) handed out twice; nothing lost"
    )
