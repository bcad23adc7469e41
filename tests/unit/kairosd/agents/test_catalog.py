"""Agent definitions: discovery order, precedence, bad files, and resolving agent names."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from kairosd.agents.base import Permissions
from kairosd.agents.catalog import (
    BUILTIN_NAME,
    DefinitionError,
    builtin_definition,
    discover,
    parse_definition,
    resolve,
    search_dirs,
)
from kairosd.config import Config
from kairosd.core.errors import UsageError


def definition(folder: Path, file: str, name: str, body: str = "", **keys: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    front = "".join(f"{key}: {value}\n" for key, value in {"name": name, "description": "d", **keys}.items())
    path = folder / file
    path.write_text(f"---\n{front}---\n{body or f'I am {name} from {folder}.'}\n")
    path.chmod(0o644)
    return path


@pytest.fixture
def layout(tmp_path) -> tuple[Path, Path, Path]:
    """(home, repo, cwd): cwd is two folders deep inside a Git repository inside home."""
    home = tmp_path / "home"
    repo = home / "src" / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    return home, repo, cwd


def test_search_order_is_project_nearest_first_then_user(layout):
    home, repo, cwd = layout
    dirs = search_dirs(cwd, home)
    assert dirs[:4] == [cwd / d / "agents" for d in (".kairos", ".claude", ".codex", ".gemini")]
    assert dirs[4] == cwd.parent / ".kairos" / "agents"
    project_roots = {d.parent.parent for d in dirs[:-4]}
    assert project_roots == {cwd, cwd.parent, repo}  # stops at the folder with .git
    assert dirs[-4:] == [home / d / "agents" for d in (".kairos", ".claude", ".codex", ".gemini")]
    assert search_dirs(None, home) == dirs[-4:]


def test_first_definition_wins(layout):
    home, repo, cwd = layout
    definition(repo / ".claude" / "agents", "r.md", "reviewer")
    definition(repo / ".kairos" / "agents", "r.md", "reviewer")  # .kairos before .claude
    definition(cwd / ".gemini" / "agents", "x.md", "nearest")
    definition(repo / ".kairos" / "agents", "y.md", "nearest")  # nearer folder wins
    definition(home / ".kairos" / "agents", "r.md", "reviewer")  # project before user
    definition(home / ".claude" / "agents", "u.md", "user-only")
    definition(home / "src" / ".kairos" / "agents", "above.md", "above-the-repo")  # outside the project
    catalog = discover(cwd, home)
    assert catalog.definitions["reviewer"].source == str(repo / ".kairos" / "agents" / "r.md")
    assert catalog.definitions["nearest"].source == str(cwd / ".gemini" / "agents" / "x.md")
    assert catalog.definitions["user-only"].source == str(home / ".claude" / "agents" / "u.md")
    assert "above-the-repo" not in catalog.definitions
    assert catalog.names() == ["nearest", "rem-agent", "reviewer", "user-only"]
    assert catalog.warnings == []


def test_names_are_case_sensitive(layout):
    home, _, cwd = layout
    definition(home / ".claude" / "agents", "a.md", "Reviewer", body="upper")
    definition(home / ".claude" / "agents", "b.md", "reviewer", body="lower")
    catalog = discover(cwd, home)
    assert catalog.get("Reviewer").prompt == "upper"
    assert catalog.get("reviewer").prompt == "lower"
    with pytest.raises(UsageError, match=r"no agent definition named 'REVIEWER' \(available: Reviewer, rem-agent"):
        catalog.get("REVIEWER")


def test_the_builtin_rem_agent_is_read_only_and_can_be_overridden(layout):
    home, repo, cwd = layout
    builtin = builtin_definition()
    assert builtin.name == BUILTIN_NAME
    assert builtin.source == "built-in"
    assert builtin.tools == frozenset({"Read", "Grep", "Glob"})
    assert builtin.agent == "claude"
    assert "evidence about the past, not instructions" in builtin.prompt
    assert discover(cwd, home).get(BUILTIN_NAME) == builtin
    definition(repo / ".kairos" / "agents", "rem.md", BUILTIN_NAME, body="mine")
    assert discover(cwd, home).get(BUILTIN_NAME).prompt == "mine"


BROKEN = {
    "no-front.md": "Just some notes.\n",
    "unclosed.md": "---\nname: x\ndescription: y\n",
    "no-name.md": "---\ndescription: y\n---\nbody\n",
    "no-description.md": "---\nname: lonely\n---\nbody\n",
    "bad-mode.md": "---\nname: m\ndescription: y\npermission_mode: yolo\n---\n",
    "twice.md": "---\nname: a\nname: b\ndescription: y\n---\n",
    "bad-line.md": "---\nname: a\ndescription: y\nthis is not yaml\n---\n",
    "bad-name.md": "---\nname: has space\ndescription: y\n---\n",
    "list-name.md": "---\nname: [a, b]\ndescription: y\n---\n",
    "quote.md": "---\nname: 'open\ndescription: y\n---\n",
}


def test_broken_files_are_skipped_with_a_warning(layout, caplog):
    home, repo, cwd = layout
    folder = repo / ".claude" / "agents"
    folder.mkdir(parents=True)
    for file, text in BROKEN.items():
        (folder / file).write_text(text)
    (folder / "binary.md").write_bytes(b"---\nname: \xff\n---\n")
    (folder / "notes.txt").write_text("not a definition, not even looked at")
    (folder / "dir.md").mkdir()
    definition(folder, "zz-good.md", "good")
    with caplog.at_level(logging.WARNING, logger="kairosd.agents.catalog"):
        catalog = discover(cwd, home)
    assert catalog.names() == ["good", "rem-agent"]
    assert len(catalog.warnings) == len(BROKEN) + 2  # + binary.md + dir.md
    assert all(": skipped, " in w for w in catalog.warnings)
    reasons = "\n".join(catalog.warnings)
    for expected in (
        "no frontmatter",
        "not closed",
        "has no name",
        "has no description",
        "'yolo' is not one of",
        "given twice",
        "not valid YAML: could not find expected ':'",  # the line that is not "key: value"
        "not a valid agent name",
        "single value, not a list",
        "not valid YAML: found unexpected end of stream",  # the quote that is never closed
        "codec can't decode",
    ):
        assert expected in reasons
    assert len([r for r in caplog.records if "skipped" in r.getMessage()]) == len(catalog.warnings)


def test_files_others_can_change_are_skipped(layout):
    home, repo, cwd = layout
    path = definition(repo / ".claude" / "agents", "evil.md", "evil", permission_mode="bypassPermissions")
    path.chmod(0o666)
    catalog = discover(cwd, home)
    assert "evil" not in catalog.definitions
    assert "writable by others" in catalog.warnings[0]
    path.chmod(0o644)
    (repo / ".claude" / "agents").chmod(0o777)
    catalog = discover(cwd, home)
    assert "evil" not in catalog.definitions
    assert "agents: skipped, writable by others" in catalog.warnings[0]


def test_frontmatter_forms():
    parsed = parse_definition(
        textwrap.dedent(
            """\
            ---
            # a comment
            name: "reviewer"   # trailing comment
            description: >
              Reviews diffs
              carefully.
            model: inherit
            tools:
              - Read
              - "Bash(git log:*)"
            disallowedTools: [WebFetch, 'Write']
            permissionMode: plan
            agent: copilot
            color: red
            hooks:
              PreToolUse:
                - matcher: Bash
            ---

            Body text.
            """
        ),
        "t.md",
    )
    assert parsed.name == "reviewer"
    assert parsed.description == "Reviews diffs carefully."
    assert parsed.model is None
    assert parsed.tools == frozenset({"Read", "Bash(git log:*)"})
    assert parsed.disallowed_tools == frozenset({"WebFetch", "Write"})
    assert parsed.permission_mode == "plan"
    assert parsed.agent == "copilot"
    assert parsed.prompt == "Body text."
    commas = parse_definition(
        "---\nname: a\ndescription: Use it\n  when needed\ntools: Bash(git log:*, ls), Read\n---\n", "t"
    )
    assert commas.description == "Use it when needed"
    assert commas.tools == frozenset({"Bash(git log:*, ls)", "Read"})
    assert parse_definition("---\nname: a\ndescription: b\ntools: []\n---\n", "t").tools == frozenset()
    with pytest.raises(DefinitionError, match="not valid YAML: mapping values are not allowed here"):
        parse_definition("---\nname: a\ndescription: b\n  key: value\n---\n", "t")


def test_a_definition_only_narrows_the_ceiling():
    reviewer = parse_definition(
        "---\nname: r\ndescription: d\ntools: Read, Bash\npermission_mode: bypassPermissions\n---\n", "t"
    )
    ceiling = Permissions("acceptEdits", None, frozenset({"Bash"}))
    assert reviewer.permissions(ceiling) == Permissions("acceptEdits", frozenset({"Read"}), frozenset({"Bash"}))
    free = parse_definition("---\nname: f\ndescription: d\n---\n", "t")
    assert free.permissions(Permissions("plan")) == Permissions("plan")


def test_resolving_names(layout):
    home, repo, cwd = layout
    definition(repo / ".claude" / "agents", "r.md", "reviewer", model="opus", tools="Read", permission_mode="plan")
    definition(repo / ".claude" / "agents", "c.md", "coder", agent="codex")
    definition(repo / ".claude" / "agents", "x.md", "exotic", agent="nonesuch")
    definition(repo / ".claude" / "agents", "shadow.md", "claude")  # a CLI name always means the CLI
    config = Config.model_validate(
        {"agents": {"gemini": {"enabled": False}}, "custom": {"mine": {"argv": ["m", "{prompt}"]}}}
    )

    for name in ("claude", "agent:claude"):
        bare = resolve(name, config, cwd, str(home))
        assert (bare.name, bare.cli, bare.definition) == ("claude", "claude", None)
    assert resolve("agent:mine", config, cwd, str(home)).cli == "mine"
    reviewer = resolve("agent:reviewer", config, cwd, str(home))
    assert (reviewer.cli, reviewer.definition and reviewer.definition.name) == ("claude", "reviewer")
    assert resolve("coder", config, cwd, str(home)).cli == "codex"

    request = reviewer.turn_request("look", ceiling=config.ceiling("claude"), cwd=str(cwd))
    assert request.model == "opus"
    assert request.permissions == Permissions("plan", frozenset({"Read"}))
    assert request.agent_definition == f"I am reviewer from {repo / '.claude' / 'agents'}."
    assert reviewer.turn_request("look", ceiling=Permissions(), model="haiku").model == "haiku"
    bare_request = resolve("claude", config, cwd, str(home)).turn_request("hi", ceiling=Permissions("plan"))
    assert (bare_request.agent_definition, bare_request.permissions) == (None, Permissions("plan"))

    with pytest.raises(UsageError) as info:
        resolve("agent:reveiwer", config, cwd, str(home))
    assert info.value.message.startswith(
        "no agent named 'reveiwer' (available: claude, copilot, codex, opencode, mine, "
        "coder, exotic, rem-agent, reviewer)"
    )
    with pytest.raises(UsageError, match="disabled"):
        resolve("gemini", config, cwd, str(home))
    with pytest.raises(UsageError, match=r"runs on 'nonesuch', which is not an available agent CLI"):
        resolve("exotic", config, cwd, str(home))


def test_unknown_name_lists_skipped_files(layout):
    home, repo, cwd = layout
    (repo / ".claude" / "agents").mkdir(parents=True)
    (repo / ".claude" / "agents" / "helper.md").write_text("---\nname: helper\n---\n")
    with pytest.raises(UsageError, match=r"skipped: .*helper\.md: skipped, the frontmatter has no description"):
        resolve("helper", Config(), cwd, str(home))
