"""The timeline chart laid out in character cells: one row per task, one column per slice of the window.

Pure: :func:`layout` takes the document ``GET /v1/timeline`` answers (see
:mod:`kairosd.scheduling.timeline`), as parsed JSON (not its model, ``TimelineDoc``: validating a week of
1,000 tasks' answer was about half of ``kairos timeline``'s time, :mod:`kairos.timeline.document` has the
figures), a width and a display zone, and returns a :class:`Chart` of cells. It reads each key the model
requires as required (a missing one is a KeyError, which :func:`kairos.timeline.document.chart` turns into
one clear error naming it, rather than a chart with holes). :func:`render_text` turns the chart into lines,
with ANSI colour or with plain symbols and a legend; :func:`timeline_lines` does both. No I/O, no clock,
no terminal: ``kairos ui`` reuses it as it is.

What a cell shows (the legend says the same):

* one fire: its kind's symbol (planned, delivered, caught up late, failed, skipped, missed, running);
* 2 to 9 fires: the digit, coloured as the worst of them; 10 or more: ``+``, and a note says the
  most fires one cell of that row holds. Without colour a cell holding a failure, a miss, a skip or
  a late catch-up shows that symbol instead of its count, and the row's note counts them;
* nothing: the now column ``|``, a DST change of the task's zone ``D``, kairosd down ``~``, else blank.

Nothing is cut silently: a label too long for its column ends in ``~`` (the notes map it to the task
id), a terminal too narrow for label and cells side by side gets the label on a line of its own, and
notes wrap at the width.

Must not import anything with I/O (no client, no os, no sys).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

# Worst first: the kind a cell with several fires takes.
KINDS = ("failed", "missed", "skipped", "late", "running", "delivered", "planned")
SYMBOL = {
    "planned": "o",
    "delivered": "*",
    "late": "L",
    "failed": "X",
    "skipped": "s",
    "missed": "m",
    "running": ">",
}
DESCRIBE = {
    "planned": "will fire (planned time, jitter included)",
    "delivered": "fired and delivered",
    "late": "caught up late (after kairosd was down or the clock jumped)",
    "failed": "fired and failed",
    "skipped": "skipped",
    "missed": "missed (kairosd was down, or the clock jumped)",
    "running": "running or queued",
}
PROBLEMS = frozenset({"failed", "missed", "skipped", "late"})
NOW, DST, DOWN, MANY = "|", "D", "~", "+"
# ANSI foreground per kind; the background of a cell while kairosd was down.
ANSI = {
    "planned": "36",
    "delivered": "32",
    "late": "33",
    "failed": "1;31",
    "skipped": "35",
    "missed": "1;91",
    "running": "34",
}
ANSI_DOWN_BG = "48;5;238"
ANSI_NOW = "1;97"
ANSI_DST = "1;33"
MIN_CELLS = 10
MIN_LABEL = 6
MAX_LABEL = 24
TICK_STEPS_MIN = (1, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080)


@dataclass(frozen=True, slots=True)
class Cell:
    """One slice of one task's row: how many fires it holds, of which kinds, and what lies behind it.

    Frozen: the empty cells of a chart are shared between rows (1,000 tasks are 100,000 cells).
    """

    count: int = 0
    kinds: Mapping[str, int] = field(default_factory=dict)
    now: bool = False
    down: bool = False
    dst: bool = False
    kind: str | None = None  # the worst kind of fire in the cell (None when empty)

    @classmethod
    def holding(cls, kinds: Mapping[str, int], behind: Cell) -> Cell:
        """A cell with fires of ``kinds`` (kind: how many) over the background ``behind``."""
        worst = next(k for k in KINDS if k in kinds)
        return cls(sum(kinds.values()), kinds, behind.now, behind.down, behind.dst, worst)

    def text(self, color: bool) -> str:
        """The character drawn: a symbol, a count, or what lies behind an empty cell."""
        kind = self.kind
        if kind is None:
            return NOW if self.now else DST if self.dst else DOWN if self.down else " "
        if self.count == 1 or (not color and kind in PROBLEMS):
            return SYMBOL[kind]
        return str(self.count) if self.count < 10 else MANY


@dataclass(slots=True)
class Row:
    task_id: str
    label: str  # as drawn: cut to the label column, ending in "~" when cut
    full_label: str
    tz: str
    cells: list[Cell]
    capped: bool = False
    most: int = 0  # the most fires one cell holds
    totals: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Chart:
    """The laid-out chart: ``rows`` of ``columns`` cells, each ``step`` long, from ``start`` to ``end``."""

    start: datetime
    end: datetime
    now: datetime
    zone: str
    width: int
    label_width: int
    columns: int
    step: timedelta
    stacked: bool  # labels on their own line (a terminal too narrow for both)
    rows: list[Row]
    ticks: list[tuple[int, str]]  # (column, label) along the time axis
    now_column: int | None
    notes: list[str]
    downtime: list[tuple[datetime, datetime]]
    dst: dict[str, list[tuple[datetime, str, str]]]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _column(at: datetime, start: datetime, step: timedelta, columns: int) -> int | None:
    if at < start:
        return None
    index = int((at - start) / step)
    if index >= columns:
        # The window's last instant belongs to the last cell.
        return columns - 1 if index == columns and at - start <= step * columns else None
    return index


def _span(delta: timedelta) -> str:
    """A duration as people say it: 45s, 12m, 1h30m, 2d."""
    seconds = round(delta.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m" + (f"{seconds % 60}s" if minutes < 10 and seconds % 60 else "")
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h" + (f"{minutes}m" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days}d" + (f"{hours}h" if hours else "")


def _local(at: datetime, zone: ZoneInfo) -> str:
    return at.astimezone(zone).strftime("%a %d %b %H:%M")


def _ticks(start: datetime, end: datetime, step: timedelta, columns: int, zone: ZoneInfo) -> list[tuple[int, str]]:
    """Axis labels at round local times, spaced so that none overlaps the next."""
    span_min = (end - start).total_seconds() / 60
    per_column = span_min / columns
    ticks: list[tuple[int, str]] = []
    for minutes in TICK_STEPS_MIN:
        width = 6 if minutes < 1440 else 7
        if minutes / per_column >= width + 1 or minutes == TICK_STEPS_MIN[-1]:
            break
    local = start.astimezone(zone)
    if minutes < 1440:
        first = local.replace(minute=0, second=0, microsecond=0)
    else:
        first = local.replace(hour=0, minute=0, second=0, microsecond=0)
    at = first.astimezone(UTC)
    last_end = -1
    while at <= end:
        wall = at.astimezone(zone)
        on_grid = (wall.hour * 60 + wall.minute) % minutes == 0 if minutes < 1440 else wall.hour == 0
        if at >= start and on_grid:
            column = _column(at, start, step, columns)
            text = wall.strftime("%a%d") if (wall.hour, wall.minute) == (0, 0) else wall.strftime("%H:%M")
            if column is not None and column > last_end and column + len(text) <= columns:
                ticks.append((column, text))
                last_end = column + len(text)
        # Whole hours past the first step: a DST change moves local midnight and the hours by one.
        at += timedelta(minutes=minutes if minutes < 60 else 60)
    return ticks


def _fit(label: str, width: int) -> str:
    return label if len(label) <= width else label[: width - 1] + "~"


def columns_for(width: int) -> int:
    """The cells a chart ``width`` wide has with the widest label column: what to ask the daemon's ``bins`` for.

    A document with ``bins`` (planned fires counted per slice, not listed) is laid out in exactly that
    many cells; give :func:`layout` the same ``width``.
    """
    width = max(width, MIN_CELLS)
    label_width = min(MAX_LABEL, max(MIN_LABEL, width // 3))
    return width if width - label_width - 1 < MIN_CELLS else width - label_width - 1


def layout(doc: Mapping[str, Any], width: int, zone: str = "UTC") -> Chart:
    """Lay out the timeline ``doc`` in ``width`` columns, the axis in ``zone`` (the viewer's).

    ``doc`` lists planned fires (``planned``) or counts them in ``doc["bins"]`` slices (``planned_bins``,
    asked for with :func:`columns_for` of the same width).
    """
    tz = ZoneInfo(zone)
    start, end, now = _at(doc["from"]), _at(doc["to"]), _at(doc["now"])
    tasks: Sequence[Mapping[str, Any]] = doc["tasks"]
    labels = [str(t.get("name") or t["id"]) for t in tasks]
    width = max(width, MIN_CELLS)
    bins = doc.get("bins")
    if bins:
        # The daemon counted the planned fires in this many slices: they are the columns (see columns_for).
        columns = int(bins)
        stacked = columns > width - MIN_LABEL - 1
        label_width = width - columns - 1
    else:
        label_width = min(max([len(x) for x in labels] + [MIN_LABEL]), MAX_LABEL, max(MIN_LABEL, width // 3))
        stacked = width - label_width - 1 < MIN_CELLS
        columns = width if stacked else width - label_width - 1
    step = (end - start) / columns
    now_column = _column(now, start, step, columns) if start <= now <= end else None
    downtime = [(_at(a), _at(b)) for a, b in doc["downtime"]]
    down_columns: set[int] = set()
    for a, b in downtime:
        first, last = _column(max(a, start), start, step, columns), _column(min(b, end), start, step, columns)
        if first is not None and last is not None:
            down_columns.update(range(first, last + 1))
    dst = {name: [(_at(c["at"]), c["before"], c["after"]) for c in changes] for name, changes in doc["dst"].items()}
    rows = []
    backgrounds: dict[str, list[Cell]] = {}  # by zone: the empty cells, with that zone's DST changes
    plain = [Cell(now=i == now_column, down=i in down_columns) for i in range(columns)]
    # In epoch seconds: 100,000 fires are placed in a fraction of the time timedelta arithmetic takes.
    origin, per_second = start.timestamp(), columns / (end - start).total_seconds()
    held_cells: dict[tuple[Any, ...], Cell] = {}  # by (id of the background, *kinds)
    for task, label in zip(tasks, labels, strict=True):
        task_zone: str = task["tz"]
        if task_zone not in backgrounds:
            base = list(plain)
            for change, _, _ in dst.get(task_zone, []):
                column = _column(change, start, step, columns)
                if column is not None:
                    base[column] = Cell(now=base[column].now, down=base[column].down, dst=True)
            backgrounds[task_zone] = base
        events = [(at, "planned") for at in task.get("planned") or []]
        events += [(r["at"], r["outcome"]) for r in task["runs"]]
        events += [(m["at"], "missed") for m in task["missed"]]
        totals: dict[str, int] = {}
        hits: dict[int, dict[str, int]] = {}
        for at, kind in events:
            kind = kind if kind in SYMBOL else "failed"  # an outcome this CLI does not know yet: say it went wrong
            totals[kind] = totals.get(kind, 0) + 1
            offset = (datetime.fromisoformat(at).timestamp() - origin) * per_second
            column = int(offset)
            if column == columns and offset - columns < 1e-6:
                column -= 1  # the window's last instant belongs to the last cell
            if offset < 0 or column >= columns:
                continue
            held = hits.setdefault(column, {})
            held[kind] = held.get(kind, 0) + 1
        cells = list(backgrounds[task_zone])
        most = 0
        binned = task.get("planned_bins") or []
        if binned:
            totals["planned"] = totals.get("planned", 0) + sum(count for _, count in binned)
        for column, count in binned:
            if column in hits or not 0 <= column < columns:
                held = hits.setdefault(column, {})
                held["planned"] = held.get("planned", 0) + count
                continue
            # Only planned fires in this cell (most cells of a week's chart): the shared cell at once.
            behind = cells[column]
            cell = held_cells.get((id(behind), "planned", count))
            if cell is None:
                cell = held_cells[(id(behind), "planned", count)] = Cell.holding({"planned": count}, behind)
            cells[column] = cell
            most = max(most, count)
        for column, kinds in hits.items():
            if not 0 <= column < columns:
                continue  # a slice this chart does not have (a document asked for other bins)
            behind = cells[column]
            # Shared like the empty cells: a week of 1,000 tasks is 20,000 cells holding fires, mostly alike.
            key = (id(behind), *(item for pair in kinds.items() for item in pair))
            cell = held_cells.get(key)
            if cell is None:
                cell = held_cells[key] = Cell.holding(kinds, behind)
            cells[column] = cell
            most = max(most, cell.count)
        rows.append(
            Row(
                task_id=str(task["id"]),
                label=_fit(label, width if stacked else label_width),
                full_label=label,
                tz=task_zone,
                cells=cells,
                capped=bool(task.get("capped")),
                most=most,
                totals=totals,
            )
        )
    chart = Chart(
        start=start,
        end=end,
        now=now,
        zone=zone,
        width=width,
        label_width=0 if stacked else label_width,
        columns=columns,
        step=step,
        stacked=stacked,
        rows=rows,
        ticks=_ticks(start, end, step, columns, tz),
        now_column=now_column,
        notes=[],
        downtime=downtime,
        dst=dst,
    )
    chart.notes = _notes(chart, doc, tz)
    return chart


def _notes(chart: Chart, doc: Mapping[str, Any], tz: ZoneInfo) -> list[str]:
    notes = [
        f"{_local(chart.start, tz)} .. {_local(chart.end, tz)} ({chart.zone}); one cell is {_span(chart.step)}; "
        f"now is {_local(chart.now, tz)} (v)"
    ]
    if not chart.rows:
        notes.append("no task matches")
    for row in chart.rows:
        name = row.full_label if row.label == row.full_label else f"{row.label} is {row.full_label}"
        said = []
        if row.full_label != row.task_id:
            name += f" ({row.task_id})" if row.label != row.full_label else ""
        if row.most >= 10:
            said.append(f"up to {row.most} fires in one cell ({MANY})")
        problems = [f"{row.totals[k]} {k}" for k in KINDS if k in PROBLEMS and row.totals.get(k)]
        if problems:
            said.append(", ".join(problems))
        if row.capped:
            said.append(f"more fires than the cap of {doc.get('cap')} in this window: only those are drawn")
        if said or row.label != row.full_label:
            notes.append(f"{name}: " + ("; ".join(said) if said else "label cut"))
    for name, changes in chart.dst.items():
        zone = ZoneInfo(name)
        for at, before, after in changes:
            notes.append(f"DST ({DST}): {name} changes from {before} to {after} at {_local(at, zone)} local time")
    for a, b in chart.downtime:
        notes.append(f"kairosd down ({DOWN}): {_local(a, tz)} .. {_local(b, tz)}")
    if chart.downtime:
        notes.append(f"downtime is {doc.get('downtime_source', 'derived from missed fires')}")
    return notes


def legend() -> list[tuple[str, str, str]]:
    """(symbol, kind, meaning) of every mark a cell can show."""
    marks = [(SYMBOL[k], k, DESCRIBE[k]) for k in reversed(KINDS)]
    marks += [
        ("2-9", "count", "that many fires in one cell, shown in the worst one's colour"),
        (MANY, "count", "10 fires or more in one cell (the notes say how many)"),
        (NOW, "now", "now"),
        (DST, "dst", "a DST change in the task's zone"),
        (DOWN, "down", "kairosd was down (derived)"),
    ]
    return marks


def _paint(text: str, code: str | None, background: str | None = None) -> str:
    codes = ";".join(c for c in (code, background) if c)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


def _cell_text(cell: Cell, color: bool) -> str:
    text = cell.text(color)
    if not color:
        return text
    kind = cell.kind
    code = ANSI[kind] if kind else (ANSI_NOW if cell.now else ANSI_DST if cell.dst else None)
    return _paint(text, code, ANSI_DOWN_BG if cell.down else None)


def _axis(chart: Chart) -> list[str]:
    labels = [" "] * chart.columns
    for column, text in chart.ticks:
        labels[column : column + len(text)] = list(text)
    ruler = ["-"] * chart.columns
    for column, _ in chart.ticks:
        ruler[column] = "+"
    if chart.now_column is not None:
        ruler[chart.now_column] = "v"
    pad = "" if chart.stacked else " " * (chart.label_width + 1)
    return [(pad + "".join(labels)).rstrip(), pad + "".join(ruler)]


def note_lines(chart: Chart) -> list[str]:
    """The notes, wrapped at the chart's width (nothing cut: a long word gets a line of its own, split)."""
    lines: list[str] = []
    for note in chart.notes:
        lines += textwrap.wrap(note, chart.width, subsequent_indent="  ", break_on_hyphens=False) or [""]
    return lines


def render_text(chart: Chart, color: bool) -> list[str]:
    """The chart as lines of at most ``chart.width`` characters (not counting colour codes)."""
    lines = _axis(chart)
    drawn: dict[int, str] = {}  # by id: cells are shared between rows, each is drawn once
    for row in chart.rows:
        parts = []
        for cell in row.cells:
            text = drawn.get(id(cell))
            if text is None:
                text = drawn[id(cell)] = _cell_text(cell, color)
            parts.append(text)
        cells = "".join(parts)
        if chart.stacked:
            lines += [row.label, cells]
        else:
            lines.append(f"{row.label:<{chart.label_width}} {cells}")
    lines.append("")
    lines += note_lines(chart)
    lines.append("legend:")
    for symbol, kind, meaning in legend():
        shown = _paint(symbol, ANSI.get(kind)) if color and kind in ANSI else symbol
        text = f"  {symbol:>3} {meaning}"
        wrapped = textwrap.wrap(text, chart.width, subsequent_indent="      ") or [text]
        wrapped[0] = wrapped[0].replace(symbol, shown, 1)
        lines += wrapped
    return lines


def timeline_lines(doc: Mapping[str, Any], width: int, color: bool, zone: str = "UTC") -> list[str]:
    """``render_text(layout(doc, width, zone), color)``: the whole picture as text lines."""
    return render_text(layout(doc, width, zone), color)
