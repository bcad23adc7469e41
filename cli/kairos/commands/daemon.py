"""``kairos daemon start|stop|status|run``: manage the kairosd process.

``start`` goes through ``systemctl --user start kairosd.service`` when that
unit is installed for this store (see ``kairos systemd``); otherwise it spawns
``python -m kairosd`` detached (its output appended to
``<state_dir>/kairosd.log``). Either way it waits until kairosd answers on its socket; ``stop``
asks it to shut down over the API and waits until it is gone, or, when kairosd runs under systemd
for this store, runs ``systemctl --user stop`` on its units (kairosd.socket would start it again
at the next connection); ``run`` execs it in the foreground. All waits are bounded.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call). Must not import pydantic, asyncio or the daemon's
own modules (it is started as a separate process, never imported).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import make_parser

if TYPE_CHECKING:
    from pathlib import Path

    from kairos.client import Client

LOG_NAME = "kairosd.log"
START_WAIT_S = 10.0
STOP_WAIT_S = 15.0
POLL_S = 0.05
PING_TIMEOUT_S = 1.0  # per probe while waiting; the overall wait is bounded separately
LOG_TAIL_LINES = 20


def register(subparsers: Any) -> None:
    daemon = subparsers.add_parser(
        "daemon",
        help="start, stop or inspect kairosd",
        description="Start, stop or inspect the kairosd daemon that fires the tasks.",
        epilog="examples:\n  kairos daemon start\n  kairos daemon status\n  kairos daemon reload\n  kairos daemon stop",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = daemon.add_subparsers(dest="daemon_verb", metavar="COMMAND")

    start = make_parser(
        verbs,
        "start",
        "start kairosd in the background",
        f"Start kairosd and wait (up to {START_WAIT_S:g}s) until it answers. With the systemd user unit "
        "installed (kairos systemd install) this is 'systemctl --user start kairosd.service', logging to the "
        f"journal; otherwise kairosd runs detached, logging to <state dir>/{LOG_NAME}. Does nothing if it "
        "already runs.",
        "kairos daemon start\n  KAIROS_HOME=/tmp/k kairos daemon start -v",
    )
    start.add_argument("-v", "--verbose", action="store_true", help="debug logging in the log file (not with systemd)")
    start.add_argument(
        "--no-systemd", action="store_true", help="spawn kairosd directly even when the systemd unit is installed"
    )
    start.set_defaults(handler=cmd_start)

    stop = make_parser(
        verbs,
        "stop",
        "stop kairosd",
        f"Ask kairosd to shut down (in-flight deliveries get a grace period) and wait up to "
        f"{STOP_WAIT_S:g}s until it is gone. Succeeds if it was not running. When kairosd runs under "
        "systemd for this KAIROS_HOME (kairos systemd install), this is 'systemctl --user stop "
        "kairosd.socket kairosd.service' instead, so socket activation does not start it again; "
        "enabled units start again at the next login.",
        "kairos daemon stop",
    )
    stop.set_defaults(handler=cmd_stop)

    status = make_parser(
        verbs,
        "status",
        "is kairosd running? (exit 3 if not)",
        "Like 'kairos status'; exits 3 when kairosd is not running (with --json, prints "
        '{"running": false, ...} first).',
        "kairos daemon status || kairos daemon start",
    )
    status.set_defaults(handler=cmd_status)

    reload = make_parser(
        verbs,
        "reload",
        "apply config.toml without a restart",
        "Ask kairosd to read config.toml again (as SIGHUP does, and systemctl --user reload kairosd). "
        "Agents, custom agents, hooks, [consolidation], [webhook] and limits.max_depth and keep_finished "
        "apply at once; the other limits need a restart, and the output names them. A config that does not "
        "load changes nothing (exit 1, with the reason).",
        "kairos daemon reload\n  kairos daemon reload --json",
    )
    reload.set_defaults(handler=cmd_reload)

    run = make_parser(
        verbs,
        "run",
        "run kairosd in the foreground",
        "Replace this process with kairosd in the foreground, logging to stderr; "
        "stop it with Ctrl-C or SIGTERM. For debugging and service managers.",
        "kairos daemon run -v",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.set_defaults(handler=cmd_run)

    daemon.set_defaults(handler=lambda _args: _help(daemon))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def daemon_argv(verbose: bool) -> list[str]:
    """The command that runs the daemon (tests replace it with a stand-in)."""
    import sys

    return [sys.executable, "-m", "kairosd", *(["-v"] if verbose else [])]


def _client(timeout: float = 10.0) -> Client:
    from kairos.client import Client

    return Client(timeout=timeout)


def _status_or_none(client: Client) -> dict[str, Any] | None:
    """The daemon's status, ``{}`` if it answers but not with a status, None if not running."""
    from kairos.client import ApiError, DaemonNotRunning
    from kairosd.core.protocol import route_path

    try:
        doc = client.call("GET", route_path("status"))
    except DaemonNotRunning:
        return None
    except ApiError as exc:
        if exc.status == 0:
            raise  # something holds the socket but does not answer: not safe to start another
        return {}
    return doc if isinstance(doc, dict) else {}


def _log_tail(log_path: Path, offset: int) -> str:
    """The last lines the child wrote (from ``offset``: older runs' lines are not this failure)."""
    try:
        with log_path.open("rb") as log:
            log.seek(offset)
            data = log.read()
    except OSError:
        return ""
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])


# A detached kairosd is not the service this shell may run under: it must not answer a notify socket,
# take passed sockets, or log in the journal's format into its log file.
SERVICE_VARS = (
    "NOTIFY_SOCKET",
    "LISTEN_PID",
    "LISTEN_FDS",
    "LISTEN_FDNAMES",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
    "JOURNAL_STREAM",
    "INVOCATION_ID",
)


def _child_env() -> dict[str, str]:
    import os
    from pathlib import Path

    env = {name: value for name, value in os.environ.items() if name not in SERVICE_VARS}
    home = env.get("KAIROS_HOME")
    if home:
        # The child runs in "/", so a relative KAIROS_HOME must be resolved here.
        env["KAIROS_HOME"] = str(Path(home).expanduser().absolute())
    return env


def cmd_start(args: argparse.Namespace) -> int:
    import os
    import subprocess
    import sys
    import time

    from kairos.output import print_json
    from kairosd.core.errors import KairosError
    from kairosd.system.paths import Paths

    paths = Paths.from_env()
    client = _client(PING_TIMEOUT_S)
    status = _status_or_none(client)
    if status is not None:
        if args.json:
            print_json({"started": False, "running": True, "pid": status.get("pid"), "socket": str(paths.socket)})
        else:
            print(f"kairosd is already running (pid {status.get('pid', '?')}), socket {paths.socket}")
        return 0
    if not args.no_systemd:
        from kairos.commands.systemd import service_for_start

        unit = service_for_start(os.environ)
        if unit is not None:
            return _start_with_systemd(args, unit, client, str(paths.socket))
    from kairosd.system import trust

    trust.prepare(paths)  # the same refusal kairosd would log, as one line here; folders made 0700
    log_path = paths.state_dir / LOG_NAME
    # 0600: the log may quote prompts and commands.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        offset = os.fstat(log_fd).st_size
        proc = subprocess.Popen(
            daemon_argv(args.verbose),
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no SIGHUP/SIGINT from this terminal
            cwd="/",  # do not pin the user's directory (unmounts, rm -r)
            env=_child_env(),
        )
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + START_WAIT_S
    while not client.ping():
        code = proc.poll()
        if code is not None:
            tail = _log_tail(log_path, offset)
            if tail:
                sys.stderr.write(tail + "\n")
            raise KairosError(f"kairosd exited with code {code} before it was ready (log: {log_path})")
        if time.monotonic() >= deadline:
            raise KairosError(
                f"kairosd (pid {proc.pid}) did not answer on {paths.socket} within {START_WAIT_S:g}s (log: {log_path})"
            )
        time.sleep(POLL_S)
    if args.json:
        print_json(
            {"started": True, "running": True, "pid": proc.pid, "socket": str(paths.socket), "log": str(log_path)}
        )
    else:
        print(f"kairosd started (pid {proc.pid}), socket {paths.socket}, log {log_path}")
    return 0


def _start_with_systemd(args: argparse.Namespace, unit: str, client: Client, socket_path: str) -> int:
    """``systemctl --user start UNIT`` (it returns once kairosd sent READY=1), then wait until it answers."""
    import time

    from kairos.commands.systemd import systemctl
    from kairos.output import print_json
    from kairosd.core.errors import KairosError

    hint = "see: kairos systemd status (or run without systemd: kairos daemon start --no-systemd)"
    proc = systemctl("start", unit)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise KairosError(f"systemctl --user start {unit} failed: {detail[-1] if detail else proc.returncode}; {hint}")
    deadline = time.monotonic() + START_WAIT_S
    status = _status_or_none(client)
    while status is None:
        if time.monotonic() >= deadline:
            wait = f"{START_WAIT_S:g}s"
            raise KairosError(f"{unit} started but kairosd did not answer on {socket_path} within {wait}; {hint}")
        time.sleep(POLL_S)
        status = _status_or_none(client)
    pid = status.get("pid")
    if args.json:
        print_json({"started": True, "running": True, "pid": pid, "socket": socket_path, "systemd_unit": unit})
    else:
        print(f"kairosd started by systemd ({unit}, pid {pid if pid else '?'}), socket {socket_path}")
        print("logs: journalctl --user -u kairosd")
    return 0


def _alive(pid: int) -> bool:
    import os

    try:
        # If the daemon is our own child, an exited one stays a zombie (and looks alive) until reaped.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # not our child: the usual case
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # An exited child of some other process (a test, a supervisor) is a zombie
    # until its parent reaps it: it has stopped all the same.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def cmd_stop(args: argparse.Namespace) -> int:
    import os

    from kairos.commands.systemd import units_for_stop
    from kairos.output import print_json

    units = units_for_stop(os.environ)
    command = _stop_units(units) if units else ""
    # What still answers is not systemd's to stop (or systemd is not involved): ask it over the API.
    client = _client(PING_TIMEOUT_S * 5)
    stopped, pid = _stop_over_api(client)
    if args.json:
        doc: dict[str, Any] = {"stopped": stopped or bool(units), "running": False}
        if units:
            doc["systemd_units"] = units
        if stopped:
            doc["pid"] = pid
        elif not units:
            doc["socket"] = str(client.socket_path)
        print_json(doc)
        return 0
    if units:
        print(f"stopped {' and '.join(units)} through systemd (ran: {command})")
        print("(enabled units start again at your next login; kairos systemd uninstall removes them)")
    if stopped:
        print(f"kairosd stopped (pid {pid if pid else '?'})")
    elif not units:
        print("kairosd is not running")
    return 0


def _stop_units(units: list[str]) -> str:
    """``systemctl --user stop UNITS`` (it returns once they stopped); the command, for the user to see."""
    from kairos.commands.systemd import display, systemctl
    from kairosd.core.errors import KairosError

    command = display(["stop", *units])
    proc = systemctl("stop", *units)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        reason = detail[-1] if detail else f"exit code {proc.returncode}"
        raise KairosError(f"could not stop kairosd through systemd ({reason}); run: {command}")
    return command


def _stop_over_api(client: Client) -> tuple[bool, Any]:
    """Shut down the kairosd answering on the socket and wait until it is gone: (whether one ran, its pid)."""
    import contextlib
    import time

    from kairos.client import DaemonNotRunning
    from kairosd.core.errors import KairosError
    from kairosd.core.protocol import route_path

    status = _status_or_none(client)
    if status is None:
        return False, None
    pid = status.get("pid")
    # It may go away between the two calls: that is what we wanted.
    with contextlib.suppress(DaemonNotRunning):
        client.call("POST", route_path("shutdown"))
    deadline = time.monotonic() + STOP_WAIT_S
    # The socket closes first; the process then drains deliveries and writes the store.
    # Wait for both, so `stop && start` never meets the old daemon's store lock.
    while client.ping() or (isinstance(pid, int) and _alive(pid)):
        if time.monotonic() >= deadline:
            raise KairosError(f"kairosd (pid {pid if pid else '?'}) did not stop within {STOP_WAIT_S:g}s")
        time.sleep(POLL_S)
    return True, pid


def cmd_status(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.client import DaemonNotRunning
    from kairos.commands.status import print_status
    from kairos.output import error, print_json
    from kairosd.core.errors import EXIT_NO_DAEMON
    from kairosd.core.protocol import route_path
    from kairosd.core.wire.status import StatusDoc

    client = _client()
    try:
        doc = client.call("GET", route_path("status"))
    except DaemonNotRunning as exc:
        if args.json:
            print_json({"running": False, "socket": str(client.socket_path)})
        error(exc.message)
        return EXIT_NO_DAEMON
    if args.json:
        print_json({"running": True, **doc})
    else:
        print_status(read(StatusDoc, doc, "GET /v1/status"))
    return 0


def cmd_reload(args: argparse.Namespace) -> int:
    from kairos.output import error, print_json
    from kairosd.core.protocol import route_path

    result = _client().call("POST", route_path("reload"))["reload"]
    if args.json:
        print_json(result)
    elif not result.get("ok"):
        error(f"config.toml not reloaded: {result.get('error')}; the settings in effect are unchanged")
    else:
        applied, restart = result.get("applied") or [], result.get("needs_restart") or []
        print("reloaded config.toml: " + (f"applied {', '.join(applied)}" if applied else "nothing new to apply"))
        if restart:
            print(f"needs a restart to take effect: {', '.join(restart)} (kairos daemon stop, then start)")
    return 0 if result.get("ok") else 1


def cmd_run(args: argparse.Namespace) -> int:
    import os
    import sys

    from kairosd.core.errors import KairosError

    if _status_or_none(_client(PING_TIMEOUT_S)) is not None:
        raise KairosError("kairosd is already running (stop it first: kairos daemon stop)")
    argv = daemon_argv(args.verbose)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)  # noqa: S606 - an argv list on purpose; no shell involved
    return 1  # pragma: no cover - execvp does not return
