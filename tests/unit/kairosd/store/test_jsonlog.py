"""The JSON-lines log: durable appends, crash-torn lines, garbled lines, compaction."""

from __future__ import annotations

import json
import logging
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kairosd.core.records import Outcome, Run, json_line
from kairosd.store.jsonlog import JsonLog


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_append_then_read_round_trips(tmp_path: Path) -> None:
    """Appended records come back in order, from a fresh object too."""
    log = JsonLog(tmp_path / "a.jsonl")
    log.append([{"n": 1}, {"n": 2}])
    log.append([{"n": 3, "text": "héllo ☕"}])
    assert JsonLog(tmp_path / "a.jsonl").read() == [{"n": 1}, {"n": 2}, {"n": 3, "text": "héllo ☕"}]
    assert log.lines == 3


def test_absent_file_reads_as_empty(tmp_path: Path) -> None:
    """A log that was never written is empty, not an error."""
    assert JsonLog(tmp_path / "missing.jsonl").read() == []


def test_append_creates_private_folder_and_file(tmp_path: Path) -> None:
    """The folder is created 0700 on demand and the file is 0600 whatever the umask."""
    path = tmp_path / "state" / "runs.jsonl"
    old = os.umask(0)
    try:
        JsonLog(path).append([{"n": 1}])
    finally:
        os.umask(old)
    assert _mode(path.parent) == 0o700
    assert _mode(path) == 0o600


def test_a_group_of_records_costs_one_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Appending many records to an existing log is one write and one fsync."""
    log = JsonLog(tmp_path / "a.jsonl")
    log.append([{"n": 0}])
    real_fsync = os.fsync
    calls: list[int] = []

    def counting(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    log.append([{"n": i} for i in range(100)])
    assert len(calls) == 1


def test_records_never_span_lines(tmp_path: Path) -> None:
    """Newlines and lone surrogates inside values are escaped, one record per line."""
    path = tmp_path / "a.jsonl"
    record: dict[str, Any] = {"text": "line1\nline2", "odd": "\ud800"}
    JsonLog(path).append([record])
    assert path.read_bytes().count(b"\n") == 1
    assert JsonLog(path).read() == [record]


def test_torn_last_line_is_ignored_with_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A crash mid-append leaves a torn last line: read skips it and warns."""
    path = tmp_path / "a.jsonl"
    JsonLog(path).append([{"n": 1}])
    with path.open("ab") as f:
        f.write(b'{"n": 2, "te')
    with caplog.at_level(logging.WARNING):
        assert JsonLog(path).read() == [{"n": 1}]
    assert "last line" in caplog.text


def test_append_after_torn_line_starts_a_fresh_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The torn bytes never swallow the next record; they become a skipped line 2."""
    path = tmp_path / "a.jsonl"
    log = JsonLog(path)
    log.append([{"n": 1}])
    with path.open("ab") as f:
        f.write(b'{"n": 2, "te')
    log.append([{"n": 3}])
    with caplog.at_level(logging.WARNING):
        assert JsonLog(path).read() == [{"n": 1}, {"n": 3}]
    assert "garbled line 2" in caplog.text


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    """A valid final record that only lacks its newline is read, and appends keep it."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2}')
    log = JsonLog(path)
    assert log.read() == [{"n": 1}, {"n": 2}]
    log.append([{"n": 3}])
    assert JsonLog(path).read() == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_garbled_middle_lines_are_skipped_by_number(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Bad JSON, bad UTF-8 and non-objects in the middle are skipped, each named by line number."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"n": 1}\nnot json\n\xff\xfe\n[1, 2]\n\n{"n": 2}\n')
    with caplog.at_level(logging.WARNING):
        records = JsonLog(path).read()
    assert records == [{"n": 1}, {"n": 2}]
    for number in (2, 3, 4):
        assert f"garbled line {number} " in caplog.text
    assert "line 5" not in caplog.text  # a blank line is not worth a warning


def test_rewrite_replaces_the_log_atomically(tmp_path: Path) -> None:
    """Rewrite leaves exactly the given records, 0600, and resets the line count."""
    path = tmp_path / "sub" / "a.jsonl"
    log = JsonLog(path)
    log.append([{"n": i} for i in range(10)])
    log.rewrite([{"n": 9}])
    assert log.lines == 1
    assert JsonLog(path).read() == [{"n": 9}]
    assert _mode(path) == 0o600
    log.rewrite([])
    assert path.read_bytes() == b""


def test_line_count_follows_the_file(tmp_path: Path) -> None:
    """read counts every line, garbled ones included, so owners can judge compaction."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"n": 1}\ngarbage\n{"n": 2}\n')
    log = JsonLog(path)
    log.read()
    assert log.lines == 3
    log.append([{"n": 3}, {"n": 4}])
    assert log.lines == 5
    assert len(path.read_bytes().splitlines()) == 5


def test_stale_temp_files_are_removed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A temp file from an interrupted rewrite is removed; the log is left alone."""
    path = tmp_path / "a.jsonl"
    JsonLog(path).append([{"n": 1}])
    stale = tmp_path / "a.jsonl.tmp-123-abcd"
    stale.write_text(json.dumps({"n": 2}))
    with caplog.at_level(logging.WARNING):
        JsonLog(path).remove_stale_temp_files()
    assert not stale.exists()
    assert JsonLog(path).read() == [{"n": 1}]
    assert "interrupted write" in caplog.text


def _compact(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode("ascii")


@pytest.mark.parametrize(
    "text",
    ["plain", "line one\nline two", 'a "quote" and a \\ backslash', "héllo ☕", "\ud800 lone surrogate", "\x00\x1f"],
)
def test_an_encoded_model_is_the_line_its_dict_would_be(tmp_path: Path, text: str) -> None:
    """json_line writes what append would for model_dump(mode="json"): one ASCII line (non-ASCII and a
    lone surrogate escaped, a newline never raw), read back as the same record."""
    now = datetime(2026, 3, 1, 9, 30, 0, 250000, tzinfo=UTC)
    target = {"kind": "inbox", "session": text}
    run = Run(task_id="t1", task_name=text, scheduled_for=now, planned_for=now, late_by_s=0.125, target=target,
              reason=text, outcome=Outcome.DELIVERED, extra_field=[text])  # fmt: skip
    line = json_line(run)
    assert line.isascii()
    assert b"\n" not in line
    assert json.loads(line) == run.model_dump(mode="json")
    if text.isascii():
        assert line == _compact(run.model_dump(mode="json"))
    log = JsonLog(tmp_path / "runs.jsonl")
    log.append_lines([line, line])
    assert log.read() == [run.model_dump(mode="json")] * 2
    assert log.lines == 2


def test_a_line_with_a_newline_is_refused(tmp_path: Path) -> None:
    """append_lines trusts its lines to be one record each, but not so far as to let one span two."""
    log = JsonLog(tmp_path / "a.jsonl")
    with pytest.raises(ValueError, match="newline"):
        log.append_lines([b'{"n":1}', b'{"n":\n2}'])
    assert log.read() == []
    assert log.lines == 0
