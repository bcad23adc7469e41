"""Which adapter runs an agent CLI: built-in CLIs by name and custom agents from the config.

    adapter = adapter_for("claude", config)        # configured from [agents.claude]

A named agent definition runs on its CLI's adapter: the registry resolves it
(:func:`kairosd.agents.catalog.resolve`) and passes its instructions, model and
permissions in each :class:`~kairosd.agents.base.TurnRequest`.

Must not import the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kairosd.agents.base import AgentAdapter
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


def _settings(config: AgentConfig) -> AdapterSettings:
    return AdapterSettings(
        binary=config.binary,
        model=config.model,
        extra_args=tuple(config.extra_args),
        env=dict(config.env),
    )
