"""``kairos ui`` (issue 26, part 2): Textual's Pilot against kairosd as ``build_app`` builds it, on a
FakeClock (tests/session_support.py), and the pure rows of :mod:`kairos.ui.views`.

``docs/ui.svg`` is what :func:`test_the_committed_screenshot_is_what_the_app_draws` draws from a fixed
store and clock; after a deliberate change of the picture, regenerate it with
``UPDATE_SCREENSHOTS=1 pytest tests/integration/kairos/ui/test_ui.py -k screenshot``.
"""

from __future__ import annotations

import asyncio
import functools
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from paths_support import REPO
from session_support import T0, Kairosd, call_hook, fixture, remove_home, short_home

from kairos.answers import UnexpectedAnswer
from kairos.client import Client
from kairos.commands.ui import JSON_HINT
from kairos.timeline.document import chart_query, cleaned
from kairos.timeline.layout import layout, render_text
from kairos.ui import views
from kairosd.core.errors import EXIT_USAGE
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from textual.app import App

    from kairos.ui.app import KairosUI

    AppT = TypeVar("AppT", bound=App[Any])

# Textual (~0.2 s to import) is imported by the tests that run the app, not at module level: every
# xdist worker collects this module, and only the one that runs these tests needs it.

REPO = REPO
SCREENSHOT = REPO / "docs" / "ui.svg"
WAIT_S = 10.0
INBOX = {"kind": "inbox"}


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = short_home("ku")
    monkeypatch.setenv("KAIROS_HOME", str(path))
    try:
        yield path
    finally:
        remove_home(path)


@pytest.fixture
def kd(home: Path) -> Iterator[Kairosd]:
    daemon = Kairosd(home).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def synchronous(test: Callable[..., Any]) -> Callable[..., Any]:
    """An async test run to its end on a loop of its own (the suite has no async plugin)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(test(*args, **kwargs))

    return run


def fixed_ids(kd: Kairosd) -> None:
    """Task ids 000000a0, 000000a1, ... in the order added (a screenshot must not change with them)."""
    ids = (f"{n:08x}" for n in range(0xA0, 0x100))
    kd.service.new_id = lambda: next(ids)


def new_ui(client: Client, **kw: Any) -> KairosUI:
    from kairos.ui.app import KairosUI

    return quiet(KairosUI(client, zone="UTC", **kw))


def quiet(app: AppT) -> AppT:
    """``app`` without Textual's animations (a tab's underline sliding, a smooth scroll): what these tests
    look at is where things end up, and each animation drew frames at 60 a second for its length (~10% of
    this module's CPU, more of its wall time)."""
    app.animation_level = "none"
    return app


def app_for(kd: Kairosd, **kw: Any) -> KairosUI:
    return new_ui(Client(kd.paths.socket), clock=kd.clock, **kw)


async def until(pilot: Any, condition: Callable[[], Any], what: str) -> Any:
    """Let the app run until ``condition`` holds (bounded), without blind sleeps."""
    loop_time = 0.0
    while loop_time < WAIT_S:
        value = condition()
        if value:
            return value
        await pilot.pause(0.02)
        loop_time += 0.02
    raise AssertionError(f"timed out waiting for {what}")


def screen_text(app: KairosUI) -> str:
    """The screen as plain text, as ``App.export_screenshot`` renders it."""
    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def shown(app: KairosUI, text: str) -> str | None:
    """The screen's text if it shows ``text`` (for :func:`until`)."""
    screen = screen_text(app)
    return screen if text in screen else None


def state_line(app: KairosUI) -> str:
    return str(app.query_one("#state").render())


# ---- keys send the CLI's requests --------------------------------------------------------------------


@synchronous
async def test_p_pauses_the_task_under_the_cursor_in_the_store(kd):
    task_id = kd.add("check the deploy", INBOX, name="deploy")
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        await pilot.press("p")
        await until(pilot, lambda: kd.call(lambda: kd.book.get(task_id).paused), "the task paused in the store")
        # The pause came back as an event: the row says so without a refresh key.
        await until(pilot, lambda: "paused" in app.table("tasks").get_row(task_id)[1], "the row to say paused")
        await pilot.press("r")
        await until(pilot, lambda: not kd.call(lambda: kd.book.get(task_id).paused), "the task resumed")


@synchronous
async def test_remove_asks_first_and_n_keeps_the_task(kd):
    task_id = kd.add("keep me", INBOX)
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        await pilot.press("x")
        await until(pilot, lambda: "remove" in screen_text(app) and "[y]es" in screen_text(app), "the question")
        await pilot.press("n")
        await pilot.pause(0.1)
        assert kd.call(lambda: kd.book.find(task_id)) is not None
        await pilot.press("x")
        await until(pilot, lambda: "[y]es" in screen_text(app), "the question again")
        await pilot.press("y")
        await until(pilot, lambda: kd.call(lambda: kd.book.find(task_id)) is None, "the task removed")
        await until(pilot, lambda: app.table("tasks").row_count == 0, "the row gone (task_removed event)")


@synchronous
async def test_run_now_and_acknowledge_in_the_inbox(kd):
    task_id = kd.add("say hello", INBOX)
    app = app_for(kd)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        await pilot.press("n")  # kairos run
        items = await until(pilot, lambda: kd.call(lambda: kd.inbox.list()), "the delivery")
        await pilot.press("6")
        assert app.current == "inbox"
        await until(pilot, lambda: app.table("inbox").row_count == 1, "the inbox row")
        await pilot.press("a")
        await until(pilot, lambda: not kd.call(lambda: kd.inbox.list()), "the item acked")
        await pilot.press("3")
        await until(pilot, lambda: app.table("history").row_count == 1, "the run in the history")
        row = app.table("history").get_row_at(0)
        assert row[1] == task_id
        assert row[3] == "delivered"
        assert items[0].task_id == task_id


# ---- kairosd down, and back -------------------------------------------------------------------------


@synchronous
async def test_says_plainly_when_kairosd_is_down_and_reconnects(home):
    first = Kairosd(home).start()
    first.add("survives a restart?", INBOX)
    app = new_ui(Client(first.paths.socket), clock=first.clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "kairosd is up" in state_line(app), "the up line")
        first.stop()
        await until(pilot, lambda: "kairosd is DOWN" in state_line(app), "the down line")
        await until(pilot, lambda: shown(app, "kairosd is DOWN"), "the down line on the screen")
        second = Kairosd(home).start()
        try:
            second.add("added while the ui waited", INBOX)
            await until(pilot, lambda: "kairosd is up" in state_line(app), "the up line again")
            await until(pilot, lambda: app.table("tasks").row_count == 1, "the new daemon's task")
            await until(pilot, lambda: shown(app, "added while"), "the new daemon's task on the screen")
        finally:
            second.stop()


@synchronous
async def test_a_ui_started_with_kairosd_down_says_so(home):
    app = new_ui(Client(home / "run" / "kairosd.sock"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "kairosd is DOWN" in state_line(app), "the down line")
        text = await until(pilot, lambda: shown(app, "kairos daemon start"), "the whole reason, wrapped")
        assert "retrying every 1s" in text


# ---- 80x24 ------------------------------------------------------------------------------------------


@synchronous
async def test_80x24_shows_the_tabs_the_row_the_countdown_and_the_keys(kd):
    kd.add("summarise the open PRs", INBOX, cron="30 9 * * *", name="prs")  # 30 min after T0
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        text = await until(pilot, lambda: shown(app, "pause"), "the footer's keys")
        lines = text.splitlines()
        assert len(lines) == 24
        assert all(len(line) <= 80 for line in lines)
        assert "1 Tasks" in text
        assert "kairosd is up" in text
        assert "in 30m00s" in text
        assert "prs" in text
        assert "pause" in text
        assert "quit" in text
        kd.clock.advance(29 * 60 + 30)
        await until(pilot, lambda: "in 0m30s" in screen_text(app), "the countdown to tick on the clock")


@synchronous
async def test_every_view_renders_at_80x24_with_the_mouse(kd):
    kd.add("a", INBOX)
    app = app_for(kd, projects=[str(kd.home)])
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        for name in views.VIEWS:
            await pilot.click(f"#--content-tab-tab-{name}")
            await until(pilot, lambda name=name: app.current == name, f"the {name} tab")
            assert len(screen_text(app).splitlines()) == 24
        await until(pilot, lambda: app.table("boards").row_count >= 1, "the project's board line")


@synchronous
async def test_a_tick_while_the_app_closes_draws_nothing_and_does_not_fail(kd):
    """The countdowns' one-second timer can fire once more while the app closes, after its screen is
    gone: under load a gate run saw it fail the app with NoMatches('#table-tasks')."""
    kd.add("a", INBOX)
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
    assert app.docs["tasks"]["tasks"]  # what a tick would draw is still there; the table is not
    app._tick()


@synchronous
async def test_the_message_line_promises_only_what_the_view_has(kd):
    """The Timeline has no rows and no keys of its own: its hint does not say "pick a row"."""
    kd.add("a", INBOX)
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        await until(pilot, lambda: shown(app, "pick a row"), "the tasks hint")
        await pilot.press("2")
        await until(pilot, lambda: app.current == "timeline", "the timeline tab")
        text = await until(pilot, lambda: shown(app, "the chart follows fires"), "the timeline's hint")
        assert "pick a row" not in text
        await pilot.press("3")
        text = await until(pilot, lambda: shown(app, "move through the rows"), "the runs' hint")
        assert "the keys below act on it" not in text


# ---- the screenshot ---------------------------------------------------------------------------------


@synchronous
async def test_the_committed_screenshot_is_what_the_app_draws(kd):
    fixed_ids(kd)
    kd.add("Check the open PRs and summarise what needs review", INBOX, cron="0 9 * * mon-fri", name="standup")
    kd.add("run the nightly backup", {"kind": "shell", "argv": ["/usr/bin/true"]}, cron="0 2 * * *", name="backup")
    kd.add("look at the CI of this branch", INBOX, cron="*/15 * * * *")
    paused = kd.add("weekly dependency review", INBOX, cron="0 10 * * mon", name="deps")
    kd.call(lambda: None)
    Client(kd.paths.socket).call("POST", f"/tasks/{paused}/pause")
    kd.clock.advance(200)
    app = app_for(kd)
    async with app.run_test(size=(100, 20)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 4, "the rows")
        await until(pilot, lambda: "paused" in app.table("tasks").get_row(paused)[1], "the paused row")
        await pilot.pause(0.1)
        drawn = app.export_screenshot(title="kairos ui")
    if os.environ.get("UPDATE_SCREENSHOTS"):
        SCREENSHOT.parent.mkdir(exist_ok=True)
        SCREENSHOT.write_text(drawn)
    assert SCREENSHOT.read_text() == drawn, "docs/ui.svg is not what the app draws (see this module's docstring)"


# ---- the rows, without a terminal --------------------------------------------------------------------


def test_countdown_words():
    assert views.countdown((T0 + timedelta(seconds=65)).isoformat(), T0) == "in 1m05s"
    assert views.countdown((T0 + timedelta(hours=3, minutes=12)).isoformat(), T0) == "in 3h12m"
    assert views.countdown((T0 + timedelta(days=2, hours=4)).isoformat(), T0) == "in 2d04h"
    assert views.countdown(T0.isoformat(), T0) == "due"
    assert views.countdown(None, T0) == "-"


def test_timeline_lines_are_the_cli_chart_with_now_from_the_clock_inside_the_window():
    doc = {
        "from": T0.isoformat(),
        "to": (T0 + timedelta(hours=10)).isoformat(),
        "now": (T0 + timedelta(hours=1)).isoformat(),
        "bins": 60,
        "tasks": [{"id": "ab12cd34", "name": "t", "tz": "UTC", "planned_bins": [[30, 2]], "runs": [], "missed": []}],
        "dst": {},
        "downtime": [],
    }
    later = T0 + timedelta(hours=4)
    moved = {**doc, "now": later.isoformat()}
    assert views.timeline_lines(doc, 80, later, "UTC") == render_text(layout(moved, 80), True)
    # Past the window's end, or behind the answer's own now: the answer's now stays.
    for clock in (T0 + timedelta(hours=11), T0):
        assert views.timeline_lines(doc, 80, clock, "UTC") == render_text(layout(doc, 80), True)
    assert views.timeline_lines(None, 80, later, "UTC") == []


BOARD = {"project": "/p", "path": "/p/.kairos/board.json", "limit": 40, "prune_to": 30, "entries": [],
         "updated_at": None}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "answers", "said"),
    [
        ("tasks", [{"tasks": [{"id": 5}]}], "GET /v1/tasks in a shape this kairos does not know (tasks.0.id:"),
        ("tasks", [{}], "GET /v1/tasks in a shape this kairos does not know (tasks: Field required"),
        (
            "history",
            [{"runs": [{"run_id": "r1"}]}],
            "GET /v1/runs in a shape this kairos does not know (runs.0.task_id:",
        ),
        ("missed", [{"missed": "none"}], "GET /v1/missed in a shape this kairos does not know (missed:"),
        ("jobs", [{"tasks": []}], "GET /v1/registry in a shape this kairos does not know (registry:"),
        ("inbox", [{"items": [{"id": "i1"}]}], "GET /v1/inbox in a shape this kairos does not know (items.0.session:"),
        ("sessions", [{"sessions": [{"agent": "claude", "session_id": "s1"}]}], "(sessions.0.cwd:"),
        ("boards", [BOARD, {"project": "/p", "history": [{"at": "x"}]}], "GET /v1/board/history in a shape"),
        ("timeline", [{"from": T0.isoformat(), "tasks": [{"name": "t"}]}], "GET /v1/timeline in a shape"),
    ],
)
def test_an_answer_of_another_shape_is_one_error_naming_the_route_and_the_key(name, answers, said):
    """Each view reads its answers as their models (kairosd.core.wire): a wrong key is one error the app
    says on its message line, not a row of "?" or a traceback (issue 25)."""
    with pytest.raises(UnexpectedAnswer) as raised:
        views.read_answers(name, views.requests(name, ["/p"]), answers)
    assert said in raised.value.message


def test_each_view_reads_its_answers_as_their_models():
    assert [type(doc).__name__ for doc in views.read_answers("boards", views.requests("boards", ["/p"]), [
        BOARD, {"project": "/p", "history": [{"at": "2026-10-31T09:00:00Z", "action": "add", "by": "user"}]}
    ])] == ["BoardDoc", "BoardHistoryDoc"]  # fmt: skip
    assert [name for name in views.VIEWS if not views.answer_models(name)] == ["tasks", "timeline"]  # as parsed


def test_every_action_is_a_route_the_cli_uses():
    """The keys send what the verbs send: the same routes of kairosd.core.protocol."""
    assert views.action_request("tasks", "p", "ab12cd34") == ("POST", "/tasks/ab12cd34/pause", None, None)
    assert views.action_request("tasks", "r", "ab12cd34")[:2] == ("POST", "/tasks/ab12cd34/resume")
    assert views.action_request("tasks", "n", "ab12cd34")[:2] == ("POST", "/tasks/ab12cd34/run")
    assert views.action_request("tasks", "x", "ab12cd34")[:2] == ("DELETE", "/tasks/ab12cd34")
    assert views.action_request("inbox", "a", "r1") == ("POST", "/inbox/ack", {"ids": ["r1"]}, None)
    assert views.action_request("jobs", "c", "t1")[:2] == ("POST", "/registry/t1/cancel")
    assert views.action_request("boards", "x", "e1", "/p") == ("DELETE", "/board/entries/e1", None, {"cwd": "/p"})
    assert views.pin_request("e1", "/p", pinned=False)[2] == {"cwd": "/p", "pinned": True}


# ---- kept out of the hook and list paths; an optional extra -------------------------------------------

BLOCK_TEXTUAL = """
import importlib.abc, os, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            if os.environ.get("UI_TEST_MODE") == "absent":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            os.write(2, b"TEXTUAL IMPORTED\\n")
            os._exit(99)
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["kairos", *sys.argv[1:]]
from kairos.__main__ import main
main()
"""


def _kairos_blocked(home: Path, *argv: str, mode: str = "trap", stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAIROS_HOME": str(home), "UI_TEST_MODE": mode}
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TEXTUAL, *argv], env=env, capture_output=True, text=True, timeout=60, input=stdin
    )


@pytest.mark.parametrize(
    "argv",
    [("list",), ("ls", "--json"), ("hook", "claude", "stop"), ("hook", "codex", "prompt"), ("status",)],
)
def test_the_hook_and_list_paths_do_not_import_textual(kd, argv):
    done = _kairos_blocked(kd.home, *argv, stdin="{}")
    assert "TEXTUAL IMPORTED" not in done.stderr
    assert done.returncode != 99


def test_without_textual_kairos_ui_says_how_to_install_it(home):
    done = _kairos_blocked(home, "ui", mode="absent")
    assert done.returncode == 1
    hint = "kairos: kairos ui needs the ui extra (Textual): pip install 'kairos[ui]'"
    assert done.stderr.strip().splitlines() == [hint]


@pytest.mark.parametrize("argv", [("ui", "--json"), ("--json", "ui")])
def test_kairos_ui_json_is_a_usage_error_before_any_view_starts(home, argv):
    done = _kairos_blocked(home, *argv)
    assert done.returncode == EXIT_USAGE
    assert "TEXTUAL IMPORTED" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"kairos: {JSON_HINT}"]
    assert done.stdout == ""


def test_the_block_would_catch_an_import(home):
    """The trap above is live: a path that imports textual is caught (so the test before can fail)."""
    done = _kairos_blocked(home, "ui")
    assert done.returncode == 99
    assert "TEXTUAL IMPORTED" in done.stderr


# ---- the table widget: only the lines on screen ---------------------------------------------------------


def rows_app() -> Any:
    """An app with only a :class:`Rows` of 100 rows, focused."""
    from textual.app import App

    from kairos.ui.rows import Rows

    class RowsApp(App[None]):
        def compose(self) -> Any:
            yield Rows(("ID", "TEXT"), id="rows")

        def on_mount(self) -> None:
            self.query_one(Rows).set_rows([(f"k{i}", [f"k{i}", f"row number {i}"]) for i in range(100)])
            self.query_one(Rows).focus()

    return quiet(RowsApp())


@synchronous
async def test_rows_move_with_the_keys_and_the_mouse_and_scroll_to_the_cursor():
    from kairos.ui.rows import Rows

    app = rows_app()
    async with app.run_test(size=(40, 10)) as pilot:
        rows = app.query_one(Rows)
        assert rows.selected == "k0"
        await pilot.press("down", "down")
        assert rows.selected == "k2"
        await pilot.press("end")
        assert rows.selected == "k99"
        await until(pilot, lambda: shown(app, "row number 99"), "the last row scrolled into view")
        assert "row number 0 " not in screen_text(app)
        assert screen_text(app).splitlines()[0].split() == ["ID", "TEXT"]  # the header stays
        await pilot.press("home")
        await until(pilot, lambda: shown(app, "row number 0"), "the first row again")
        await pilot.click(Rows, offset=(3, 4))  # line 4: the header, then rows 0, 1, 2
        assert rows.selected == "k3"
        rows.set_rows([(f"k{i}", [f"k{i}", "kept"]) for i in range(2, 6)])
        assert rows.selected == "k3"  # the cursor stays on its row when the rows change


# ---- jobs and boards ------------------------------------------------------------------------------------


@synchronous
async def test_a_job_shows_its_live_log_and_c_cancels_it(kd):
    client = Client(kd.paths.socket)
    argv = ["sh", "-c", "echo first line; echo second line; sleep 60"]
    job = client.call("POST", "/registry", {"kind": "shell", "argv": argv, "cwd": str(kd.home)})["task"]["id"]
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "kairosd is up" in state_line(app), "the up line")
        await pilot.press("5")
        await until(pilot, lambda: app.table("jobs").row_count == 1, "the job row")
        app.table("jobs").focus()
        await until(pilot, lambda: shown(app, "second line"), "the job's log, followed live")
        await pilot.press("c")
        await until(pilot, lambda: shown(app, "[y]es"), "the question")
        await pilot.press("y")
        status = lambda: client.call("GET", f"/registry/{job}")["task"]["status"]  # noqa: E731
        await until(pilot, lambda: status() == "cancelled", "the job cancelled")
        await until(pilot, lambda: app.table("jobs").get_row(job)[1] == "cancelled", "the row to say cancelled")


@synchronous
async def test_a_board_entry_is_pinned_and_removed_and_the_change_shows(kd):
    client = Client(kd.paths.socket)
    project = str(kd.home)
    entry = client.call("POST", "/board", {"cwd": project, "text": "use uv, not pip", "kind": "decision"})["entry"]
    app = app_for(kd, projects=[project])
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "kairosd is up" in state_line(app), "the up line")
        await pilot.press("8")
        await until(pilot, lambda: app.table("boards").row_count >= 2, "the project and its entry")
        assert "add " + entry["id"] in screen_text(app)  # what changed: the board's history
        app.table("boards").focus()
        await pilot.press("down")
        assert app.table("boards").selected == f"entry:{project}:{entry['id']}"
        await pilot.press("i")
        board = lambda: client.call("GET", "/board", query={"cwd": project})["entries"]  # noqa: E731
        await until(pilot, lambda: board()[0].get("pinned"), "the entry pinned")
        await until(pilot, lambda: "you, pinned" in app.table("boards").get_row(f"entry:{project}:{entry['id']}")[2],
                    "the row to say pinned")  # fmt: skip
        await pilot.press("x")
        await until(pilot, lambda: shown(app, "[y]es"), "the question")
        await pilot.press("y")
        await until(pilot, lambda: board() == [], "the entry removed")


@synchronous
async def test_a_live_session_shows_when_its_hook_registers_it(kd, monkeypatch):
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "kairosd is up" in state_line(app), "the up line")
        await pilot.press("7")
        assert app.current == "sessions"
        payload = fixture("claude", "SessionStart")
        assert call_hook(monkeypatch, "claude", "SessionStart", payload).code == 0
        sid = str(payload["session_id"])
        await until(pilot, lambda: app.table("sessions").row_count == 1, "the session (session_started event)")
        row = app.table("sessions").get_row(f"claude:{sid}")
        assert row[0] == sid
        assert row[1] == "claude"


@synchronous
async def test_a_prompts_control_and_bidi_characters_are_shown_escaped(kd):
    kd.add("evil \x1b[2J\u202e prompt", {"kind": "inbox", "session": "s\u202eb"})
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        row = app.table("tasks").get_row_at(0)
        assert row[5] == "evil \\x1b[2J\\u202e prompt"
        assert row[4] == "inbox:s\\u202eb"  # a target's text is escaped by the table itself
        text = await until(pilot, lambda: shown(app, "evil"), "the row on the screen")
        assert "\x1b" not in text
        assert "\u202e" not in text


@synchronous
async def test_the_timeline_is_kairos_timelines_own_chart_and_moves_with_the_clock(kd):
    soon = kd.add("in three hours", INBOX, cron="30 12 * * *", name="soon")  # T0 is 09:00
    kd.add("often", INBOX, cron="*/10 * * * *", name="every-ten")
    app = app_for(kd)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: app.chart.lines, "the chart")
        # Laid out in the columns it has.
        await until(pilot, lambda: app._timeline_width == app.chart.scrollable_content_region.width, "its width")
        width = app._timeline_width
        # What kairos timeline prints on a colour terminal of that width, for the same answer: one layout.
        doc = cleaned(Client(kd.paths.socket).call("GET", route_path("timeline"), query=chart_query(width)))
        assert app.chart.lines == render_text(layout(doc, width, "UTC"), True)
        text = await until(pilot, lambda: shown(app, "every-ten"), "the chart on the screen")
        assert "soon" in text
        assert "\x1b" not in text
        ruler = app.chart.plain[1]
        kd.clock.advance(2 * 3600)
        # The now mark moves with the clock, from the answer the ui has (nothing is asked).
        await until(pilot, lambda: app.chart.plain[1].index("v") > ruler.index("v"), "the now mark to move")
        assert app.chart.plain[1].count("v") == 1
        # A fire's outcome (kairosd's run_finished event) brings a new chart: the run is drawn delivered.
        assert not any(line.startswith("soon") and "*" in line for line in app.chart.plain)
        kd.fire(soon)
        await until(
            pilot, lambda: any(line.startswith("soon") and "*" in line for line in app.chart.plain), "the run drawn"
        )


@synchronous
async def test_the_timeline_rows_scroll_under_its_time_axis(kd):
    for i in range(30):
        kd.add(f"task {i}", INBOX, cron=f"{i} * * * *", name=f"row-{i:02d}")
    app = app_for(kd)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: len(app.chart.lines) > 30, "the chart")
        await until(pilot, lambda: app._timeline_width == app.chart.scrollable_content_region.width, "its width")
        ruler = app.chart.plain[1]
        text = await until(pilot, lambda: shown(app, "row-00"), "the first row")
        assert "row-29" not in text
        app.chart.focus()
        await pilot.press("end")
        text = await until(pilot, lambda: shown(app, "kairosd was down (derived)"), "the legend's end")
        assert "row-00" not in text
        assert ruler.strip() in text  # the axis stays on top


@synchronous
async def test_the_timeline_is_asked_again_for_a_new_width(kd):
    kd.add("often", INBOX, cron="*/10 * * * *", name="every-ten")
    app = app_for(kd)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: app.chart.lines, "the chart")
        before = app._timeline_width
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: app._timeline_width == before - 20, "the chart for 80 columns")
        assert max(len(line) for line in app.chart.plain[:2]) <= app._timeline_width


class Garbling(Client):
    """kairosd's answers, with ``change`` made to those of the paths it names (a kairosd of another version)."""

    def __init__(self, socket: Path, change: dict[str, Callable[[Any], Any]]) -> None:
        super().__init__(socket)
        self.change = change

    def call(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        answer = super().call(method, path, body, query)
        return self.change[path](answer) if method == "GET" and path in self.change else answer


@synchronous
async def test_an_answer_of_another_shape_is_said_on_the_message_line(kd):
    kd.add("often", INBOX, cron="*/10 * * * *", name="every-ten")
    change = {"/runs": lambda doc: {"runs": [{"run_id": 5}]}, "/timeline": lambda doc: {**doc, "downtime": None}}
    app = new_ui(Garbling(kd.paths.socket, change), clock=kd.clock)
    message = lambda: str(app.query_one("#message").render())  # noqa: E731
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.table("tasks").row_count == 1, "the task row")
        await pilot.press("2")
        await until(pilot, lambda: "GET /v1/timeline in a shape this kairos does not know (downtime:" in message(),
                    "the timeline's answer named on the message line")  # fmt: skip
        assert app.chart.lines == []
        await pilot.press("3")
        await until(pilot, lambda: "GET /v1/runs in a shape this kairos does not know (runs.0.run_id:" in message(),
                    "the runs' answer named on the message line")  # fmt: skip
        assert app.table("history").row_count == 0
        await pilot.press("1")  # the app goes on: the other views still show
        await until(pilot, lambda: shown(app, "every-ten"), "the tasks view")
        assert app.is_running
