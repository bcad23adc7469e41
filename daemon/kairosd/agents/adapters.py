"""Which adapter runs an agent: built-in CLIs by name, custom agents from the config,
and named agent definitions on top of either.

    adapter = adapter_for("claude", config)        # configured from [agents.claude]
    adapters = available_adapters(config)          # every enabled one, by name
    adapter = resolve_adapter("reviewer", config, cwd)   # a definition, on its CLI
    cli = cli_for("reviewer", config, cwd)         # "claude": whose ceiling and timeout apply

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kairosd.agents.base import AgentAdapter, Command, Progress, TurnOutcome, TurnRequest
from kairosd.agents.catalog import AgentDefinition, resolve
from kairosd.agents.claude import ClaudeAdapter
from kairosd.agents.codex import CodexAdapter
from kairosd.agents.common import AdapterSettings
from kairosd.agents.copilot import CopilotAdapter
from kairosd.agents.custom import CustomAdapter, CustomSpec
from kairosd.agents.gemini import GeminiAdapter
from kairosd.agents.opencode import OpencodeAdapter
from kairosd.core.errors import UsageError

if TYPE_CHECKING:
    from kairosd.config import AgentConfig, Config

BUILTIN: dict[str, Callable[[AdapterSettings], AgentAdapter]] = {
    "claude": ClaudeAdapter,
    "copilot": CopilotAdapter,
    "codex": CodexAdapter,
    "gemini": GeminiAdapter,
    "opencode": OpencodeAdapter,
}


def adapter_for(name: str, config: Config) -> AgentAdapter:
    """The adapter for a built-in CLI or a custom agent, with the user's settings applied.

    Raises UsageError for an unknown or disabled agent, listing the available ones.
    """
    try:
        settings = config.agent(name)
    except KeyError:
        available = ", ".join(config.agent_names()) or "none"
        raise UsageError(f"no agent CLI named {name!r} (available: {available})") from None
    if not settings.enabled:
        where = str(config.path) if config.path else "the config"
        raise UsageError(f"agent {name!r} is disabled in {where} (enabled = false)")
    if name in BUILTIN:
        return BUILTIN[name](_settings(settings))
    spec = config.custom[name]
    return CustomAdapter(
        name,
        CustomSpec(
            argv=tuple(spec.argv),
            resume_argv=tuple(spec.resume_argv) if spec.resume_argv is not None else None,
            prompt_stdin=spec.prompt_stdin,
            output=spec.output,
            text_field=spec.text_field,
            session_field=spec.session_field,
            model=spec.model,
            permission_mode=spec.permission_mode,
            env=dict(spec.env),
        ),
    )


def available_adapters(config: Config) -> dict[str, AgentAdapter]:
    """Every enabled agent (built-ins first, then custom ones by name) and its adapter."""
    return {name: adapter_for(name, config) for name in config.agent_names()}


class DefinitionAdapter:
    """A CLI's adapter running a named agent definition.

    Every turn carries the definition's instructions, its model unless the task
    names one, and its permissions, which only narrow the task's own. Output is
    parsed by the CLI's adapter.
    """

    def __init__(self, inner: AgentAdapter, definition: AgentDefinition) -> None:
        self.inner = inner
        self.definition = definition
        self.name = inner.name
        self.binary = inner.binary
        self.supports_resume = inner.supports_resume
        self.features: frozenset[str] = getattr(inner, "features", frozenset())

    def command(self, request: TurnRequest) -> Command:
        own = self.definition
        return self.inner.command(
            dataclasses.replace(
                request,
                model=request.model or own.model,
                permissions=own.permissions(request.permissions),
                agent_definition=request.agent_definition or own.prompt or None,
            )
        )

    def progress(self, line: str) -> Progress | None:
        return self.inner.progress(line)

    def result(self, stdout: str, stderr: str, exit_code: int) -> TurnOutcome:
        return self.inner.result(stdout, stderr, exit_code)


def resolve_adapter(
    name: str,
    config: Config,
    cwd: str | os.PathLike[str] | None = None,
    home: str | None = None,
) -> AgentAdapter:
    """The adapter for what a task names: a CLI (``claude``, ``agent:claude``) or a definition.

    Definitions are looked up from ``cwd`` (project) and ``home`` (user); without a
    cwd only user definitions and the built-in ones are seen. UsageError lists the
    available names for an unknown one.
    """
    resolved = resolve(name, config, cwd, home)
    adapter = adapter_for(resolved.cli, config)
    return DefinitionAdapter(adapter, resolved.definition) if resolved.definition else adapter


def cli_for(name: str, config: Config, cwd: str | os.PathLike[str] | None = None, home: str | None = None) -> str:
    """The CLI that runs ``name`` (itself, or a definition's ``agent``): its config
    section supplies the permission ceiling and the timeout."""
    return resolve(name, config, cwd, home).cli


def _settings(config: AgentConfig) -> AdapterSettings:
    return AdapterSettings(
        binary=config.binary,
        model=config.model,
        extra_args=tuple(config.extra_args),
        env=dict(config.env),
    )
