"""Agent mode: the ``rem-agent`` definition consolidates the session, run headless through an
agent CLI's adapter (the registry's adapters). :mod:`.modes` decides whether a run goes this way.

The run is bounded: read-only (Read, Grep, Glob on the CLIs that enforce a tool list; the
read-only sandbox or plan mode on codex and gemini, which cannot; a definition that asks for more
is narrowed), a timeout after which its process group is killed, and an answer read by
:mod:`.protocol` (one ``ADD``, ``REPLACE``, ``CLOSE``, ``KEEP``, ``DROP`` or ``NONE`` line per decision). Anything
else (no such CLI, a refusal, a failed or timed-out run, an answer with no usable line) is a
failure the worker answers with offline mode, and the run's result says why.

Runs in the detached worker (blocking). Must not import the registry's state, the daemon or
the server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from kairosd.agents import catalog
from kairosd.agents.base import Permissions, TurnRequest, narrow
from kairosd.agents.catalog import AgentDefinition
from kairosd.config import BUILTIN_AGENTS, Config
from kairosd.consolidation.board.entries import Candidate
from kairosd.consolidation.remagent import modes
from kairosd.consolidation.remagent.protocol import read_answer
from kairosd.core.errors import KairosError

AGENT_NAME = catalog.BUILTIN_NAME  # "rem-agent"
READ_ONLY = Permissions("default", frozenset({"Read", "Grep", "Glob"}), frozenset())
# CLIs with no per-tool switches (their adapters refuse a tool list): read-only by their mode alone.
NO_TOOL_LISTS = frozenset({"codex", "gemini"})
KILL_GRACE_S = 5.0


@dataclass
class AgentAnswer:
    candidates: list[Candidate] = field(default_factory=list)
    error: str | None = None  # set: the run failed, use offline mode
    agent: str | None = None  # the CLI that ran it
    rejected: list[str] = field(default_factory=list)  # answer lines not applied, each with why


@dataclass(frozen=True)
class Setup:
    """How the rem-agent runs: through ``cli``, with ``model``, as ``definition`` says."""

    cli: str
    model: str | None
    definition: AgentDefinition


def definition_for(project: str) -> AgentDefinition:
    """The rem-agent definition a run in ``project`` uses (a project's or the user's own, else the built-in)."""
    found = catalog.discover(project).definitions.get(AGENT_NAME)
    return found or catalog.builtin_definition()


def choose(
    config: Config, mode: str, session_agent: str | None, project: str, environ: Mapping[str, str]
) -> tuple[Setup | None, str]:
    """Agent mode's setup, or None for offline; and why (see :mod:`.modes`)."""
    if mode == "offline":
        return None, "offline mode (the config's choice)"
    try:
        definition = definition_for(project)
    except (KairosError, OSError, ValueError) as exc:
        return None, f"no usable {AGENT_NAME} definition: {exc}"
    clis = config.agent_names()
    if mode == "auto":
        if not session_agent or session_agent not in modes.HOOK_FILES:
            return None, f"auto: kairos does not integrate {session_agent!r}; offline"
        ok, why = modes.integrated(session_agent, environ)
        if not ok:
            return None, f"auto: {why}; offline"
        cli = session_agent
    else:
        cli = session_agent if session_agent in BUILTIN_AGENTS else definition.agent
    if cli not in clis:
        return None, f"{mode}: the agent CLI {cli!r} is disabled or unknown in the config; offline"
    binary = config.agent(cli).binary or cli
    where = modes.found(binary, environ)
    if where is None:
        return None, f"{mode}: {binary!r} is not found (PATH); offline"
    model = modes.model_for(cli, config.consolidation.models, definition.model)
    return Setup(cli, model, definition), f"{mode}: through {cli} ({where}), model {model or 'the CLI default'}"


def run_rem_agent(
    *,
    config: Config,
    setup: Setup,
    project: str,
    prompt: str,
    timeout_s: float,
    environ: Mapping[str, str],
    board: Mapping[str, str],
    guesses: Collection[str] = (),
    bound_s: float | None = None,
) -> AgentAnswer:
    """One headless turn of ``rem-agent`` in ``project``; never raises for a failed run.
    ``board``: the ids the prompt showed, each with its kind; ``guesses``: those it marked guessed;
    ``timeout_s``: what is left of ``bound_s``, the run's whole bound (``agent_timeout``), which a
    timeout names (what is left is a hair under it: "0.999s" would read as another setting)."""
    # Imported here: a worker whose mode comes out offline (most of them) never loads the adapters.
    from kairosd.agents.adapters import adapter_for

    cli = setup.cli
    try:
        adapter = adapter_for(cli, config)
        # Read-only whatever the definition found asks for: a project's own rem-agent.md must not
        # widen what a background run may do.
        permissions = narrow(READ_ONLY, setup.definition.permissions(config.ceiling(cli)))
        if cli in NO_TOOL_LISTS:
            permissions = Permissions(narrow(permissions, Permissions("plan")).mode, None, permissions.denied_tools)
        request = TurnRequest(
            prompt=prompt,
            cwd=project,
            model=setup.model,
            permissions=permissions,
            agent_definition=setup.definition.prompt,
        )
        command = adapter.command(request)
    except KairosError as exc:
        return AgentAnswer(error=f"cannot run {AGENT_NAME} through {cli}: {exc}", agent=cli)
    env = {**environ, **command.env}
    try:
        proc = subprocess.Popen(
            command.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=project,
            env=env,
            start_new_session=True,  # its own group, so a timeout ends everything it started
        )
    except OSError as exc:
        return AgentAnswer(error=f"cannot start {command.argv[0]}: {exc.strerror or exc}", agent=cli)
    try:
        stdout, stderr = proc.communicate(
            command.stdin.encode("utf-8", "surrogateescape") if command.stdin else None, timeout=max(0.1, timeout_s)
        )
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        bound = f"agent_timeout, {bound_s:g}s" if bound_s is not None else f"{timeout_s:.3g}s"
        return AgentAnswer(error=f"{AGENT_NAME} timed out ({bound}; process group killed)", agent=cli)
    except BaseException:
        _kill_group(proc, grace_s=0)  # the worker is being cancelled: the agent must not outlive it
        raise
    outcome = adapter.result(stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), proc.returncode)
    if not outcome.ok:
        return AgentAnswer(error=f"{AGENT_NAME} failed: {outcome.error or 'no answer'}", agent=cli)
    parsed = read_answer(outcome.final_text, board, guesses)
    if not parsed.usable:
        error = f"{AGENT_NAME} answered without any ADD, REPLACE, CLOSE, KEEP, DROP or NONE line"
        return AgentAnswer(error=error, agent=cli, rejected=parsed.rejected)
    return AgentAnswer(candidates=parsed.candidates, agent=cli, rejected=parsed.rejected)


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float = KILL_GRACE_S) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
