"""Untrusted text reaches the terminal escaped, in every verb's human output (issue 13).

A real kairosd holds a hostile prompt, name, reason, board entry, session and
background task (ESC sequences, a right-to-left override, other C0/C1 and
bidi controls). Every human-readable verb must print none of those characters
raw; ``--json`` keeps the exact text.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kairosd import testing

pytestmark = pytest.mark.slow

WAIT_S = 30.0
# Recolour the terminal, clear it, reorder the line, and more: everything kairos.output.clean escapes.
HOSTILE = "\x1b[31mred\x1b[2J \u202eevil\u202c \x07\x08\r\x9b1m \u2066iso\u2069 \u200f\u061c end"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    return testing.wait_for(condition, what, WAIT_S, poll=0.05)


class Home:
    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(dir="/tmp", prefix="kh"))
        self.project = self.path / "project"
        self.project.mkdir()
        self.env = {**os.environ, "KAIROS_HOME": str(self.path), "TZ": "UTC", "COLUMNS": "200"}
        for var in ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON", "NOTIFY_SOCKET", "LISTEN_FDS"):
            self.env.pop(var, None)
        self.daemon: subprocess.Popen[bytes] | None = None

    def kairos(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kairos", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=self.project,
        )

    def ok(self, *args: str, stdin: str = "") -> str:
        proc = self.kairos(*args, stdin=stdin)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    def json(self, *args: str) -> Any:
        words = list(args)
        words.insert(words.index("--") if "--" in words else len(words), "--json")
        return json.loads(self.ok(*words))

    def start(self) -> None:
        with open(self.path / "kairosd.log", "ab") as log:
            self.daemon = subprocess.Popen([sys.executable, "-m", "kairosd"], env=self.env, stderr=log)
        wait_for(lambda: self.kairos("status").returncode == 0 or self.daemon.poll() is not None, "kairosd")
        assert self.daemon.poll() is None, (self.path / "kairosd.log").read_text()

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait(WAIT_S)


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[Home, dict[str, str]]]:
    """A kairosd whose every kind of record holds HOSTILE text; yields it with the ids to ask for."""
    home = Home()
    try:
        home.start()
        ids: dict[str, str] = {}
        ids["task"] = home.json("add", "--in", "1h", "--name", HOSTILE, HOSTILE)["task"]["id"]
        home.ok("run", ids["task"])  # an inbox item and a run
        bad_cwd = home.path / f"gone {HOSTILE}"
        bad_cwd.mkdir()
        added = home.json("add", "--in", "1h", "--cmd", "true", "--cwd", str(bad_cwd), HOSTILE)
        ids["shell"] = added["task"]["id"]
        bad_cwd.rmdir()  # the missing folder's name ends up in the run's reason
        home.ok("run", ids["shell"])
        wait_for(lambda: "failed" in home.ok("history", ids["shell"]), "the shell run to fail")
        home.ok("board", "add", HOSTILE)
        session_cwd = home.path / HOSTILE
        session_cwd.mkdir()
        start = {"session_id": "s-hostile", "cwd": str(session_cwd), "transcript_path": f"/tmp/{HOSTILE}"}
        home.ok("hook", "claude", "SessionStart", stdin=json.dumps(start))
        ids["bg"] = home.json("task", "start", "--shell", HOSTILE, "--", "cat")["task"]["id"]
        wait_for(lambda: home.json("task", "show", ids["bg"])["task"]["status"] != "running", "the task to end")
        # A fire missed while kairosd was down, surfaced at the next start.
        home.ok("add", "--in", "1s", "--catch-up", "surface", "--name", HOSTILE, HOSTILE)
        home.stop()
        deadline = time.monotonic() + 2.5
        wait_for(lambda: time.monotonic() > deadline, "the one-shot's time to pass")
        home.start()
        wait_for(lambda: home.json("missed")["missed"], "the missed fire")
        yield home, ids
    finally:
        home.stop()
        subprocess.run(["rm", "-rf", str(home.path)], check=False)


# Each verb, and what of the hostile text it shows: escaped, not dropped ("" where it shows none of it;
# board entries come back from kairosd already without control characters).
VERBS = [
    (["list"], "\\x1b[31mred"),
    (["show", "{task}"], "\\x1b[31mred"),
    (["show", "{shell}"], "\\x1b[31mred"),
    (["history"], "\\x1b[31mred"),
    (["history", "{shell}"], "\\x1b[31mred"),
    (["missed"], "\\x1b[31mred"),
    (["inbox"], "\\x1b[31mred"),
    (["inbox", "--all"], "\\x1b[31mred"),
    (["status"], ""),
    (["daemon", "status"], ""),
    (["sessions"], "\\x1b[31mred"),
    (["task", "list"], "\\x1b[31mred"),
    (["task", "show", "{bg}"], "\\x1b[31mred"),
    (["task", "logs", "{bg}"], "\\x1b[31mred"),
    (["board", "show"], "[31mred"),
    (["board", "history"], "[31mred"),
]


@pytest.mark.parametrize(("argv", "expected"), VERBS, ids=[" ".join(argv) for argv, _ in VERBS])
def test_human_output_escapes_control_and_bidi_characters(
    hostile: tuple[Home, dict[str, str]], argv: list[str], expected: str
) -> None:
    home, ids = hostile
    proc = home.kairos(*(word.format(**ids) for word in argv))
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    assert not UNSAFE.findall(shown), shown
    assert expected in shown  # the text is there, escaped, not dropped


def test_an_error_line_from_the_daemon_is_escaped(hostile: tuple[Home, dict[str, str]]) -> None:
    home, _ = hostile
    proc = home.kairos("show", f"zz{HOSTILE}")
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1
    assert not UNSAFE.findall(proc.stderr), proc.stderr


@pytest.mark.parametrize(
    ("argv", "pick"),
    [
        (["show", "{task}"], lambda doc: [doc["task"]["prompt"], doc["task"]["name"]]),
        (["inbox"], lambda doc: [item["prompt"] for item in doc["items"]]),
        (["history", "{shell}"], lambda doc: [run["reason"] for run in doc["runs"] if run.get("reason")]),
        (["task", "show", "{bg}"], lambda doc: [doc["task"]["prompt"]]),
    ],
    ids=["show", "inbox", "history", "task show"],
)
def test_json_keeps_the_exact_text(
    hostile: tuple[Home, dict[str, str]], argv: list[str], pick: Callable[[Any], list[str]]
) -> None:
    home, ids = hostile
    texts = pick(home.json(*(word.format(**ids) for word in argv)))
    assert texts
    assert all(HOSTILE in text for text in texts), texts


def test_clean_escapes_exactly_the_unsafe_characters() -> None:
    from kairos.output import clean, one_line

    assert clean("a\x1b[0m\u202eb\nc\td\udcff") == "a\\x1b[0m\\u202eb\nc\td\\udcff"
    assert clean("plain, ünïcode ✓ and emoji 👍🏽") == "plain, ünïcode ✓ and emoji 👍🏽"
    assert one_line("two\nlines\x1b", 40) == "two lines\\x1b"
