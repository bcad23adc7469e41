"""The ui's Timeline view: the chart ``kairos timeline`` prints, drawn in a scrolling widget.

The lines come from :func:`kairos.ui.views.timeline_lines`, which is :mod:`kairos.timeline.layout`'s
:func:`~kairos.timeline.layout.layout` and :func:`~kairos.timeline.layout.render_text` with colour: one
layout for both, so the two pictures cannot drift. This widget only turns each line's colour codes into
Rich styles, when Textual asks for that line (the Line API: a week of 1,000 tasks is 1,000 lines and
more), and keeps the time axis (the first two lines) in place while the rows scroll under it.
Imports Textual and Rich only: no client, no kairosd, no layout of its own.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

AXIS_LINES = 2  # the tick labels and the ruler: render_text's first two lines
_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the only codes render_text writes (names are cleaned before)


def strip_ansi(line: str) -> str:
    return _SGR.sub("", line)


class ChartLines(ScrollView, can_focus=True):
    """Lines of text with ANSI colour codes; the first :data:`AXIS_LINES` stay put as a header."""

    # The gutter is kept when no scrollbar shows: the chart's columns do not change as its rows grow.
    DEFAULT_CSS = """
    ChartLines { height: 1fr; scrollbar-gutter: stable; }
    """

    class Resized(Message):
        """The columns the chart has changed (a chart laid out for others must be asked for again)."""

        def __init__(self, chart: ChartLines) -> None:
            super().__init__()
            self.chart = chart

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self._strips: dict[int, Strip] = {}

    @property
    def plain(self) -> list[str]:
        """The lines as a terminal without colour shows them (what the tests compare)."""
        return [strip_ansi(line) for line in self.lines]

    def set_lines(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self._strips = {}
        widest = max((cell_len(strip_ansi(line)) for line in self.lines), default=0)
        self.virtual_size = Size(widest, max(len(self.lines), AXIS_LINES))
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self))

    def _strip(self, index: int) -> Strip:
        strip = self._strips.get(index)
        if strip is None:
            text = Text.from_ansi(self.lines[index], end="", no_wrap=True)
            strip = self._strips[index] = Strip(list(text.render(self.app.console)))
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        index = y if y < AXIS_LINES else y + int(scroll_y)
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        strip = self._strip(index).apply_style(self.rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
