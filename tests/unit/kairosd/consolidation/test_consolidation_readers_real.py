"""The transcript shapes the real CLIs write now (Codex 0.169, Gemini CLI 0.61): only what the
person typed is a human turn; nothing kairos or the CLI injected is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from consolidation_corpus import formats
from paths_support import TESTS

from kairosd.consolidation.transcripts.read import ReadStats, count_human_turns, read_file

TYPED = ["fix the flaky test in ci pls", "Never force-push to main.", "thanks, that's it", "ok run it again"]


def _write(tmp_path: Path, fmt: str) -> Path:
    turns = [(text, formats.at(0, i * 2)) for i, text in enumerate(TYPED)]
    return formats.write(tmp_path, fmt, turns, "/home/me/app", "sess-1")


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_only_typed_turns_are_human(tmp_path: Path, fmt: str) -> None:
    path = _write(tmp_path, fmt)
    stats = ReadStats()
    human = [m.text for m in read_file(path, fmt, stats) if m.human]
    assert human == TYPED
    assert stats.format == fmt
    assert stats.malformed == 0


def test_codex_0169_long_first_line_is_json_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "codex")
    first = path.read_bytes().split(b"\n", 1)[0]
    assert len(first) > 20_000  # as in a real 0.169 rollout: the base instructions are in it
    count, stats = count_human_turns(path, "codex")
    assert (count, stats.format, stats.cwd) == (4, "codex", "/home/me/app")


def test_codex_hook_prompt_is_not_a_turn_by_provenance_alone() -> None:
    from kairosd.consolidation.transcripts.read import read_messages

    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "continue the job"}]}

    def tagged(*provenance: object) -> dict[str, object]:
        meta = {"content_item_metadata": [{"provenance": p} for p in provenance]}
        return {**item, "internal_chat_message_metadata_passthrough": meta}

    lines = [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/p"}},
        {"type": "response_item", "payload": {**item, "provenance": "hook"}},
        {"type": "response_item", "payload": tagged({"type": "harness", "hook": True})},
        {"type": "response_item", "payload": tagged({"type": "harness", "hook": False})},
        {"type": "response_item", "payload": tagged({"type": "skills"})},
        {"type": "response_item", "payload": tagged({"type": "user"})},
        {"type": "response_item", "payload": item},
    ]
    human = [m.text for m in read_messages([json.dumps(o).encode() for o in lines], "codex") if m.human]
    assert human == ["continue the job", "continue the job"]


def test_gemini_jsonl_dedupes_ids_and_keeps_the_last_version(tmp_path: Path) -> None:
    path = _write(tmp_path, "gemini")
    stats = ReadStats()
    messages = list(read_file(path, "gemini", stats))
    replies = [m.text for m in messages if m.role == "assistant"]
    assert replies == ["Okay, I will always do so."] * len(TYPED)
    assert stats.session_id == "sess-1"
    assert not any("kairos context board" in m.text or "session_context" in m.text for m in messages if m.human)


def test_gemini_whole_document_on_one_line_reads(tmp_path: Path) -> None:
    doc = {"sessionId": "s1", "projectHash": "x", "messages": [
        {"id": "1", "type": "user", "content": [{"text": "always pin the versions"}]},
        {"id": "2", "type": "gemini", "content": "ok"}]}  # fmt: skip
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc))
    assert [m.text for m in read_file(path, "gemini") if m.human] == ["always pin the versions"]


REAL = TESTS / "fixtures" / "transcripts_real"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("codex-0.169.0-rollout.jsonl", "codex"), ("gemini-0.61.0-session.jsonl", "gemini"),
     ("copilot-1.0.102-events.jsonl", "copilot")],
)  # fmt: skip
@pytest.mark.parametrize("hint", [None, "claude"])
def test_real_cli_files_read_their_typed_turns(name: str, fmt: str, hint: str | None) -> None:
    """Files the real CLIs wrote: the two typed turns and the two answers, nothing injected."""
    stats = ReadStats()
    messages = list(read_file(REAL / name, hint, stats))
    assert stats.format == fmt
    assert stats.malformed == 0
    assert [m.text for m in messages if m.human] == ["first turn SAY:alpha", "second turn SAY:beta"]
    assert [m.text for m in messages if m.role == "assistant" and m.text] == ["alpha", "beta"]
    assert stats.session_id is not None
