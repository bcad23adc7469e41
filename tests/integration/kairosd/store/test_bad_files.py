"""Bad files: a corrupt, truncated or future-version store (or config) makes kairosd refuse to start,
exit 1 with a one-line reason, and keep the file exactly as it was.

What kairosd says about each bad file is checked with its own entry, :func:`kairosd.__main__.main`,
run in this process over the same files (:class:`reliability_support.Here`): the same start, load,
refusal, one line on stderr, exit code, serving and SIGTERM, without a new interpreter's imports
(~0.46 s of CPU each).
Three tests start it as a process, one per kind of start: a store refused, a config refused, a bad
task set aside while the rest is served (the first two through the process's exit status and stderr).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from reliability_support import Here, Home

from kairosd.core.clock import SystemClock
from kairosd.core.models import new_task
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)


def valid_store_bytes(tmp: Path, n: int = 3) -> bytes:
    tasks = [new_task(prompt=f"task {i}", created_at=NOW, tz="UTC", cron="0 9 * * *") for i in range(n)]
    path = tmp / "scheduled_tasks.json"
    JsonStore(path, SystemClock()).save(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks))
    return path.read_bytes()


def one_reason(log: str) -> str:
    """The one ``kairosd: `` line of a refused start's stderr; nothing in it is a traceback."""
    last = [line for line in log.splitlines() if line.startswith("kairosd: ")]
    assert len(last) == 1, log
    assert "Traceback" not in log, log
    return last[0]


def refused(home: Home, here: Here, content: bytes) -> str:
    """Write ``content`` as the store, run kairosd, and return its reason; it must exit 1 and keep the file."""
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(content)
    code, log, _ = here.start()
    assert code == 1, log
    assert home.store.read_bytes() == content
    assert not home.socket.exists()
    return one_reason(log)


def corrupt_copies(home: Home) -> list[Path]:
    return sorted(home.state.glob("scheduled_tasks.json.corrupt-*"))


@pytest.mark.parametrize(
    ("name", "make", "says"),
    [
        ("not JSON", lambda ok: b"{this is not json", "is not valid JSON"),
        ("truncated", lambda ok: ok[: len(ok) // 2], "is not valid JSON"),
        ("cut at a line end", lambda ok: ok[: ok.rindex(b"\n", 0, len(ok) - 10) + 1], "is not valid JSON"),
        ("empty", lambda ok: b"", "is not valid JSON"),
        ("binary", lambda ok: bytes(range(256)), "is not valid JSON"),
        ("a JSON list", lambda ok: b"[1, 2, 3]\n", "is not a JSON object"),
        ("a bad schema_version", lambda ok: b'{"schema_version": "two", "tasks": []}', "scheduled_tasks.json"),
    ],
)
def test_corrupt_store_is_refused_kept_and_copied(
    home: Home, here: Here, tmp_path: Path, name: str, make, says: str
) -> None:
    """Corrupt or truncated: kairosd exits 1 saying what is wrong, the file is untouched, a copy is set aside."""
    content = make(valid_store_bytes(tmp_path))
    line = refused(home, here, content)
    assert says in line, line
    assert "will not overwrite it" in line
    (copy,) = corrupt_copies(home)
    assert copy.read_bytes() == content
    assert str(copy) in line


def test_a_corrupt_store_refuses_the_kairosd_process(home: Home, tmp_path: Path) -> None:
    """The process itself (the tests above run its main here): exit status 1, the one line on its
    stderr and nothing else of note, the file kept, no socket, the copy set aside."""
    content = b"{this is not json"
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(content)
    proc = home.spawn()
    assert proc.wait(60) == 1, home.log(proc)
    assert home.store.read_bytes() == content
    assert not home.socket.exists()
    line = one_reason(home.log(proc))
    assert "is not valid JSON" in line, line
    assert "will not overwrite it" in line
    (copy,) = corrupt_copies(home)
    assert copy.read_bytes() == content
    assert str(copy) in line


def test_each_failed_start_says_why_once_and_the_copy_is_made_once(home: Home, here: Here) -> None:
    """Issue 15, item 9: the reason was logged and then printed; every start made another identical copy."""
    for _ in range(3):
        home.state.mkdir(parents=True, exist_ok=True)
        home.store.write_bytes(b"{")
        code, log, _ = here.start()
        assert code == 1
        assert log.count("will not overwrite it") == 1, log
    (copy,) = corrupt_copies(home)
    assert copy.read_bytes() == b"{"


@pytest.mark.parametrize(
    ("name", "make", "tasks", "says"),
    [
        ("a task of the wrong shape", lambda ok: ok.replace(b'"prompt":"task 0"', b'"prompt":0', 1), 2, "prompt"),
        ("duplicate ids", lambda ok: _duplicate(ok), 3, "comes earlier in the store"),
        ("an impossible zone", lambda ok: ok.replace(b'"tz":"UTC"', b'"tz":"' + b"a" * 300 + b'"', 1), 2, "time"),
        (
            "a date past 9999",
            lambda ok: ok.replace(b'"last_scheduled_for":null', b'"last_scheduled_for":"9999-12-31T23:59:59Z"', 1),
            2,
            "last_scheduled_for",
        ),
        # Issue 27, finding 6: these stopped kairosd with a raw RecursionError, or were changed silently.
        (
            "a task nested 3,000 levels deep",
            lambda ok: ok.replace(b'"meta":{}', b'"meta":{"k":' + b"[" * 3000 + b"]" * 3000 + b"}", 1),
            2,
            "nested deeper than",
        ),
        ("1e999 in meta", lambda ok: ok.replace(b'"meta":{}', b'"meta":{"k":1e999}', 1), 2, "not finite"),
        ("NaN in an unknown field", lambda ok: ok.replace(b'"meta":{}', b'"meta":{},"zz":NaN', 1), 2, "NaN"),
    ],
)
def test_a_bad_task_is_set_aside_and_kairosd_starts(
    home: Home, here: Here, tmp_path: Path, name: str, make, tasks: int, says: str
) -> None:
    """Issue #13: one bad task is quarantined with the reason; kairosd starts with the others."""
    content = make(valid_store_bytes(tmp_path))
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(content)
    code, log, status = here.start(home.status)
    assert code == 0, log
    assert status["tasks"] == tasks
    assert status["quarantine"]["count"] == 1
    (entry,) = json.loads((home.state / "scheduled_tasks.quarantine.json").read_text())["entries"]
    assert says in entry["reason"], entry
    assert corrupt_copies(home) == []


def _duplicate(ok: bytes) -> bytes:
    doc = json.loads(ok)
    doc["tasks"].append(doc["tasks"][0])
    return json.dumps(doc).encode()


def test_the_kairosd_process_sets_a_bad_task_aside_and_serves_the_others(home: Home, tmp_path: Path) -> None:
    """The process itself (the test above runs its main here): it starts, answers without the bad task,
    and exits 0 on SIGTERM."""
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(_duplicate(valid_store_bytes(tmp_path)))
    proc = home.start()
    status = home.status()
    assert status["tasks"] == 3
    assert status["quarantine"]["count"] == 1
    (entry,) = json.loads((home.state / "scheduled_tasks.quarantine.json").read_text())["entries"]
    assert "comes earlier in the store" in entry["reason"], entry
    assert home.stop(proc) == 0


def test_future_version_store_is_refused_and_left_alone(home: Home, here: Here, tmp_path: Path) -> None:
    """A store from a newer kairos: exit 1, 'upgrade kairos', the file untouched and not even copied."""
    doc = json.loads(valid_store_bytes(tmp_path))
    doc["schema_version"] = SCHEMA_VERSION + 1
    doc["something_new"] = {"kept": True}
    line = refused(home, here, json.dumps(doc, indent=2).encode())
    assert "written by a newer kairos" in line
    assert "upgrade kairos" in line
    assert corrupt_copies(home) == []


def test_store_that_is_a_folder_is_refused(home: Home, here: Here) -> None:
    """A folder where the store should be: exit 1 with the reason; the folder is left as it is."""
    home.store.mkdir(parents=True)
    (home.store / "keep").write_text("mine")
    code, log, _ = here.start()
    assert code == 1
    assert "cannot be read" in log
    assert (home.store / "keep").read_text() == "mine"


def test_garbled_ledger_lines_do_not_stop_the_daemon(home: Home, here: Here, tmp_path: Path) -> None:
    """The run and missed ledgers are logs: garbled lines are skipped with a warning and kairosd starts."""
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(valid_store_bytes(tmp_path))
    (home.state / "runs.jsonl").write_bytes(b'{"run_id": "r1", "task_id": "x"\n\x00\xff garbage\n[1]\n{"torn')
    (home.state / "missed.jsonl").write_bytes(b"not json at all\n")
    code, log, status = here.start(home.status)
    assert status["tasks"] == 3
    assert "skipping garbled line" in log
    assert code == 0


def test_deeply_nested_ledger_and_session_files_do_not_stop_the_daemon(home: Home, here: Here, tmp_path: Path) -> None:
    """Issue 27, finding 6: a line nested 3,000 levels deep raised RecursionError out of the load."""
    home.state.mkdir(parents=True, exist_ok=True)
    home.store.write_bytes(valid_store_bytes(tmp_path))
    deep = b"[" * 3000 + b"]" * 3000
    (home.state / "runs.jsonl").write_bytes(deep + b"\n" + deep + b"\n")
    (home.state / "missed.jsonl").write_bytes(deep + b"\n")
    (home.state / "sessions.json").write_bytes(b'{"version": 1, "sessions": ' + deep + b"}")
    code, log, status = here.start(home.status)
    assert status["tasks"] == 3
    assert "Traceback" not in log
    assert code == 0


def write_config(home: Home, content: bytes, mode: int) -> Path:
    folder = home.path / "config"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / "config.toml"
    path.write_bytes(content)
    path.chmod(mode)
    return path


def refused_config(home: Home, here: Here, content: bytes, mode: int = 0o600) -> str:
    path = write_config(home, content, mode)
    code, log, _ = here.start()
    assert code == 1, log
    assert path.read_bytes() == content
    return one_reason(log)


def test_a_bad_config_refuses_the_kairosd_process(home: Home) -> None:
    """The process itself (the tests below run its main here): exit status 1 and the one line on stderr."""
    content = b"[limits]\nmax_concurent = 4\n"
    path = write_config(home, content, 0o600)
    proc = home.spawn()
    assert proc.wait(60) == 1, home.log(proc)
    assert path.read_bytes() == content
    assert "config.toml" in one_reason(home.log(proc))


@pytest.mark.parametrize(
    "content",
    [b"[limits\nmax_concurrent = 4\n", b"[limits]\nmax_concurrent = ", b"[limits]\nmax_concurent = 4\n", b"\xff\xfe"],
)
def test_corrupt_config_is_refused_and_kept(home: Home, here: Here, content: bytes) -> None:
    """Broken, truncated, misspelt or binary config.toml: kairosd refuses to start and keeps the file."""
    assert "config.toml" in refused_config(home, here, content)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_group_or_world_writable_config_is_refused(home: Home, here: Here, mode: int) -> None:
    """A config.toml others can write (it names commands kairosd runs) is refused."""
    assert "writable" in refused_config(home, here, b"[limits]\nmax_concurrent = 4\n", mode)
