"""Add or remove kairos' entries in an agent CLI's settings, keeping everything else.

Pure: documents in, documents out; nothing here reads or writes a file. Anything whose shape is
not what the CLI documents is refused with a :class:`Refused` that says where, rather than
rewritten: the user's file is theirs.

Installing first removes every kairos entry, then appends the new ones, so running it again
(after moving kairos, or with other options) converges instead of piling up duplicates.

Must not import anything from kairos or kairosd except ``kairosd.core.errors``.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from kairosd.core.errors import KairosError

MCP_NAME = "kairos"
TOML_BEGIN = "# >>> kairos >>>"
TOML_END = "# <<< kairos <<<"
_COMMAND_KEYS = ("command", "bash", "powershell")


class Refused(KairosError):
    """A settings file kairos will not touch; the message says which and why."""

    code = "refused"
    http_status = 403  # kairos will not touch that file: refused, not a fault


# ---- recognising kairos' entries -------------------------------------------------------------


def _argv(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    while words and "=" in words[0] and not words[0].startswith("=") and "/" not in words[0].split("=", 1)[0]:
        words = words[1:]  # leading NAME=VALUE assignments (KAIROS_HOME=...) are not the program
    return words


def _is_kairos(program: str) -> bool:
    return os.path.basename(program) == "kairos"


def is_kairos_hook_command(command: Any) -> bool:
    """True for a shell command line ``[NAME=VALUE ...] <dir>/kairos hook ...``."""
    if not isinstance(command, str):
        return False
    argv = _argv(command)
    return len(argv) >= 2 and _is_kairos(argv[0]) and argv[1] == "hook"


def is_kairos_handler(handler: Any) -> bool:
    """A hook handler object (any CLI's) that runs ``kairos hook``."""
    if not isinstance(handler, dict):
        return False
    if any(is_kairos_hook_command(handler.get(key)) for key in _COMMAND_KEYS):
        return True
    args = handler.get("args")
    # Copilot's exec form: {"exec": ".../kairos", "args": ["hook", ...]}
    return (
        isinstance(handler.get("exec"), str)
        and _is_kairos(handler["exec"])
        and isinstance(args, list)
        and args[:1] == ["hook"]
    )


def is_kairos_mcp_server(entry: Any) -> bool:
    """An MCP server entry that runs ``<dir>/kairos mcp``."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    return isinstance(command, str) and _is_kairos(command) and isinstance(args, list) and args[:1] == ["mcp"]


# ---- JSON documents ------------------------------------------------------------------------


def parse_json_object(text: str | None, where: str) -> dict[str, Any]:
    """The settings object in ``text`` ({} for no file or an empty one); Refused for anything else."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Refused(
            f"{where} is not valid JSON ({exc}); kairos does not edit a file it cannot parse: fix it, or add "
            "the entries from examples/integrations by hand"
        ) from None
    if not isinstance(data, dict):
        raise Refused(f"{where} does not hold a JSON object at the top; kairos leaves it alone")
    return data


def dump_json(data: Mapping[str, Any], like: str | None) -> str:
    """``data`` as JSON indented like the original text (2 spaces for a new file), with a final newline."""
    return json.dumps(data, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _indent_of(text: str | None) -> int | str:
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _object_at(data: dict[str, Any], key: str, where: str, create: bool) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        if not create:
            return None
        value = data[key] = {}
    if not isinstance(value, dict):
        raise Refused(f"{where}: {key!r} is not a JSON object; kairos leaves the file alone")
    return value


def merge_grouped_hooks(
    data: dict[str, Any], groups: Mapping[str, Sequence[Mapping[str, Any]]], where: str, *, install: bool
) -> dict[str, Any]:
    """Claude Code, Codex and Gemini CLI: ``hooks.EVENT = [{matcher?, hooks: [handler, ...]}, ...]``.

    Removes every kairos handler (and a matcher group it leaves empty), then, when installing, appends
    one group per event holding ``groups[event]``.
    """
    result = copy.deepcopy(data)
    hooks = _object_at(result, "hooks", where, create=install)
    if hooks is None:
        return result
    for event, value in list(hooks.items()):
        if not isinstance(value, list):
            if install and event in groups:
                raise Refused(f"{where}: hooks.{event} is not a list; kairos leaves the file alone")
            continue  # other keys (Gemini's "disabled", ...) are not events
        kept = []
        for group in value:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not is_kairos_handler(h)]
                if len(handlers) != len(group["hooks"]):
                    if not handlers:
                        continue  # the group held only kairos' handlers
                    group = {**group, "hooks": handlers}
            kept.append(group)
        if kept or not value or len(kept) == len(value) or (install and event in groups):
            hooks[event] = kept  # kept in its place: a re-install must not reorder the user's file
        else:
            del hooks[event]  # kairos emptied it
    if install:
        for event, new in groups.items():
            hooks.setdefault(event, []).append({"hooks": [dict(h) for h in new]})
    elif not hooks and "hooks" in data and data["hooks"]:
        del result["hooks"]  # kairos emptied it
    return result


def merge_flat_hooks(
    data: dict[str, Any], entries: Mapping[str, Sequence[Mapping[str, Any]]], where: str, *, install: bool
) -> dict[str, Any]:
    """Copilot CLI's hook files: ``{"version": 1, "hooks": {"event": [entry, ...]}}``."""
    result = copy.deepcopy(data)
    version = result.get("version")
    if version is not None and version != 1:
        raise Refused(f"{where}: hook file version {version!r} is not 1, the version kairos knows; left alone")
    if install and "version" not in result:
        result = {"version": 1, **result}  # first, as the documented files have it
    hooks = _object_at(result, "hooks", where, create=install)
    if hooks is None:
        return result
    for event, value in list(hooks.items()):
        if not isinstance(value, list):
            raise Refused(f"{where}: hooks.{event} is not a list; kairos leaves the file alone")
        kept = [entry for entry in value if not is_kairos_handler(entry)]
        if kept or not value or (install and event in entries):
            hooks[event] = kept
        else:
            del hooks[event]  # kairos emptied it
    if install:
        for event, new in entries.items():
            hooks.setdefault(event, []).extend(dict(e) for e in new)
    return result


def is_only_kairos_file(data: Mapping[str, Any]) -> bool:
    """After an uninstall: nothing is left in a hook file but its version and an empty ``hooks``."""
    return set(data) <= {"version", "hooks"} and not data.get("hooks")


def merge_mcp_server(
    data: dict[str, Any], entry: Mapping[str, Any], where: str, *, install: bool, key: str = "mcpServers"
) -> dict[str, Any]:
    """``mcpServers.kairos = entry``: replaced if it already runs ``kairos mcp``, refused if it runs something else."""
    result = copy.deepcopy(data)
    servers = _object_at(result, key, where, create=install)
    if servers is None:
        return result
    existing = servers.get(MCP_NAME)
    if existing is not None and not is_kairos_mcp_server(existing):
        if not install:
            return result  # not ours: an uninstall leaves it
        raise Refused(
            f"{where}: {key}.{MCP_NAME} is already registered and does not run 'kairos mcp'; kairos leaves it "
            "alone (rename or remove it, then run this again)"
        )
    if install:
        servers[MCP_NAME] = dict(entry)
    elif existing is not None:
        del servers[MCP_NAME]
        if not servers:
            del result[key]  # kairos emptied it
    return result


def merge_allow_rule(data: dict[str, Any], rule: str, where: str, *, install: bool) -> dict[str, Any]:
    """Claude Code's ``permissions.allow``: ``rule`` added once (install) or removed (uninstall)."""
    result = copy.deepcopy(data)
    permissions = _object_at(result, "permissions", where, create=install)
    if permissions is None:
        return result
    allow = permissions.get("allow")
    if allow is None and not install:
        return result
    if allow is not None and not isinstance(allow, list):
        raise Refused(f"{where}: permissions.allow is not a list; kairos leaves the file alone")
    kept = [r for r in allow or [] if r != rule]
    if install:
        permissions["allow"] = [*kept, rule]
    elif kept or len(kept) == len(allow or []):
        permissions["allow"] = kept
    else:
        del permissions["allow"]  # kairos emptied it
        if not permissions:
            del result["permissions"]
    return result


# ---- TOML (Codex's config.toml) ------------------------------------------------------------


def parse_toml(text: str | None, where: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Refused(f"{where} is not valid TOML ({exc}); kairos does not edit a file it cannot parse") from None


def _split_block(text: str, where: str) -> tuple[str, str | None]:
    """``text`` without kairos' block, and the block (None if there is none).

    The block is the begin marker and the ``[mcp_servers.kairos]`` table (with any subtable of it),
    up to the end marker or the first other table header, whichever comes first. Codex edits
    ``config.toml`` itself and appends its own tables (``[projects."..."]``, ``[hooks.state."..."]``,
    ``[tui]``) at the end of the file, which puts them before kairos' end marker when kairos' block
    was last: they are the user's, and are kept.
    """
    lines = text.splitlines(keepends=True)
    begin = [i for i, line in enumerate(lines) if line.startswith(TOML_BEGIN)]
    end = [i for i, line in enumerate(lines) if line.startswith(TOML_END)]
    if not begin and not end:
        return text, None
    if len(begin) != 1 or len(end) > 1 or (end and end[0] < begin[0]):
        raise Refused(f"{where}: kairos' block ({TOML_BEGIN} ... {TOML_END}) is broken; fix or remove it by hand")
    start = stop = begin[0]
    stop += 1
    while stop < len(lines) and not lines[stop].startswith(TOML_END):
        header = _table_header(lines[stop])
        if (
            header is not None
            and header != f"mcp_servers.{MCP_NAME}"
            and not header.startswith(f"mcp_servers.{MCP_NAME}.")
        ):
            break  # someone else's table: the block ends here
        stop += 1
    block = "".join(lines[begin[0] : stop])
    if stop < len(lines) and lines[stop].startswith(TOML_END):
        tail = lines[stop + 1 :]
        block += lines[stop]
    else:
        # The end marker, if any, now sits after tables that are not kairos': drop only that line.
        while stop > start + 1 and not lines[stop - 1].strip():
            stop -= 1  # blank lines before the next table belong to it
        block = "".join(lines[begin[0] : stop])
        tail = [line for line in lines[stop:] if not line.startswith(TOML_END)]
    if start > 0 and not lines[start - 1].strip():
        start -= 1  # the blank line kairos put before its block
    return "".join(lines[:start] + tail), block


def _table_header(line: str) -> str | None:
    """The dotted name of a ``[table]`` or ``[[array]]`` header line (quotes kept), else None."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    inner = stripped.lstrip("[").split("]", 1)[0].strip()
    return inner.replace(" ", "") or None


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=False)


def codex_mcp_block(command: str, env: Mapping[str, str], agent: str = "codex") -> str:
    lines = [
        f"{TOML_BEGIN} managed by `kairos integrate {agent}`; `kairos integrate {agent} --uninstall` removes it",
        f"[mcp_servers.{MCP_NAME}]",
        f"command = {toml_string(command)}",
        'args = ["mcp"]',
        # Codex asks before every MCP tool call, and a headless `codex exec` (approval policy "never")
        # then refuses them all. kairos' tools only read and change the user's own schedule.
        'default_tools_approval_mode = "approve"',
        "required = true",
    ]
    if env:
        pairs = ", ".join(f"{k} = {toml_string(v)}" for k, v in env.items())
        lines.append(f"env = {{ {pairs} }}")
    lines.append(TOML_END)
    return "\n".join(lines) + "\n"


def merge_toml_mcp(text: str | None, block: str, where: str, *, install: bool) -> tuple[str | None, list[str]]:
    """Codex's ``[mcp_servers.kairos]``, kept between kairos' marker comments; the new text and notes.

    The rest of the file is kept byte for byte (comments included), which rewriting parsed TOML would lose.
    """
    notes: list[str] = []
    parse_toml(text, where)
    if text is None:
        return (block if install else None), notes
    rest, _old = _split_block(text, where)
    servers = parse_toml(rest, where).get("mcp_servers")
    if isinstance(servers, dict) and MCP_NAME in servers:
        if not is_kairos_mcp_server(servers[MCP_NAME]):
            if install:
                raise Refused(
                    f"{where}: [mcp_servers.{MCP_NAME}] is already defined and does not run 'kairos mcp'; kairos "
                    "leaves it alone (rename or remove it, then run this again)"
                )
            return text if _old is None else rest, notes
        notes.append(f"{where}: [mcp_servers.{MCP_NAME}] was added by hand, outside kairos' block; left as it is")
        return rest if _old is not None else text, notes
    if not install:
        return rest, notes
    new = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + block
    parsed = parse_toml(new, where + " (with kairos' block)")
    if not is_kairos_mcp_server(parsed.get("mcp_servers", {}).get(MCP_NAME)):
        raise Refused(f"{where}: adding [mcp_servers.{MCP_NAME}] at the end did not register it; add it by hand")
    return new, notes


# Codex's app-server keeps a thread loaded this long after its last client (a quit TUI) detached, and
# fires SessionEnd only then: 60 s by default. 0 ends a quit session at once, and makes "loaded" mean
# "a TUI has it open", which kairosd's idle wake (codex queue) relies on.
UNLOAD_KEY = "thread_unload_delay_secs"
UNLOAD_MARK = "# kairos: /quit ends the session at once (kairos integrate codex --uninstall removes this line)"
UNLOAD_LINE = f"{UNLOAD_KEY} = 0  {UNLOAD_MARK}\n"


def _is_unload_line(line: str) -> bool:
    return line.lstrip().startswith(UNLOAD_KEY) and line.rstrip().endswith(UNLOAD_MARK)


def merge_toml_unload_delay(text: str | None, where: str, *, install: bool) -> tuple[str | None, list[str]]:
    """Codex's top-level ``thread_unload_delay_secs = 0``, on a line of its own that kairos recognises by
    its comment; a value the user set is left alone (with a note). The rest is kept byte for byte."""
    notes: list[str] = []
    lines = (text or "").splitlines(keepends=True)
    ours = [i for i, line in enumerate(lines) if _is_unload_line(line)]
    rest = "".join(line for i, line in enumerate(lines) if i not in ours)
    if not install:
        return (rest if ours else text), notes
    theirs = parse_toml(rest, where).get(UNLOAD_KEY)
    if theirs is not None:
        if theirs != 0:
            notes.append(
                f"{where} sets {UNLOAD_KEY} = {theirs!r}; kairos leaves it, so a quit Codex TUI ends its session "
                f"(and is consolidated) only that long after, and kairosd does not wake idle Codex sessions"
            )
        return (rest if ours else text), notes
    if ours:
        return text, notes
    # First in the file: a top-level key must come before every [table].
    new = UNLOAD_LINE + rest
    if parse_toml(new, where + " (with kairos' line)").get(UNLOAD_KEY) != 0:
        raise Refused(f"{where}: adding {UNLOAD_KEY} = 0 did not set it; add it by hand")
    return new, notes
