"""The timeline chart as an SVG picture or an HTML page: the same cells, marks and notes as the terminal's.

Pure: takes a :class:`kairos.timeline.layout.Chart` and returns text; the caller writes it. The output
depends on nothing but the chart (no clock, no random ids), so a test can compare it byte for byte.

Must not import anything with I/O.
"""

from __future__ import annotations

from html import escape

from kairos.timeline.layout import DST, Chart, legend, note_lines

CHAR_W = 8  # one character cell, in SVG units
CHAR_H = 18
PAD = 8
FILL = {
    "planned": "#0e7490",
    "delivered": "#15803d",
    "late": "#b45309",
    "failed": "#b91c1c",
    "skipped": "#7e22ce",
    "missed": "#e11d48",
    "running": "#1d4ed8",
}
DOWN_FILL = "#d4d4d8"
DST_FILL = "#ca8a04"
NOW_STROKE = "#111827"


def _text(x: float, y: float, text: str, fill: str = "#111827", bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x:g}" y="{y:g}" fill="{fill}"{weight}>{escape(text)}</text>'


def render_svg(chart: Chart) -> str:
    """The chart as a standalone SVG document (colour always: a picture is for people)."""
    left = PAD + (0 if chart.stacked else (chart.label_width + 1) * CHAR_W)
    row_h = CHAR_H * (2 if chart.stacked else 1)
    top = PAD + 2 * CHAR_H
    lines = [*note_lines(chart), "legend:"]
    marks = legend()
    height = top + row_h * len(chart.rows) + CHAR_H * (len(lines) + len(marks) + 1) + PAD
    width = PAD * 2 + chart.width * CHAR_W
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
        f'font-size="13" xml:space="preserve">',
        "<title>kairos timeline</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    base = CHAR_H - 5  # text baseline within a character cell
    for column, label in chart.ticks:
        out.append(_text(left + column * CHAR_W, PAD + base, label, "#374151"))
        out.append(
            f'<line x1="{left + column * CHAR_W + 0.5:g}" y1="{PAD + CHAR_H + 4}" '
            f'x2="{left + column * CHAR_W + 0.5:g}" y2="{top + row_h * len(chart.rows)}" stroke="#e5e7eb"/>'
        )
    axis_y = PAD + CHAR_H + 4
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + chart.columns * CHAR_W}" y2="{axis_y}" stroke="#9ca3af"/>')
    for index, row in enumerate(chart.rows):
        y = top + index * row_h
        cells_y = y + (CHAR_H if chart.stacked else 0)
        out.append(_text(PAD, y + base, row.label))
        for column, cell in enumerate(row.cells):
            x = left + column * CHAR_W
            if cell.down:
                out.append(
                    f'<rect x="{x}" y="{cells_y + 1}" width="{CHAR_W}" height="{CHAR_H - 2}" fill="{DOWN_FILL}"/>'
                )
            kind = cell.kind
            if kind is not None:
                out.append(_text(x + 1, cells_y + base, cell.text(True), FILL[kind], bold=True))
            elif cell.dst:
                out.append(_text(x + 1, cells_y + base, DST, DST_FILL, bold=True))
    if chart.now_column is not None:
        mid = left + chart.now_column * CHAR_W + CHAR_W / 2
        out.append(
            f'<line x1="{mid:g}" y1="{PAD + CHAR_H}" x2="{mid:g}" y2="{top + row_h * len(chart.rows)}" '
            f'stroke="{NOW_STROKE}" stroke-dasharray="2,2"/>'
        )
        out.append(_text(mid - CHAR_W / 2, PAD + CHAR_H + base - 2, "v", NOW_STROKE, bold=True))
    y = top + row_h * len(chart.rows) + CHAR_H
    for line in lines:
        out.append(_text(PAD, y + base, line, "#374151"))
        y += CHAR_H
    colours = {**FILL, "now": NOW_STROKE, "dst": DST_FILL, "down": "#71717a"}
    for symbol, kind, meaning in marks:
        out.append(_text(PAD + 2 * CHAR_W, y + base, f"{symbol:>3}", colours.get(kind, "#111827"), bold=True))
        out.append(_text(PAD + 6 * CHAR_W, y + base, meaning, "#374151"))
        y += CHAR_H
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_html(chart: Chart) -> str:
    """The SVG inside a minimal HTML page, to open in a browser or attach to a chat."""
    return (
        '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>kairos timeline</title></head>\n'
        '<body style="margin:1em;background:#fff">\n' + render_svg(chart) + "</body>\n</html>\n"
    )
