"""Cron parsing: every grammar form compiles to the right value sets, and bad input is named precisely."""

from __future__ import annotations

import pytest

from kairosd.core.errors import CronSyntaxError
from kairosd.core.schedule.cron import parse_cron
from kairosd.core.schedule.explain import explain

MINUTES = tuple(range(60))
HOURS = tuple(range(24))
DOMS = tuple(range(1, 32))
MONTHS = tuple(range(1, 13))
DOWS = tuple(range(7))

# (expression, expected attributes of the compiled CronExpr); unnamed attributes are not checked.
VALID = [
    # Minute field forms.
    pytest.param(
        "* * * * *",
        {
            "minutes": MINUTES,
            "hours": HOURS,
            "doms": DOMS,
            "months": MONTHS,
            "dows": DOWS,
            "day_and": True,
            "fixed_time": False,
            "normalized": "* * * * *",
        },
        id="all-stars",
    ),
    pytest.param("7 * * * *", {"minutes": (7,), "hours": HOURS, "fixed_time": False}, id="single"),
    pytest.param("0-10 * * * *", {"minutes": tuple(range(11)), "normalized": "0-10 * * * *"}, id="range"),
    pytest.param("*/15 * * * *", {"minutes": (0, 15, 30, 45), "normalized": "*/15 * * * *"}, id="star-step"),
    pytest.param("*/7 * * * *", {"minutes": (0, 7, 14, 21, 28, 35, 42, 49, 56)}, id="star-step-uneven"),
    pytest.param("10-40/10 * * * *", {"minutes": (10, 20, 30, 40), "normalized": "10-40/10 * * * *"}, id="range-step"),
    pytest.param("5-59/15 * * * *", {"minutes": (5, 20, 35, 50), "normalized": "5-59/15 * * * *"}, id="range-step-5"),
    pytest.param("5/15 * * * *", {"minutes": (5, 20, 35, 50), "normalized": "5-59/15 * * * *"}, id="n-slash-s"),
    pytest.param(
        "1,5,10-12,*/30 * * * *",
        {"minutes": (0, 1, 5, 10, 11, 12, 30), "normalized": "1,5,10-12,*/30 * * * *"},
        id="list",
    ),
    pytest.param("*/100 * * * *", {"minutes": (0,)}, id="step-larger-than-field"),
    # Vixie reads a one-value range with a step as that one value (cronsim reads 2-2/3 as 2/3).
    pytest.param("2-2/3 * * * *", {"minutes": (2,), "normalized": "2 * * * *"}, id="one-value-range-step"),
    # Hour field.
    pytest.param("0 */6 * * *", {"hours": (0, 6, 12, 18), "fixed_time": False}, id="hour-star-step"),
    pytest.param("0 22/1 * * *", {"hours": (22, 23), "normalized": "0 22-23/1 * * *"}, id="hour-n-slash-s"),
    pytest.param("0 9-17 * * *", {"hours": tuple(range(9, 18)), "fixed_time": True}, id="hour-range"),
    pytest.param("0 */5 * * *", {"hours": (0, 5, 10, 15, 20)}, id="hour-step-5"),
    # Day of month.
    pytest.param("0 0 */10 * *", {"doms": (1, 11, 21, 31), "day_and": True}, id="dom-star-step"),
    pytest.param("0 0 1/10 * *", {"doms": (1, 11, 21, 31), "normalized": "0 0 1-31/10 * *"}, id="dom-n/s"),
    pytest.param("0 0 29 2 *", {"doms": (29,), "months": (2,), "day_and": True}, id="feb-29-accepted"),
    pytest.param("0 0 30,31 2,4 *", {"doms": (30, 31), "months": (2, 4)}, id="dom-30-in-april-accepted"),
    # Month names, any case.
    pytest.param("0 0 1 */3 *", {"months": (1, 4, 7, 10)}, id="month-step"),
    pytest.param("0 0 1 jan,JUL,Oct *", {"months": (1, 7, 10), "normalized": "0 0 1 1,7,10 *"}, id="month-names"),
    pytest.param("0 0 1 feb-APR *", {"months": (2, 3, 4), "normalized": "0 0 1 2-4 *"}, id="month-name-range"),
    pytest.param("0 0 1 Mar/4 *", {"months": (3, 7, 11), "normalized": "0 0 1 3-12/4 *"}, id="month-name-n/s"),
    # Day of week: names any case, Sunday as 0 or 7, ranges closing on Sunday.
    pytest.param("0 0 * * 0", {"dows": (0,)}, id="sunday-0"),
    pytest.param("0 0 * * 7", {"dows": (0,), "normalized": "0 0 * * 7"}, id="sunday-7"),
    pytest.param("0 0 * * 0,7", {"dows": (0,)}, id="sunday-both"),
    pytest.param("0 0 * * 5-7", {"dows": (0, 5, 6), "normalized": "0 0 * * 5-7"}, id="range-to-7"),
    pytest.param("0 0 * * FRI-SUN", {"dows": (0, 5, 6), "normalized": "0 0 * * 5-7"}, id="fri-sun"),
    pytest.param("0 0 * * 5-0", {"dows": (0, 5, 6), "normalized": "0 0 * * 5-7"}, id="range-to-0"),
    pytest.param("0 0 * * sun", {"dows": (0,), "normalized": "0 0 * * 0"}, id="sun-lower"),
    pytest.param("0 0 * * Mon-Fri", {"dows": (1, 2, 3, 4, 5), "normalized": "0 0 * * 1-5"}, id="mon-fri"),
    pytest.param("0 0 * * mon,WED,Fri", {"dows": (1, 3, 5)}, id="dow-name-list"),
    pytest.param("0 0 * * */2", {"dows": (0, 2, 4, 6)}, id="dow-star-step"),
    pytest.param("0 0 * * 1/2", {"dows": (0, 1, 3, 5), "normalized": "0 0 * * 1-7/2"}, id="dow-n/s-hits-7"),
    pytest.param("0 9 * * 1-5/2", {"dows": (1, 3, 5)}, id="dow-range-step"),
    pytest.param("0 0 * * 0-7", {"dows": DOWS}, id="dow-0-7"),
    # Day rule: AND if either day field starts with "*", else OR.
    pytest.param("0 0 13 * 5", {"day_and": False}, id="both-days-restricted-or"),
    pytest.param("0 16 */2 * sat", {"day_and": True, "doms": tuple(range(1, 32, 2))}, id="dom-star-and"),
    pytest.param("0 0 13 * */2", {"day_and": True}, id="dow-star-and"),
    pytest.param("0 0 1 * *", {"day_and": True}, id="dow-star-only"),
    pytest.param("0 0 31 2 0", {"day_and": False, "doms": (31,), "dows": (0,)}, id="feb-31-or-sunday"),
    pytest.param("0 12 1-31 * MON", {"day_and": False, "doms": DOMS, "dows": (1,)}, id="dom-range-or"),
    # Fixed-time vs wildcard.
    pytest.param("30 2 * * *", {"fixed_time": True}, id="fixed"),
    pytest.param("0,30 2 * * *", {"fixed_time": True}, id="fixed-list"),
    pytest.param("*/5 9 * * *", {"fixed_time": False}, id="minute-star-step"),
    pytest.param("5 * * * *", {"fixed_time": False}, id="hour-star"),
    # Whitespace.
    pytest.param("  0\t9  *\t* *  ", {"normalized": "0 9 * * *", "fixed_time": True}, id="whitespace"),
    # Macros: each one, any case.
    pytest.param("@yearly", {"normalized": "0 0 1 1 *", "fixed_time": True}, id="@yearly"),
    pytest.param("@annually", {"normalized": "0 0 1 1 *"}, id="@annually"),
    pytest.param("@monthly", {"normalized": "0 0 1 * *"}, id="@monthly"),
    pytest.param("@weekly", {"normalized": "0 0 * * 0", "dows": (0,), "day_and": True}, id="@weekly"),
    pytest.param("@daily", {"normalized": "0 0 * * *", "fixed_time": True}, id="@daily"),
    pytest.param("@midnight", {"normalized": "0 0 * * *"}, id="@midnight"),
    pytest.param("@hourly", {"normalized": "0 * * * *", "fixed_time": False}, id="@hourly"),
    pytest.param("@DAILY", {"normalized": "0 0 * * *"}, id="@DAILY-upper"),
    pytest.param(" @Hourly ", {"normalized": "0 * * * *"}, id="@hourly-mixed-padded"),
]


@pytest.mark.parametrize(("expr", "expected"), VALID)
def test_parse_compiles_value_sets(expr, expected):
    """Each accepted grammar form compiles to the documented sorted value sets, day rule and kind."""
    cron = parse_cron(expr)
    for attr, value in expected.items():
        assert getattr(cron, attr) == value, attr
    for attr in ("minutes", "hours", "doms", "months", "dows"):
        values = getattr(cron, attr)
        assert isinstance(values, tuple)
        assert list(values) == sorted(set(values))
    assert cron.source == expr


# (expression, field named in the error or None, fragments the message must contain).
INVALID = [
    pytest.param("*/0 * * * *", "minute", ["*/0", "at least 1"], id="step-zero"),
    pytest.param("5-2 * * * *", "minute", ["5-2", "backwards"], id="backwards-range"),
    pytest.param("60 * * * *", "minute", ["60", "0-59"], id="minute-60"),
    pytest.param("0 24 * * *", "hour", ["24", "0-23"], id="hour-24"),
    pytest.param("0 0 0 * *", "day-of-month", ["0", "1-31"], id="dom-0"),
    pytest.param("0 0 32 * *", "day-of-month", ["32", "1-31"], id="dom-32"),
    pytest.param("0 0 1 13 *", "month", ["13", "1-12"], id="month-13"),
    pytest.param("0 0 * * 8", "day-of-week", ["8", "0-7"], id="dow-8"),
    pytest.param("0 0 1 JANU *", "month", ["JANU"], id="month-name-too-long"),
    pytest.param("0 0 * * MONDAY", "day-of-week", ["MONDAY"], id="day-name-too-long"),
    pytest.param("0 0 1 * JAN", "day-of-week", ["JAN"], id="month-name-in-dow"),
    pytest.param("JAN * * * *", "minute", ["JAN"], id="name-in-minute"),
    pytest.param("*/x * * * *", "minute", ["x"], id="step-not-number"),
    pytest.param("1,,2 * * * *", "minute", ["1,,2"], id="empty-list-item"),
    pytest.param("0 0 L * *", "day-of-month", ["L"], id="L"),
    pytest.param("0 0 15W * *", "day-of-month", ["15W"], id="W"),
    pytest.param("0 0 * * 5#2", "day-of-week", ["5#2"], id="hash"),
    pytest.param("0 0 ? * *", "day-of-month", ["?"], id="question-mark"),
    pytest.param("0 0 * *", None, ["5 fields", "got 4", "0 0 * *"], id="4-fields"),
    pytest.param("0 0 0 * * *", None, ["5 fields", "got 6", "0 0 0 * * *"], id="6-fields"),
    pytest.param("", None, ["5 fields", "got 0"], id="empty"),
    pytest.param("   ", None, ["5 fields", "got 0"], id="blank"),
    pytest.param("@reboot", None, ["@reboot"], id="@reboot"),
    pytest.param("@fortnightly", None, ["@fortnightly", "unknown macro"], id="unknown-macro"),
    pytest.param("0 0 31 2 *", "day-of-month", ["31", "February", "never"], id="feb-31"),
    pytest.param("0 0 30 2 *", "day-of-month", ["30", "February", "never"], id="feb-30"),
    pytest.param("0 0 31 4,6,9,11 *", "day-of-month", ["31", "never"], id="31-in-30-day-months"),
    pytest.param("0 0 30,31 feb */7", "day-of-month", ["30,31", "never"], id="feb-30-31-and-dow-star"),
]


@pytest.mark.parametrize(("expr", "field", "fragments"), INVALID)
def test_parse_rejects_with_named_field(expr, field, fragments):
    """Bad expressions raise CronSyntaxError (a ValueError) naming the field and the offending text."""
    with pytest.raises(CronSyntaxError) as info:
        parse_cron(expr)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.field == field
    message = str(error)
    if field is not None:
        assert message.startswith(f"{field}: ")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("-1 * * * *", "minute: '-1' is missing a value (write N, N-M or */S)"),
        ("/5 * * * *", "minute: '/5' is missing a value (write N, N-M or */S)"),
        ("0 0 * * MON-", "day-of-week: 'MON-' is missing a value (write N, N-M or */S)"),
        ("1-2-3 * * * *", "minute: '1-2-3' is not a range: a range is N-M, with one '-'"),
        ("1-x/2 * * * *", "minute: 'x' in '1-x/2' is not a number"),
        ("x * * * *", "minute: 'x' is not a number"),
    ],
)
def test_every_parse_error_quotes_the_text_at_fault(expr, message):
    """Issue 15, item 15: these four named an empty string or a part of the term."""
    with pytest.raises(CronSyntaxError) as info:
        parse_cron(expr)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("expr", "same_as"),
    [
        ("@DAILY", "0 0 * * *"),
        ("@Hourly", "0 * * * *"),
        ("0\u00a09\u2003* * 1-5", "0 9 * * 1-5"),
        ("5/10 * * * *", "5-59/10 * * * *"),
    ],
)
def test_documented_leniency(expr, same_as):
    """What the README says kairos accepts beyond Debian's crontab: any-case macros, Unicode spaces, N/S."""
    assert parse_cron(expr).normalized == parse_cron(same_as).normalized


def test_parse_error_message_exact():
    """The documented example message is produced verbatim."""
    with pytest.raises(CronSyntaxError, match=r"^hour: 24 is out of range 0-23$"):
        parse_cron("0 24 * * *")


def test_parse_rejects_non_string():
    """A non-string expression is a CronSyntaxError, not a TypeError."""
    with pytest.raises(CronSyntaxError):
        parse_cron(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("0 9 * * 1-5", "At 09:00 on Monday to Friday"),
        ("0 9 * * MON-FRI", "At 09:00 on Monday to Friday"),
        ("@daily", "At 00:00 every day"),
        ("@hourly", "At the start of every hour"),
        ("@weekly", "At 00:00 on Sunday"),
        ("0 0 1 * *", "At 00:00 on the first day of every month"),
        ("0 0 29 2 *", "At 00:00 on February 29"),
        ("*/5 * * * *", "Every fifth minute of every hour"),
        ("0 0 * * FRI-SUN", "At 00:00 on Friday to Sunday"),
        ("0 12 * * 7", "At 12:00 on Sunday"),
        ("2-2/3 * * * *", "At minute 2 of every hour"),
        ("5/15 * * * *", "Every 15th minute from 5 to 59 of every hour"),
    ],
)
def test_explain(expr, text):
    """explain() describes the expression as kairos fires it, in plain English."""
    assert explain(expr) == text
