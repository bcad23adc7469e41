"""``kairos timeline`` against a real kairosd (build_app, fake clock, a fixed store), and the README's picture.

``docs/timeline.svg`` is regenerated here from :mod:`timeline_support`'s store and compared with the
committed file; ``REGENERATE_PICTURES=1`` rewrites it instead (then commit the new picture).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from paths_support import REPO
from session_support import Kairosd, remove_home, short_home
from timeline_support import NOW, fill

from kairos.app import run
from kairos.client import Client
from kairosd.core.wire import verbs as documents
from kairosd.testing import FakeClock

PICTURE = REPO / "docs" / "timeline.svg"


@pytest.fixture(name="kd")
def kairosd(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kairosd]:
    home = short_home("tc")
    monkeypatch.setenv("KAIROS_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TZ", "UTC")
    daemon = Kairosd(home, clock=FakeClock(NOW)).start()
    try:
        yield daemon
    finally:
        daemon.stop()
        remove_home(home)


def _kairos(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_chart_shows_every_task_with_plain_symbols_and_a_legend(kd, capsys):
    ids = fill(kd)
    code, out, err = _kairos(capsys, "timeline", "--tz", "Europe/Berlin")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "\x1b" not in out  # NO_COLOR
    rows = {line.split()[0]: line for line in lines[2:6]}
    assert set(rows) == set(ids)
    hourly = rows["hourly-sync"][len("nightly-backup ") :]
    assert hourly.count("X") == 1
    assert hourly.count("L") == 1
    assert "m" in hourly
    assert "o" in hourly
    assert "~" in hourly  # the derived downtime, where nothing fired
    assert "+" in rows["watch-ci"]  # more fires in a cell than a digit says
    assert "legend:" in lines
    assert any(line.startswith("DST (D): Europe/Berlin changes from +02:00 to +01:00") for line in lines)
    assert any(line.startswith("kairosd down (~):") for line in lines)
    assert any(line.startswith("watch-ci: up to") for line in lines)


def test_filters_json_and_an_unknown_id(kd, capsys):
    ids = fill(kd)
    code, out, _ = _kairos(capsys, "timeline", "--name", "WATCH", "--days", "2", "--json")
    doc = json.loads(out)
    assert code == 0
    documents.check("timeline", doc)  # the --json contract (kairosd.core.wire.timeline.TimelineDoc)
    # To a pipe, kairosd's bytes are passed on: the compact document print_json writes, every instant listed.
    assert out == json.dumps(doc, separators=(",", ":")) + "\n"
    assert doc["bins"] is None
    assert all("planned" in t and "planned_bins" not in t for t in doc["tasks"])
    assert [t["id"] for t in doc["tasks"]] == [ids["watch-ci"]]
    span = (NOW.fromisoformat(doc["to"]) - NOW.fromisoformat(doc["from"])).total_seconds()
    assert span == 4 * 86400
    code, out, _ = _kairos(capsys, "timeline", ids["nightly-backup"], "--json")
    assert [t["name"] for t in json.loads(out)["tasks"]] == ["nightly-backup"]
    code, _, err = _kairos(capsys, "timeline", "ffffffff")
    assert code != 0
    assert err.startswith("kairos: ")
    assert len(err.splitlines()) == 1


def test_a_40_column_terminal_keeps_every_row_whole(kd, capsys, monkeypatch):
    fill(kd)
    monkeypatch.setenv("COLUMNS", "40")
    code, out, _ = _kairos(capsys, "timeline")
    assert code == 0
    assert all(len(line) <= 40 for line in out.splitlines())
    assert (
        sum(line.startswith(("hourly-sync", "watch-ci", "standup-not", "nightly-bac")) for line in out.splitlines())
        >= 4
    )


def test_svg_and_html_files(kd, capsys, tmp_path):
    fill(kd)
    svg, page = tmp_path / "t.svg", tmp_path / "t.html"
    assert _kairos(capsys, "timeline", "--svg", str(svg))[0] == 0
    assert _kairos(capsys, "timeline", "--html", str(page))[0] == 0
    assert svg.read_text().startswith("<svg ")
    assert "hourly-sync" in svg.read_text()
    assert svg.read_text() in page.read_text()


def test_the_readme_picture_is_what_the_code_draws(kd, capsys, tmp_path):
    fill(kd)
    drawn = tmp_path / "timeline.svg"
    code, _, err = _kairos(capsys, "timeline", "--tz", "Europe/Berlin", "--width", "100", "--svg", str(drawn))
    assert (code, err) == (0, "")
    if os.environ.get("REGENERATE_PICTURES") == "1":
        PICTURE.parent.mkdir(exist_ok=True)
        PICTURE.write_text(drawn.read_text())
    assert PICTURE.read_text() == drawn.read_text(), "docs/timeline.svg is stale: REGENERATE_PICTURES=1 rewrites it"


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda doc: doc["tasks"][0].pop("missed"), "tasks.0.missed"),
        (lambda doc: doc.pop("downtime"), "downtime"),
        (lambda doc: doc["tasks"][0].update(tz=["UTC"]), "tasks.0.tz"),
    ],
)
def test_an_answer_of_another_shape_is_one_stderr_line_naming_the_key(kd, capsys, monkeypatch, change, where):
    """The chart is laid out from the parsed answer (its model costs half the command): one the layout cannot
    read is still one line naming the key, as the verbs that read their answer typed say it (issue 25)."""
    fill(kd)
    real = Client.call

    def call(self: Client, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        answer = real(self, method, path, *args, **kwargs)
        if path == "/timeline":
            change(answer)
        return answer

    monkeypatch.setattr(Client, "call", call)
    code, out, err = _kairos(capsys, "timeline", "--width", "100")
    assert (code, out) == (1, "")
    assert f"kairosd answered GET /v1/timeline in a shape this kairos does not know ({where}:" in err
    assert len(err.splitlines()) == 1
