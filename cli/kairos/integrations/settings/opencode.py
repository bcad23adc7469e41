"""What ``kairos integrate opencode`` writes: kairos' plugin and its MCP server in opencode's user config.

opencode has no hook settings: it loads every ``*.js`` file in ``<config>/opencode/plugin/``
(``<config>`` is ``$XDG_CONFIG_HOME``, else ``~/.config``), in the TUI and in ``opencode run``
alike. kairos' plugin (``opencode_plugin.js`` here, with this kairos' path filled in) is written
there as ``kairos.js``: a file of kairos' own, removed whole by ``--uninstall``. It runs
``kairos hook opencode EVENT`` as the other CLIs' hooks do (see the plugin's header).

The MCP server is ``mcp.kairos`` in ``<config>/opencode/opencode.json`` (``opencode.jsonc`` when
only that one exists), merged: every other key stays. opencode reads JSON with comments; kairos
does not rewrite such a file (the comments would be lost) and refuses it with the entry to add by
hand. An ``mcp.kairos`` that does not run ``kairos mcp`` is the user's: install refuses, uninstall
leaves it.

Reads its own package's plugin template; otherwise pure. Must not import kairosd beyond ``errors``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

from kairos.integrations.settings import merge
from kairos.integrations.settings.agents import Context, FilePlan
from kairos.integrations.settings.merge import Refused

PLUGIN_NAME = "kairos.js"
PLUGIN_TEMPLATE = "opencode_plugin.js"
PLUGIN_HEADER = "// kairos for opencode"  # the template's first line: how kairos knows its own file
# Strings and comments of JSON with comments, for telling "has comments" apart from "broken".
_JSONC_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def config_dir(ctx: Context) -> Path:
    """opencode's user config folder: ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``."""
    xdg = ctx.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else ctx.home / ".config"
    return base / "opencode"


def plugin_text(ctx: Context) -> str:
    template = resources.files("kairos.integrations.settings").joinpath(PLUGIN_TEMPLATE).read_text(encoding="utf-8")
    # JSON string literals are valid JavaScript ones: the paths reach the plugin exactly.
    text = template.replace("__KAIROS_HOME__", json.dumps(ctx.kairos_home))
    return text.replace("__KAIROS__", json.dumps(ctx.kairos))


def mcp_entry(ctx: Context) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "local", "command": [ctx.kairos, "mcp"], "enabled": True}
    env = ctx.mcp_env()
    if env:
        entry["environment"] = env
    return entry


def is_kairos_mcp_entry(entry: Any) -> bool:
    """opencode's form: ``{"type": "local", "command": [".../kairos", "mcp", ...]}``."""
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    return (
        isinstance(command, list)
        and len(command) >= 2
        and isinstance(command[0], str)
        and os.path.basename(command[0]) == "kairos"
        and command[1] == "mcp"
    )


def plan(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    folder = config_dir(ctx)
    plugin_path = folder / "plugin" / PLUGIN_NAME
    plugin = plugin_text(ctx)

    def plugin_transform(text: str | None) -> tuple[str | None, list[str]]:
        if text is not None and not text.startswith(PLUGIN_HEADER):
            if not ctx.install:
                return text, []  # someone else's file that happens to have the name
            raise Refused(f"{plugin_path} is not kairos' plugin; kairos leaves it alone (rename it, then try again)")
        return (plugin if ctx.install else None), []

    config_path = folder / "opencode.json"
    if not _exists(config_path) and _exists(folder / "opencode.jsonc"):
        config_path = folder / "opencode.jsonc"

    def config_transform(text: str | None) -> tuple[str | None, list[str]]:
        data = parse_config(text, str(config_path), mcp_entry(ctx))
        new = merge_mcp(data, mcp_entry(ctx), str(config_path), install=ctx.install)
        if text is not None and new == data:
            return text, []
        if text is None and not new:
            return None, []
        if not ctx.install and set(new) <= {"$schema"} and "mcp" in data:
            return None, []  # what kairos created: nothing but its entry (and the schema) was in it
        if text is None:
            new = {"$schema": "https://opencode.ai/config.json", **new}
        return merge.dump_json(new, text), []

    plans = [FilePlan(plugin_path, "plugin", plugin_transform), FilePlan(config_path, "MCP server", config_transform)]
    notes = ["opencode loads plugins and MCP servers when it starts: restart open sessions."] if ctx.install else []
    return plans, notes


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def parse_config(text: str | None, where: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The config object; Refused, with the entry to add by hand, for JSON with comments."""
    try:
        return merge.parse_json_object(text, where)
    except Refused:
        if text is None or not has_comments(text):
            raise
    snippet = json.dumps({"mcp": {merge.MCP_NAME: entry}}, indent=2)
    raise Refused(
        f"{where} has comments (JSON with comments, which opencode reads); kairos does not rewrite it, as "
        f"the comments would be lost. Add this to it by hand (or remove the comments and run this again):\n{snippet}"
    )


def has_comments(text: str) -> bool:
    """Whether ``text`` is JSON once its ``//`` and ``/* */`` comments (and trailing commas) are gone."""
    found = False

    def strip(match: re.Match[str]) -> str:
        nonlocal found
        token = match.group(0)
        if token.startswith('"'):
            return token
        found = True
        return " "

    plain = _TRAILING_COMMA.sub(r"\1", _JSONC_TOKENS.sub(strip, text))
    try:
        json.loads(plain)
    except ValueError:
        return False
    return found or plain != text


def merge_mcp(data: dict[str, Any], entry: dict[str, Any], where: str, *, install: bool) -> dict[str, Any]:
    """``mcp.kairos = entry``: replaced if it already runs ``kairos mcp``, refused if it runs something else."""
    result = copy.deepcopy(data)
    servers = result.get("mcp")
    if servers is None:
        if not install:
            return result
        servers = result["mcp"] = {}
    if not isinstance(servers, dict):
        raise Refused(f"{where}: 'mcp' is not a JSON object; kairos leaves the file alone")
    existing = servers.get(merge.MCP_NAME)
    if existing is not None and not is_kairos_mcp_entry(existing):
        if not install:
            return result
        raise Refused(
            f"{where}: mcp.{merge.MCP_NAME} is already configured and does not run 'kairos mcp'; kairos leaves it "
            "alone (rename or remove it, then run this again)"
        )
    if install:
        servers[merge.MCP_NAME] = entry
    elif existing is not None:
        del servers[merge.MCP_NAME]
        if not servers:
            del result["mcp"]
    return result
