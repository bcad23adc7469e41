"""kairosd trusts only folders and files its user owns and nobody else can change (issue 13).

The rule is in :mod:`kairosd.system.trust`; here each kind of violation refuses the
start with one line naming the path and the fix, and what is allowed (a sticky
parent like /tmp, a 0755 runtime folder) is allowed. Foreign owners are made
with chown, so those cases need root (the CI runs as root).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kairosd.system import trust
from kairosd.system.paths import Paths, socket_path

OTHER_UID = 65534


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")


@pytest.fixture
def base(short_dir: Path) -> Path:
    return short_dir


def home_paths(home: Path) -> Paths:
    return Paths.from_env({"KAIROS_HOME": str(home)})


def refusal(paths: Paths) -> str:
    with pytest.raises(trust.UnsafePathError) as caught:
        trust.prepare(paths)
    message = caught.value.message
    assert "\n" not in message
    return message


def test_kairos_home_in_a_world_writable_folder_is_refused(base: Path) -> None:
    home = base / "home"
    home.mkdir()
    home.chmod(0o777)
    message = refusal(home_paths(home))
    assert str(home) in message
    assert f"chmod go-w {home}" in message
    assert not (home / "state").exists(), "nothing is created inside a folder others can change"


def test_a_world_writable_folder_further_up_is_refused(base: Path) -> None:
    """Whoever can write any folder above kairos' could move its folders aside and put their own in place."""
    open_folder = base / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    home = open_folder / "me" / "kairos"
    home.mkdir(parents=True)
    assert f"chmod go-w {open_folder}" in refusal(home_paths(home))
    open_folder.chmod(0o1777)  # sticky, like /tmp: fine
    trust.prepare(home_paths(home))


def test_a_group_writable_state_folder_is_refused(base: Path) -> None:
    (base / "state").mkdir(mode=0o700)
    (base / "state").chmod(0o770)
    message = refusal(home_paths(base))
    assert f"chmod go-w {base / 'state'}" in message
    assert "its group" in message


def test_a_sticky_parent_like_tmp_is_fine(base: Path) -> None:
    base.chmod(0o1777)
    paths = home_paths(base)
    trust.prepare(paths)
    assert paths.store.parent.is_dir()


@pytest.mark.parametrize("name", ["scheduled_tasks.json", "scheduled_tasks.lock", "runs.jsonl"])
def test_store_lock_and_ledger_writable_by_others_are_refused(base: Path, name: str) -> None:
    paths = home_paths(base)
    trust.prepare(paths)
    file = paths.state_dir / name
    file.write_text("{}")
    file.chmod(0o666)
    assert f"chmod go-w {file}" in refusal(paths)
    file.chmod(0o600)
    trust.prepare(paths)


def test_a_store_owned_by_another_user_is_refused(base: Path) -> None:
    needs_root()
    paths = home_paths(base)
    trust.prepare(paths)
    paths.store.write_text("{}")
    os.chown(paths.store, OTHER_UID, OTHER_UID)
    message = refusal(paths)
    assert f"uid {OTHER_UID}" in message
    assert f"chown root {paths.store}" in message


def test_a_state_folder_owned_by_another_user_is_refused(base: Path) -> None:
    needs_root()
    paths = home_paths(base)
    trust.prepare(paths)
    os.chown(paths.state_dir, OTHER_UID, OTHER_UID)
    assert f"chown root {paths.state_dir}" in refusal(paths)


def test_the_check_is_against_the_expected_uid(base: Path) -> None:
    """Without root: the same files, checked for another user, belong to someone else."""
    paths = home_paths(base)
    trust.prepare(paths)
    with pytest.raises(trust.UnsafePathError, match="belongs to another user"):
        trust.check(paths, uid=os.getuid() + 1)


def test_a_symlinked_state_folder_is_checked_where_it_really_is(base: Path) -> None:
    open_folder = base / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    (open_folder / "state").mkdir(mode=0o700)
    home = base / "home"
    home.mkdir(mode=0o700)
    (home / "state").symlink_to(open_folder / "state")
    assert f"chmod go-w {open_folder}" in refusal(home_paths(home))


def test_new_folders_and_their_new_parents_are_created_0700(base: Path) -> None:
    os.umask(old := os.umask(0o022))
    try:
        home = base / "a" / "b"
        trust.prepare(home_paths(home))
    finally:
        os.umask(old)
    for folder in (base / "a", home, home / "state", home / "data", home / "run"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_xdg_runtime_dir_0755_daemon_and_cli_agree(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's Paths and the CLI's socket lookup name the same socket, and the folder is accepted.

    platformdirs fell back to /tmp/runtime-<uid> for a 0755 XDG_RUNTIME_DIR while the CLI looked in it.
    """
    runtime = base / "runtime"
    runtime.mkdir(mode=0o755)
    runtime.chmod(0o755)
    monkeypatch.delenv("KAIROS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(base))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    paths = Paths.from_env()
    assert str(paths.socket) == socket_path() == str(runtime / "kairos" / "kairosd.sock")
    trust.prepare(paths)
    assert stat.S_IMODE(paths.runtime_dir.stat().st_mode) == 0o700


def test_xdg_runtime_dir_0777_is_refused(base: Path) -> None:
    runtime = base / "runtime"
    runtime.mkdir()
    runtime.chmod(0o777)
    env = {"HOME": str(base), "XDG_RUNTIME_DIR": str(runtime)}
    assert f"chmod go-w {runtime}" in refusal(Paths.from_env(env))


def test_without_xdg_runtime_dir_both_sides_pick_the_same_fallback(base: Path) -> None:
    env = {"HOME": str(base)}
    assert str(Paths.from_env(env).socket) == socket_path(env)
    relative = {"HOME": str(base), "XDG_RUNTIME_DIR": "relative/run", "XDG_STATE_HOME": "rel"}
    assert str(Paths.from_env(relative).socket) == socket_path(relative)
    assert Paths.from_env(relative).state_dir == base / ".local" / "state" / "kairos"


@pytest.mark.slow
def test_kairosd_refuses_a_world_writable_home_with_one_line(base: Path) -> None:
    """The real start-up: exit 1, one line naming the folder and the fix, no traceback."""
    base.chmod(0o777)
    env = {**os.environ, "KAIROS_HOME": str(base), "TZ": "UTC"}
    proc = subprocess.run(
        [sys.executable, "-m", "kairosd"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"kairosd: {lines[0].removeprefix('kairosd: ')}"], proc.stderr
    assert f"chmod go-w {base}" in lines[0]
    assert "Traceback" not in proc.stderr


def test_doctor_names_an_unsafe_folder(base: Path) -> None:
    """kairos doctor (checked from the shell when kairosd cannot start) says why kairosd refuses."""
    from kairosd.app.doctor import local_report

    base.chmod(0o777)
    report = local_report({"PATH": str(base), "KAIROS_HOME": str(base)})
    assert not report["ok"]
    assert any(p.startswith("paths: ") and f"chmod go-w {base}" in p for p in report["problems"])


@pytest.fixture
def no_runtime_dir(base: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No XDG_RUNTIME_DIR and no /run/user/<uid>: the shared fallback is ``base/tmp/runtime-<uid>``."""
    from kairosd.system import paths as paths_module

    (base / "tmp").mkdir()
    (base / "tmp").chmod(0o1777)
    monkeypatch.setattr(paths_module, "RUN_USER_DIR", str(base / "no-such-run" / "{uid}"))
    monkeypatch.setattr(paths_module, "SHARED_RUNTIME_DIR", str(base / "tmp" / "runtime-{uid}"))
    return base / "tmp" / f"runtime-{os.getuid()}"


def _start_paths(base: Path) -> tuple[Paths, str]:
    env = {"HOME": str(base)}
    return Paths.from_env(env), socket_path(env)


def test_an_own_shared_runtime_dir_is_used(base: Path, no_runtime_dir: Path) -> None:
    paths, cli_socket = _start_paths(base)
    assert str(paths.socket) == cli_socket == str(no_runtime_dir / "kairos" / "kairosd.sock")
    trust.prepare(paths)  # creates it, 0700
    assert stat.S_IMODE(no_runtime_dir.stat().st_mode) == 0o700
    assert Paths.from_env({"HOME": str(base)}).socket == paths.socket  # and keeps it


@pytest.mark.parametrize("planted", ["other_owner", "world_writable", "symlink"])
def test_a_planted_shared_runtime_dir_does_not_keep_kairosd_from_starting(
    base: Path, no_runtime_dir: Path, planted: str
) -> None:
    """Another user made /tmp/runtime-<uid> first: kairosd uses a private folder under the state
    home instead, the CLI looks for the socket there too, and the planted folder is left alone."""
    if planted == "symlink":
        (base / "theirs").mkdir()
        no_runtime_dir.symlink_to(base / "theirs")
    else:
        no_runtime_dir.mkdir()
        if planted == "other_owner":
            needs_root()
            os.chown(no_runtime_dir, OTHER_UID, OTHER_UID)
        else:
            no_runtime_dir.chmod(0o777)
    paths, cli_socket = _start_paths(base)
    fallback = base / ".local" / "state" / "kairos" / "runtime" / "kairos"
    assert str(paths.socket) == cli_socket == str(fallback / "kairosd.sock")
    trust.prepare(paths)  # the start goes on
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700
    assert not (no_runtime_dir / "kairos").exists()

    # The stranger's folder goes away while kairosd serves: both sides stay with the fallback.
    fallback.joinpath("kairosd.sock").touch()
    if planted == "symlink":
        no_runtime_dir.unlink()
    else:
        no_runtime_dir.rmdir()
    paths, cli_socket = _start_paths(base)
    assert str(paths.socket) == cli_socket == str(fallback / "kairosd.sock")
