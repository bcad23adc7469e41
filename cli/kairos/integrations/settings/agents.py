"""What ``kairos integrate AGENT`` puts where: each agent CLI's user-level files and entries.

Every hook runs ``<kairos> hook AGENT EVENT`` with EVENT the CLI's own event name (what
:mod:`kairos.integrations.hook` expects), or ``wait`` for Claude Code's asyncRewake waiter:

==============  =====================  ===================  =================  ====================
what            Claude Code            Copilot CLI          Codex              Gemini CLI
==============  =====================  ===================  =================  ====================
session start   SessionStart           sessionStart         SessionStart       SessionStart
user prompt     UserPromptSubmit       userPromptSubmitted  UserPromptSubmit   BeforeAgent
turn boundary   Stop                   agentStop            Stop               AfterAgent
session end     SessionEnd             sessionEnd           SessionEnd         SessionEnd
waiter          wait, at SessionStart  wait, from the        -                  -
                and Stop (default)     extension (opt-in)
==============  =====================  ===================  =================  ====================

Files (user level only; ``COPILOT_HOME`` and ``CODEX_HOME`` move those CLIs' folders):

- Claude Code: hooks and the ``mcp__kairos`` allow rule in ``~/.claude/settings.json``; MCP server
  (user scope) in ``~/.claude.json``.
- Copilot CLI: hooks in ``~/.copilot/hooks/kairos.json`` (a file of its own); MCP in ``~/.copilot/mcp-config.json``;
  :mod:`kairos.integrations.settings.copilot` adds, with ``--idle-wake``, the extension
  ``~/.copilot/extensions/kairos/extension.mjs`` and ``"experimental": true`` in ``~/.copilot/settings.json``.
- Codex: hooks in ``~/.codex/hooks.json``; MCP as ``[mcp_servers.kairos]`` in ``~/.codex/config.toml``, and
  there ``thread_unload_delay_secs = 0`` (first line), so a quit TUI ends its session at once rather than a
  minute later, when the shared app-server unloads the thread (a value the user set is kept).
- Gemini CLI: hooks and MCP in ``~/.gemini/settings.json``.
- opencode: no hooks but a plugin, ``~/.config/opencode/plugin/kairos.js``, that runs ``kairos hook
  opencode EVENT`` with Claude's event names; MCP in ``~/.config/opencode/opencode.json`` (see
  :mod:`kairos.integrations.settings.opencode`; ``XDG_CONFIG_HOME`` moves the folder).

Timeouts are in each CLI's unit (seconds; Gemini milliseconds). Claude's SessionEnd hook has no
timeout of its own: Claude gives SessionEnd hooks 1.5 s in all and kairos answers well within it.
Codex has SessionEnd since 0.16x (0.169 runs it on exit): without it an ended Codex session would
stay "live" until it expired and collect prompts meant for a session that is open.

Pure: paths are computed, nothing is read or written. Must not import kairosd beyond ``errors``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairos.integrations.settings import merge

AGENTS = ("claude", "copilot", "codex", "gemini")  # opencode: :mod:`.opencode` plans its own files
HOOK_TIMEOUT_S = 10
# The waiter covers a whole idle day: Claude's async hook runs until its `timeout`, and the waiter's own
# lifetime (`--max-wait`) ends a minute before it, so it exits by itself rather than being killed.
# Every Stop re-arms it, and a session idle for longer than kairosd's session TTL (24 h) has expired.
REWAKE_LIFETIME_S = 86_400
REWAKE_MARGIN_S = 60
Transform = Callable[[str | None], tuple[str | None, list[str]]]


@dataclass(frozen=True)
class Context:
    """Everything a plan depends on: where home is, which kairos to run, and what to do."""

    home: Path
    kairos: str  # absolute path of the kairos executable
    environ: Mapping[str, str] = field(default_factory=dict)
    install: bool = True
    with_rewake: bool = True  # Claude's asyncRewake waiter (`--no-rewake` leaves it out)
    rewake_lifetime: int = REWAKE_LIFETIME_S
    # Copilot's opt-in idle-wake extension: True installs it, False removes it, None keeps what is there.
    idle_wake: bool | None = None

    @property
    def kairos_home(self) -> str | None:
        # A KAIROS_HOME set while integrating must reach the hooks and the MCP server too,
        # or they would talk to another daemon than this shell's.
        value = self.environ.get("KAIROS_HOME", "").strip()
        # Absolute, as kairos itself reads it: hooks run in other folders than this shell.
        return os.path.abspath(os.path.expanduser(value)) if value else None

    def dot_dir(self, name: str, env_var: str | None = None) -> Path:
        override = self.environ.get(env_var, "").strip() if env_var else ""
        return Path(override).expanduser() if override else self.home / name

    def hook_command(self, agent: str, event: str, *options: str) -> str:
        prefix = f"KAIROS_HOME={shlex.quote(self.kairos_home)} " if self.kairos_home else ""
        tail = "".join(" " + shlex.quote(o) for o in options)
        return f"{prefix}{shlex.quote(self.kairos)} hook {agent} {event}{tail}"

    def mcp_env(self) -> dict[str, str]:
        return {"KAIROS_HOME": self.kairos_home} if self.kairos_home else {}


@dataclass(frozen=True)
class FilePlan:
    """One file to change: ``transform`` maps its text (None: no file) to the new text (None: no file)."""

    path: Path
    what: str  # "hooks", "MCP server", ..., for messages
    transform: Transform


def plan(agent: str, ctx: Context) -> tuple[list[FilePlan], list[str]]:
    """The files ``kairos integrate AGENT`` changes, and what to tell the user afterwards."""
    builders = {"claude": _claude, "copilot": _copilot, "codex": _codex, "gemini": _gemini}
    return builders[agent](ctx)


def _json_plan(path: Path, what: str, change: Callable[[dict[str, Any], str], dict[str, Any]]) -> FilePlan:
    def transform(text: str | None) -> tuple[str | None, list[str]]:
        data = merge.parse_json_object(text, str(path))
        new = change(data, str(path))
        if text is not None and new == data:
            return text, []  # nothing to do: the file stays byte for byte
        if text is None and not new:
            return None, []
        return merge.dump_json(new, text), []

    return FilePlan(path, what, transform)


# ---- Claude Code -----------------------------------------------------------------------------------


def claude_hooks(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    def handler(event: str, *options: str, **extra: Any) -> dict[str, Any]:
        return {"type": "command", "command": ctx.hook_command("claude", event, *options), **extra}

    hooks = {
        "SessionStart": [handler("SessionStart", timeout=HOOK_TIMEOUT_S)],
        "UserPromptSubmit": [handler("UserPromptSubmit", timeout=HOOK_TIMEOUT_S)],
        "Stop": [handler("Stop", timeout=HOOK_TIMEOUT_S)],
        "SessionEnd": [handler("SessionEnd")],
    }
    if ctx.with_rewake:
        # Armed at start and re-armed after every turn; it exits 2 with a due prompt, which wakes the session.
        margin = REWAKE_MARGIN_S if ctx.rewake_lifetime >= 10 * REWAKE_MARGIN_S else max(ctx.rewake_lifetime // 10, 1)
        max_wait = str(max(ctx.rewake_lifetime - margin, 1))
        for event in ("SessionStart", "Stop"):
            hooks[event].append(handler("wait", "--max-wait", max_wait, asyncRewake=True, timeout=ctx.rewake_lifetime))
    return hooks


CLAUDE_MCP_RULE = "mcp__kairos"  # every tool of the kairos MCP server, without a prompt


def _claude(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    claude_dir = ctx.dot_dir(".claude")

    def claude_change(data: dict[str, Any], where: str) -> dict[str, Any]:
        data = merge.merge_grouped_hooks(data, claude_hooks(ctx), where, install=ctx.install)
        # kairos' tools only read and change the user's kairos schedule; without the rule a headless
        # `claude -p` (kairos' own runs) refuses them, so a task could not schedule its follow-up.
        return merge.merge_allow_rule(data, CLAUDE_MCP_RULE, where, install=ctx.install)

    entry = {"type": "stdio", "command": ctx.kairos, "args": ["mcp"], **_env_field(ctx)}
    plans = [
        _json_plan(claude_dir / "settings.json", "hooks", claude_change),
        _json_plan(
            ctx.home / ".claude.json",
            "MCP server",
            lambda data, where: merge.merge_mcp_server(data, entry, where, install=ctx.install),
        ),
    ]
    notes = (
        [
            "Claude Code reads hooks when a session starts: restart open sessions.",
            "Claude Code rewrites ~/.claude.json while it runs; if /mcp does not list kairos, run this again "
            "with no Claude Code session open.",
        ]
        if ctx.install
        else []
    )
    return plans, notes


# ---- Copilot CLI -----------------------------------------------------------------------------------


def copilot_hooks(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    def entry(event: str) -> dict[str, Any]:
        return {"type": "command", "bash": ctx.hook_command("copilot", event), "timeoutSec": HOOK_TIMEOUT_S}

    # Copilot drops the output of command hooks on userPromptSubmitted: there it only marks the session active.
    events = ("sessionStart", "userPromptSubmitted", "agentStop", "sessionEnd")
    return {event: [entry(event)] for event in events}


def _copilot(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    folder = copilot_dir(ctx)
    hooks_path = folder / "hooks" / "kairos.json"

    def hooks_transform(text: str | None) -> tuple[str | None, list[str]]:
        data = merge.parse_json_object(text, str(hooks_path))
        new = merge.merge_flat_hooks(data, copilot_hooks(ctx), str(hooks_path), install=ctx.install)
        if text is not None and new == data:
            return text, []
        if not ctx.install and merge.is_only_kairos_file(new):
            return None, []  # the file was kairos' own
        return merge.dump_json(new, text), []

    entry = {"type": "local", "command": ctx.kairos, "args": ["mcp"], **_env_field(ctx), "tools": ["*"]}
    plans = [
        FilePlan(hooks_path, "hooks", hooks_transform),
        _json_plan(
            folder / "mcp-config.json",
            "MCP server",
            lambda data, where: merge.merge_mcp_server(data, entry, where, install=ctx.install),
        ),
    ]
    notes = ["Copilot CLI loads hooks and MCP servers when it starts: restart open sessions."] if ctx.install else []
    return plans, notes


def copilot_dir(ctx: Context) -> Path:
    return ctx.dot_dir(".copilot", "COPILOT_HOME")


# ---- Codex -------------------------------------------------------------------------------------------


def codex_hooks(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    def handler(event: str) -> dict[str, Any]:
        return {"type": "command", "command": ctx.hook_command("codex", event), "timeout": HOOK_TIMEOUT_S}

    return {event: [handler(event)] for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")}


def _codex(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    codex_dir = ctx.dot_dir(".codex", "CODEX_HOME")
    config_path = codex_dir / "config.toml"
    block = merge.codex_mcp_block(ctx.kairos, ctx.mcp_env())

    def config_transform(text: str | None) -> tuple[str | None, list[str]]:
        new, notes = merge.merge_toml_mcp(text, block, str(config_path), install=ctx.install)
        if new is not None:
            new, more = merge.merge_toml_unload_delay(new, str(config_path), install=ctx.install)
            notes += more
        hooks = merge.parse_toml(text, str(config_path)).get("hooks")
        if ctx.install and isinstance(hooks, dict) and set(hooks) - {"state"}:
            notes.append(f"{config_path} also defines [hooks]; Codex merges them with hooks.json and warns at start-up")
        return new, notes

    hooks_path = codex_dir / "hooks.json"

    def hooks_transform(text: str | None) -> tuple[str | None, list[str]]:
        data = merge.parse_json_object(text, str(hooks_path))
        new = merge.merge_grouped_hooks(data, codex_hooks(ctx), str(hooks_path), install=ctx.install)
        if text is not None and new == data:
            return text, []
        if not ctx.install and not new:
            return None, []  # only kairos' hooks were in it: remove the file rather than leave "{}"
        return merge.dump_json(new, text), []

    plans = [
        FilePlan(hooks_path, "hooks", hooks_transform),
        FilePlan(config_path, "MCP server; thread_unload_delay_secs = 0", config_transform),
    ]
    notes = (
        ["Codex runs a new or changed hook only after you review and trust it: open /hooks in Codex."]
        if ctx.install
        else []
    )
    return plans, notes


# ---- Gemini CLI ------------------------------------------------------------------------------------


def gemini_hooks(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    def handler(event: str) -> dict[str, Any]:
        return {
            "name": f"kairos-{event}",  # what /hooks enable|disable take
            "type": "command",
            "command": ctx.hook_command("gemini", event),
            "timeout": HOOK_TIMEOUT_S * 1000,  # milliseconds
        }

    return {event: [handler(event)] for event in ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd")}


def _gemini(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    settings = ctx.dot_dir(".gemini") / "settings.json"
    # trust: Gemini runs the server's tools without asking; headless (kairos' own runs) it otherwise
    # leaves them out of the request altogether. See README, "MCP tools without a prompt".
    entry = {"command": ctx.kairos, "args": ["mcp"], **_env_field(ctx), "trust": True}

    def change(data: dict[str, Any], where: str) -> dict[str, Any]:
        data = merge.merge_grouped_hooks(data, gemini_hooks(ctx), where, install=ctx.install)
        return merge.merge_mcp_server(data, entry, where, install=ctx.install)

    notes = (
        ["Gemini CLI runs hooks only while its hooks system is enabled: check /hooks panel, then restart it."]
        if ctx.install
        else []
    )
    return [_json_plan(settings, "hooks and MCP server", change)], notes


def _env_field(ctx: Context) -> dict[str, Any]:
    env = ctx.mcp_env()
    return {"env": env} if env else {}
