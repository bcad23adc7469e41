"""The progress line of the verbs that wait (issue 26, item 3), against the fake kairosd of
tests/fake_daemon_support.py.

Each verb runs twice in-process, once with stderr a terminal and once a pipe (stdout a pipe both
times: print_json indents for a terminal stdout, which is not what is compared here). At the
terminal the line appears on stderr; in the pipe nothing does; stdout, ``--json`` included, is
byte for byte the same; and the rest of stderr is the same once the line's writes (each starts
with ``\\r``) are left out. Throttling is off (MIN_REDRAW_S = 0) so that every update is drawn, and the
clock is frozen, so that the ticker draws nothing of its own.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_daemon_support import ANY_QUERY, JOB_ID, FakeDaemon, Recorded, board_entry, claude_file, job_view

from kairos import progress
from kairos.app import run


class Terminal(io.StringIO):
    """A stream that says it is a terminal and keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


class Ran:
    def __init__(self, code: int, out: str, err: Any) -> None:
        self.code, self.out = code, out
        self.err = err.getvalue()
        writes = err.writes if isinstance(err, Terminal) else [self.err]
        self.lines = [w for w in writes if w.startswith("\r")]  # the progress line's writes
        self.rest = "".join(w for w in writes if not w.startswith("\r"))

    @property
    def drawn(self) -> list[str]:
        """Each line drawn, without the padding that covers a longer one; erasures left out."""
        return [w[1:].rstrip(" ") for w in self.lines if w.strip(" \r")]


@pytest.fixture
def home(kairos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(progress, "MIN_REDRAW_S", 0.0)
    monkeypatch.setattr(progress, "CLOCK", lambda: 1000.0)  # every line says "0 s", and the ticker adds none
    monkeypatch.chdir(kairos_home)
    return kairos_home


@pytest.fixture
def fake(home) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(home)
    daemon.start()
    yield daemon
    daemon.stop()


def kairos(monkeypatch: pytest.MonkeyPatch, *argv: str, terminal: bool) -> Ran:
    out, err = io.StringIO(), (Terminal() if terminal else io.StringIO())
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        code = run(list(argv))
    return Ran(code, out.getvalue(), err)


def both(monkeypatch: pytest.MonkeyPatch, fake: FakeDaemon, *argv: str) -> tuple[Ran, Ran]:
    """``kairos ARGV`` at a terminal, then into a pipe: the same exit code, stdout and other stderr."""
    shown = kairos(monkeypatch, *argv, terminal=True)
    piped = kairos(monkeypatch, *argv, terminal=False)
    assert (shown.code, shown.out, shown.rest) == (piped.code, piped.out, piped.err)
    assert "\r" not in piped.err
    assert shown.lines, "no progress line at the terminal"
    assert shown.lines[-1].replace(" ", "") == "\r\r"  # erased at the end, the cursor back at the start
    return shown, piped


# ---- task wait ------------------------------------------------------------------------------


def _progress(tool_calls: int) -> dict[str, Any]:
    return {"tool_calls": tool_calls, "intent": None, "last_line": None}


def _wait_route(fake: FakeDaemon) -> None:
    """A task that is queued at the first poll, running at the second, and idle at the third."""
    states = iter(
        [
            {"task": job_view(queued=True, progress=_progress(0)), "timed_out": True},
            {"task": job_view(progress=_progress(1)), "timed_out": True},
            {"task": job_view(status="idle", turns_done=1, response="fixed it"), "timed_out": False},
        ]
    )

    def answer(req: Recorded) -> tuple[int, dict[str, Any]]:
        try:
            return 200, next(states)
        except StopIteration:
            return 200, {"task": job_view(status="idle", turns_done=1, response="fixed it"), "timed_out": False}

    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?{ANY_QUERY}")] = answer


@pytest.mark.parametrize("as_json", [False, True])
def test_task_wait_shows_the_state_at_a_terminal_only(fake, monkeypatch, as_json):
    _wait_route(fake)
    shown = kairos(monkeypatch, "task", "wait", JOB_ID, *(["--json"] if as_json else []), terminal=True)
    at_terminal = [r.query["timeout"] for r in fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")]
    fake.requests.clear()
    _wait_route(fake)
    piped = kairos(monkeypatch, "task", "wait", JOB_ID, *(["--json"] if as_json else []), terminal=False)
    in_pipe = [r.query["timeout"] for r in fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")]

    assert shown.drawn == [
        f"waiting for task {JOB_ID} (0 s)",
        f"waiting for task {JOB_ID} (running, queued for a slot, 0 s)",
        f"waiting for task {JOB_ID} (running, 1 tool call, 0 s)",
    ]
    assert shown.lines[-1].replace(" ", "") == "\r\r"
    # The line's state is fresh: the first poll answers at once, the next within 5 s. A pipe polls as before.
    assert at_terminal == ["0.000", "5.000", "5.000"]
    assert in_pipe == ["60.000"] * 3
    assert "\r" not in piped.err
    assert (shown.code, shown.out, shown.rest) == (0, piped.out, piped.err)
    if as_json:
        assert json.loads(shown.out)["task"]["status"] == "idle"
    else:
        assert shown.out == f"{JOB_ID} idle after turn 1\nfixed it\n"


@pytest.mark.parametrize(
    ("flags", "term"), [(["--quiet"], "xterm"), (["-q"], "xterm"), ([], "dumb")], ids=["quiet", "q", "dumb"]
)
def test_task_wait_draws_nothing_with_quiet_or_on_a_dumb_terminal(fake, monkeypatch, flags, term):
    monkeypatch.setenv("TERM", term)
    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?timeout=60.000")] = (
        200,
        {"task": job_view(status="idle", turns_done=1, response="fixed it"), "timed_out": False},
    )
    ran = kairos(monkeypatch, "task", "wait", JOB_ID, *flags, terminal=True)
    assert (ran.code, ran.out, ran.err) == (0, f"{JOB_ID} idle after turn 1\nfixed it\n", "")


def test_a_wait_from_inside_a_task_keeps_its_long_polls(fake, monkeypatch):
    """Each poll of a waiter lends its slot anew (kairosd.jobs.slots): no shorter polls for the line."""
    monkeypatch.setenv("KAIROS_TASK_ID", "t9a9b9c9d9e")
    _wait_route(fake)
    ran = kairos(monkeypatch, "task", "wait", JOB_ID, terminal=True)
    assert ran.drawn[0] == f"waiting for task {JOB_ID} (0 s)"
    assert [r.query["timeout"] for r in fake.sent("GET", f"/v1/registry/{JOB_ID}/wait")] == ["60.000"] * 3


def test_task_start_wait_shows_the_line_too(fake, monkeypatch):
    fake.routes[("POST", "/v1/registry")] = (201, {"task": job_view()})
    _wait_route(fake)
    shown, _ = both(monkeypatch, fake, "task", "start", "--agent", "claude", "--wait", "fix the build")
    assert shown.drawn[0] == f"waiting for task {JOB_ID} (0 s)"


# ---- consolidate --wait ---------------------------------------------------------------------


def _merge(**over: Any) -> dict[str, Any]:
    """What a consolidation run changed on the board (kairosd.core.wire.consolidation.BoardMerge)."""
    merge: dict[str, Any] = {"added": [], "seen": [], "pruned": [], "superseded": [], "conflicts": [], "closed": [],
                             "notes": []}  # fmt: skip
    return {**merge, **over}


def _consolidation(fake: FakeDaemon) -> None:
    fake.routes[("POST", "/v1/consolidate")] = (
        202,
        {"status": "started", "gate": None, "reason": "started", "project": "/src/app",
         "run": job_view(kind="consolidation", turns=None)},
    )  # fmt: skip
    states = iter([job_view(kind="consolidation"), job_view(kind="consolidation", status="completed")])

    def answer(req: Recorded) -> tuple[int, dict[str, Any]]:
        task = next(states, None) or job_view(kind="consolidation", status="completed")
        return 200, {"task": task, "timed_out": task["status"] == "running"}

    fake.routes[("GET", f"/v1/registry/{JOB_ID}/wait?{ANY_QUERY}")] = answer
    fake.routes[("GET", f"/v1/consolidation/runs/{JOB_ID}")] = (
        200,
        {
            "task": job_view(kind="consolidation", status="completed", response="2 added"),
            "result": {"ok": True, "board_size": 2, "merge": _merge(added=[board_entry(id="b000001", text="use uv")])},
        },
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_consolidate_wait_names_the_run_and_its_project(fake, monkeypatch, tmp_path, as_json):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("")
    argv = ["consolidate", "--session-id", "s1", "--transcript", str(transcript), "--wait"]
    _consolidation(fake)
    shown = kairos(monkeypatch, *argv, *(["--json"] if as_json else []), terminal=True)
    _consolidation(fake)
    piped = kairos(monkeypatch, *argv, *(["--json"] if as_json else []), terminal=False)
    assert shown.drawn == [
        f"waiting for consolidation {JOB_ID} of /src/app (0 s)",
        f"waiting for consolidation {JOB_ID} of /src/app (running, 2 tool calls, 0 s)",
    ]
    assert (shown.code, shown.out, shown.rest) == (0, piped.out, piped.err)
    assert "\r" not in piped.err
    if as_json:
        assert json.loads(shown.out)["task"]["status"] == "completed"
    else:
        assert shown.out == f"{JOB_ID} completed: 2 added; the board has 2 entries\n  + b000001 [rule] use uv\n"


# ---- import ---------------------------------------------------------------------------------


def test_import_of_many_tasks_counts_them_batch_by_batch(fake, monkeypatch, home):
    path, tasks = claude_file(home, 12_000)
    nothing = {"dry_run": False, "imported": [], "skipped": [], "rejected": [], "dropped": []}  # a whole answer
    fake.routes[("POST", "/v1/import")] = (200, nothing)
    shown, _ = both(monkeypatch, fake, "import", str(path), "--tz", "UTC")
    sent = len(fake.sent("POST", "/v1/import")) // 2  # two runs, each a dry run for hidden text, then the import
    batches = sent // 2
    assert batches >= 2
    # The batch lines on stdout start on a line of their own: the progress line is erased before each.
    assert shown.out.splitlines()[:batches] == [
        f"batch {i}/{batches}: 0 imported, 0 skipped, 0 rejected" for i in range(1, batches + 1)
    ]
    drawn = shown.drawn
    assert drawn[0] == f"reading {path} (0 s)"
    assert drawn[1] == f"checking for hidden characters: 0/12,000 tasks (batch 1/{batches}, 0 s)"
    importing = [line for line in drawn if line.startswith("importing")]
    assert importing[0] == f"importing 0/12,000 tasks (batch 1/{batches}, 0 s)"
    second = importing[1].split(" ")[1]
    assert 0 < int(second.split("/")[0].replace(",", "")) < 12_000
    assert len(tasks) == 12_000


def test_import_json_of_one_batch_says_how_many_tasks(fake, monkeypatch, home):
    path, _ = claude_file(home, 3)
    fake.routes[("POST", "/v1/import")] = (200, {"imported": [], "skipped": [], "rejected": [], "dry_run": True})
    shown, _ = both(monkeypatch, fake, "import", str(path), "--tz", "UTC", "--dry-run", "--json")
    assert shown.drawn == [f"reading {path} (0 s)", "dry run: 3 tasks (0 s)"]
    assert json.loads(shown.out)["dry_run"] is True


# ---- export ---------------------------------------------------------------------------------


def _export(fake: FakeDaemon) -> None:
    files = [{"name": f"kairos-{n}.timer", "text": "[Timer]\n"} for n in ("a", "b")]
    answer = {"engine": "systemd", "exports": [{"task_id": "a", "files": files, "warnings": []}], "refused": []}
    fake.routes[("POST", "/v1/export")] = (200, answer)


@pytest.mark.parametrize("as_json", [False, True])
def test_export_all_says_what_it_waits_for_and_counts_the_files_it_writes(fake, monkeypatch, tmp_path, as_json):
    _export(fake)
    out = tmp_path / "units"
    shown, _ = both(
        monkeypatch, fake, "export", "--all", "--to", "systemd", "--out", str(out), *(["--json"] if as_json else [])
    )
    assert shown.drawn == [
        "exporting every task to systemd (waiting for kairosd, 0 s)",
        f"writing 0/2 files to {out} (0 s)",
        f"writing 1/2 files to {out} (0 s)",
    ]
    assert sorted(p.name for p in out.iterdir()) == ["kairos-a.timer", "kairos-b.timer"]


def test_export_printed_to_stdout_is_the_same_at_a_terminal(fake, monkeypatch):
    _export(fake)
    shown, _ = both(monkeypatch, fake, "export", "a", "--to", "systemd")
    assert shown.drawn == ["exporting 1 task to systemd (waiting for kairosd, 0 s)"]
    assert shown.out == "# ==> kairos-a.timer <==\n[Timer]\n\n# ==> kairos-b.timer <==\n[Timer]\n"


def test_batch_lines_printed_to_the_same_terminal_are_not_drawn_over(fake, monkeypatch, home):
    """stdout and stderr on one terminal: each batch line is printed on a line the progress line left clean."""
    path, _ = claude_file(home, 12_000)
    nothing = {"dry_run": False, "imported": [], "skipped": [], "rejected": [], "dropped": []}  # a whole answer
    fake.routes[("POST", "/v1/import")] = (200, nothing)
    term = Terminal()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", term)
        patch.setattr(sys, "stderr", term)
        assert run(["import", str(path), "--tz", "UTC", "--allow-hidden"]) == 0
    rows = [screen(row) for row in term.getvalue().split("\n")]
    batches = [row for row in rows if row.startswith("batch ")]
    assert len(batches) >= 2
    assert all(row.endswith(": 0 imported, 0 skipped, 0 rejected") for row in batches), batches
    assert rows[-1] == ""  # the line is erased at the end


def screen(written: str) -> str:
    """What one row of a terminal shows after ``written``: each \\r goes back to its start."""
    row: list[str] = []
    col = 0
    for ch in written:
        if ch == "\r":
            col = 0
            continue
        row[col : col + 1] = [ch]
        col += 1
    return "".join(row).rstrip()
