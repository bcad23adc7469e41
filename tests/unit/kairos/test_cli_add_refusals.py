"""``kairos add`` refuses, before asking kairosd, what it can tell is wrong (issue 15, items 11, 13 and 14)."""

from __future__ import annotations

import pytest

from kairos.app import run


@pytest.fixture(autouse=True)
def _no_daemon(tmp_path, monkeypatch):
    # No kairosd here: a refusal must come first (exit 2), not "kairosd is not running" (exit 3).
    monkeypatch.setenv("KAIROS_HOME", str(tmp_path))
    monkeypatch.setenv("TZ", "UTC")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "--every", "1h", "--cmd", "", "tick"], "--cmd is empty"),
        (["add", "--every", "1h", "--cmd", "  ", "tick"], "--cmd is empty"),
        (["add", "0 9 * * *", "--in", "1m", "y"], "'0 9 * * *' is a cron expression and --in is another schedule"),
        (["add", "@daily", "--every", "1h", "y"], "'@daily' is a cron expression and --every is another schedule"),
        (["add", "--at", "17:30", "0 9 * * 1-5", "y"], "is a cron expression and --at is another schedule"),
        (["add", "--in", "-5m", "y"], "'-5m': durations must be positive"),
        (["add", "--every", "-5m", "y"], "'-5m': durations must be positive"),
        # Issue 24, item 4: contradictions were accepted (permanent won; a one-shot ignored --expires).
        (["add", "--every", "1h", "--expires", "3", "--permanent", "y"], "--expires 3 and --permanent contradict"),
        (["add", "--in", "5m", "--expires", "3", "y"], "--expires is for recurring tasks"),
        (["add", "--at", "17:30", "--expires", "never", "y"], "--expires is for recurring tasks"),
        (["add", "0 3 * * *", "--once", "--expires", "3", "y"], "--expires is for recurring tasks"),
    ],
)
def test_refused_with_the_reason(capsys, argv, message):
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_an_unknown_zone_in_tz_is_refused_as_tz_option_is(capsys, monkeypatch):
    monkeypatch.setenv("TZ", "Foo/Bar")
    assert run(["add", "--in", "5m", "y"]) == 2
    assert "TZ=Foo/Bar is not a known time zone" in capsys.readouterr().err
    # --tz names the zone itself: TZ does not matter then (it fails only for want of a daemon).
    assert run(["add", "--in", "5m", "--tz", "UTC", "y"]) == 3


@pytest.mark.parametrize("tz", ["EST5EDT,M3.2.0,M11.1.0", "<+03>-3", "CET-1CEST"])
def test_a_posix_rule_string_in_tz_is_refused_naming_the_zone_kairos_would_use(capsys, monkeypatch, tz):
    """Issue 27, finding 6: such a TZ fell back to the system zone (or UTC) without a word."""
    monkeypatch.setenv("TZ", tz)
    assert run(["add", "--in", "5m", "y"]) == 2
    err = capsys.readouterr().err
    assert f"TZ={tz} is a POSIX rule string, which kairos cannot use" in err
    assert "kairos uses " in err
    assert err.count("\n") == 1
    assert run(["add", "--in", "5m", "--tz", "UTC", "y"]) == 3  # --tz names the zone: only the daemon is missing


def test_a_prompt_that_only_looks_like_a_schedule_is_kept(capsys):
    """Words that are not a cron expression stay the prompt: only the daemon is missing."""
    assert run(["add", "--in", "5m", "0 9 is the time"]) == 3


def test_jitter_claude_is_explained_in_help(capsys):
    with pytest.raises(SystemExit):
        run(["add", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "daily task fires at +15:00 exactly" in out


def test_a_socket_path_too_long_is_explained(capsys, monkeypatch, tmp_path):
    """As kairosd says when it cannot bind it, not "AF_UNIX path too long" (issue 15, item 13)."""
    runtime = tmp_path / ("r" * 120)
    monkeypatch.delenv("KAIROS_HOME")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert run(["list"]) == 2
    err = capsys.readouterr().err
    assert "is longer than 107 bytes, the limit of Unix sockets; set KAIROS_HOME or XDG_RUNTIME_DIR" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export", "--to", "systemd"], "kairos: say which tasks to export: give their ids, or --all\n"),
        (["export", "3f2a9c1d", "--all", "--to", "systemd"], "kairos: give task ids or --all, not both\n"),
    ],
)
def test_export_says_what_is_missing(capsys, argv, message):
    """Issue 24, item 14: `export` with no ids said "give task ids or --all (not both)"."""
    assert run(argv) == 2
    assert capsys.readouterr().err == message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "--cron", "0 9 * * *", "--every", "1h", "y"], "give only one schedule, not --cron, --every"),
        (["add", "--cron", "0 9 * * *", "0 8 * * *", "y"], "'0 8 * * *' is a cron expression and --cron is another"),
        (["add", "--cron", "nonsense", "y"], "--cron 'nonsense' is not a cron expression"),
        (["add", "--cron", "0 9 * * *"], "a task needs a non-empty prompt"),
    ],
)
def test_the_cron_option_is_one_schedule_like_the_others(capsys, argv, message):
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_the_cron_option_sends_what_the_first_argument_sends():
    """`kairos add --cron EXPR PROMPT` (the form other schedulers use) is `kairos add EXPR PROMPT`."""
    from kairos.app import build_parser
    from kairos.commands.add import build_add_request

    parser = build_parser()
    as_option = build_add_request(parser.parse_args(["add", "--cron", "0 9 * * 1-5", "--once", "stand-up", "notes"]))
    as_first = build_add_request(parser.parse_args(["add", "0 9 * * 1-5", "--once", "stand-up", "notes"]))
    assert as_option == as_first
    assert as_option["cron"] == "0 9 * * 1-5"
    assert as_option["prompt"] == "stand-up notes"
    assert as_option["once"] is True


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["add", "in 20m", "look at the deploy"], "did you mean: kairos add --in 20m 'look at the deploy'"),
        (["add", "in", "20m", "look", "at", "PR", "12"], "did you mean: kairos add --in 20m 'look at PR 12'"),
        (["add", "Every 2h", "check CI"], "did you mean: kairos add --every 2h 'check CI'"),
        (["add", "at 17:30", "stand-up"], "did you mean: kairos add --at 17:30 stand-up"),
        (["add", "in 20 minutes", "look"], "did you mean: kairos add --in '20 minutes' look"),
        (["add", "in", "20", "minutes", "look", "at", "it"], "did you mean: kairos add --in '20 minutes' 'look at it'"),
        (["add", "every", "2h", "check", "CI"], "did you mean: kairos add --every 2h 'check CI'"),
    ],
)
def test_a_schedule_in_words_is_answered_with_the_command_meant(capsys, argv, hint):
    """A first try as a stranger types it (the README's own example is `--in 20m`): one line that can be
    pasted, and the schedule is not guessed: the task is not added."""
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert hint in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "in 20m"],
        ["add", "inside job", "x"],
        ["add", "at", "x"],
        ["add", "every morning", "x"],
        ["add", "every weekday at 9", "check PRs"],
        ["add", "in 20 parsecs", "x"],
        ["add", "every 7q", "x"],
    ],
)
def test_words_that_do_not_read_as_a_schedule_get_the_plain_refusal(capsys, argv):
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err
    assert err.count("\n") == 1
