"""What the config and the agent adapters both say about an agent: permissions and command templates.

The config file checks these when it is read (a custom agent's template, its permission mode), and
the adapters (:mod:`kairosd.agents`) use them to build commands. They live here, below both, so that
the config need not import the agents package and the agents may name the config (pure, no I/O).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# From most to least restrictive; a child never gets a mode later in this list
# than its parent's.
PERMISSION_MODES = ("plan", "default", "acceptEdits", "bypassPermissions")

# A custom agent's command template: its placeholders, and the output formats it may declare.
PLACEHOLDERS = ("prompt", "model", "session", "cwd", "permission_mode")
OUTPUTS = ("text", "json", "jsonl")
PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


@dataclass(frozen=True)
class Permissions:
    """``allowed_tools`` None means "whatever the agent allows"; denies always win."""

    mode: str = "default"
    allowed_tools: frozenset[str] | None = None
    denied_tools: frozenset[str] = frozenset()


def narrow(parent: Permissions, child: Permissions) -> Permissions:
    """The intersection of a parent's and a child's permissions: a deny in the parent
    can never become an allow in the child."""
    mode = min(parent.mode, child.mode, key=PERMISSION_MODES.index)
    if parent.allowed_tools is None:
        allowed = child.allowed_tools
    elif child.allowed_tools is None:
        allowed = parent.allowed_tools
    else:
        allowed = parent.allowed_tools & child.allowed_tools
    denied = parent.denied_tools | child.denied_tools
    if allowed is not None:
        allowed = allowed - denied
    return Permissions(mode, allowed, denied)


def template_errors(template: tuple[str, ...] | list[str]) -> list[str]:
    """What is wrong with a template (unknown placeholders, stray braces); empty if fine."""
    problems = []
    for arg in template:
        for match in PLACEHOLDER_RE.finditer(arg):
            name = match.group(1)
            if name is not None and name not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                problems.append(f"unknown placeholder {{{name}}} in {arg!r} (use {known})")
        stripped = PLACEHOLDER_RE.sub("", arg)
        if "{" in stripped or "}" in stripped:
            problems.append(f"unmatched brace in {arg!r} (write {{{{ or }}}} for a literal brace)")
    return problems


def uses(template: tuple[str, ...], name: str) -> bool:
    """Whether ``template`` passes the placeholder ``name`` on."""
    return any(m.group(1) == name for arg in template for m in PLACEHOLDER_RE.finditer(arg))
