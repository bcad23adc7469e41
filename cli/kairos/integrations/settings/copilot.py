"""Copilot CLI's opt-in idle wake: kairos' extension, and the experimental mode that loads it.

Copilot CLI hooks cannot start a turn, but its extensions can: each
``<COPILOT_HOME>/extensions/<name>/extension.mjs`` runs beside every session and may ``send`` a prompt
into it. Copilot loads extensions only in experimental mode (``"experimental": true`` in
``settings.json``, which ``copilot --experimental`` also sets), so this is opt-in:

- ``kairos integrate copilot --idle-wake`` writes ``extensions/kairos/extension.mjs`` (the template
  ``copilot_extension.mjs``, with this kairos' path) and sets ``experimental`` in ``settings.json``
  (every other setting kept);
- ``--no-idle-wake`` and ``--uninstall`` remove the extension and leave ``experimental`` as it is (other
  extensions or features may rely on it), saying so;
- a plain ``kairos integrate copilot`` refreshes an extension that is there and says how to opt in when
  it is not.

A file of that name that is not kairos' (its first line says whose) is refused on install and left alone
on removal. Reads its own package's template; otherwise pure. Must not import kairosd beyond ``errors``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from kairos.integrations.settings import agents, merge
from kairos.integrations.settings.agents import Context, FilePlan
from kairos.integrations.settings.merge import Refused

EXTENSION_DIR = "kairos"
EXTENSION_TEMPLATE = "copilot_extension.mjs"
EXTENSION_HEADER = "// kairos for Copilot CLI"  # the template's first line: how kairos knows its own file
EXPERIMENTAL = "experimental"
OPT_IN = (
    "idle wake is off for Copilot CLI: its hooks cannot start a turn, so a prompt that falls due while a "
    "session is idle waits for that session's next turn. `kairos integrate copilot --idle-wake` opts in: it "
    "installs a Copilot extension that starts the turn, and turns on Copilot's experimental mode, which "
    "extensions need"
)


def extension_text(ctx: Context) -> str:
    template = resources.files("kairos.integrations.settings").joinpath(EXTENSION_TEMPLATE).read_text(encoding="utf-8")
    # JSON string literals are valid JavaScript ones: the paths reach the extension exactly.
    text = template.replace("__KAIROS_HOME__", json.dumps(ctx.kairos_home))
    return text.replace("__KAIROS__", json.dumps(ctx.kairos))


def plan(ctx: Context) -> tuple[list[FilePlan], list[str]]:
    """Everything ``kairos integrate copilot`` changes: the hooks and MCP server, and the idle wake's files."""
    plans, notes = agents.plan("copilot", ctx)
    extension, extension_notes = idle_wake_plans(ctx, agents.copilot_dir(ctx))
    return plans + extension, notes + extension_notes


def idle_wake_plans(ctx: Context, copilot_dir: Path) -> tuple[list[FilePlan], list[str]]:
    """The extension's file plan (none when there is nothing to do to it) and, when opting in,
    ``settings.json``'s; the notes for the user."""
    path = copilot_dir / "extensions" / EXTENSION_DIR / "extension.mjs"
    notes: list[str] = []
    present = _exists(path)
    wanted = ctx.install and ctx.idle_wake is not False

    def extension_transform(text: str | None) -> tuple[str | None, list[str]]:
        if text is not None and not text.startswith(EXTENSION_HEADER):
            if not ctx.install or ctx.idle_wake is not True:
                return text, []  # someone else's extension that happens to have the name
            raise Refused(f"{path} is not kairos' extension; kairos leaves it alone (rename its folder, then retry)")
        if wanted and (ctx.idle_wake is True or text is not None):
            return extension_text(ctx), []
        if text is not None and ctx.install:
            return None, ["idle wake for Copilot CLI is off again; experimental mode was left as it is"]
        return None, []

    touch = ctx.idle_wake is True or present
    result = [FilePlan(path, "idle-wake extension", extension_transform)] if touch else []
    if ctx.install and ctx.idle_wake is True:
        settings = copilot_dir / "settings.json"
        result.append(FilePlan(settings, "experimental mode (loads extensions)", _settings_transform(settings)))
        notes.append(
            "idle wake: a prompt that falls due while a Copilot session is idle now starts a turn in it (after the "
            "session's first turn). Copilot's experimental mode is on for all your sessions; --no-idle-wake "
            "removes the extension and leaves that setting to you"
        )
    elif ctx.install and ctx.idle_wake is None and not present:
        notes.append(OPT_IN)
    elif not ctx.install and present:
        notes.append("Copilot's experimental mode (settings.json) was left as it is")
    return result, notes


def _settings_transform(settings: Path) -> Any:
    def transform(text: str | None) -> tuple[str | None, list[str]]:
        data = merge.parse_json_object(text, str(settings))
        if data.get(EXPERIMENTAL) is True:
            return text, []
        return merge.dump_json({**data, EXPERIMENTAL: True}, text), []

    return transform


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False
