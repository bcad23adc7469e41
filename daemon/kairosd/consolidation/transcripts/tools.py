"""Tool calls, whatever agent CLI made them, classified into what they tell us (:class:`ToolUse`).

Each CLI names its tools differently (Claude's ``Bash``, Codex's ``exec_command``, Gemini's
``run_shell_command``); the name sets below group them as shell, edit, read or to-do tools, so the
extractor sees one vocabulary. Arguments are only looked at, never run.

Must not import :mod:`kairosd.consolidation.transcripts.read` or the readers (they import this), the
registry, the daemon, the board or anything that writes.
"""

from __future__ import annotations

import json
from typing import Any

from kairosd.consolidation.transcripts.model import ToolUse

# Tool names, per CLI, grouped by what they tell us.
_SHELL_TOOLS = frozenset(
    {"bash", "shell", "powershell", "run_in_terminal", "run_shell_command", "exec_command", "shell_command",
     "container.exec", "local_shell", "execute_command"}
)  # fmt: skip
_EDIT_TOOLS = frozenset(
    {"edit", "write", "multiedit", "notebookedit", "create", "str_replace_editor", "str_replace", "write_file",
     "replace", "edit_file", "apply_patch", "insert", "create_file"}
)  # fmt: skip
_READ_TOOLS = frozenset({"read", "view", "read_file", "read_many_files", "cat"})
_TODO_TOOLS = frozenset({"todowrite", "update_plan", "update_todo", "write_todos"})
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "absolute_path")
_DONE = frozenset({"completed", "complete", "done", "cancelled", "canceled"})


def tool_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments: an object, or a JSON string of one (Codex, sometimes Copilot)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _command_of(args: dict[str, Any]) -> str | None:
    raw = args.get("command", args.get("cmd"))
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
        # Codex runs ["bash", "-lc", "make test"]: the script is what was meant.
        if len(raw) >= 3 and raw[1] in ("-lc", "-c"):
            return str(raw[2])
        # Imported here: this is a rare shape, and the daemon imports these modules at start-up
        # (for count_human_turns) where shlex would be the only one needing it.
        import shlex

        return shlex.join(raw)
    return None


def _patch_paths(patch: str) -> tuple[str, ...]:
    """Paths an ``apply_patch`` text touches (``*** Update File: X``, ``*** Add File: X``)."""
    found: list[str] = []
    for line in patch.splitlines():
        for mark in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
            if line.startswith(mark):
                found.append(line[len(mark) :].strip())
    return tuple(found)


def tool_use(name: str, args: dict[str, Any]) -> ToolUse:
    """Classify one tool call by its (case-insensitive) name and arguments."""
    key = name.lower()
    if key in _TODO_TOOLS:
        items = args.get("todos", args.get("plan"))
        open_items: list[str] = []
        if isinstance(items, list):
            for item in items:
                if not isinstance(item, dict):
                    continue
                text = item.get("content", item.get("step", item.get("description")))
                status = str(item.get("status", "")).lower()
                if isinstance(text, str) and text.strip() and status not in _DONE:
                    open_items.append(text.strip())
        return ToolUse("todo", name, open_todos=tuple(open_items))
    if key in _SHELL_TOOLS:
        return ToolUse("shell", name, command=_command_of(args))
    if key in _EDIT_TOOLS or key in _READ_TOOLS:
        paths = [args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)]
        edits = args.get("edits")
        if key == "apply_patch":
            patch = args.get("input", args.get("patch"))
            paths += list(_patch_paths(patch)) if isinstance(patch, str) else []
        elif isinstance(edits, list):
            paths += [e["file_path"] for e in edits if isinstance(e, dict) and isinstance(e.get("file_path"), str)]
        return ToolUse("edit" if key in _EDIT_TOOLS else "read", name, paths=tuple(dict.fromkeys(paths)))
    return ToolUse("other", name)
