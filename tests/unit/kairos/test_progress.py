"""kairos.progress: the one status line a waiting verb draws on a terminal, driven by a fake clock."""

from __future__ import annotations

import io
import threading
import time

import pytest

from kairos import progress
from kairos.output import guard_stream
from kairos.progress import Progress, Silent


class Terminal(io.StringIO):
    """A stream that says it is a terminal, and records every write."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def screen(written: str) -> str:
    """What a terminal shows after ``written``: each \\r goes back to the start of the line."""
    line: list[str] = []
    col = 0
    for ch in written:
        if ch == "\r":
            col = 0
            continue
        if col < len(line):
            line[col] = ch
        else:
            line.append(ch)
        col += 1
    return "".join(line).rstrip()


def make(columns: int = 80) -> tuple[Progress, Terminal, Clock]:
    term, clock = Terminal(), Clock()
    return Progress(term, clock=clock, columns=lambda: columns), term, clock


def test_the_first_update_draws_what_is_waited_for_and_the_elapsed_time():
    line, term, clock = make()
    clock.now += 12.4
    line.update("waiting for task t0a1b2c3d4e", "running")
    assert term.getvalue() == "\rwaiting for task t0a1b2c3d4e (running, 12 s)"


def test_redraws_are_throttled_to_ten_a_second_and_a_pending_change_is_drawn_later():
    line, term, clock = make()
    line.update("importing 0/5,000 tasks")
    for done in range(1, 50):  # 49 batches in 49 ms: only the first change may be drawn at once
        clock.now += 0.001
        line.update(f"importing {done * 100:,}/5,000 tasks")
    assert term.getvalue().count("\r") == 1
    clock.now += 0.1
    line.refresh()
    assert term.getvalue().count("\r") == 2
    assert screen(term.getvalue()) == "importing 4,900/5,000 tasks (0 s)"


def test_a_tick_redraws_only_when_the_elapsed_time_shown_changes():
    line, term, clock = make()
    line.update("exporting every task to systemd", "waiting for kairosd")
    clock.now += 0.5
    line.refresh()
    assert term.getvalue().count("\r") == 1  # still "0 s": nothing to redraw
    clock.now += 0.6
    line.refresh()
    assert screen(term.getvalue()) == "exporting every task to systemd (waiting for kairosd, 1 s)"


def test_a_shorter_line_covers_the_longer_one_and_close_erases_it():
    line, term, clock = make()
    line.update("waiting for task t0a1b2c3d4e", "running", "queued for a slot")
    clock.now += 1
    line.update("waiting for task t0a1b2c3d4e", "idle")
    assert screen(term.getvalue()) == "waiting for task t0a1b2c3d4e (idle, 1 s)"
    line.close()
    assert screen(term.getvalue()) == ""
    assert term.getvalue().endswith("\r")  # the cursor is back at the start: the next output starts clean
    line.update("after close")  # nothing is drawn once closed
    assert screen(term.getvalue()) == ""


def test_output_printed_above_the_line_starts_on_a_clean_line_and_the_line_comes_back_below(monkeypatch):
    line, term, _ = make()
    monkeypatch.setattr("sys.stdout", term)  # stdout and stderr on one terminal
    line.update("importing 0/2 batches")
    with line.above():
        assert screen(term.getvalue()) == ""
        print("batch 1/2: 10 imported")
    line.update("importing 1/2 batches")  # right after the erase: not throttled
    assert term.getvalue().endswith("\rbatch 1/2: 10 imported\n\rimporting 1/2 batches (0 s)")
    line.clear()
    assert term.getvalue().endswith("\r")
    assert screen(term.getvalue().rpartition("\n")[2]) == ""


def test_the_line_is_cut_to_one_column_less_than_the_terminal():
    line, term, _ = make(columns=30)
    line.update("consolidating /home/someone/src/a-project-with-a-long-name", "running")
    assert screen(term.getvalue()) == "consolidating /home/someone/…"
    assert len(screen(term.getvalue())) == 29


def test_text_from_the_daemon_cannot_reach_the_terminal_raw():
    line, term, _ = make()
    line.update("consolidating /tmp/\x1b[2Jx\u202e", "run\rning")
    assert "\x1b" not in term.getvalue()
    assert "\u202e" not in term.getvalue()
    assert term.getvalue().count("\r") == 1
    assert screen(term.getvalue()) == "consolidating /tmp/\\x1b[2Jx\\u202e (run ning, 0 s)"  # the \r folds to a space
    line.clear()
    line.update("consolidating /tmp/two\nlines\tand a tab")  # a newline would end the line that \r redraws
    assert term.getvalue().endswith("\rconsolidating /tmp/two lines and a tab (0 s)")


def test_a_terminal_that_went_away_stops_the_line_not_the_verb():
    class Gone(Terminal):
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

    line = Progress(Gone(), clock=Clock(), columns=lambda: 80)
    line.update("waiting for task t0a1b2c3d4e")
    line.update("waiting for task t0a1b2c3d4e", "idle")
    line.close()


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0 s"), (59.9, "59 s"), (60, "1 min 00 s"), (125, "2 min 05 s"), (3720, "1 h 02 min"), (-1, "0 s")],
)
def test_elapsed(seconds, shown):
    assert progress.elapsed(seconds) == shown


def test_a_line_only_on_a_terminal_without_quiet_and_not_on_a_dumb_one():
    assert progress.wanted(Terminal(), environ={"TERM": "xterm"})
    assert not progress.wanted(io.StringIO(), environ={"TERM": "xterm"})  # a pipe or a file
    assert not progress.wanted(Terminal(), quiet=True, environ={"TERM": "xterm"})
    assert not progress.wanted(Terminal(), environ={"TERM": "dumb"})
    assert progress.wanted(Terminal(), environ={})


def test_on_stderr_writes_past_the_guard_or_is_silent(monkeypatch):
    term = Terminal()
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setattr("sys.stderr", guard_stream(term))
    line = progress.on_stderr()
    assert isinstance(line, Progress)
    line.update("waiting")
    line.close()
    assert term.getvalue().startswith("\rwaiting (0 s)")  # the \r is not escaped by the guard
    assert isinstance(progress.on_stderr(quiet=True), Silent)
    monkeypatch.setattr("sys.stderr", guard_stream(io.StringIO()))
    assert isinstance(progress.on_stderr(), Silent)


def test_the_ticker_redraws_while_the_caller_blocks_and_stops_at_close(monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.001)
    line, term, clock = make()
    with line:
        line.update("waiting for task t0a1b2c3d4e")
        clock.now += 3
        for _ in range(5000):  # a bounded poll: the ticker wakes every millisecond
            if "(3 s)" in term.getvalue():
                break
            time.sleep(0.001)
        assert screen(term.getvalue()) == "waiting for task t0a1b2c3d4e (3 s)"
    assert screen(term.getvalue()) == ""
    assert not any(t.name == "kairos-progress" for t in threading.enumerate())  # joined by close


def test_the_width_is_columns_as_for_every_table_else_the_terminals(monkeypatch):
    monkeypatch.setenv("COLUMNS", "42")
    term = Terminal()
    Progress(term, clock=Clock()).update("x" * 100)
    assert len(term.getvalue()) == 1 + 41  # \r, then one column short of the width
    monkeypatch.setenv("COLUMNS", "٤٢")  # not ASCII digits: ignored, and a StringIO has no terminal size
    assert progress._columns(Terminal()) == progress.DEFAULT_COLUMNS
