"""The Textual app of ``kairos ui``: one tab a view, fed by kairosd's event stream.

A thread follows ``GET /v1/events`` (what ``kairos watch`` prints); each event marks the views it
changes stale (:func:`kairos.ui.views.stale_views`), and the shown view is fetched again at once,
the others when shown. Nothing polls kairosd while it is up. When the stream breaks, the top line
says kairosd is down and the thread tries to connect again every :data:`RECONNECT_S`; when it
answers, every view is fetched again. The countdowns tick on the ``clock`` given (a FakeClock in
tests), without asking kairosd.

Keys send the CLI's requests (:func:`kairos.ui.views.action_request`) through the CLI's
:class:`kairos.client.Client`. Blocking calls run in worker threads, never on the UI's loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, Log, Static, TabbedContent, TabPane

from kairos.client import Client
from kairos.output import clean
from kairos.ui import views
from kairos.ui.chart import ChartLines
from kairos.ui.rows import Rows
from kairosd.core.clock import Clock, SystemClock
from kairosd.core.errors import KairosError
from kairosd.core.protocol import route_path

RECONNECT_S = 1.0
HINT = "1-8 or a click: views · ↑↓: pick a row · the keys below act on it"
# A view with nothing to act on, or no rows, must not promise either (what the message line says first).
HINTS = {
    name: (
        "1-8 or a click: views · the chart follows fires and changes as they happen"
        if not spec[1]
        else HINT
        if spec[3]
        else "1-8 or a click: views · ↑↓: move through the rows"
    )
    for name, spec in views.VIEWS.items()
}


class Confirm(ModalScreen[bool]):
    """``remove task 3f2a9c1d? y/n``: what a destructive key asks first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
    ]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Label { border: thick $warning; padding: 1 2; background: $surface; width: auto; max-width: 76; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Label(f"{self.question}  [y]es / [n]o", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class KairosUI(App[None]):
    """Every view of kairosd in one terminal."""

    TITLE = "kairos"
    ENABLE_COMMAND_PALETTE = False  # its footer hint took columns the keys need at 80x24
    CSS = """
    #state { height: auto; max-height: 3; padding: 0 1; background: $success-darken-2; color: $text; }
    #state.down { background: $error; }
    #message { height: 1; padding: 0 1; color: $text-muted; }
    #tabs { height: 1fr; }
    #job-log { height: 8; border-top: solid $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        *(Binding(str(i + 1), f"show('{name}')", name, show=False) for i, name in enumerate(views.VIEWS)),
        Binding("p", "act('p')", "pause"),
        Binding("r", "act('r')", "resume"),
        Binding("n", "act('n')", "run now"),
        Binding("x", "act('x')", "remove"),
        Binding("a", "act('a')", "ack"),
        Binding("c", "act('c')", "cancel job"),
        Binding("i", "pin", "pin"),
    ]

    def __init__(
        self,
        client: Client | None = None,
        clock: Clock | None = None,
        zone: str = "UTC",
        projects: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.client = client or Client()
        self.clock = clock or SystemClock()
        self.zone = zone
        self.projects = list(dict.fromkeys(projects or []))
        self.docs: dict[str, Any] = {}
        self.stale = set(views.VIEWS)
        self.connected = False
        self.down_reason = ""
        self._stopping = threading.Event()
        # view -> the connection (a count of reconnections) its fetch in flight was sent on: a fetch sent to a
        # kairosd that went away may hang until the client's timeout, and must not hold up the new one's.
        self._fetching: dict[str, int] = {}
        self._connection = 0
        self._log_job = ""
        self._countdowns: dict[str, str] = {}
        self._timeline_minute: datetime | None = None
        self._timeline_width = 0

    # ---- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("connecting to kairosd...", id="state")
        with TabbedContent(id="tabs"):
            for i, (name, spec) in enumerate(views.VIEWS.items()):
                with TabPane(f"{i + 1} {spec[0]}", id=f"tab-{name}"):  # 8 labels within 80 columns
                    if name == "timeline":
                        yield ChartLines(id="chart-timeline")
                    elif name == "jobs":
                        with Vertical():
                            yield self._table(name, spec[1])
                            yield Log(id="job-log", max_lines=views.LOG_LINES)
                    else:
                        yield self._table(name, spec[1])
        yield Static(HINT, id="message")
        yield Footer()

    def _table(self, name: str, columns: tuple[str, ...]) -> Rows:
        return Rows(columns, id=f"table-{name}")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)
        # Our own daemon thread, not a Textual worker: it blocks in a read that only kairosd ends, and
        # quitting must not wait for that.
        threading.Thread(target=self._follow, name="kairos-ui-events", daemon=True).start()

    def on_unmount(self) -> None:
        self._stopping.set()

    async def action_quit(self) -> None:
        self._stopping.set()  # first: an answer that comes while the app ends is dropped, not drawn
        await super().action_quit()

    @property
    def current(self) -> str:
        try:
            active = self.query_one(TabbedContent).active
        except NoMatches:  # asked before the tabs are mounted (the footer's first check)
            return "tasks"
        return (active or "tab-tasks").removeprefix("tab-")

    def table(self, name: str) -> Rows:
        return self.query_one(f"#table-{name}", Rows)

    @property
    def chart(self) -> ChartLines:
        return self.query_one("#chart-timeline", ChartLines)

    def chart_width(self) -> int:
        """The columns the timeline's chart is laid out in: its widget's, or the screen's before it has any."""
        try:
            chart = self.chart
        except NoMatches:
            return self.size.width
        # A hidden tab has no region yet: the screen's width less the scrollbar's gutter is what it will get.
        return chart.scrollable_content_region.width or max(self.size.width - chart.styles.scrollbar_size_vertical, 1)

    # ---- the event stream (a worker thread) --------------------------------------------------------

    def _from_thread(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn`` on the UI's loop; False once the app has ended (the thread then stops)."""
        if self._stopping.is_set():
            return False
        try:
            self.call_from_thread(fn, *args)
        except RuntimeError:  # the app's loop is gone
            self._stopping.set()
            return False
        return True

    def _follow(self) -> None:
        while not self._stopping.is_set():
            try:
                # Up once kairosd has accepted the subscription: the views fetched then miss no event.
                stream = self.client.stream(route_path("events"), on_open=lambda: self._from_thread(self._up))
                for event in stream:
                    if not self._from_thread(self._event, event):
                        stream.close()
                        return
                reason = "kairosd ended the event stream (it stopped)"
            except KairosError as exc:
                reason = exc.message
            if not self._from_thread(self._down, reason):
                return
            self._stopping.wait(RECONNECT_S)

    def _up(self) -> None:
        self.connected, self.down_reason = True, ""
        self._connection += 1
        self.stale = set(views.VIEWS)
        self._show_state()
        self._refresh(self.current)

    def _down(self, reason: str) -> None:
        self.connected, self.down_reason = False, reason
        self._show_state()

    def _show_state(self) -> None:
        state = self.query_one("#state", Static)
        if self.connected:
            doc = self.docs.get("tasks")
            tasks = len(doc["tasks"]) if doc else 0
            state.update(f"kairosd is up · {tasks} task(s) · live (kairos watch's events)")
            state.remove_class("down")
        else:
            state.update(Text(f"kairosd is DOWN: {clean(self.down_reason)} · retrying every {RECONNECT_S:g}s"))
            state.add_class("down")

    def _event(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type") or event.get("event") or "")
        if kind == "board_changed" and event.get("project"):
            project = str(event["project"])
            if project not in self.projects:
                self.projects.append(project)
        if kind == "overflow":
            self.stale = set(views.VIEWS)  # we fell behind: some events were dropped
        else:
            self.stale.update(views.stale_views(kind))
        self._refresh(self.current)

    # ---- fetching ------------------------------------------------------------------------------------

    def _refresh(self, name: str) -> None:
        if not self.connected or name not in self.stale or self._fetching.get(name) == self._connection:
            return
        self.stale.discard(name)
        self._fetching[name] = connection = self._connection
        projects, width = list(self.projects), self.chart_width()
        self.run_worker(lambda: self._fetch(name, connection, projects, width), thread=True, group=f"fetch-{name}")

    def _fetch(self, name: str, connection: int, projects: list[str], width: int) -> None:
        try:
            asked = views.requests(name, projects, width)
            # Each as its model (the timeline's cleaned: the chart writes colour codes, no raw name may reach it);
            # an answer of another shape is a KairosError too, said on the message line.
            answers = views.read_answers(name, asked, [self.client.call(m, p, None, q) for m, p, q in asked])
            if name == "timeline":
                answers.append(width)
        except KairosError as exc:
            self._from_thread(self._fetched, name, connection, projects, None, exc.message)
            return
        self._from_thread(self._fetched, name, connection, projects, answers, "")

    def _fetched(
        self, name: str, connection: int, projects: list[str], answers: list[Any] | None, problem: str
    ) -> None:
        if self._fetching.get(name) == connection:
            del self._fetching[name]
        if connection != self._connection or not self.is_running:
            return  # sent to a kairosd that has gone since (its views are fetched again), or the app ended
        if answers is None:
            self.stale.add(name)
            self.say(problem)
            return
        if name == "boards":
            self.docs[name] = [(p, answers[2 * i], answers[2 * i + 1]) for i, p in enumerate(projects)]
        elif name == "timeline":
            self.docs[name], self._timeline_width = answers
        else:
            self.docs[name] = answers[0]
            if name == "sessions":
                for s in answers[0].sessions:
                    if s.cwd and s.cwd not in self.projects:
                        self.projects.append(s.cwd)
        self._render(name)
        if name in self.stale:  # an event came while we fetched
            self._refresh(name)

    def _rows(self, name: str) -> list[tuple[str, list[str]]]:
        doc, now = self.docs.get(name), self.clock.now()
        if name == "tasks":
            return views.task_rows(doc, now, self.zone)
        if name == "history":
            return views.history_rows(doc, self.zone)
        if name == "missed":
            return views.missed_rows(doc, self.zone)
        if name == "jobs":
            return views.job_rows(doc, self.zone)
        if name == "inbox":
            return views.inbox_rows(doc, self.zone)
        if name == "sessions":
            return views.session_rows(doc, self.zone)
        return views.board_rows(doc or [])

    def _render(self, name: str) -> None:
        if name == "timeline":
            # Laid out in the columns it was asked for (the daemon counted the fires in that many cells).
            doc, width = self.docs.get(name), self._timeline_width
            try:
                lines = views.timeline_lines(doc, width, self.clock.now(), self.zone)
            except KairosError as exc:  # an answer the layout cannot read: said, and no chart
                self.say(exc.message)
                lines = []
            self.chart.set_lines(lines)
            return
        rows = self._rows(name)
        # The countdown changes length as it ticks: its column has room for the longest it shows in an hour.
        self.table(name).set_rows(rows, {1: len("in 59m59s")} if name == "tasks" else None)
        if name == "tasks":
            self._countdowns = {key: cells[1] for key, cells in rows}
            self._show_state()

    def _tick(self) -> None:
        """The countdowns: only the lines whose text changed are drawn again. The timeline, when shown,
        is laid out again each minute on the clock (from the answer it has: nothing is asked)."""
        try:
            self._draw_the_clock()
        except NoMatches:  # a tick while the app closes (its screen is gone): nothing left to draw
            return

    def _draw_the_clock(self) -> None:
        now = self.clock.now()
        minute = now.replace(second=0, microsecond=0)
        if self.current == "timeline" and "timeline" in self.docs and minute != self._timeline_minute:
            self._timeline_minute = minute
            self._render("timeline")
        doc = self.docs.get("tasks")
        if not doc or not doc["tasks"]:
            return
        table = self.table("tasks")
        for task in doc["tasks"]:
            key, text = str(task["id"]), views.task_next_in(task, now)
            if self._countdowns.get(key) != text:
                self._countdowns[key] = text
                table.update_cell(key, 1, text)

    # ---- keys ----------------------------------------------------------------------------------------

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()
        self.say(HINTS[self.current])
        self._refresh(self.current)

    def on_chart_lines_resized(self, message: ChartLines.Resized) -> None:
        """A chart laid out for other columns is asked for again (its cells are the daemon's bins)."""
        if "timeline" in self.docs and self.chart_width() != self._timeline_width:
            self.stale.add("timeline")
            self._refresh(self.current)

    def on_rows_highlighted(self, message: Rows.Highlighted) -> None:
        if message.rows.id == "table-jobs":
            self._follow_log(message.key)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only the keys of the shown view are live and in the footer (80 columns hold no more)."""
        if action == "act":
            return any(a.key == parameters[0] for a in views.VIEWS[self.current][3])
        if action == "pin":
            return self.current == "boards"
        return True

    def action_show(self, name: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{name}"

    def selected(self, name: str) -> str | None:
        return self.table(name).selected

    def _target(self, view: str) -> tuple[str, str] | None:
        """The id the key acts on and, for a board entry, its project."""
        key = self.selected(view)
        if key is None:
            return None
        if view == "boards":
            kind, _, rest = key.partition(":")
            if kind != "entry":
                return None
            project, _, entry = rest.rpartition(":")
            return entry, project
        if view in ("history", "missed", "timeline", "sessions"):
            return None
        return key, ""

    def action_act(self, key: str) -> None:
        view = self.current
        spec = {a.key: a for a in views.VIEWS[view][3]}
        action = spec.get(key)
        target = self._target(view)
        if action is None or target is None:
            return
        row, project = target
        request = views.action_request(view, key, row, project)
        if action.confirm:
            question = f"{action.label} {row}?"

            def answered(yes: bool | None) -> None:
                if yes:
                    self._send(request, f"{action.label}: {row}")

            self.push_screen(Confirm(question), answered)
        else:
            self._send(request, f"{action.label}: {row}")

    def action_pin(self) -> None:
        if self.current != "boards":
            return
        target = self._target("boards")
        if target is None:
            return
        row, project = target
        pinned = any(
            e.id == row and bool(e.pinned)
            for p, board, _ in self.docs.get("boards") or []
            if p == project
            for e in board.entries
        )
        self._send(views.pin_request(row, project, pinned), f"{'unpinned' if pinned else 'pinned'}: {row}")

    def _send(self, request: tuple[str, str, Any, dict[str, str] | None], done: str) -> None:
        method, path, body, query = request

        def send() -> None:
            try:
                self.client.call(method, path, body, query)
            except KairosError as exc:
                self.call_from_thread(self.say, exc.message)
                return
            self.call_from_thread(self.say, done)

        self.run_worker(send, thread=True, group="actions")

    def say(self, text: str) -> None:
        self.query_one("#message", Static).update(Text(clean(text)))  # an error may quote a name

    # ---- a job's live log ----------------------------------------------------------------------------

    def _follow_log(self, job: str) -> None:
        if job == self._log_job:
            return
        self._log_job = job
        log = self.query_one("#job-log", Log)
        log.clear()
        # A daemon thread as the event stream's: a follower blocks until the job writes or ends.
        threading.Thread(target=self._stream_log, args=(job,), name="kairos-ui-log", daemon=True).start()

    def _stream_log(self, job: str) -> None:
        from kairos.answers import read
        from kairosd.core.wire.registry import LogLine

        try:
            stream = self.client.stream(route_path("registry_logs", id=job), {"follow": "1"})
            for item in stream:
                # Each line as its model (routes.STREAMS); one of another shape ends the follow with the error.
                line = read(LogLine, item, "GET /v1/registry/ID/logs?follow=1").line
                if self._log_job != job or (line is not None and not self._from_thread(self._log_line, job, str(line))):
                    stream.close()
                    return
        except KairosError as exc:
            self._from_thread(self._log_line, job, f"(log: {exc.message})")

    def _log_line(self, job: str, line: str) -> None:
        if job == self._log_job:
            self.query_one("#job-log", Log).write_line(clean(line))  # a job's output may hold escapes
