"""A table that draws only the lines on screen: the views of ``kairos ui`` with thousands of rows.

Textual's ``DataTable`` measures every cell of every new row (about 0.7 ms a row here: 1,000 tasks
took most of a second before the first draw, ``bench/bench_ui.py``), and a countdown changing each
second made it measure again. The views already know their cells as text, so this widget pads them to
column widths computed once per answer and draws a line when Textual asks for it (the Line API).
Keys: arrows, Page Up/Down, Home/End; a click picks a row; the wheel scrolls.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kairos.output import cell

GAP = "  "


class Rows(ScrollView, can_focus=True):
    """Rows of text cells under a header line; one row is under the cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "move(-1000000000)", "first", show=False),
        Binding("end", "move(1000000000)", "last", show=False),
    ]
    DEFAULT_CSS = """
    Rows { height: 1fr; }
    """
    HEADER = Style(bold=True)
    CURSOR = Style(reverse=True)

    class Highlighted(Message):
        """The cursor moved to the row ``key``."""

        def __init__(self, rows: Rows, key: str) -> None:
            super().__init__()
            self.rows, self.key = rows, key

    def __init__(self, columns: tuple[str, ...], *, id: str) -> None:
        super().__init__(id=id)
        self.columns = columns
        self.keys: list[str] = []
        self.cells: list[list[str]] = []
        self.index: dict[str, int] = {}
        self.widths = [cell_len(c) for c in columns]
        self.cursor = 0

    # ---- the data -------------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self.keys)

    def get_row(self, key: str) -> list[str]:
        return self.cells[self.index[key]]

    def get_row_at(self, row: int) -> list[str]:
        return self.cells[row]

    @property
    def selected(self) -> str | None:
        return self.keys[self.cursor] if self.keys else None

    def set_rows(self, rows: list[tuple[str, list[str]]], min_widths: dict[int, int] | None = None) -> None:
        """Show ``rows`` (key, cells); the cursor stays on the row it was on, if that row is still there.

        Each cell goes through :func:`kairos.output.cell`, as in ``kairos list``: a prompt's control or bidi
        characters are shown escaped, never sent to the terminal raw."""
        keep = self.selected
        self.keys = [key for key, _ in rows]
        self.cells = [[cell(text) for text in cells] for _, cells in rows]
        self.index = {key: i for i, key in enumerate(self.keys)}
        widths = [cell_len(c) for c in self.columns]
        for cells in self.cells:
            for i, text in enumerate(cells):
                widths[i] = max(widths[i], cell_len(text))
        for i, width in (min_widths or {}).items():
            widths[i] = max(widths[i], width)
        self.widths = widths
        self.virtual_size = Size(1 + sum(widths) + len(GAP) * (len(widths) - 1), len(self.keys) + 1)
        self.cursor = self.index.get(keep, min(self.cursor, max(len(self.keys) - 1, 0))) if keep else 0
        self.refresh()
        if self.selected is not None and self.selected != keep:  # a first row, or the row went away
            self.post_message(self.Highlighted(self, self.selected))

    def update_cell(self, key: str, column: int, text: str) -> None:
        """Change one cell in place (a countdown): its column keeps its width, the line is drawn again."""
        row = self.index.get(key)
        if row is None:
            return
        self.cells[row][column] = cell(text)
        self.refresh_lines(row + 1 - int(self.scroll_offset.y))

    # ---- drawing --------------------------------------------------------------------------------------

    def _line(self, cells: list[str] | tuple[str, ...]) -> str:
        return " " + GAP.join(set_cell_size(text, width) for text, width in zip(cells, self.widths, strict=False))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            text, style = self._line(self.columns), base + self.HEADER
        else:
            row = scroll_y + y - 1
            if row >= len(self.keys):
                return Strip.blank(width, base)
            text = self._line(self.cells[row])
            style = base + self.CURSOR if row == self.cursor else base
        line = set_cell_size(text, max(cell_len(text), scroll_x + width))
        return Strip([Segment(line, style)]).crop(scroll_x, scroll_x + width)

    # ---- moving ---------------------------------------------------------------------------------------

    def move_to(self, row: int) -> None:
        if not self.keys:
            return
        row = max(0, min(row, len(self.keys) - 1))
        changed = row != self.cursor
        self.cursor = row
        visible = max(self.scrollable_content_region.height - 1, 1)
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False)
        self.refresh()
        if changed:
            self.post_message(self.Highlighted(self, self.keys[row]))

    def action_move(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.move_to(int(self.scroll_offset.y) + event.y - 1)
