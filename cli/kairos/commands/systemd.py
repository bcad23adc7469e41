"""``kairos systemd install|uninstall|status``: run kairosd as a systemd user service.

``install`` renders the units shipped in ``systemd/`` (inside the wheel as ``kairosd/_data/systemd``)
with an absolute ``ExecStart=``: the ``kairosd`` script installed next to this ``kairos``, which is
right for a venv, ``pipx install`` and ``uv tool install`` alike. A ``KAIROS_HOME`` set while
installing is written into the units, so the service and the CLI agree on the store and the socket.
It then runs ``systemctl --user daemon-reload`` (``enable``/``restart`` when asked) and gives the
``loginctl enable-linger`` advice, from the answer ``kairos doctor`` gives (:mod:`kairosd.system.linger`).
``--dry-run`` makes the same pre-flight checks (a kairosd running outside systemd) and says what
the real run would refuse, exiting non-zero where it would. Every path shown is absolute and normalised.

``systemctl`` and ``journalctl`` are found on ``PATH`` (tests put recording fakes there); the unit
folder is ``--unit-dir``, else ``$XDG_CONFIG_HOME/systemd/user``. ``kairos daemon start`` asks
:func:`service_for_start` whether to go through systemd, ``kairos daemon stop`` asks :func:`units_for_stop`.

``kairos.app`` imports this module to build the full parser, so only argparse and typing are
imported at the top. Must not import pydantic, asyncio, platformdirs or the daemon's modules (beyond
``kairosd.core.errors`` and the standard-library-only ``kairosd.system.linger``):
it works in an install whose dependencies are broken, to repair or remove the service.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import make_parser, whole_number
from kairos.commands.units import (
    SERVICE,
    SOCKET,
    clean_path,
    default_unit_dir,
    find_kairosd,
    installed_unit,
    kairos_home,
    render_units,
    unit_environment,
)

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from kairosd.system.linger import Linger

UNITS = (SERVICE, SOCKET)
STOP_ORDER = (SOCKET, SERVICE)  # the socket first, so nothing starts the service again meanwhile
RUNNING_STATES = frozenset({"active", "activating", "deactivating", "reloading", "refreshing"})
# Readiness needs the store loaded (systemd waits for READY=1); stopping gets TimeoutStopSec=30.
SYSTEMCTL_TIMEOUT_S = 60.0
JOURNAL_LINES = 10


def register(subparsers: Any) -> None:
    systemd = subparsers.add_parser(
        "systemd",
        help="run kairosd as a systemd user service",
        description="Install, remove or inspect kairosd as a systemd user service (started at login, "
        "restarted on failure, logging to the journal).",
        epilog="examples:\n  kairos systemd install --enable --now\n  kairos systemd install --socket --enable --now\n"
        "  kairos systemd status\n  kairos systemd uninstall",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = systemd.add_subparsers(dest="systemd_verb", metavar="COMMAND")

    install = make_parser(
        verbs,
        "install",
        "write the user units and reload systemd",
        "Write kairosd.service (and with --socket kairosd.socket) into the user unit folder with "
        "ExecStart= set to the kairosd installed next to this kairos, then run 'systemctl --user "
        "daemon-reload'. A KAIROS_HOME set now is written into the units. Run it again after moving "
        "or reinstalling kairos.",
        """
        kairos systemd install --enable --now          # start now and at every login
        kairos systemd install --socket --enable --now # also let the first kairos call start it
        kairos systemd install --dry-run               # print the units, change nothing
        """,
    )
    install.add_argument("--socket", action="store_true", help="also install kairosd.socket (socket activation)")
    install.add_argument("--enable", action="store_true", help="start the units at login (systemctl --user enable)")
    install.add_argument("--now", action="store_true", help="(re)start kairosd now")
    install.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be written and run, and what the real run would refuse; change nothing",
    )
    _add_unit_dir(install)
    install.add_argument(
        "--kairosd",
        metavar="PATH",
        help="the kairosd executable for ExecStart= (default: the one next to this kairos)",
    )
    install.set_defaults(handler=cmd_install)

    uninstall = make_parser(
        verbs,
        "uninstall",
        "stop, disable and remove the user units",
        "Stop and disable kairosd.service and kairosd.socket, remove them from the user unit folder "
        "and reload systemd. Tasks, history and inboxes are kept.",
        "kairos systemd uninstall\n  kairos systemd uninstall --dry-run",
    )
    uninstall.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    _add_unit_dir(uninstall)
    uninstall.set_defaults(handler=cmd_uninstall)

    status = make_parser(
        verbs,
        "status",
        "the service's state and its last log lines",
        "Show whether kairosd.service and kairosd.socket are installed, enabled and running, and the "
        "last lines of the journal. Exits 3 when neither the service runs nor the socket listens.",
        "kairos systemd status\n  kairos systemd status -n 50",
    )
    status.add_argument(
        "-n", "--lines", type=whole_number, default=JOURNAL_LINES, metavar="N", help="journal lines to show"
    )
    status.set_defaults(handler=cmd_status)

    systemd.set_defaults(handler=lambda _args: _help(systemd))


def _add_unit_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unit-dir",
        metavar="DIR",
        help="the user unit folder (default: $XDG_CONFIG_HOME/systemd/user, i.e. ~/.config/systemd/user)",
    )


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _unit_dir(args: argparse.Namespace, environ: Mapping[str, str]) -> Path:
    return clean_path(args.unit_dir) if args.unit_dir else default_unit_dir(environ)


# ---- running systemctl ----------------------------------------------------------------------------------


def systemctl(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``systemctl --user ARGS`` (found on PATH) and return the finished process; never raises for its exit code."""
    import shutil
    import subprocess

    from kairosd.core.errors import KairosError

    exe = shutil.which("systemctl")
    if exe is None:
        raise KairosError("systemctl is not installed here; kairosd can still run with: kairos daemon start")
    try:
        return subprocess.run(
            [exe, "--user", *args], capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise KairosError(f"systemctl --user {' '.join(args)} did not finish within {SYSTEMCTL_TIMEOUT_S:g}s") from exc


def _run_or_fail(argv: Sequence[str], after: str = "") -> None:
    from kairosd.core.errors import KairosError

    proc = systemctl(*argv)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        reason = detail[-1] if detail else f"exit code {proc.returncode}"
        raise KairosError(f"systemctl --user {' '.join(argv)} failed: {reason}{after}")


def user_manager_running(environ: Mapping[str, str]) -> bool:
    """Whether a systemd user manager runs for us: it listens on $XDG_RUNTIME_DIR/systemd/private."""
    import os

    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    return bool(runtime) and os.path.exists(os.path.join(runtime, "systemd", "private"))


def _installed_for_store(environ: Mapping[str, str]) -> bool:
    """Whether kairosd may be under systemd here: systemctl and a user manager exist, and kairosd.service
    is installed for this shell's ``KAIROS_HOME`` (a test's or a second store must not start or stop the
    user's service)."""
    import shutil

    if shutil.which("systemctl") is None or not user_manager_running(environ):
        return False
    path = installed_unit(SERVICE, environ)
    if path is None:
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return unit_environment(text, "KAIROS_HOME") == kairos_home(environ)


def service_for_start(environ: Mapping[str, str]) -> str | None:
    """The unit ``kairos daemon start`` should start through systemd, or None to spawn kairosd itself.

    Only when the unit is installed, a user manager runs, and the unit serves the same
    ``KAIROS_HOME`` as this shell.
    """
    return SERVICE if _installed_for_store(environ) else None


def units_for_stop(environ: Mapping[str, str]) -> list[str]:
    """The kairosd units that run for this store, socket first; ``[]`` when kairosd is not under systemd.

    ``kairos daemon stop`` stops these with systemctl: a shutdown over the API would end kairosd,
    but kairosd.socket would start it again at the next connection.
    """
    if not _installed_for_store(environ):
        return []
    # One line per unit, in order; "inactive" for a unit that is not loaded.
    states = systemctl("is-active", *STOP_ORDER).stdout.split()
    return [unit for unit, state in zip(STOP_ORDER, states, strict=False) if state in RUNNING_STATES]


def _linger_advice(linger: Linger) -> str:
    """The advice after install, from the same answer ``kairos doctor`` gives (kairosd.system.linger)."""
    user = linger.user
    if linger.state == "on":
        return f"linger is on for {user}: kairosd runs from boot, without a login session"
    if linger.state == "off":
        return (
            f"linger is off: tasks fire only while {user} is logged in; to run kairosd from boot without a "
            f"login session:\n  loginctl enable-linger {user}"
        )
    return (
        f"linger is unknown ({linger.detail}); if tasks must fire while {user} is logged out:\n"
        f"  loginctl enable-linger {user}"
    )


def display(argv: Sequence[str]) -> str:
    import shlex

    return "systemctl --user " + " ".join(shlex.quote(a) for a in argv)


# ---- install --------------------------------------------------------------------------------------------


def _write_unit(path: Path, text: str) -> None:
    """Atomically: a half-written unit must never be loaded."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _stray_daemon() -> int | None:
    """The pid of a kairosd that answers on the socket but is not kairosd.service's main process."""
    from kairos.client import Client
    from kairosd.core.errors import KairosError
    from kairosd.core.protocol import route_path

    try:
        doc = Client(timeout=2.0).call("GET", route_path("status"))
    except KairosError:  # not running, or not answering sensibly: nothing to get in the way
        return None
    pid = doc.get("pid") if isinstance(doc, dict) else None
    if not isinstance(pid, int):
        return None
    main_pid = systemctl("show", "--property=MainPID", "--value", SERVICE).stdout.strip()
    return None if main_pid == str(pid) else pid


def _refusal(stray: int | None, args: argparse.Namespace) -> str | None:
    """Why the real install refuses before writing anything (None: it goes ahead); dry runs ask too."""
    if stray is not None and (args.now or args.enable):
        # An enabled or started unit would meet that daemon's store lock.
        return (
            f"a kairosd started outside systemd is running (pid {stray}); stop it first "
            "(kairos daemon stop), then run this again"
        )
    return None


def cmd_install(args: argparse.Namespace) -> int:
    import os

    from kairos.output import error, print_json
    from kairosd.core.errors import KairosError, UsageError
    from kairosd.system.linger import linger_state

    environ = os.environ
    unit_dir = _unit_dir(args, environ)
    exec_start = str(clean_path(args.kairosd if args.kairosd else find_kairosd()))
    if not (os.path.isfile(exec_start) and os.access(exec_start, os.X_OK)):
        raise UsageError(f"{exec_start} is not an executable file")
    with_socket = args.socket or (unit_dir / SOCKET).is_file()  # keep an earlier --socket install current
    units = render_units(exec_start, kairos_home(environ), with_socket)

    commands: list[list[str]] = [["daemon-reload"]]
    enabled = [SOCKET, SERVICE] if with_socket else [SERVICE]
    if args.enable:
        commands.append(["enable", *enabled])
    if args.now:
        if with_socket:
            commands.append(["start", SOCKET])
        # restart, not start: a running service picks up the new unit (and the socket) now.
        commands.append(["restart", SERVICE])

    changes: list[dict[str, Any]] = []
    for name, text in units.items():
        path = unit_dir / name
        try:
            old = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            old = None
        changes.append({"unit": name, "path": str(path), "changed": old != text, "new": old is None})

    linger = linger_state(environ)
    # The same pre-flight checks for a dry run as for the real one, so it can say what would be refused.
    stray = _stray_daemon()
    refusal = _refusal(stray, args)
    doc: dict[str, Any] = {
        "dry_run": bool(args.dry_run),
        "unit_dir": str(unit_dir),
        "exec_start": exec_start,
        "units": changes,
        "commands": [["systemctl", "--user", *argv] for argv in commands],
        "linger": linger.on,
        "linger_state": linger.state,
        "linger_detail": linger.detail,
        "stray_pid": stray,
        "would_refuse": refusal,
    }
    if args.dry_run:
        doc["contents"] = units
        if args.json:
            print_json(doc)
        else:
            for change in changes:
                print(f"# would write {change['path']}")
                print(units[change["unit"]], end="")
                print()
            for argv in commands:
                print(f"# would run: {display(argv)}")
            if refusal is None and stray is not None:
                print(f"note: a kairosd started outside systemd runs (pid {stray}): stop it first (kairos daemon stop)")
            print(_linger_advice(linger))
        if refusal is not None:
            # Non-zero exactly where the real run fails; it would write and run nothing.
            error(f"the real run would refuse and change nothing: {refusal}")
            return KairosError(refusal).exit_code
        return 0

    if refusal is not None:
        raise KairosError(refusal)
    unit_dir.mkdir(parents=True, exist_ok=True)
    for change in changes:
        if change["changed"]:
            _write_unit(unit_dir / change["unit"], units[change["unit"]])
    for argv in commands:
        _run_or_fail(argv, after=f" (the units are in {unit_dir})")
    if args.json:
        print_json(doc)
        return 0
    for change in changes:
        verb = "wrote" if change["new"] else "updated" if change["changed"] else "unchanged:"
        print(f"{verb} {change['path']}")
    print(f"ExecStart={exec_start}")
    for argv in commands:
        print(f"ran: {display(argv)}")
    if not args.enable and not args.now:
        if stray is not None:
            print(f"note: a kairosd started outside systemd runs (pid {stray}): stop it first (kairos daemon stop)")
        print(f"to start it now and at every login: {display(['enable', '--now', *enabled])}")
    print("logs: journalctl --user -u kairosd")
    print(_linger_advice(linger))
    return 0


# ---- uninstall ------------------------------------------------------------------------------------------


def cmd_uninstall(args: argparse.Namespace) -> int:
    import os

    from kairos.output import error, print_json

    unit_dir = _unit_dir(args, os.environ)
    present = [name for name in (SOCKET, SERVICE) if (unit_dir / name).is_file()]
    # Both in one call: stopping only the service would let the next kairos call start it again.
    steps: list[list[str]] = [["stop", *present], ["disable", *present]] if present else []
    doc: dict[str, Any] = {
        "dry_run": bool(args.dry_run),
        "unit_dir": str(unit_dir),
        "removed": [str(unit_dir / name) for name in present],
        "commands": [["systemctl", "--user", *argv] for argv in steps + [["daemon-reload"]] * bool(present)],
    }
    if args.dry_run:
        if args.json:
            print_json(doc)
        else:
            for command in doc["commands"]:
                print(f"# would run: {display(command[2:])}")
            for path in doc["removed"]:
                print(f"# would remove {path}")
            if not present:
                print(f"no kairosd units in {unit_dir}")
        return 0
    warnings: list[str] = []
    if present:
        for argv in steps:
            proc = systemctl(*argv)
            if proc.returncode != 0:
                # Not loaded or already gone: removing the files is still what was asked.
                warnings.append(f"{display(argv)}: {(proc.stderr or proc.stdout).strip() or proc.returncode}")
        for name in present:
            (unit_dir / name).unlink(missing_ok=True)
        _run_or_fail(["daemon-reload"], after=f" (the units were removed from {unit_dir})")
    doc["warnings"] = warnings
    if args.json:
        print_json(doc)
        return 0
    for warning in warnings:
        error(f"warning: {warning}")
    if not present:
        print(f"no kairosd units in {unit_dir}; nothing to do")
        return 0
    for path in doc["removed"]:
        print(f"removed {path}")
    print("tasks, history and inboxes are kept; 'kairos daemon start' still runs kairosd without systemd")
    return 0


# ---- status ---------------------------------------------------------------------------------------------

STATUS_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "UnitFileState",
    "MainPID",
    "NRestarts",
    "Result",
    "ActiveEnterTimestamp",
    "FragmentPath",
)


def parse_show(text: str, units: Sequence[str]) -> dict[str, dict[str, str]]:
    """``systemctl show`` output for several units (blocks separated by blank lines), by unit."""
    blocks: list[dict[str, str]] = [{}]
    for line in text.splitlines():
        if not line.strip():
            if blocks[-1]:
                blocks.append({})
            continue
        key, _, value = line.partition("=")
        blocks[-1][key] = value
    return {unit: (blocks[i] if i < len(blocks) else {}) for i, unit in enumerate(units)}


def _describe(unit: str, props: Mapping[str, str]) -> str:
    if props.get("LoadState") in (None, "", "not-found"):
        return f"{unit}: not installed"
    parts = [f"{props.get('ActiveState', '?')} ({props.get('SubState', '?')})"]
    if props.get("UnitFileState"):
        parts.append(props["UnitFileState"])
    if props.get("MainPID", "0") not in ("", "0"):
        parts.append(f"pid {props['MainPID']}")
    if props.get("NRestarts", "0") not in ("", "0"):
        parts.append(f"restarted {props['NRestarts']}x")
    if props.get("Result") not in (None, "", "success"):
        parts.append(f"last result: {props['Result']}")
    if props.get("ActiveEnterTimestamp"):
        parts.append(f"since {props['ActiveEnterTimestamp']}")
    return f"{unit}: " + ", ".join(parts)


def _journal(lines: int) -> list[str]:
    import shutil
    import subprocess

    exe = shutil.which("journalctl")
    if exe is None or lines <= 0:
        return []
    try:
        proc = subprocess.run(
            [exe, "--user", "--unit", SERVICE, "--lines", str(lines), "--no-pager", "--output", "short-iso"],
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ["(journalctl did not answer)"]
    return proc.stdout.splitlines()


def cmd_status(args: argparse.Namespace) -> int:
    from kairos.output import print_json
    from kairosd.core.errors import EXIT_NO_DAEMON, KairosError

    proc = systemctl("show", f"--property={','.join(STATUS_PROPERTIES)}", SERVICE, SOCKET)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise KairosError(
            f"cannot ask the systemd user manager: {detail[-1] if detail else proc.returncode} "
            "(is this a systemd login session?)"
        )
    units = parse_show(proc.stdout, UNITS)
    service, sock = units[SERVICE], units[SOCKET]
    up = service.get("ActiveState") in ("active", "activating", "reloading") or sock.get("ActiveState") == "active"
    journal = _journal(args.lines)
    if args.json:
        # "properties", not "units": in install's document "units" is the list of unit files written.
        print_json({"running": up, "properties": units, "journal": journal})
    else:
        for unit in UNITS:
            print(_describe(unit, units[unit]))
        if journal:
            print(f"last {len(journal)} journal lines (journalctl --user -u kairosd):")
            for line in journal:
                print(f"  {line}")
        if not up and service.get("LoadState") in (None, "", "not-found"):
            print("install it with: kairos systemd install --enable --now")
    return 0 if up else EXIT_NO_DAEMON
