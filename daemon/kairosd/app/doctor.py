"""``kairos doctor``: is every agent CLI installed and usable, is the config sound, where are the files.

:func:`doctor_report` checks, for each agent (built-in and custom): whether its
binary is found (on the given PATH, or at the configured path), and whether
``BINARY --version`` answers within a few seconds (custom agents are only looked
up: kairos does not know how to ask them for a version), and whether that version is
older than the oldest kairos supports (:mod:`kairosd.core.agentversions`; a note says what
will not work). It re-reads the config
file to report its state now, lists the socket and store paths, and asks
``loginctl`` whether the user lingers (so a systemd user service keeps running
after logout; :mod:`kairosd.system.linger`, which ``kairos systemd install`` asks too).
Each configured hook command is checked as kairosd checks it before a run (:mod:`kairosd.system.filesafety`): a file
it runs that another user could change is listed as a problem, with the fix.

The daemon serves the same report at ``GET /v1/doctor`` (:func:`kairosd.app.api.doctor_routes`):
its PATH, not the shell's, is the one headless runs use. When no kairosd runs, ``kairos doctor``
runs this module as a program (``python -m kairosd.app.doctor``: the report as JSON on stdout), so
the CLI never imports the config, the agents or the store.

Must not import the registry or the scheduler, nor the server (its route is in :mod:`kairosd.app.api`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kairosd import __version__
from kairosd.app.reload import LiveSettings, changed_keys
from kairosd.config import Config, config_path, load_config
from kairosd.core.agentversions import outdated
from kairosd.core.clock import tz_env_problem
from kairosd.core.errors import KairosError
from kairosd.store.quarantine import FILE_NAME as QUARANTINE_NAME
from kairosd.store.quarantine import Quarantine
from kairosd.system import filesafety, trust
from kairosd.system.linger import linger_state
from kairosd.system.paths import Paths
from kairosd.system.versionprobe import version_of

VERSION_TIMEOUT_S = 5.0


def doctor_report(
    config: Config,
    environ: Mapping[str, str] | None = None,
    *,
    config_error: str | None = None,
    version_timeout: float = VERSION_TIMEOUT_S,
) -> dict[str, Any]:
    """Everything ``kairos doctor`` shows, as plain JSON-ready data.

    ``config`` supplies the agents' settings; ``config_error`` is the reason the
    caller fell back to the defaults (the CLI does so on a bad file, to still
    report on the agents).
    """
    env = os.environ if environ is None else environ
    paths = Paths.from_env(None if env is os.environ else dict(env))
    agents = _check_agents(config, env, version_timeout)
    config_state = _config_state(paths, env, config_error)
    usable = [a["name"] for a in agents if a["usable"]]
    hooks = _check_hooks(config, env)
    problems = []
    if not config_state["ok"]:
        problems.append(f"config: {config_state['error']}")
    try:
        trust.check(paths)
    except trust.UnsafePathError as exc:
        problems.append(f"paths: {exc.message}")  # kairosd refuses to start on it
    for hook in hooks:
        problems.extend(
            f"hook {hook['event']} ({hook['argv'][0]}): {unsafe['problem']}, so kairosd will not run it. "
            f"Fix it with: {unsafe['fix']}"
            for unsafe in hook["unsafe"]
        )
    quarantine = Quarantine(paths.store.with_name(QUARANTINE_NAME)).status()
    if quarantine["count"]:
        problems.append(
            f"{quarantine['count']} task(s) could not be used and were set aside in {quarantine['path']}; "
            "see: kairos list --problems"
        )
    # A CLI older than the oldest kairos supports is usable, but some of kairos will not work with it.
    notes: list[str] = [str(a["outdated"]) for a in agents if a["outdated"]]
    zone_problem = tz_env_problem(env)
    if zone_problem:
        # A note, not a failure: kairos runs, in the zone named, and tasks added with --tz are exact.
        notes.append(zone_problem)
    if not usable:
        # Information, not failure: the inbox, shell and webhook targets need no agent CLI.
        notes.append(
            "no agent CLI is usable (the inbox, shell and webhook targets do not need one); for agent targets "
            "install claude, copilot, codex, gemini or opencode, or fix its binary"
        )
    return {
        "ok": not problems,
        "problems": problems,
        "notes": notes,
        "kairos_version": __version__,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "search_path": env.get("PATH", os.defpath),
        "config": config_state,
        "agents": agents,
        "usable_agents": usable,
        "hooks": hooks,
        "limits": config.limits.model_dump(),
        # The whole config as kairosd uses it: the file, then the environment's overrides, then the
        # defaults (kairosd.core.defaults); secrets show as "**********".
        "settings": config.model_dump(mode="json"),
        "paths": {
            "config": str(config_path(paths)),
            "socket": str(paths.socket),
            "store": str(paths.store),
            "state_dir": str(paths.state_dir),
            "data_dir": str(paths.data_dir),
        },
        "systemd": linger_state(env).as_json(),
        "quarantine": quarantine,
    }


def in_effect(live: LiveSettings, report: dict[str, Any], paths: Paths, environ: Mapping[str, str]) -> dict[str, Any]:
    """Whether config.toml says what kairosd has in effect: the report's ``config`` and ``problems``, updated.

    The settings shown are the ones in effect; a file changed since (not reloaded, or changed in a part
    only a restart applies) is a problem that names the keys and what to do. ``paths`` and ``environ``
    are kairosd's: the file is read as a reload would read it.
    """
    state = dict(report["config"])
    problems = list(report["problems"])
    state["differs"], state["needs_restart"] = [], list(live.needs_restart)
    if state["ok"]:
        try:
            on_file = load_config(paths, environ)
        except KairosError:
            on_file = None  # reported already, as the config's error
        if on_file is not None:
            differs = changed_keys(live.current, on_file)
            state["differs"] = differs
            restart = [k for k in differs if k in live.needs_restart]
            reloadable = [k for k in differs if k not in live.needs_restart]
            if reloadable:
                problems.append(
                    f"config: {state['path']} differs from the settings in effect ({', '.join(reloadable)}); "
                    "apply it with: kairos daemon reload"
                )
            if restart:
                problems.append(
                    f"config: {', '.join(restart)} changed in {state['path']} but only take effect when "
                    "kairosd restarts (kairos daemon stop, then kairos daemon start)"
                )
    return {"config": state, "problems": problems, "ok": not problems}


def _check_agents(config: Config, env: Mapping[str, str], timeout: float) -> list[dict[str, Any]]:
    names = config.agent_names(enabled_only=False)
    # In parallel: each probe may take up to the timeout, and there are at least five.
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        return list(pool.map(lambda name: _check_agent(name, config, env, timeout), names))


def _check_agent(name: str, config: Config, env: Mapping[str, str], timeout: float) -> dict[str, Any]:
    settings = config.agent(name)
    custom = name in config.custom
    entry: dict[str, Any] = {
        "name": name,
        "kind": "custom" if custom else "built-in",
        "enabled": settings.enabled,
        "binary": None,
        "found": False,
        "path": None,
        "version": None,
        "usable": False,
        "reason": None,
        "model": settings.model,
        "permission_mode": settings.permission_mode,
        "features": [],
        "note": None,
        "outdated": None,
    }
    if not settings.enabled:
        entry["reason"] = "disabled in the config (enabled = false)"
        return entry
    from kairosd.agents.adapters import adapter_for  # here: kairosd starts without the agent modules

    try:
        adapter = adapter_for(name, config)
    except KairosError as exc:  # pragma: no cover - a validated config always yields an adapter
        entry["reason"] = exc.message
        return entry
    entry["binary"] = adapter.binary
    entry["features"] = sorted(getattr(adapter, "features", ()))
    path = _which(adapter.binary, env)
    if path is None:
        where = "at that path" if os.sep in adapter.binary else "on PATH"
        entry["reason"] = f"{adapter.binary} not found {where}"
        return entry
    entry["found"], entry["path"] = True, path
    if custom:
        entry["usable"], entry["reason"] = True, "found (custom agents are not probed)"
        return entry
    ok, output = version_of(path, env, timeout)
    entry["version"] = output if ok else None
    entry["usable"] = ok
    entry["reason"] = None if ok else output
    entry["note"] = _agent_note(name, settings.env, settings.extra_args) if ok else None
    # Older than the oldest kairos supports: usable, but say what will not work (issue 23).
    entry["outdated"] = outdated(name, output) if ok else None
    return entry


def _agent_note(name: str, env: Mapping[str, str], extra_args: Sequence[str]) -> str | None:
    """What a usable CLI still needs before kairos' headless runs work everywhere (None: nothing)."""
    if name == "gemini":
        from kairosd.agents.gemini import UNTRUSTED_HINT

        trusted = env.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true" or "--skip-trust" in extra_args
        return None if trusted else f"headless runs fail (exit 55) where {UNTRUSTED_HINT}"
    return None


def _check_hooks(config: Config, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every configured hook command, with the files it runs that must not be trusted (none: it may run)."""
    hooks = []
    for event, specs in config.hooks.as_specs().items():
        for argv, _timeout in specs:
            argv = [os.path.expanduser(argv[0]), *argv[1:]]  # as kairosd.system.lifecycle runs it
            unsafe = [
                {"path": str(u.path), "problem": str(u), "fix": u.fix} for u in filesafety.check_command(argv, env)
            ]
            hooks.append({"event": event, "argv": argv, "ok": not unsafe, "unsafe": unsafe})
    return hooks


def _which(binary: str, env: Mapping[str, str]) -> str | None:
    if os.sep in binary:
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    return shutil.which(binary, path=env.get("PATH", os.defpath))


def _config_state(paths: Paths, env: Mapping[str, str], fallback_error: str | None) -> dict[str, Any]:
    path = config_path(paths)
    state: dict[str, Any] = {"path": str(path), "exists": path.exists(), "ok": True, "error": None}
    try:
        load_config(paths, env)
    except KairosError as exc:
        state["ok"], state["error"] = False, exc.message
    if fallback_error and state["ok"]:
        state["ok"], state["error"] = False, fallback_error
    return state


def local_report(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The report computed in this process (the CLI's fallback when kairosd is not running)."""
    env = os.environ if environ is None else environ
    paths = Paths.from_env(None if env is os.environ else dict(env))
    try:
        config, error = load_config(paths, env), None
    except KairosError as exc:
        config, error = Config(), exc.message
    return {**doctor_report(config, env, config_error=error), "checked_by": "cli"}


def main() -> int:
    """``python -m kairosd.app.doctor``: :func:`local_report` as one JSON document on stdout."""
    import json

    sys.stdout.write(json.dumps({**local_report(), "pid": os.getppid()}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
