"""``kairos cron``: next / explain / every, driven in-process through kairos.app.run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from kairos.app import run
from kairosd import __version__

# --after and --tz are always given, so no test depends on the real clock or the machine's zone.
AFTER = ["--tz", "Europe/Berlin", "--after", "2026-10-24T12:00"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_next_plain(capsys):
    """`cron next` prints one ISO 8601 fire time with its offset per line, across the DST change."""
    code, out, err = _run(capsys, "cron", "next", "0 9 * * mon-fri", *AFTER, "-n", "3")
    assert code == 0
    assert err == ""
    assert out.splitlines() == [
        "2026-10-26T09:00:00+01:00",
        "2026-10-27T09:00:00+01:00",
        "2026-10-28T09:00:00+01:00",
    ]


def test_next_json(capsys):
    """`cron next --json` prints one JSON document with fires, tz, normalized form and explanation."""
    code, out, err = _run(capsys, "cron", "next", "0 9 * * mon-fri", *AFTER, "-n", "2", "--json")
    assert code == 0
    assert err == ""
    doc = json.loads(out)
    assert doc == {
        "expression": "0 9 * * mon-fri",
        "normalized": "0 9 * * 1-5",
        "explanation": "At 09:00 on Monday to Friday",
        "tz": "Europe/Berlin",
        "after": "2026-10-24T12:00:00+02:00",
        "fires": ["2026-10-26T09:00:00+01:00", "2026-10-27T09:00:00+01:00"],
        "note": None,
    }


@pytest.mark.parametrize(
    ("tz", "after", "first"),
    [
        ("Europe/Berlin", "2026-10-24T12:00:00+02:00", "2026-10-25T02:30:00+02:00"),
        ("UTC", "2026-10-24T12:00:00+00:00", "2026-10-25T02:30:00+00:00"),
        ("America/New_York", "2026-10-24T12:00:00-04:00", "2026-10-25T02:30:00-04:00"),
    ],
)
def test_next_after_without_offset_is_wall_time_in_tz(capsys, tz, after, first):
    """--after without an offset is read as wall time in --tz."""
    code, out, _ = _run(capsys, "cron", "next", "30 2 * * *", "--tz", tz, "--after", "2026-10-24T12:00", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["after"] == after
    assert doc["fires"][0] == first


def test_next_after_with_offset_is_that_instant(capsys):
    """--after with an offset is that instant, shown in --tz."""
    code, out, _ = _run(
        capsys, "cron", "next", "0 * * * *", "--tz", "Europe/Berlin", "--after", "2026-06-01T10:30Z", "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["after"] == "2026-06-01T10:30:00+00:00"
    assert doc["fires"][0] == "2026-06-01T13:00:00+02:00"


def test_next_repeated_wall_time_fires_once(capsys):
    """02:30 on the night Berlin falls back fires once, on its first pass (+02:00)."""
    code, out, _ = _run(capsys, "cron", "next", "30 2 * * *", *AFTER, "-n", "3")
    assert code == 0
    assert out.splitlines() == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
        "2026-10-27T02:30:00+01:00",
    ]


@pytest.mark.parametrize("n", [1, 4, 12])
def test_next_n(capsys, n):
    """-n sets how many fire times are printed."""
    code, out, _ = _run(
        capsys, "cron", "next", "*/15 * * * *", "--tz", "UTC", "--after", "2026-01-01T00:00", "-n", str(n)
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == n
    assert lines[0] == "2026-01-01T00:15:00+00:00"


def test_next_default_count_is_five(capsys):
    """Without -n five fire times are printed."""
    code, out, _ = _run(capsys, "cron", "next", "@hourly", "--tz", "UTC", "--after", "2026-01-01T00:00")
    assert code == 0
    assert len(out.splitlines()) == 5


def test_next_every_prints_note_on_stderr(capsys):
    """--every 90m fires every 2h and explains the rounding on stderr, keeping stdout clean."""
    code, out, err = _run(
        capsys, "cron", "next", "--every", "90m", "--tz", "UTC", "--after", "2026-01-01T00:00Z", "-n", "2"
    )
    assert code == 0
    assert out.splitlines() == ["2026-01-01T02:00:00+00:00", "2026-01-01T04:00:00+00:00"]
    assert err == "note: cron cannot repeat every 1h30m evenly; using every 2h (0 */2 * * *)\n"


def test_next_every_json_carries_note(capsys):
    """--every with --json puts the cron and the note in the document and nothing on stderr."""
    code, out, err = _run(
        capsys, "cron", "next", "--every", "90m", "--tz", "UTC", "--after", "2026-01-01T00:00", "--json"
    )
    assert code == 0
    assert err == ""
    doc = json.loads(out)
    assert doc["expression"] == "0 */2 * * *"
    assert "1h30m" in doc["note"]


def test_next_every_exact_has_no_note(capsys):
    """An interval cron can repeat exactly prints no note."""
    code, _out, err = _run(capsys, "cron", "next", "--every", "5m", "--tz", "UTC", "--after", "2026-01-01T00:00")
    assert code == 0
    assert err == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["0 24 * * *", "--tz", "UTC"], "kairos: hour: 24 is out of range 0-23"),
        (
            ["0 0 30 2 *", "--tz", "UTC"],
            "kairos: day-of-month: '30' never occurs in February, so this expression never fires",
        ),
        (
            ["* * * * *", "--tz", "Mars/Base"],
            "kairos: unknown time zone 'Mars/Base' (use an IANA name such as Europe/Berlin)",
        ),
        (
            ["* * * * *", "--tz", "UTC", "--after", "garbage"],
            "kairos: --after 'garbage' is not an ISO 8601 time",
        ),
        (["* * * * *", "--tz", "UTC", "-n", "0"], "kairos: -n must be between 1 and 1000"),
        (["* * * * *", "--tz", "UTC", "-n", "1001"], "kairos: -n must be between 1 and 1000"),
        (["--tz", "UTC"], "kairos: give exactly one of EXPR or --every INTERVAL"),
        (
            ["* * * * *", "--every", "5m", "--tz", "UTC"],
            "kairos: give exactly one of EXPR or --every INTERVAL",
        ),
        (
            ["--every", "soon", "--tz", "UTC"],
            "kairos: 'soon' is not a duration; use e.g. 90s, 5m, 2h, 1d or 1h30m",
        ),
    ],
)
def test_next_usage_errors(capsys, argv, message):
    """Bad input exits 2 with exactly one stderr line `kairos: <message>` and nothing on stdout."""
    code, out, err = _run(capsys, "cron", "next", *argv)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [message]


def test_argparse_error_exits_2(capsys):
    """An argument argparse rejects exits 2 with the `kairos:` message on stderr."""
    with pytest.raises(SystemExit) as info:
        run(["cron", "next", "* * * * *", "-n", "abc"])
    assert info.value.code == 2
    _out, err = capsys.readouterr()
    # One line, as the README says of every error (issue 24, item 14: argparse's were two, usage first).
    assert err.splitlines() == [
        "kairos: cron next: argument -n: expected a whole number in ASCII digits, not 'abc' "
        "(see 'kairos cron next --help')"
    ]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["lst"], "kairos: unknown verb 'lst'; did you mean 'list'? (see 'kairos --help')"),
        (["xyzzy"], "kairos: unknown verb 'xyzzy' (see 'kairos --help')"),
        (["task", "wiat"], "kairos: task: unknown command 'wiat'; did you mean 'wait'? (see 'kairos task --help')"),
        (
            ["pause", "3f2a9c1d", "--bogus"],
            "kairos: pause: unrecognized arguments: --bogus (see 'kairos pause --help')",
        ),
        (["add", "--every"], "kairos: add: argument --every: expected one argument (see 'kairos add --help')"),
        (
            ["add", "--catch-up", "onse", "x"],
            "kairos: add: argument --catch-up: invalid choice: 'onse' (choose from 'skip', 'once', 'all', 'surface'); "
            "did you mean 'once'? (see 'kairos add --help')",
        ),
    ],
)
def test_usage_errors_are_one_line_naming_the_verb_and_the_nearest_choice(capsys, argv, line):
    """Issue 24, item 14: `kairos lst` did not suggest list, `kairos pause A B` printed the top-level usage."""
    with pytest.raises(SystemExit) as info:
        run(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_explain(capsys):
    """`cron explain` prints the plain-English wording."""
    code, out, err = _run(capsys, "cron", "explain", "*/15 9-17 * * 1-5")
    assert code == 0
    assert err == ""
    assert out == "Every 15th minute from 09:00 to 17:59 on Monday to Friday\n"


def test_explain_json(capsys):
    """`cron explain --json` gives expression, normalized form and explanation."""
    code, out, _ = _run(capsys, "cron", "explain", "@daily", "--json")
    assert code == 0
    assert json.loads(out) == {
        "expression": "@daily",
        "normalized": "0 0 * * *",
        "explanation": "At 00:00 every day",
    }


def test_explain_bad_expression(capsys):
    """`cron explain` with a bad expression exits 2 with one `kairos:` line."""
    code, out, err = _run(capsys, "cron", "explain", "0 24 * * *")
    assert (code, out, err) == (2, "", "kairos: hour: 24 is out of range 0-23\n")


def test_every_json(capsys):
    """`cron every 7m --json` reports the rounded cron, both periods and the note."""
    code, out, err = _run(capsys, "cron", "every", "7m", "--json")
    assert code == 0
    assert err == ""
    assert json.loads(out) == {
        "interval": "7m",
        "cron": "*/6 * * * *",
        "requested_s": 420.0,
        "effective_s": 360,
        "note": "cron cannot repeat every 7m evenly; using every 6m (*/6 * * * *)",
    }


@pytest.mark.parametrize(
    ("interval", "cron", "err"),
    [
        ("5m", "*/5 * * * *", ""),
        ("2h", "0 */2 * * *", ""),
        ("45s", "* * * * *", "note: cron fires on whole minutes, so 45s became 1m\n"),
    ],
)
def test_every_plain(capsys, interval, cron, err):
    """`cron every` prints the cron on stdout and any note on stderr."""
    assert _run(capsys, "cron", "every", interval) == (0, cron + "\n", err)


def test_every_bad_interval(capsys):
    """`cron every 0m` exits 2 with one `kairos:` line."""
    assert _run(capsys, "cron", "every", "0m") == (2, "", "kairos: '0m' must be longer than zero\n")


def test_next_help_mentions_examples(capsys):
    """`kairos cron next --help` shows the usage examples."""
    with pytest.raises(SystemExit) as info:
        run(["cron", "next", "--help"])
    assert info.value.code == 0
    out, _ = capsys.readouterr()
    assert "examples:" in out
    assert "kairos cron next '0 9 * * mon-fri' -n 3" in out
    assert "--tz Europe/Berlin --after 2026-10-24T12:00" in out
    assert "kairos cron next --every 90m" in out


def test_version(capsys):
    """`kairos --version` prints the version and exits 0."""
    with pytest.raises(SystemExit) as info:
        run(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"kairos {__version__}\n"


@pytest.mark.parametrize("argv", [[], ["cron"]])
def test_no_verb_prints_help_and_exits_2(capsys, argv):
    """Without a verb (or a cron command) help is printed and the exit code is 2."""
    code, out, _ = _run(capsys, *argv)
    assert code == 2
    assert "usage:" in out


def _kairos() -> list[str]:
    exe = shutil.which("kairos")
    return [exe] if exe else [sys.executable, "-m", "kairos"]


@pytest.mark.slow
def test_console_script_end_to_end():
    """The installed `kairos` entry point runs `cron next`, exits 2 on bad input, and prints --version."""
    ok = subprocess.run(
        [*_kairos(), "cron", "next", "30 2 * * *", *AFTER, "-n", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.splitlines() == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]

    bad = subprocess.run(
        [*_kairos(), "cron", "next", "0 24 * * *", "--tz", "UTC"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "kairos: hour: 24 is out of range 0-23\n")

    version = subprocess.run([*_kairos(), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert (version.returncode, version.stdout) == (0, f"kairos {__version__}\n")

    module = subprocess.run(
        [sys.executable, "-m", "kairos", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (module.returncode, module.stdout) == (0, f"kairos {__version__}\n")


@pytest.mark.parametrize(
    "after",
    ["9999-12-31", "9999-12-31T23:59", "0001-01-01", "0001-01-01T00:00+14:00", "2200-01-01", "2026-01-01T10:00\0"],
)
def test_next_after_out_of_range_is_one_line_and_exit_2(capsys, after):
    """Issue 27, finding 6: ``--after 9999-12-31`` printed an OverflowError traceback."""
    code, out, err = _run(capsys, "cron", "next", "0 9 * * *", "--tz", "UTC", "--after", after)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("kairos: --after ")


def test_next_many_fires_of_a_sparse_expression_from_the_last_year_stay_in_range(capsys):
    code, out, err = _run(
        capsys, "cron", "next", "0 9 29 2 *", "--tz", "Etc/GMT-14", "--after", "2199-12-31T23:59", "-n", "1000"
    )
    assert code == 0, err
    fires = out.split()
    assert len(fires) == 1000
    assert fires[-1].startswith("6324-02-29")


@pytest.mark.parametrize("count", ["\u0663", "\uff13", "1_0"])
def test_next_count_takes_ascii_digits_only(capsys, count):
    with pytest.raises(SystemExit) as exit_info:
        run(["cron", "next", "* * * * *", "--tz", "UTC", "--after", "2026-01-01", "-n", count])
    assert exit_info.value.code == 2
    assert "expected a whole number in ASCII digits" in capsys.readouterr().err
