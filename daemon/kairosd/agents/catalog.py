"""Named agent definitions: Markdown files with a frontmatter, found in the usual folders.

    ---
    name: reviewer
    description: Reviews the current diff and reports problems
    model: sonnet                   # optional; "inherit" means none
    tools: Read, Grep, Glob         # optional: the only tools it may use
    disallowed_tools: [Bash]        # optional (Claude's disallowedTools too)
    permission_mode: plan           # optional (Claude's permissionMode too)
    agent: claude                   # which CLI runs it (default claude)
    ---
    You are a careful reviewer. ...   <- the body: the agent's instructions

Discovery, first definition of a name wins (names are case-sensitive):

1. the project: from the task's cwd up to the first folder with ``.git`` (or
   the filesystem root), nearest folder first, and in each folder
   ``.kairos/agents``, ``.claude/agents``, ``.codex/agents``, ``.gemini/agents``;
2. the user: the same four under ``~``;
3. the built-in ``rem-agent`` (memory consolidation, read-only tools), whose
   text ships in ``kairosd/agents/data/rem-agent.md``.

Only ``*.md`` files directly in those folders count. A broken file (no or bad
frontmatter, no name or description, a bad value) is skipped with a warning
and never stops discovery. A file or folder another user could change (owned by
someone else, or writable by group or others without the sticky bit; the rule
in :mod:`kairosd.system.filesafety`) is skipped too: a definition decides what an agent
is told and allowed to do.

The frontmatter is YAML, read with PyYAML's BaseLoader (every scalar stays a
string; nothing but strings, lists and mappings is built). Lists may also be
written as ``a, b`` (Claude's ``tools: Read, Grep``). A key given twice, or text
that is not YAML, makes the file broken. Keys other than the ones above
(Claude's ``color``, ``hooks``, ...) are ignored, with their contents.

Resolving what a task names (:func:`resolve`): an agent CLI name (``claude``,
or ``agent:claude``) means that CLI with no definition; anything else must be
a definition; an unknown name is refused with the list of available names.

Must not import pydantic, the registry, the scheduler, the store or the server.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairosd.agents.base import PERMISSION_MODES, Permissions, TurnRequest, narrow
from kairosd.core.errors import UsageError
from kairosd.system import filesafety
from kairosd.system.boundedread import open_regular

if TYPE_CHECKING:
    from kairosd.config import Config

log = logging.getLogger(__name__)

SOURCE_DIRS = (".kairos", ".claude", ".codex", ".gemini")
BUILTIN_NAME = "rem-agent"
DEFAULT_CLI = "claude"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_FILE_BYTES = 256 * 1024  # a definition is a page of instructions, not a data file
# Keys we read, with their aliases (Claude writes camelCase).
_ALIASES = {
    "name": "name",
    "description": "description",
    "model": "model",
    "tools": "tools",
    "disallowed_tools": "disallowed_tools",
    "disallowedTools": "disallowed_tools",
    "permission_mode": "permission_mode",
    "permissionMode": "permission_mode",
    "agent": "agent",
}


class DefinitionError(ValueError):
    """Why one definition file cannot be used (it is skipped, with this as the warning)."""


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    prompt: str  # the body: the agent's instructions
    source: str  # the file, or "built-in"
    agent: str = DEFAULT_CLI  # the CLI that runs it
    model: str | None = None
    tools: frozenset[str] | None = None  # None: whatever the CLI allows
    disallowed_tools: frozenset[str] = frozenset()
    permission_mode: str | None = None  # None: the caller's mode

    def permissions(self, ceiling: Permissions) -> Permissions:
        """The definition's permissions within ``ceiling``: they can only narrow it."""
        own = Permissions(
            mode=self.permission_mode or PERMISSION_MODES[-1],  # no mode of its own: the ceiling's
            allowed_tools=self.tools,
            denied_tools=self.disallowed_tools,
        )
        return narrow(ceiling, own)


@dataclass
class Catalog:
    """Every definition found, by name, and a warning for every file skipped."""

    definitions: dict[str, AgentDefinition] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return sorted(self.definitions)

    def get(self, name: str) -> AgentDefinition:
        try:
            return self.definitions[name]
        except KeyError:
            raise UsageError(f"no agent definition named {name!r} (available: {', '.join(self.names())})") from None


@dataclass(frozen=True)
class ResolvedAgent:
    """What a task's agent name means: a CLI, and the definition it runs (if any)."""

    name: str  # as asked for, without an "agent:" prefix
    cli: str
    definition: AgentDefinition | None = None

    def permissions(self, ceiling: Permissions) -> Permissions:
        return self.definition.permissions(ceiling) if self.definition else ceiling

    def turn_request(
        self,
        prompt: str,
        *,
        ceiling: Permissions,
        cwd: str | None = None,
        model: str | None = None,
        resume_session: str | None = None,
    ) -> TurnRequest:
        """A first turn or a follow-up: the model is the task's, else the definition's, else
        the CLI's configured default (applied by the adapter); permissions never exceed ``ceiling``."""
        definition = self.definition
        return TurnRequest(
            prompt=prompt,
            cwd=cwd,
            model=model or (definition.model if definition else None),
            resume_session=resume_session,
            permissions=self.permissions(ceiling),
            agent_definition=definition.prompt if definition else None,
        )


def search_dirs(cwd: str | os.PathLike[str] | None, home: str | os.PathLike[str] | None = None) -> list[Path]:
    """The agents/ folders to search, in precedence order (they need not exist)."""
    dirs: list[Path] = []
    if cwd is not None:
        here = Path(cwd).absolute()
        for folder in (here, *here.parents):
            dirs += [folder / source / "agents" for source in SOURCE_DIRS]
            if (folder / ".git").exists():
                break
    user = Path(home) if home is not None else Path.home()
    dirs += [user / source / "agents" for source in SOURCE_DIRS]
    return dirs


def discover(cwd: str | os.PathLike[str] | None, home: str | os.PathLike[str] | None = None) -> Catalog:
    """Every definition visible from ``cwd`` (project) and ``home`` (user), plus the built-in."""
    catalog = Catalog()
    seen_dirs: set[Path] = set()
    for folder in search_dirs(cwd, home):
        key = _real(folder)
        if key in seen_dirs:
            continue  # a project inside the home folder reaches ~/.claude/agents twice
        seen_dirs.add(key)
        _scan(folder, catalog)
    if BUILTIN_NAME not in catalog.definitions:
        catalog.definitions[BUILTIN_NAME] = builtin_definition()
    return catalog


def resolve(name: str, config: Config, cwd: str | os.PathLike[str] | None, home: str | None = None) -> ResolvedAgent:
    """``claude``/``agent:claude``: that CLI, bare; otherwise the definition of that name.

    Raises UsageError for an unknown name (listing CLIs and definitions) and for a
    definition whose CLI is unknown or disabled.
    """
    bare = name.removeprefix("agent:").strip()
    clis = config.agent_names()
    if bare in clis:
        return ResolvedAgent(bare, bare)
    if bare in config.agent_names(enabled_only=False):
        raise UsageError(f"agent {bare!r} is disabled in the config (enabled = false)")
    catalog = discover(cwd, home)
    definition = catalog.definitions.get(bare)
    if definition is None:
        available = [*clis, *(n for n in catalog.names() if n not in clis)]
        hint = f"; skipped: {'; '.join(catalog.warnings)}" if catalog.warnings else ""
        raise UsageError(f"no agent named {bare!r} (available: {', '.join(available)}){hint}")
    if definition.agent not in clis:
        raise UsageError(
            f"agent definition {bare!r} ({definition.source}) runs on {definition.agent!r}, which is not an "
            f"available agent CLI (available: {', '.join(clis)})"
        )
    return ResolvedAgent(bare, definition.agent, definition)


def builtin_definition() -> AgentDefinition:
    text = resources.files("kairosd.agents").joinpath("data", f"{BUILTIN_NAME}.md").read_text(encoding="utf-8")
    return parse_definition(text, "built-in")


def parse_definition(text: str, source: str) -> AgentDefinition:
    """One definition from a file's text; DefinitionError says what is wrong."""
    front, body = _split(text)
    values = parse_frontmatter(front)
    name = _scalar(values, "name")
    description = _scalar(values, "description")
    if not name:
        raise DefinitionError("the frontmatter has no name")
    if not NAME_RE.match(name):
        raise DefinitionError(f"name {name!r} is not a valid agent name (letters, digits, '.', '_', '-')")
    if not description:
        raise DefinitionError("the frontmatter has no description")
    mode = _scalar(values, "permission_mode")
    if mode is not None and mode not in PERMISSION_MODES:
        raise DefinitionError(f"permission_mode {mode!r} is not one of {', '.join(PERMISSION_MODES)}")
    model = _scalar(values, "model")
    agent = _scalar(values, "agent") or DEFAULT_CLI
    if not NAME_RE.match(agent):
        raise DefinitionError(f"agent {agent!r} is not a valid agent CLI name")
    tools = _list(values, "tools")
    return AgentDefinition(
        name=name,
        description=description,
        prompt=body.strip(),
        source=source,
        agent=agent,
        model=None if model in (None, "", "inherit") else model,
        tools=None if tools is None else frozenset(tools),
        disallowed_tools=frozenset(_list(values, "disallowed_tools") or ()),
        permission_mode=mode,
    )


def parse_frontmatter(front: str) -> dict[str, str | list[str]]:
    """The keys we read from a frontmatter block, parsed as YAML (see the module docstring)."""
    import yaml  # only where frontmatter is read: kairosd's start and the CLI never need it

    try:
        doc = yaml.load(front, Loader=_strict_loader())  # noqa: S506 - BaseLoader builds only str, list, dict
    except yaml.YAMLError as exc:
        raise DefinitionError(f"the frontmatter is not valid YAML: {_yaml_problem(exc)}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise DefinitionError("the frontmatter must be 'key: value' lines")
    values: dict[str, str | list[str]] = {}
    for raw_key, raw in doc.items():
        key = _ALIASES.get(raw_key)
        if key is None:
            continue  # a key we do not use (color, hooks, ...), with whatever it holds
        if key in values:
            raise DefinitionError(f"{key!r} is given twice ({raw_key!r})")
        if isinstance(raw, dict) or (isinstance(raw, list) and not all(isinstance(i, str) for i in raw)):
            raise DefinitionError(f"{raw_key}: expected a value or a list of values")
        values[key] = raw.strip() if isinstance(raw, str) else [item.strip() for item in raw]
    return values


@functools.cache
def _strict_loader() -> type[Any]:
    """PyYAML's BaseLoader (every scalar a string: no 'yes' turned into True), refusing a key given twice.

    Built on first use, so that importing this module does not import yaml."""
    import yaml

    class StrictLoader(yaml.BaseLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise DefinitionError(f"{key!r} is given twice")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def _yaml_problem(exc: Exception) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 1})" if mark is not None else str(problem)


def _scalar(values: dict[str, str | list[str]], key: str) -> str | None:
    value = values.get(key)
    if isinstance(value, list):
        raise DefinitionError(f"{key} must be a single value, not a list")
    return value.strip() if value is not None else None


def _list(values: dict[str, str | list[str]], key: str) -> list[str] | None:
    value = values.get(key)
    if value is None:
        return None
    items = value if isinstance(value, list) else [_unquote(p.strip()) for p in _split_commas(value)]
    items = [item for item in items if item]
    for item in items:
        if any(c in item for c in "\n\r\x00"):
            raise DefinitionError(f"{key}: bad entry {item!r}")
    return items


def _split_commas(text: str) -> list[str]:
    """Split on commas outside parentheses and quotes: ``Bash(git log:*), Read``."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        inner = text[1:-1]
        return inner.replace('\\"', '"').replace("\\\\", "\\") if text[0] == '"' else inner.replace("''", "'")
    if text[:1] in ("'", '"'):
        raise DefinitionError(f"unterminated quote in {text!r}")
    return text


def _split(text: str) -> tuple[str, str]:
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise DefinitionError("no frontmatter (the file must start with a '---' line)")
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise DefinitionError("the frontmatter is not closed by a '---' line")


def _scan(folder: Path, catalog: Catalog) -> None:
    try:
        folder_stat = folder.stat()
        entries = sorted(p for p in folder.iterdir() if p.suffix == ".md")
    except FileNotFoundError:
        return
    except NotADirectoryError:
        return
    except OSError as exc:
        _warn(catalog, f"{folder}: cannot read ({exc.strerror or exc})")
        return
    unsafe = _unsafe(folder_stat, folder=True)
    if unsafe:
        _warn(catalog, f"{folder}: skipped, {unsafe}")
        return
    for path in entries:
        _load(path, catalog)


def _load(path: Path, catalog: Catalog) -> None:
    try:
        with open_regular(path) as file:  # a FIFO or device named *.md is refused, never waited on
            unsafe = _unsafe(os.fstat(file.fileno()))
            if unsafe:
                raise DefinitionError(unsafe)
            raw = file.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise DefinitionError(f"larger than {MAX_FILE_BYTES // 1024} KiB")
        definition = parse_definition(raw.decode("utf-8"), str(path))
    except (DefinitionError, UnicodeDecodeError) as exc:
        _warn(catalog, f"{path}: skipped, {exc}")
        return
    except OSError as exc:
        _warn(catalog, f"{path}: skipped, cannot read ({exc.strerror or exc})")
        return
    if definition.name not in catalog.definitions:
        catalog.definitions[definition.name] = definition
    else:
        log.debug("%s: %r is already defined by %s", path, definition.name, catalog.definitions[definition.name].source)


def _unsafe(st: os.stat_result, *, folder: bool = False) -> str | None:
    """Why a definition file or folder cannot be trusted (the shared rule: kairosd.system.filesafety), if it cannot."""
    found = filesafety.problem(st, folder=folder)
    return None if found is None else str(found)


def _real(folder: Path) -> Path:
    try:
        return folder.resolve()
    except OSError:
        return folder


def _warn(catalog: Catalog, message: str) -> None:
    log.warning("agent definitions: %s", message)
    catalog.warnings.append(message)
