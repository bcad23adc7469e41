"""``kairos doctor``: which agent CLIs are installed and usable, and whether the config is sound.

Asks the running daemon (``GET /v1/doctor``): headless agent runs use kairosd's
PATH and config, not this shell's. When kairosd is not running (or is too old
to answer), the same report is computed from this shell, with a note saying so:
by ``python -m kairosd.app.doctor`` in a child process, so the CLI imports none of
the daemon's config, agents or store (the ``cli-public-face`` contract).

Exit code: 0 when the config is sound (and no hook is unsafe), 1 otherwise. A
missing agent CLI is a note, not a failure: the inbox needs none.

Either report is read as its model (:mod:`kairos.answers`, ``DoctorDoc``) and printed from it;
``--json`` prints it as it came, with the ``note``.

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import make_parser
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairosd.core.wire.doctor import DoctorDoc

# The daemon probes every agent's --version in parallel (each bounded by a few seconds).
DOCTOR_TIMEOUT_S = 30.0


def register(subparsers: Any) -> None:
    parser = make_parser(
        subparsers,
        "doctor",
        "check agent CLIs, the config file and kairos' paths",
        "Report which agent CLIs (claude, copilot, codex, gemini, opencode and custom agents) are "
        "installed and answer --version, whether the config file is valid, where the socket and store "
        "are, and whether systemd keeps your user services running after logout. Asks kairosd (its PATH "
        "is what headless runs use); without a daemon, checks from this shell. Exits 1 if the config is "
        "broken or a hook is unsafe; missing agent CLIs are listed, not failures (the inbox needs none).",
        "kairos doctor\nkairos doctor --json | jq '.usable_agents'",
    )
    parser.set_defaults(handler=cmd_doctor)


def fetch_report() -> tuple[dict[str, Any], str | None]:
    """The daemon's report (as it came), or a local one and the reason it is local."""
    from kairos.answers import read
    from kairos.client import ApiError, Client, DaemonNotRunning
    from kairosd.core.wire.doctor import DoctorAnswer

    try:
        doc = Client(timeout=DOCTOR_TIMEOUT_S).call("GET", route_path("doctor"))
    except DaemonNotRunning:
        note = "kairosd is not running: checked from this shell (its PATH and environment)"
    except ApiError as exc:
        if exc.code != "not_found":
            raise
        note = "this kairosd has no doctor endpoint (restart it after upgrading): checked from this shell"
    else:
        read(DoctorAnswer, doc, "GET /v1/doctor")
        report: dict[str, Any] = doc["doctor"]
        return report, None
    return local_report(), note


def local_report() -> dict[str, Any]:
    """The daemon's doctor, run once in a child process from this shell (its PATH and environment)."""
    import json
    import subprocess
    import sys

    from kairosd.core.errors import KairosError

    argv = [sys.executable, "-m", "kairosd.app.doctor"]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DOCTOR_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KairosError(f"the local check ({' '.join(argv[1:])}) failed: {exc}") from None
    try:
        report = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        report = None
    if not isinstance(report, dict):
        detail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise KairosError(f"the local check ({' '.join(argv[1:])}) failed: {detail}")
    return report


def cmd_doctor(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.output import print_json
    from kairosd.core.wire.doctor import DoctorDoc

    answer, note = fetch_report()
    if note:
        answer["note"] = note
    report = read(DoctorDoc, answer, "GET /v1/doctor" if note is None else "python -m kairosd.app.doctor")
    if args.json:
        print_json(answer)
    else:
        print_report(report)
    return 0 if report.ok else 1


def print_report(report: DoctorDoc) -> None:
    who = "kairosd" if report.checked_by == "kairosd" else "this shell"
    print(f"kairos {report.kairos_version} doctor (checked by {who}, pid {report.pid})")
    if report.note:
        print(f"note: {report.note}")
    config = report.config
    if not config.ok:
        state = f"BROKEN: {config.error}"
    elif config.exists:
        state = "ok"
    else:
        state = "not present (defaults)"
    print(f"config:  {config.path}  {state}")
    print("agents:")
    width = max((len(a.name) for a in report.agents), default=6)
    for agent in report.agents:
        if agent.usable:
            status, detail = "ok", f"{agent.path}  {agent.version or ''}".rstrip()
        elif not agent.enabled:
            status, detail = "off", agent.reason or ""
        elif agent.found:
            status, detail = "broken", agent.reason or ""
        else:
            status, detail = "missing", agent.reason or ""
        print(f"  {agent.name:<{width}}  {status:<7}  {detail}")
        if agent.note:
            print(f"  {'':<{width}}  note:    {agent.note}")
    print(f"socket:  {report.paths.get('socket')}")
    print(f"store:   {report.paths.get('store')}")
    quarantine = report.quarantine
    if quarantine.count:
        print(f"set aside: {quarantine.count} task(s) in {quarantine.path} (kairos list --problems)")
    print("settings (in effect; durations in seconds; --json lists every one):")
    for section in ("limits", "consolidation", "webhook"):
        values = report.settings.get(section) or {}
        if values:
            print(f"  {section + ':':<15}{', '.join(f'{key} {_setting(value)}' for key, value in values.items())}")
    # Unknown is said with its reason (no loginctl, no session), as `kairos systemd install` says it.
    value = report.systemd.linger
    linger = "yes" if value is True else "no" if value is False else "unknown"
    print(f"linger:  {linger} ({report.systemd.detail})")
    for note in report.notes:
        print(f"note:    {note}")
    for problem in report.problems:
        print(f"problem: {problem}")


def _setting(value: Any) -> str:
    """One setting as ``kairos doctor`` prints it: numbers without trailing zeros, unset as -."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)
