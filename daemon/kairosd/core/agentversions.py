"""The oldest version of each agent CLI that kairos supports, and what an older one lacks (pure).

One table (:data:`OLDEST`) for ``kairos doctor`` and ``kairos integrate``: both run
``<cli> --version`` with a short timeout and pass what it printed to :func:`outdated`,
which says, when the installed CLI is older, what will not work. The oldest supported
version is the oldest the compatibility suite verified every column of the matrix
against (tests/compat/clis.py pins it; a test keeps the two in step).

Pure: parses text it is given; never runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Oldest:
    """The oldest supported ``version`` of a CLI, and what an older one is known to lack."""

    version: str
    lacks: str
    update: str  # how to get a newer one


OLDEST: dict[str, Oldest] = {
    "claude": Oldest(
        "2.1.330",
        "turn-end delivery (the Stop hook's reason) and kairos' MCP tools; both failed with 2.1.197",
        "npm install -g @anthropic-ai/claude-code@latest",
    ),
    "codex": Oldest(
        "0.169.0",
        "idle wake (codex queue on the shared app-server) is not verified there, and Codex before 0.16x "
        "runs no SessionEnd hook, so an ended session stays live until it expires",
        "npm install -g @openai/codex@latest",
    ),
    "gemini": Oldest(
        "0.61.0",
        "the hooks kairos integrate writes (BeforeAgent, AfterAgent, SessionEnd) are not verified there",
        "npm install -g @google/gemini-cli@latest",
    ),
    "copilot": Oldest(
        "1.0.102",
        "the hooks file kairos integrate writes (~/.copilot/hooks) and MCP in headless runs are not verified there",
        "npm install -g @github/copilot@latest",
    ),
    "opencode": Oldest(
        "1.18.33",
        "headless runs (--format json, resume by --session) are not verified there",
        "npm install -g opencode-ai@latest",
    ),
}

_VERSION = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``MAJOR.MINOR[.PATCH]`` in what a ``--version`` printed ("2.1.330 (Claude Code)",
    "codex-cli 0.169.0", "GitHub Copilot CLI 1.0.102."), or None."""
    found = _VERSION.search(text)
    if found is None:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def outdated(agent: str, version_output: str) -> str | None:
    """Why the CLI that printed ``version_output`` is too old for kairos, or None (new enough, unknown
    agent, or a version that cannot be read: kairos says nothing it cannot tell)."""
    oldest = OLDEST.get(agent)
    found = parse_version(version_output)
    if oldest is None or found is None:
        return None
    need = parse_version(oldest.version)
    if need is None or found >= need:
        return None
    have = ".".join(map(str, found))
    return (
        f"{agent} {have} is older than {oldest.version}, the oldest kairos supports: {oldest.lacks}. "
        f"Update it: {oldest.update}"
    )
