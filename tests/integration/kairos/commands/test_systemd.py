"""The systemd user units, ``kairos systemd install|uninstall|status``, socket activation and ``daemon start``.

There is no running systemd here, so the units are checked with ``systemd-analyze verify``
(it needs the ExecStart binary to exist: the venv's own kairosd), socket activation runs
for real under ``systemd-socket-activate``, and ``systemctl``/``journalctl`` are fakes on
PATH that record their argv (the sandbox: tests/systemd_support.py). The tools come from
Debian's ``systemd`` package, which ``.ci/run`` installs; without them these tests skip, except in
CI where they fail.

``kairos`` runs in this process (``box.here``, tests/cli_inprocess_support.py) where what it prints,
writes and runs is the test; as a real process for one install, ``daemon start`` through systemctl and
socket activation.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess_support import children_here
from paths_support import REPO
from systemd_support import SHOW_RUNNING, box, need, verify

from kairos.commands import systemd as sd
from kairos.commands import units
from kairosd import testing
from kairosd.core.errors import UsageError

__all__ = ["box"]  # the fixture, used below

WAIT_S = 15.0
KAIROSD = Path(sys.executable).parent / "kairosd"


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    return testing.wait_for(condition, what, WAIT_S, poll=0.05)


def needs_kairosd() -> None:
    if not KAIROSD.is_file():
        pytest.skip(f"no kairosd script next to {sys.executable} (not a venv install)")


# ---- the shipped units --------------------------------------------------------------------------------


def test_shipped_units_pass_systemd_analyze_verify(box):
    """systemd/kairosd.service and kairosd.socket verify as user units (ExecStart in ~/.local/bin)."""
    needs_kairosd()
    repo_units = REPO / "systemd"
    (box.root / ".local" / "bin").mkdir(parents=True)
    (box.root / ".local" / "bin" / "kairosd").symlink_to(KAIROSD)  # the shipped default ExecStart=%h/.local/bin/kairosd
    verify(repo_units, home=box.root)


def test_shipped_service_is_type_notify_with_watchdog_restart_and_sandboxing():
    """The service has the settings the daemon relies on: notify, a watchdog above 30 s, restart on failure."""
    text = (REPO / "systemd" / sd.SERVICE).read_text()
    settings = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    assert settings["Type"] == "notify"
    assert int(settings["WatchdogSec"]) > 30 * 2  # above the loop's 30 s cap, and its 60 s staleness limit
    assert settings["Restart"] == "on-failure"
    assert settings["NoNewPrivileges"] == "yes"
    socket_text = (REPO / "systemd" / sd.SOCKET).read_text()
    assert "ListenStream=%t/kairos/kairosd.sock" in socket_text
    assert "SocketMode=0600" in socket_text


# ---- rendering ----------------------------------------------------------------------------------------


def test_install_dry_run_units_pass_verify_and_point_at_this_kairosd(box):
    """The units `install --dry-run` prints verify, and ExecStart is the kairosd next to this interpreter."""
    needs_kairosd()
    box.env.pop("KAIROS_HOME")
    doc = box.json_here("systemd", "install", "--socket", "--dry-run")
    assert doc["exec_start"] == str(KAIROSD)
    assert doc["dry_run"] is True
    assert not box.unit_dir.exists()  # a dry run writes nothing
    assert box.calls() == []  # and runs nothing
    out = box.root / "units"
    out.mkdir()
    for name, text in doc["contents"].items():
        (out / name).write_text(text)
    assert f"ExecStart={KAIROSD}\n" in doc["contents"][sd.SERVICE]
    assert "Environment=" not in doc["contents"][sd.SERVICE]
    assert "ListenStream=%t/kairos/kairosd.sock" in doc["contents"][sd.SOCKET]
    verify(out, home=box.root)


def test_install_dry_run_quotes_odd_paths_and_carries_kairos_home(box):
    """A kairosd path and KAIROS_HOME with spaces and % still verify; KAIROS_HOME reaches the service and socket."""
    needs_kairosd()
    odd = box.root / "my tools %h"
    odd.mkdir()
    (odd / "kairosd").symlink_to(KAIROSD)
    home = box.root / "store 100%"
    box.env["KAIROS_HOME"] = str(home)
    doc = box.json_here("systemd", "install", "--socket", "--dry-run", "--kairosd", str(odd / "kairosd"))
    service, socket_unit = doc["contents"][sd.SERVICE], doc["contents"][sd.SOCKET]
    assert f'ExecStart="{box.root}/my tools %%h/kairosd"' in service
    assert sd.unit_environment(service, "KAIROS_HOME") == str(home)
    assert f"ListenStream={box.root}/store 100%%/run/kairosd.sock" in socket_unit
    out = box.root / "units"
    out.mkdir()
    for name, text in doc["contents"].items():
        (out / name).write_text(text)
    verify(out, home=box.root)


def test_exec_quote_and_environment_line_escape_what_systemd_would_expand():
    """% and $ are doubled; whitespace, quotes and backslashes force quoting; the environment round-trips."""
    assert units.exec_quote("/opt/venv/bin/kairosd") == "/opt/venv/bin/kairosd"
    assert units.exec_quote("/a b/kairosd") == '"/a b/kairosd"'
    assert units.exec_quote("/a%b$c/kairosd") == "/a%%b$$c/kairosd"
    assert units.exec_quote('/a"b\\c') == '"/a\\"b\\\\c"'
    value = '/tmp/x "y" \\ 50%'
    line = units.environment_line("KAIROS_HOME", value)
    assert sd.unit_environment(f"[Service]\n{line}\n", "KAIROS_HOME") == value
    assert sd.unit_environment("[Service]\nExecStart=/bin/true\n", "KAIROS_HOME") is None
    with pytest.raises(UsageError):
        units.exec_quote("/a\nb")


def test_find_kairosd_prefers_the_script_next_to_the_running_kairos(tmp_path, monkeypatch):
    """Run as <bin>/kairos (pipx's and uv's ~/.local/bin symlinks), ExecStart is <bin>/kairosd, symlinks kept."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("kairos", "kairosd"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(bin_dir / "kairos"), "systemd", "install"])
    assert sd.find_kairosd() == str(bin_dir / "kairosd")
    if KAIROSD.is_file():
        monkeypatch.setattr(sys, "argv", ["/nowhere/pytest"])
        assert sd.find_kairosd() == str(KAIROSD)  # else the interpreter's own scripts folder


@pytest.mark.parametrize(("find", "option"), [("kairosd", "--kairosd"), ("kairos", "--kairos")])
def test_a_missing_script_names_every_folder_looked_in_and_the_flag(tmp_path, monkeypatch, find, option):
    """No script anywhere: one error that says where kairos looked and which flag gives the path."""
    import sysconfig

    from kairos.commands import integrate
    from kairosd.core.errors import KairosError

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "kairos")])  # kairos itself, but no kairosd beside it
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(empty))
    monkeypatch.setattr(sys, "executable", str(empty / "python3"))
    with pytest.raises(KairosError) as err:
        (units.find_kairosd if find == "kairosd" else integrate.find_kairos)()
    assert f"cannot find the {find} script" in err.value.message
    assert str(tmp_path) in err.value.message
    assert str(empty) in err.value.message
    assert err.value.message.endswith(f"pass {option} PATH")


def test_template_falls_back_to_the_repository_in_an_editable_install():
    """The shipped unit text is found (wheel data or, in a checkout, systemd/) and is the repository's file."""
    repo = REPO / "systemd"
    for name in sd.UNITS:
        assert units.template(name) == (repo / name).read_text()


# ---- install / uninstall / status with a fake systemctl ------------------------------------------------


def test_install_writes_units_reloads_enables_and_starts(box):
    """install --socket --enable --now writes both units (0644), then reload, enable, start socket, restart service."""
    out = box.kairos("systemd", "install", "--socket", "--enable", "--now").stdout
    for name in sd.UNITS:
        path = box.unit_dir / name
        assert path.is_file()
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    service = (box.unit_dir / sd.SERVICE).read_text()
    assert sd.unit_environment(service, "KAIROS_HOME") == box.env["KAIROS_HOME"]
    assert box.calls() == [
        ["--user", "daemon-reload"],
        ["--user", "enable", sd.SOCKET, sd.SERVICE],
        ["--user", "start", sd.SOCKET],
        ["--user", "restart", sd.SERVICE],
    ]
    assert "loginctl enable-linger" in out
    assert "journalctl --user -u kairosd" in out


def test_install_twice_reports_unchanged_units_and_only_reloads(box):
    """A second plain install rewrites nothing and only runs daemon-reload."""
    box.here("systemd", "install")
    mtime = (box.unit_dir / sd.SERVICE).stat().st_mtime_ns
    doc = box.json_here("systemd", "install")
    assert [u["changed"] for u in doc["units"]] == [False]
    assert (box.unit_dir / sd.SERVICE).stat().st_mtime_ns == mtime
    assert box.calls() == [["--user", "daemon-reload"]] * 2
    assert not (box.unit_dir / sd.SOCKET).exists()


def test_install_reports_a_failing_systemctl_and_keeps_the_units(box):
    """If daemon-reload fails (no user manager) install exits 1 with systemctl's reason; the units stay written."""
    box.env["FAKE_SYSTEMCTL_FAIL"] = "daemon-reload"
    proc = box.here("systemd", "install", "--enable", check=False)
    assert proc.returncode == 1
    assert "daemon-reload failed: Failed to connect to bus" in proc.stderr
    assert (box.unit_dir / sd.SERVICE).is_file()
    assert box.calls() == [["--user", "daemon-reload"]]


def test_install_without_systemctl_says_so(box):
    """With no systemctl on PATH install fails with a clear message instead of a traceback."""
    (box.bin / "systemctl").unlink()
    box.env["PATH"] = str(box.bin)
    proc = box.here("systemd", "install", check=False)
    assert proc.returncode == 1
    assert "systemctl is not installed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_install_honours_unit_dir(box):
    """--unit-dir overrides the XDG folder."""
    target = box.root / "elsewhere"
    doc = box.json_here("systemd", "install", "--unit-dir", str(target))
    assert doc["unit_dir"] == str(target)
    assert (target / sd.SERVICE).is_file()
    assert not box.unit_dir.exists()


def test_uninstall_stops_disables_removes_and_reloads(box):
    """uninstall stops and disables both units in one call each, removes the files, then reloads."""
    box.here("systemd", "install", "--socket")
    box.log.write_text("")
    out = box.here("systemd", "uninstall").stdout
    assert not (box.unit_dir / sd.SERVICE).exists()
    assert not (box.unit_dir / sd.SOCKET).exists()
    assert box.calls() == [
        ["--user", "stop", sd.SOCKET, sd.SERVICE],
        ["--user", "disable", sd.SOCKET, sd.SERVICE],
        ["--user", "daemon-reload"],
    ]
    assert "removed" in out


def test_uninstall_with_nothing_installed_does_nothing(box):
    """Without units there is nothing to stop or remove, and systemctl is not called."""
    out = box.here("systemd", "uninstall").stdout
    assert "nothing to do" in out
    assert box.calls() == []


def test_uninstall_still_removes_units_when_stop_fails(box):
    """A unit that will not stop (not loaded) is reported as a warning; the files are removed anyway."""
    box.here("systemd", "install")
    box.env["FAKE_SYSTEMCTL_FAIL"] = "stop"
    proc = box.here("systemd", "uninstall")
    assert "warning" in proc.stderr
    assert not (box.unit_dir / sd.SERVICE).exists()


def test_status_shows_unit_state_and_journal_lines(box):
    """status prints the service state (pid, enabled, restarts), 'not installed' for the socket, and the journal."""
    box.env["FAKE_SYSTEMCTL_SHOW"] = SHOW_RUNNING
    out = box.here("systemd", "status", "-n", "5").stdout
    assert "kairosd.service: active (running), enabled, pid 4242, restarted 1x" in out
    assert "kairosd.socket: not installed" in out
    assert "serving on /run/user/0/kairos/kairosd.sock" in out
    assert "--unit kairosd.service --lines 5" in out
    show = box.calls()[0]
    assert show[:2] == ["--user", "show"]
    assert show[-2:] == [sd.SERVICE, sd.SOCKET]


def test_status_exits_3_when_the_service_is_not_running(box):
    """An installed but stopped service (and no listening socket) exits 3, with JSON saying running: false."""
    box.env["FAKE_SYSTEMCTL_SHOW"] = SHOW_RUNNING.replace("ActiveState=active", "ActiveState=failed")
    proc = box.here("systemd", "status", "--json", check=False)
    assert proc.returncode == 3
    doc = json.loads(proc.stdout)
    assert doc["running"] is False
    assert doc["properties"][sd.SERVICE]["MainPID"] == "4242"


def test_parse_show_splits_blocks_per_unit():
    """systemctl show output for two units becomes one property dict per unit."""
    units = sd.parse_show(SHOW_RUNNING, sd.UNITS)
    assert units[sd.SERVICE]["ActiveState"] == "active"
    assert units[sd.SOCKET]["LoadState"] == "not-found"


# ---- kairos daemon start through systemd ---------------------------------------------------------------


def test_service_for_start_needs_the_unit_a_user_manager_and_the_same_kairos_home(box, monkeypatch):
    """daemon start goes through systemd only if the unit is installed, a manager runs, and KAIROS_HOME matches."""
    monkeypatch.setenv("PATH", box.env["PATH"])
    env = dict(box.env)
    assert sd.service_for_start(env) is None  # nothing installed
    box.here("systemd", "install")
    assert sd.service_for_start(env) is None  # no user manager
    box.user_manager()
    assert sd.service_for_start(env) == sd.SERVICE
    assert sd.service_for_start({**env, "KAIROS_HOME": str(box.root / "other")}) is None
    assert sd.service_for_start({k: v for k, v in env.items() if k != "KAIROS_HOME"}) is None


@pytest.mark.slow
def test_daemon_start_uses_systemctl_when_the_unit_is_installed(box):
    """With the unit installed, `kairos daemon start` runs `systemctl --user start kairosd.service` and waits for it."""
    doc = box.installed_and_started(FAKE_SYSTEMCTL_SPAWN=str(box.root / "spawned.log"))
    assert doc["systemd_unit"] == sd.SERVICE
    assert ["--user", "start", sd.SERVICE] in box.calls()
    assert box.json("status")["pid"] == doc["pid"]
    box.kairos("daemon", "stop")


@pytest.mark.slow
def test_daemon_start_spawns_directly_when_the_unit_serves_another_store(box):
    """A unit for another KAIROS_HOME (or --no-systemd) is not used: kairosd is spawned with its own log file."""
    doc = box.installed_and_started(KAIROS_HOME=str(box.root / "other"))
    assert "systemd_unit" not in doc
    assert doc["log"].startswith(str(box.root / "other"))
    assert ["--user", "start", sd.SERVICE] not in box.calls()
    box.kairos("daemon", "stop")


# ---- socket activation for real ---------------------------------------------------------------------------


@pytest.mark.slow
def test_socket_activation_first_cli_call_starts_kairosd_on_the_passed_socket(box):
    """systemd-socket-activate holds the socket; `kairos status` through it starts kairosd, which answers on it."""
    activate = need("systemd-socket-activate")
    needs_kairosd()
    home = Path(box.env["KAIROS_HOME"])
    sock = home / "run" / "kairosd.sock"
    sock.parent.mkdir(parents=True, mode=0o700)
    log_path = box.root / "activate.log"
    with open(log_path, "w") as log:
        # systemd-socket-activate passes only the variables named with -E; it execs kairosd in its own pid.
        proc = subprocess.Popen(
            [activate, "--listen", str(sock), "-E", f"KAIROS_HOME={home}", "-E", "TZ=UTC", str(KAIROSD)],
            env=box.env,
            stdout=log,
            stderr=log,
        )
    try:
        wait_for(lambda: "Listening on" in log_path.read_text(), "systemd-socket-activate to listen")
        assert "Execing" not in log_path.read_text()  # nothing runs until the first connection
        status = box.json("status")
        assert status["pid"] == proc.pid  # exec'd in place: the activated process answered
        assert status["socket"] == str(sock)
        log_text = log_path.read_text()
        assert "socket passed by systemd" in log_text
        box.json("add", "--in", "1h", "through the activated socket")
        assert len(box.json("list")["tasks"]) == 1
        box.kairos("daemon", "stop")
        assert proc.wait(WAIT_S) == 0
        # The socket file belongs to whoever made it (systemd removes it with RemoveOnStop=), not to kairosd.
        assert sock.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT_S)


@pytest.mark.parametrize("flags", [["--now"], ["--enable"], ["--socket", "--enable", "--now"]])
def test_install_refuses_while_a_kairosd_outside_systemd_runs(box, flags):
    """`kairos daemon start` left a kairosd running: install --enable/--now says so and changes nothing."""
    from fake_daemon_support import FakeDaemon

    fake = FakeDaemon(Path(box.env["KAIROS_HOME"]))
    fake.routes[("GET", "/v1/status")] = (200, {"pid": 4242})
    fake.start()
    try:
        box.env["FAKE_SYSTEMCTL_SHOW"] = "0\n"  # kairosd.service has no main process
        proc = box.here("systemd", "install", *flags, check=False)
    finally:
        fake.stop()
    assert proc.returncode == 1
    assert "a kairosd started outside systemd is running (pid 4242); stop it first (kairos daemon stop)" in proc.stderr
    assert not box.unit_dir.exists()
    assert [c for c in box.calls() if c[1:2] != ["show"]] == []


# ---- issue 24 item 16: install --dry-run agrees with doctor and with the real run ----------------------

FAKE_LOGINCTL = """#!/bin/sh
# A stand-in for loginctl show-user: FAKE_LINGER=yes|no answers, anything else is "no session".
case "$FAKE_LINGER" in
  yes|no) echo "Linger=$FAKE_LINGER" ;;
  *) echo "Failed to get user: User ID 4242 is not logged in or lingering" >&2; exit 1 ;;
esac
"""


@pytest.mark.parametrize(("answer", "state"), [("yes", "on"), ("no", "off"), ("nosession", "unknown")])
def test_install_dry_run_and_doctor_agree_on_linger(box, answer, state, monkeypatch):
    """Both ask one function: the same on/off/unknown and the same reason, in JSON and in text. (Doctor's
    ``python -m kairosd.app.doctor`` runs in this process: tests/unit/kairos/test_doctor.py runs it for real.)"""
    children_here(monkeypatch, "kairosd.app.doctor")
    box._script("loginctl", FAKE_LOGINCTL)
    box.env["FAKE_LINGER"] = answer
    install = box.json_here("systemd", "install", "--dry-run")
    doctor = json.loads(box.here("doctor", "--json", check=False).stdout)
    assert install["linger_state"] == doctor["systemd"]["state"] == state
    assert install["linger"] == doctor["systemd"]["linger"] == {"on": True, "off": False}.get(state)
    assert install["linger_detail"] == doctor["systemd"]["detail"]
    if state == "unknown":
        assert "no user session" in install["linger_detail"]
    text = box.here("systemd", "install", "--dry-run").stdout
    assert f"linger is {state}" in text
    doctor_text = box.here("doctor", check=False).stdout
    assert f"linger:  {({'on': 'yes', 'off': 'no'}).get(state, 'unknown')} ({install['linger_detail']})" in doctor_text


def test_linger_is_unknown_with_the_reason_without_loginctl(tmp_path):
    """No loginctl on PATH: unknown, and why (not "off", which would be a guess)."""
    from kairosd.system.linger import linger_state

    linger = linger_state({"PATH": str(tmp_path)})
    assert (linger.state, linger.on, linger.detail) == ("unknown", None, "loginctl not found (no systemd?)")


@pytest.mark.parametrize(("flags", "refuses"), [(["--now"], True), (["--enable"], True), ([], False)])
def test_install_dry_run_says_the_real_run_would_refuse_a_kairosd_outside_systemd(box, flags, refuses):
    """The dry run makes the real run's pre-flight checks: it names the pid and what to do, and exits
    non-zero exactly where the real run would; it changes nothing either way."""
    from fake_daemon_support import FakeDaemon

    fake = FakeDaemon(Path(box.env["KAIROS_HOME"]))
    fake.routes[("GET", "/v1/status")] = (200, {"pid": 4242})
    fake.start()
    try:
        box.env["FAKE_SYSTEMCTL_SHOW"] = "0\n"  # kairosd.service has no main process
        dry = box.here("systemd", "install", "--dry-run", *flags, check=False)
        doc = json.loads(box.here("systemd", "install", "--dry-run", "--json", *flags, check=False).stdout)
        real = box.here("systemd", "install", *flags, check=False) if refuses else None
    finally:
        fake.stop()
    assert doc["stray_pid"] == 4242
    if refuses:
        assert dry.returncode == real.returncode == 1
        assert (
            "the real run would refuse and change nothing: a kairosd started outside systemd is running "
            "(pid 4242); stop it first (kairos daemon stop)" in dry.stderr
        )
        assert doc["would_refuse"] in real.stderr
    else:
        assert dry.returncode == 0
        assert doc["would_refuse"] is None
        assert "a kairosd started outside systemd runs (pid 4242): stop it first (kairos daemon stop)" in dry.stdout
    assert not box.unit_dir.exists()
    assert [c for c in box.calls() if c[1:2] != ["show"]] == []


def test_install_prints_the_unit_dir_and_exec_start_normalised(box):
    """--unit-dir with .. and // (and --kairosd likewise) are shown, and used, absolute and normalised."""
    needs_kairosd()
    messy_dir = f"/{box.root}//a/../units/"
    messy_kairosd = f"{KAIROSD.parent}//./../{KAIROSD.parent.name}/kairosd"
    doc = box.json_here("systemd", "install", "--dry-run", "--unit-dir", messy_dir, "--kairosd", messy_kairosd)
    assert doc["unit_dir"] == str(box.root / "units")
    assert doc["units"][0]["path"] == str(box.root / "units" / sd.SERVICE)
    assert doc["exec_start"] == os.path.normpath(KAIROSD)
    assert f"ExecStart={os.path.normpath(KAIROSD)}\n" in doc["contents"][sd.SERVICE]
    text = box.here("systemd", "install", "--dry-run", "--unit-dir", messy_dir).stdout
    assert f"# would write {box.root / 'units' / sd.SERVICE}\n" in text
    first = text.split("\n", 1)[0]
    assert ".." not in first
    assert "//" not in first


def test_clean_path_expands_home_and_collapses_dots_and_slashes(monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    assert str(units.clean_path("~/x/../.config//systemd/user/")) == "/home/someone/.config/systemd/user"
    assert str(units.clean_path("//etc//systemd/./user")) == "/etc/systemd/user"
