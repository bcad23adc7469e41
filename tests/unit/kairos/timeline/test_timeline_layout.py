"""The timeline's pure layout (kairos.timeline.layout): bins, the DST hour, downtime, narrow terminals,
plain symbols with a legend, a cell of many fires, and nothing cut without a word."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kairos.timeline.draw import render_html, render_svg
from kairos.timeline.layout import layout, render_text, timeline_lines

START = datetime(2026, 10, 24, 0, 0, tzinfo=UTC)
END = START + timedelta(hours=10)  # 10 hours: with 60 cells, one cell is 10 minutes
NOW = START + timedelta(hours=5)


def _iso(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def _doc(*tasks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"from": START.isoformat(), "to": END.isoformat(), "now": NOW.isoformat(), "cap": 2000,
            "tasks": list(tasks), "dst": {}, "downtime": [], **extra}  # fmt: skip


def _task(task_id: str = "t1", name: str | None = "job", **fields: Any) -> dict[str, Any]:
    return {"id": task_id, "name": name, "tz": "UTC", "planned": [], "runs": [], "missed": [], **fields}


def _cells(lines: list[str], label: str, label_width: int) -> str:
    row = next(line for line in lines if line.startswith(label))
    return row[label_width + 1 :]


# Width 67 with the 6-column minimum label: 60 cells of 10 minutes.
WIDTH = 67


def test_each_fire_lands_in_the_cell_of_its_time():
    task = _task(
        planned=[_iso(300.5), _iso(599), _iso(600)],
        runs=[{"at": _iso(0), "outcome": "delivered"}, {"at": _iso(15), "outcome": "failed"}],
    )
    chart = layout(_doc(task), WIDTH)
    assert (chart.columns, chart.step) == (60, timedelta(minutes=10))
    cells = chart.rows[0].cells
    assert [(i, c.count, c.kind) for i, c in enumerate(cells) if c.count] == [
        (0, 1, "delivered"),
        (1, 1, "failed"),
        (30, 1, "planned"),
        (59, 2, "planned"),  # 09:59 and the window's last instant share the last cell
    ]
    assert chart.now_column == 30
    row = _cells(render_text(chart, color=False), "job", 6)
    assert row[0] == "*"
    assert row[1] == "X"
    assert row[30] == "o"  # a fire in the now cell hides the now mark, not the reverse
    assert row[59] == "2"
    assert len(row) == 60


def test_now_dst_and_downtime_show_in_empty_cells():
    doc = _doc(
        _task(tz="Europe/Berlin", runs=[{"at": _iso(125), "outcome": "late"}]),
        _task("t2", "other"),
        dst={"Europe/Berlin": [{"at": _iso(420), "before": "+02:00", "after": "+01:00"}]},
        downtime=[[_iso(100), _iso(135)]],
    )
    lines = timeline_lines(doc, WIDTH, color=False, zone="Europe/Berlin")
    berlin, other = _cells(lines, "job", 6), _cells(lines, "other", 6)
    assert berlin[42] == "D"  # the DST change, in the row of the task in that zone only
    assert other[42] == " "
    assert berlin[10:14] == "~~L~"  # down from 01:40 to 02:15; the late catch-up shows over it
    assert other[10:14] == "~~~~"
    assert berlin[30] == other[30] == "|"
    assert lines[1][6 + 1 + 30] == "v"  # the ruler marks now too
    notes = " ".join(" ".join(lines).split())  # notes wrap at the width
    assert "DST (D): Europe/Berlin changes from +02:00 to +01:00 at Sat 24 Oct 09:00 local time" in notes
    assert "kairosd down (~): Sat 24 Oct 03:40 .. Sat 24 Oct 04:15" in notes
    assert "job: 1 late" in notes


def test_a_cell_says_how_many_fires_it_holds():
    many = [_iso(400 + i * 0.5) for i in range(12)]
    doc = _doc(_task(planned=[_iso(310), _iso(311), _iso(312), *many]))
    lines = timeline_lines(doc, WIDTH, color=False)
    row = _cells(lines, "job", 6)
    assert row[31] == "3"
    assert row[40] == "+"
    assert "job: up to 12 fires in one cell (+)" in lines


def test_without_colour_plain_symbols_a_legend_and_problems_win_over_counts():
    runs = [{"at": _iso(1), "outcome": "delivered"}, {"at": _iso(2), "outcome": "missed"}]
    doc = _doc(_task(runs=runs))
    plain = timeline_lines(doc, WIDTH, color=False)
    assert not any("\x1b" in line for line in plain)
    assert _cells(plain, "job", 6)[0] == "m"  # the miss is not hidden behind a count of 2
    assert "legend:" in plain
    legend = plain[plain.index("legend:") + 1 :]
    assert [line.split()[0] for line in legend] == ["o", "*", ">", "L", "s", "m", "X", "2-9", "+", "|", "D", "~"]
    coloured = timeline_lines(doc, WIDTH, color=True)
    row = next(line for line in coloured if line.startswith("job"))
    assert "\x1b[1;91m2\x1b[0m" in row  # the count, in the worst fire's colour


def test_40_columns_fit_every_row_and_say_which_label_was_cut():
    doc = _doc(_task(name="a-very-long-task-name-indeed", planned=[_iso(500)]), _task("t2", "b"))
    lines = timeline_lines(doc, 40, color=False)
    assert all(len(line) <= 40 for line in lines)
    label_width = 13  # a third of 40
    row = next(line for line in lines if line.startswith("a-very-long-~"))
    assert len(row) == 40
    assert sorted(row[label_width + 1 :].replace(" ", "")) == ["o", "|"]  # the fire and now: nothing else
    text = " ".join(" ".join(lines).split())
    assert "a-very-long-~ is a-very-long-task-name-indeed (t1): label cut" in text


def test_a_terminal_too_narrow_for_label_and_cells_puts_the_label_above():
    doc = _doc(_task(name="backup", planned=[_iso(500)]), capped=["t1"])
    doc["tasks"][0]["capped"] = True
    lines = timeline_lines(doc, 14, color=False)
    assert all(len(line) <= 14 for line in lines)
    at = lines.index("backup")
    assert len(lines[at + 1]) == 14  # the cells, on a line of their own
    text = " ".join(" ".join(lines).split())
    # Notes wrap at the width: every word is still there.
    assert "backup: more fires than the cap of 2000 in this window: only those are drawn" in text


def test_svg_and_html_draw_the_same_cells():
    doc = _doc(_task(runs=[{"at": _iso(15), "outcome": "failed"}], planned=[_iso(400), _iso(401)]))
    chart = layout(doc, WIDTH)
    svg = render_svg(chart)
    assert svg.startswith("<svg ")
    assert svg.rstrip().endswith("</svg>")
    assert ">X</text>" in svg
    assert ">2</text>" in svg
    assert "job" in svg
    assert svg in render_html(chart)
    assert render_svg(layout(doc, WIDTH)) == svg  # nothing but the chart decides the picture


def test_fires_counted_by_the_daemon_draw_as_fires_listed():
    """A document with ``bins`` (planned fires counted per slice) gives the chart the listed fires give."""
    instants = [300.5, 301, 302, 400, *[500 + i * 0.5 for i in range(12)], 600]
    columns = 60
    listed = _doc(_task(planned=[_iso(m) for m in instants]))
    counts: dict[int, int] = {}
    for minutes in instants:
        index = min(int(minutes / 10), columns - 1)
        counts[index] = counts.get(index, 0) + 1
    binned = _doc(_task(planned_bins=sorted(counts.items())), bins=columns)
    assert layout(listed, WIDTH).columns == layout(binned, WIDTH).columns == columns
    assert timeline_lines(binned, WIDTH, color=False) == timeline_lines(listed, WIDTH, color=False)
