"""``kairos daemon stop`` when kairosd runs under systemd: it stops the units, not just the process.

A shutdown over the API ends kairosd, but kairosd.socket would start it again at the next
connection. There is no systemd user manager here, so ``systemctl`` is a fake first on PATH
that records its argv, answers ``is-active`` from FAKE_SYSTEMCTL_STATES and, for ``stop``,
sends SIGTERM to the pid in FAKE_SYSTEMCTL_MAINPID and waits until it is gone, as systemd does.
The CLI runs in-process (``kairos.app.run``); the one real kairosd is a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.app import run
from kairos.client import Client
from kairos.commands import systemd as sd
from kairosd.system.sdnotify import SYSTEMD_VARS

FAKE_SYSTEMCTL = """#!{python}
import json, os, signal, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_SYSTEMCTL_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
verb, units = args[1], args[2:]
if verb == os.environ.get("FAKE_SYSTEMCTL_FAIL"):
    sys.stderr.write("Failed to stop kairosd.socket: Access denied\\n")
    sys.exit(1)
if verb == "is-active":
    states = json.loads(os.environ.get("FAKE_SYSTEMCTL_STATES", "{{}}"))
    print("\\n".join(states.get(unit, "inactive") for unit in units))
    sys.exit(0 if "active" in [states.get(unit) for unit in units] else 3)
pid_file = os.environ.get("FAKE_SYSTEMCTL_MAINPID", "")
if verb == "stop" and "kairosd.service" in units and os.path.exists(pid_file):
    pid = int(open(pid_file).read())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{{pid}}") and time.monotonic() < deadline:
        try:
            if open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[-1].split()[0] == "Z":
                break
        except OSError:
            break
        time.sleep(0.02)
"""

BOTH = sd.STOP_ORDER  # ("kairosd.socket", "kairosd.service")


class Box:
    """A short KAIROS_HOME, XDG folders with kairosd's units installed for it, a pretend user manager."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.home = root / "home"
        bin_dir = root / "bin"
        bin_dir.mkdir()
        fake = bin_dir / "systemctl"
        fake.write_text(FAKE_SYSTEMCTL.format(python=sys.executable))
        fake.chmod(0o755)
        self.log = root / "systemctl.log"
        self.log.touch()
        self.mainpid = root / "mainpid"
        runtime = root / "rt"
        (runtime / "systemd").mkdir(parents=True)
        (runtime / "systemd" / "private").touch()  # what user_manager_running looks for
        for var in (*SYSTEMD_VARS, "JOURNAL_STREAM", "INVOCATION_ID", "XDG_STATE_HOME", "KAIROS_DISABLE_CRON"):
            monkeypatch.delenv(var, raising=False)
        self.env = {
            "KAIROS_HOME": str(self.home),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_RUNTIME_DIR": str(runtime),
            "HOME": str(root),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_SYSTEMCTL_LOG": str(self.log),
            "FAKE_SYSTEMCTL_MAINPID": str(self.mainpid),
            "TZ": "UTC",
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        self.monkeypatch = monkeypatch
        self.proc: subprocess.Popen[bytes] | None = None

    def install_units(self, kairos_home: Path | None = None) -> None:
        """kairosd.service and kairosd.socket as `kairos systemd install --socket` writes them."""
        unit_dir = sd.default_unit_dir(os.environ)
        unit_dir.mkdir(parents=True)
        for name, text in sd.render_units("/bin/true", str(kairos_home or self.home), with_socket=True).items():
            (unit_dir / name).write_text(text)

    def states(self, **states: str) -> None:
        """What the fake's is-active answers, by unit (kairosd_socket=..., kairosd_service=...)."""
        by_unit = {name.replace("_", "."): state for name, state in states.items()}
        self.monkeypatch.setenv("FAKE_SYSTEMCTL_STATES", json.dumps(by_unit))

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def start_kairosd(self) -> int:
        """A real kairosd on this store (standing in for kairosd.service); its pid is the unit's MainPID."""
        log = open(self.root / "kairosd.log", "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen([sys.executable, "-m", "kairosd"], stdout=log, stderr=log)
        log.close()
        client = Client(timeout=5.0)
        deadline = time.monotonic() + 60
        while not client.ping():
            assert self.proc.poll() is None, (self.root / "kairosd.log").read_text()
            assert time.monotonic() < deadline, "kairosd did not answer within 60 s"
            time.sleep(0.02)
        self.mainpid.write_text(str(self.proc.pid))
        return self.proc.pid

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    b = Box(Path(tempfile.mkdtemp(dir="/tmp", prefix="kst")), monkeypatch)  # AF_UNIX paths: under 108 bytes
    try:
        yield b
    finally:
        b.cleanup()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stop_under_systemd_stops_the_units_and_kairosd_stays_down(box, capsys):
    """With kairosd.socket and kairosd.service active, stop runs systemctl --user stop on both,
    says so, and kairosd is gone afterwards (nothing re-activates it: the socket unit is stopped)."""
    box.install_units()
    box.states(kairosd_socket="active", kairosd_service="active")
    pid = box.start_kairosd()

    code, out, err = _run(capsys, "daemon", "stop")

    assert (code, err) == (0, "")
    assert out == (
        "stopped kairosd.socket and kairosd.service through systemd "
        "(ran: systemctl --user stop kairosd.socket kairosd.service)\n"
        "(enabled units start again at your next login; kairos systemd uninstall removes them)\n"
    )
    assert box.calls() == [["--user", "is-active", *BOTH], ["--user", "stop", *BOTH]]
    assert box.proc is not None
    assert box.proc.wait(30) == 0  # SIGTERM from "systemd": a clean exit
    assert not Client(timeout=1.0).ping()
    assert pid == box.proc.pid


def test_stop_under_systemd_json(box, capsys):
    """--json names the units it stopped."""
    box.install_units()
    box.states(kairosd_socket="active", kairosd_service="active")
    code, out, _ = _run(capsys, "daemon", "stop", "--json")
    assert code == 0
    assert json.loads(out) == {"stopped": True, "running": False, "systemd_units": list(BOTH)}


def test_stop_only_the_active_units(box, capsys):
    """A service without the socket unit: only kairosd.service is stopped (stopping a unit that is
    not loaded would fail)."""
    box.install_units()
    box.states(kairosd_service="active")
    code, out, _ = _run(capsys, "daemon", "stop")
    assert code == 0
    assert box.calls()[-1] == ["--user", "stop", "kairosd.service"]
    assert out.startswith("stopped kairosd.service through systemd (ran: systemctl --user stop kairosd.service)\n")


def test_failed_systemctl_stop_says_which_command_to_run(box, capsys, monkeypatch):
    """If systemctl cannot stop the units, the error is one line with the reason and the exact command."""
    box.install_units()
    box.states(kairosd_socket="active", kairosd_service="active")
    monkeypatch.setenv("FAKE_SYSTEMCTL_FAIL", "stop")
    code, out, err = _run(capsys, "daemon", "stop")
    assert (code, out) == (1, "")
    assert err == (
        "kairos: could not stop kairosd through systemd (Failed to stop kairosd.socket: Access denied); "
        "run: systemctl --user stop kairosd.socket kairosd.service\n"
    )


def test_inactive_units_fall_back_to_the_api(box, capsys):
    """Installed but not running under systemd: no systemctl stop; a kairosd started some other way
    is stopped over the API as before."""
    box.install_units()
    box.states(kairosd_socket="inactive", kairosd_service="failed")
    pid = box.start_kairosd()
    code, out, _ = _run(capsys, "daemon", "stop")
    assert (code, out) == (0, f"kairosd stopped (pid {pid})\n")
    assert box.calls() == [["--user", "is-active", *BOTH]]


def test_units_of_another_store_are_left_alone(box, capsys):
    """Units installed for another KAIROS_HOME (the user's real one, seen from a test) are not asked about."""
    box.install_units(kairos_home=box.root / "other")
    box.states(kairosd_socket="active", kairosd_service="active")
    assert _run(capsys, "daemon", "stop") == (0, "kairosd is not running\n", "")
    assert box.calls() == []


def test_no_user_manager_means_no_systemctl(box, capsys):
    """Without a user manager (nothing on $XDG_RUNTIME_DIR/systemd/private) systemctl is not run."""
    box.install_units()
    box.states(kairosd_socket="active", kairosd_service="active")
    (Path(box.env["XDG_RUNTIME_DIR"]) / "systemd" / "private").unlink()
    assert _run(capsys, "daemon", "stop") == (0, "kairosd is not running\n", "")
    assert box.calls() == []
