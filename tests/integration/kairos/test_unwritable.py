"""A store the user cannot write, a full disk, a file-size limit: with a real kairosd.

Every change fails cleanly (HTTP 500 with code ``store``, never ``internal``),
the store on disk is byte for byte the old one, the daemon's answers match the
disk, ``kairos status`` names the problem, and kairosd keeps running; once the
disk is writable again, changes work and the problem is gone from the status.

How the machine is made to refuse writes depends on who runs the tests: a
0500 folder for a normal user; as root (which ignores modes) ``chattr +i`` or a
read-only bind mount; a tiny tmpfs for the full disk (root only); and
RLIMIT_FSIZE, which works for anyone. What the machine does not allow is skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess_support import kairos_here
from reliability_support import Home, wait_for

from kairos.client import ApiError
from kairosd.core.clock import SystemClock
from kairosd.core.models import new_task
from kairosd.store.store import SCHEMA_VERSION, JsonStore, StoreState

pytestmark = pytest.mark.slow


def _run(*argv: str) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def _can_create_in(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.touch()
    except OSError:
        return False
    probe.unlink()
    return True


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[str]:
    """Make ``folder`` refuse new files and renames; yields how. Skips if the machine allows no way."""
    folder.chmod(0o500)
    if not _can_create_in(folder):
        try:
            yield "chmod 0500"
        finally:
            folder.chmod(0o700)
        return
    folder.chmod(0o700)  # root ignores modes; try the ways root cannot ignore
    if shutil.which("chattr") and _run("chattr", "+i", str(folder)):
        try:
            if _can_create_in(folder):
                pytest.skip("chattr +i did not make the folder read-only here")
            yield "chattr +i"
        finally:
            _run("chattr", "-i", str(folder))
        return
    if _run("mount", "--bind", str(folder), str(folder)):
        try:
            if _run("mount", "-o", "remount,ro,bind", str(folder)) and not _can_create_in(folder):
                yield "read-only bind mount"
                return
        finally:
            _run("umount", str(folder))
    pytest.skip("cannot make a folder read-only on this machine (not root, no chattr, no bind mounts)")


def seed_store(home: Home, n: int, prompt: str = "seeded") -> list[str]:
    now = datetime.now(UTC)
    tasks = [new_task(prompt=f"{prompt} {i}", created_at=now, tz="UTC", cron="17 3 29 2 *") for i in range(n)]
    home.state.mkdir(parents=True, exist_ok=True)
    JsonStore(home.store, SystemClock()).save(StoreState(schema_version=SCHEMA_VERSION, tasks=tasks))
    return [t.id for t in tasks]


def expect_store_error(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ApiError) as err:
        call(*args, **kwargs)
    assert (err.value.status, err.value.code) == (500, "store"), err.value.message
    return err.value.message


def listed(home: Home) -> set[str]:
    return {t["id"] for t in home.client().call("GET", "/tasks", query={"view": "summary"})["tasks"]}


def kairos_status(home: Home) -> subprocess.CompletedProcess[str]:
    """``kairos status`` in this process (what it prints is the test; the kairosd is a real process)."""
    return kairos_here("status", env=home.env)


def check_refusals(home: Home, ids: list[str], reason: str) -> None:
    """Add, remove, pause and import fail with code store; nothing changes on disk or in the answers."""
    client = home.client()
    before = home.store.read_bytes()
    message = expect_store_error(client.call, "POST", "/tasks", {"prompt": "refused", "cron": "0 9 * * *"})
    assert "scheduled_tasks.json" in message, message
    assert reason in message, message
    expect_store_error(client.call, "DELETE", f"/tasks/{ids[0]}")
    expect_store_error(client.call, "POST", f"/tasks/{ids[1]}/pause")
    assert home.store.read_bytes() == before
    assert listed(home) == {t.id for t in home.read_store().tasks} == set(ids)
    assert not any(t["status"] == "paused" for t in home.client().call("GET", "/tasks")["tasks"])
    status = home.status()
    assert reason in (status["store_error"] or ""), status
    shown = kairos_status(home)
    assert shown.returncode == 0, shown.stderr
    assert "STORE PROBLEM" in shown.stdout, shown.stdout
    assert reason in shown.stdout, shown.stdout


def check_recovered(home: Home, ids: list[str]) -> None:
    client = home.client()
    added = client.call("POST", "/tasks", {"prompt": "after", "cron": "0 9 * * *"})["task"]["id"]
    client.call("DELETE", f"/tasks/{ids[0]}")
    assert {t.id for t in home.read_store().tasks} == {*ids[1:], added}
    assert home.status()["store_error"] is None
    assert "STORE PROBLEM" not in kairos_status(home).stdout


def test_read_only_store_folder_refuses_changes_cleanly(home: Home) -> None:
    """Read-only state folder under a live kairosd: clean store errors, nothing changes; writable, all works."""
    ids = seed_store(home, 3)
    proc = home.start()
    with read_only(home.state) as how:
        reason = "Permission denied" if how == "chmod 0500" else ""
        if how == "chattr +i":
            reason = "Operation not permitted"
        elif how == "read-only bind mount":
            reason = "Read-only file system"
        check_refusals(home, ids, reason)
        assert proc.poll() is None
    check_recovered(home, ids)
    assert home.stop(proc) == 0
    assert "the store is writable again" in home.log(proc)


@pytest.fixture
def tiny_fs() -> Iterator[Path]:
    """A 2 MB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = Path(tempfile.mkdtemp(dir="/tmp", prefix="kfs"))
    if not _run("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount_point)):
        mount_point.rmdir()
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount_point
    finally:
        wait_for(lambda: _run("umount", str(mount_point)), what="the tmpfs to unmount")
        mount_point.rmdir()


def test_full_disk_refuses_changes_and_keeps_the_old_store(tiny_fs: Path, compiled: None) -> None:
    """Full disk (tiny tmpfs): clean store errors, old store intact, daemon alive; space freed, all works."""
    logs = Path(tempfile.mkdtemp(dir="/tmp", prefix="kfl"))
    home = Home(root=tiny_fs, logs=logs)
    try:
        ids = seed_store(home, 3)
        proc = home.start()
        filler = tiny_fs / "filler"
        with open(filler, "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        check_refusals(home, ids, "No space left on device")
        assert proc.poll() is None
        filler.unlink()
        check_recovered(home, ids)
        assert home.stop(proc) == 0
    finally:
        home.cleanup()
        shutil.rmtree(logs, ignore_errors=True)


def test_file_size_limit_refuses_the_write_and_keeps_the_old_store(home: Home) -> None:
    """Under RLIMIT_FSIZE a write that outgrows it fails cleanly (File too large); the old store is intact."""
    ids = seed_store(home, 60)
    limit = home.store.stat().st_size + 4096
    wrapper = [
        sys.executable,
        "-c",
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2); "
        "os.execv(sys.argv[2], sys.argv[2:])",
        str(limit),
    ]
    proc = home.start(wrapper=wrapper)
    client = home.client()
    before = home.store.read_bytes()
    # Larger than the limit itself: an add is a journal line now (issue 28), not a rewrite of the store.
    big = {"prompt": "x" * (limit + 1000), "cron": "0 9 * * *"}
    message = expect_store_error(client.call, "POST", "/tasks", big)
    assert "File too large" in message
    assert home.store.read_bytes() == before
    assert listed(home) == set(ids)
    assert "File too large" in (home.status()["store_error"] or "")
    client.call("DELETE", f"/tasks/{ids[0]}")  # shrinks the store: fits
    assert {t.id for t in home.read_store().tasks} == set(ids[1:])
    assert home.status()["store_error"] is None
    assert proc.poll() is None
    assert home.stop(proc) == 0
