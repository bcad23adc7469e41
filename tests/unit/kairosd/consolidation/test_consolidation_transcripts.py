"""Transcript readers: every format, human turns counted right, malformed lines skipped and counted."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from consolidation_support import CORRECTION, HUMAN, MALFORMED, write_lines, write_transcript

from kairosd.consolidation.transcripts.read import (
    ReadStats,
    count_human_turns,
    iter_lines,
    read_file,
    read_messages,
    sniff,
    tool_use,
)

FORMATS = ["claude", "copilot", "codex", "gemini", "generic"]
INTERRUPTED = "[Request interrupted by user for tool use]"


@pytest.fixture
def project(tmp_path: Path) -> str:
    return str(tmp_path / "proj")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_reads_its_human_turns_and_skips_malformed_lines(tmp_path, project, fmt):
    """The same session in every format: 3 human turns, the person's words, malformed lines counted."""
    path = write_transcript(tmp_path, fmt, project)
    stats = ReadStats()
    messages = list(read_file(path, None, stats))
    human = [m.text for m in messages if m.human]
    assert human == HUMAN
    assert stats.format == fmt
    assert stats.human_turns == 3
    assert stats.malformed == (1 if fmt == "gemini" else len(MALFORMED))
    assert stats.first_at is not None
    assert stats.last_at is not None
    assert stats.first_at < stats.last_at


@pytest.mark.parametrize("fmt", ["claude", "copilot", "codex", "gemini"])
def test_tool_calls_are_normalised(tmp_path, project, fmt):
    """Shell commands and edited files come out the same whatever the CLI called its tools."""
    path = write_transcript(tmp_path, fmt, project)
    tools = [t for m in read_file(path) for t in m.tools]
    commands = [t.command for t in tools if t.kind == "shell"]
    edited = {p for t in tools if t.kind == "edit" for p in t.paths}
    assert commands[0] == "make check"
    assert "pnpm install" in commands[-1]
    assert edited <= {f"{project}/src/runner.py", "src/runner.py"}
    assert edited


def test_claude_non_human_user_lines_do_not_count(tmp_path, project):
    """Tool results, isMeta, slash-command echoes, local command output and sidechains are not turns."""
    path = write_transcript(tmp_path, "claude", project)
    users = [m for m in read_file(path) if m.role == "user"]
    not_typed = [m.text for m in users if not m.human]
    assert any(t.startswith("Caveat:") for t in not_typed)
    assert any(t.startswith("<command-name>") for t in not_typed)
    assert any(t.startswith("<local-command-stdout>") for t in not_typed)
    assert all("tool output" not in m.text for m in users)  # tool_result lines are dropped entirely
    assert all("sub-agent" not in m.text.lower() for m in users)


def test_claude_interrupt_and_system_prompt_source_are_not_turns():
    """'[Request interrupted by user]' and a promptSource other than typed are not a person's turn."""
    lines = [
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": INTERRUPTED}]}},
        {"type": "user", "promptSource": "system", "message": {"role": "user", "content": "Continue the plan"}},
        {"type": "user", "promptSource": "typed", "message": {"role": "user", "content": "go fix it"}},
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "This session is being..."}},
    ]  # fmt: skip
    stats = ReadStats()
    human = [m.text for m in read_messages([json.dumps(o).encode() for o in lines], "claude", stats) if m.human]
    assert human == ["go fix it"]
    assert stats.format == "claude"


def test_copilot_injected_and_subagent_messages_are_not_turns(tmp_path, project):
    """A skill-injected user.message (data.source) and a sub-agent's (agentId) do not count."""
    path = write_transcript(tmp_path, "copilot", project)
    texts = [m.text for m in read_file(path) if m.role == "user"]
    assert "Skill instructions: always use PDF tools" in texts
    assert "sub-agent prompt: never do X" not in texts
    assert count_human_turns(path)[0] == 3


def test_codex_counts_each_typed_prompt_once(tmp_path, project):
    """A prompt is logged as a response_item and an event_msg; it counts once; preambles never."""
    path = write_transcript(tmp_path, "codex", project)
    stats = ReadStats()
    human = [m.text for m in read_file(path, "codex", stats) if m.human]
    assert human == HUMAN
    assert stats.cwd == project
    assert stats.session_id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


def test_old_codex_rollouts_without_user_message_events_still_count():
    """Rollouts that only have response_item user messages count those (not the environment preamble)."""
    lines = [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/p"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "<environment_context>x"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "first"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "second"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "ok"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "third"}]}},
    ]  # fmt: skip
    human = [m.text for m in read_messages([json.dumps(o).encode() for o in lines]) if m.human]
    assert human == ["first", "second", "third"]


def test_gemini_jsonl_variant_reads_too():
    """Gemini messages one per line (rather than one document) read with the same rules."""
    lines = [
        {"type": "user", "content": "hello there", "timestamp": "2026-11-20T10:00:00Z"},
        {"type": "info", "content": "Request cancelled."},
        {"type": "gemini", "content": "hi", "toolCalls": [{"name": "run_shell_command", "args": {"command": "ls"}}]},
    ]
    stats = ReadStats()
    messages = list(read_messages([json.dumps(o).encode() for o in lines], "gemini", stats))
    assert stats.format == "gemini"
    assert [m.text for m in messages if m.human] == ["hello there"]
    assert messages[-1].tools[0].command == "ls"


def test_the_lines_win_over_a_wrong_hint(tmp_path, project):
    """A Codex rollout handed over as 'claude' is still read as Codex; no hint and no clue: generic."""
    path = write_transcript(tmp_path, "codex", project)
    stats = ReadStats()
    assert sum(m.human for m in read_file(path, "claude", stats)) == 3
    assert stats.format == "codex"
    assert sniff({"something": 1}) is None
    stats = ReadStats()
    assert list(read_messages([b'{"something": 1}\n'], None, stats)) == []
    assert stats.format == "generic"


def test_every_line_malformed_is_never_fatal(tmp_path):
    """Garbage, a lone array, a truncated object, bad UTF-8: all skipped and counted, no exception."""
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"".join(MALFORMED) + b"\n\n   \n")
    stats = ReadStats()
    assert list(read_file(path, "claude", stats)) == []
    assert (stats.lines, stats.malformed, stats.human_turns) == (len(MALFORMED), len(MALFORMED), 0)


def test_an_over_long_line_is_skipped_without_being_held(tmp_path):
    """A line past the bound is skipped (and counted) in pieces; the next line still reads."""
    data = b'{"role": "user", "content": "' + b"x" * 5000 + b'"}\n' + b'{"role": "user", "content": "short"}\n'
    stats = ReadStats()
    lines = list(iter_lines(io.BytesIO(data), max_bytes=1000))
    assert lines[0] is None
    assert lines[1] == b'{"role": "user", "content": "short"}\n'
    messages = list(read_messages(lines, None, stats))
    assert [m.text for m in messages] == ["short"]
    assert stats.malformed == 1


def test_a_broken_gemini_document_is_one_malformed_line(tmp_path):
    """A pretty-printed document that is not valid JSON is counted once and yields nothing."""
    path = tmp_path / "session.json"
    path.write_text('{\n  "sessionId": "x",\n  "messages": [\n')
    stats = ReadStats()
    assert list(read_file(path, "gemini", stats)) == []
    assert stats.malformed == 1


def test_counting_stops_early_once_the_minimum_is_reached(tmp_path):
    """count_human_turns with stop_at reads no further than needed (the gate's cheap path)."""
    objects = [{"role": "user", "content": f"turn {i}"} for i in range(1000)]
    path = write_lines(tmp_path / "long.jsonl", objects, malformed=[])
    count, stats = count_human_turns(path, None, stop_at=3)
    assert count == 3
    assert stats.lines == 3
    assert count_human_turns(path)[0] == 1000


def test_missing_transcript_raises_oserror(tmp_path):
    """A path that does not exist is an OSError for the caller (the gate turns it into a reason)."""
    with pytest.raises(FileNotFoundError):
        count_human_turns(tmp_path / "nope.jsonl")


def test_tool_use_classification():
    """Plan and to-do tools keep the open items; apply_patch yields its paths; unknown tools are 'other'."""
    todo = tool_use(
        "TodoWrite", {"todos": [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}]}
    )
    assert todo.open_todos == ("b",)
    plan = tool_use("update_plan", {"plan": [{"step": "x", "status": "pending"}]})
    assert plan.open_todos == ("x",)
    patch = tool_use("apply_patch", {"input": "*** Begin Patch\n*** Add File: a.py\n*** Update File: b/c.py\n"})
    assert patch.paths == ("a.py", "b/c.py")
    assert tool_use("shell", {"command": ["git", "status"]}).command == "git status"
    assert tool_use("WebFetch", {"url": "https://example.com"}).kind == "other"


def test_correction_text_survives_in_every_format(tmp_path, project):
    """The correction is a human turn that directly follows an agent message, in every format."""
    for fmt in FORMATS:
        messages = [
            m for m in read_file(write_transcript(tmp_path / fmt, fmt, project)) if m.human or m.role == "assistant"
        ]
        index = next(i for i, m in enumerate(messages) if m.text == CORRECTION)
        assert messages[index - 1].role == "assistant", fmt
