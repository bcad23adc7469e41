"""The one "may kairos trust this file" rule, and which files a command line runs."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from kairosd.system.filesafety import Problem, check_command, check_file, command_files, problem

ME = os.getuid()


def st(mode: int, uid: int = ME) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))


@pytest.mark.parametrize(
    ("mode", "uid", "folder", "expected"),
    [
        (stat.S_IFREG | 0o755, ME, False, None),
        (stat.S_IFREG | 0o644, 0, False, None),  # root's files are trusted (system binaries)
        (stat.S_IFREG | 0o775, ME, False, "writable by its group (mode 775)"),
        (stat.S_IFREG | 0o757, ME, False, "writable by others (mode 757)"),
        (stat.S_IFREG | 0o755, 65534, False, "owned by another user (uid 65534)"),
        (stat.S_IFIFO | 0o600, ME, False, "not a regular file"),
        (stat.S_IFDIR | 0o700, ME, True, None),
        (stat.S_IFDIR | 0o770, ME, True, "writable by its group (mode 770)"),
        (stat.S_IFDIR | 0o1777, 0, True, None),  # sticky, like /tmp
        (stat.S_IFDIR | 0o1777, 65534, True, "owned by another user (uid 65534)"),
    ],
)
def test_the_rule(mode, uid, folder, expected):
    found = problem(st(mode, uid), folder=folder)
    assert (None if found is None else str(found)) == expected


def test_the_trusting_uid_can_be_given():
    assert problem(st(stat.S_IFREG | 0o644, uid=1234), uid=1234) is None
    assert problem(st(stat.S_IFREG | 0o644, uid=1234), uid=4321) == Problem("owner", 1234, 0o644, False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir(mode=0o700)
    return path


def make(path: Path, mode: int = 0o755) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_check_file_follows_symlinks_and_checks_both_folders(folder, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    target = make(real / "hook")
    link = folder / "hook"
    link.symlink_to(target)
    assert check_file(link) is None
    real.chmod(0o777)
    unsafe = check_file(link)
    assert unsafe is not None
    assert str(unsafe) == f"{real}: this folder is writable by others (mode 777)"
    assert unsafe.fix == f"chmod go-w {real}"
    real.chmod(0o700)
    target.chmod(0o666)
    unsafe = check_file(link)
    assert unsafe is not None
    assert unsafe.path == link
    assert check_file(folder / "missing") is None  # not a trust problem: running it reports it


def test_argv0_is_found_on_the_given_path(folder):
    hook = make(folder / "notify")
    assert command_files(["notify", "x"], {"PATH": f"/nonexistent:{folder}"}) == [hook]
    assert command_files(["notify"], {"PATH": "/nonexistent"}) == []
    assert command_files([str(hook)], {}) == [hook]


def test_tilde_is_expanded(folder, monkeypatch):
    monkeypatch.setenv("HOME", str(folder.parent))
    hook = make(folder / "notify")
    assert command_files(["~/bin/notify"], {}) == [hook]


@pytest.mark.parametrize(
    ("words", "script_checked"),
    [
        (["sh", "SCRIPT"], True),
        (["bash", "-eu", "SCRIPT", "arg"], True),
        (["sh", "-c", "SCRIPT"], False),  # inline code, not a file
        (["bash", "-ec", "echo hi"], False),
        ([sys.executable, "-u", "SCRIPT"], True),
        ([sys.executable, "-m", "SCRIPT"], False),
        ([sys.executable, "-W", "ignore", "SCRIPT"], True),  # "ignore" is no file: the scan goes on
        (["perl", "-e", "print 1", "SCRIPT"], False),
        (["env", "FOO=1", "-u", "BAR", "sh", "SCRIPT"], True),
        (["env", "-S", "sh SCRIPT"], False),
        (["notify-send", "SCRIPT"], False),  # not an interpreter: its arguments are data
    ],
)
def test_an_interpreters_script_is_checked(folder, words, script_checked):
    script = make(folder / "hook.sh", 0o664)
    argv = [str(script) if word == "SCRIPT" else word for word in words]
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])}
    unsafe = check_command(argv, env)
    assert [u.path for u in unsafe] == ([script] if script_checked else [])


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_file_of_another_user_is_unsafe(folder):
    hook = make(folder / "notify")
    os.chown(hook, 65534, -1)
    (unsafe,) = check_command([str(hook)], {})
    assert str(unsafe) == f"{hook}: this file is owned by another user (uid 65534)"
    assert unsafe.fix == f"use a copy you own instead of {hook}"
    os.chown(hook, ME, -1)
    os.chown(folder, 65534, -1)
    (unsafe,) = check_command([str(hook)], {})
    assert unsafe.path == folder
    assert unsafe.fix == "move it to a folder you own"


def test_export_never_writes_through_a_planted_link(tmp_path):
    """Another user who can write to --out plants links at the old predictable temp name and at
    the target: the files they point to stay as they were, and the export lands in --out."""
    from kairos.commands.export import _write
    from kairosd.core.wire.export import ExportedTask

    out = tmp_path / "units"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    name = "kairos-abc.timer"
    os.symlink(victim, out / f"{name}.tmp-{os.getpid()}")
    os.symlink(victim, out / "kairos-abc.service")

    files = [{"name": name, "text": "[Timer]\n"}, {"name": "kairos-abc.service", "text": "[Service]\n"}]
    written = _write(str(out), [ExportedTask.model_validate({"task_id": "abc", "warnings": [], "files": files})])

    assert written == [str(out / name), str(out / "kairos-abc.service")]
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert (out / name).read_text() == "[Timer]\n"
    # The link at the target was replaced, not followed.
    assert not (out / "kairos-abc.service").is_symlink()
    assert (out / "kairos-abc.service").read_text() == "[Service]\n"
    assert stat.S_IMODE((out / name).stat().st_mode) == 0o644
