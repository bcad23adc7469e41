"""Deterministic jitter seeded from the task id (kairosd.core.schedule.jitter)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from kairosd.core.errors import InvalidTimeError
from kairosd.core.schedule.jitter import JitterPolicy, jitter_fraction, parse_jitter, planned_time

UTCZ = ZoneInfo("UTC")
HALF = "80000000"  # frac = 0x80000000 / 2**32 = 0.5
TOP = "ffffffff"  # frac = (2**32 - 1) / 2**32, just under 1
ZERO = "00000000"
SCHEDULED = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
CREATED = datetime(2026, 5, 1, 0, 0, tzinfo=UTC)
CLAUDE = parse_jitter("claude")
MAX10 = parse_jitter("max:10m")
NONE = parse_jitter("none")


def _delay(
    policy: JitterPolicy, task_id: str, period: timedelta | None, *, scheduled: datetime = SCHEDULED
) -> timedelta:
    """planned - scheduled for a recurring fire whose next scheduled time is scheduled + period."""
    following = None if period is None else scheduled + period
    planned = planned_time(
        policy, task_id, scheduled, recurring=True, following=following, created_at=CREATED, zone=UTCZ
    )
    return planned - scheduled


def _oneshot(
    policy: JitterPolicy,
    task_id: str,
    scheduled: datetime,
    *,
    created_at: datetime = CREATED,
    zone: ZoneInfo = UTCZ,
) -> datetime:
    return planned_time(policy, task_id, scheduled, recurring=False, following=None, created_at=created_at, zone=zone)


# --- parse_jitter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "cap", "spec"),
    [
        ("none", "none", timedelta(0), "none"),
        ("", "none", timedelta(0), "none"),
        ("off", "none", timedelta(0), "none"),
        ("0", "none", timedelta(0), "none"),
        ("claude", "claude", timedelta(0), "claude"),
        (" Claude ", "claude", timedelta(0), "claude"),
        ("max:90s", "max", timedelta(seconds=90), "max:1m30s"),
        ("max:10m", "max", timedelta(minutes=10), "max:10m"),
        ("MAX:1h30m", "max", timedelta(minutes=90), "max:1h30m"),
        ("max:1.5m", "max", timedelta(seconds=90), "max:1m30s"),
        ("max:1d", "max", timedelta(days=1), "max:1d"),
        ("max:24h", "max", timedelta(days=1), "max:1d"),
    ],
)
def test_parse_jitter_forms(text, kind, cap, spec):
    """parse_jitter accepts none/claude/max:DURATION (any case) and normalises the spec."""
    policy = parse_jitter(text)
    assert policy == JitterPolicy(kind, cap)
    assert policy.spec == spec


@pytest.mark.parametrize("spec", ["none", "claude", "max:1m30s", "max:10m", "max:1d"])
def test_parse_jitter_spec_round_trips(spec):
    """A normalised spec parses back to the same policy."""
    assert parse_jitter(parse_jitter(spec).spec).spec == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("maybe", "unknown jitter"),
        ("max", "unknown jitter"),
        ("max:", "empty duration"),
        ("max:abc", "not a duration"),
        ("max:0s", "longer than zero"),
        ("max:-5m", "durations must be positive"),
        ("max:2d", "1d limit"),
        ("max:86401s", "1d limit"),
    ],
)
def test_parse_jitter_rejects(text, message):
    """Unknown policies, bad durations and caps over a day are InvalidTimeErrors with a clear message."""
    with pytest.raises(InvalidTimeError, match=message):
        parse_jitter(text)


@pytest.mark.parametrize(
    ("text", "max_delay"),
    [("none", timedelta(0)), ("claude", timedelta(minutes=15)), ("max:90s", timedelta(seconds=90))],
)
def test_max_delay(text, max_delay):
    """max_delay is the latest any fire can move: 0, Claude's 15-minute cap, or the max: cap."""
    assert parse_jitter(text).max_delay == max_delay


# --- jitter_fraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "frac"),
    [
        (ZERO, 0.0),
        (HALF, 0.5),
        ("40000000", 0.25),
        (TOP, (2**32 - 1) / 2**32),
        ("80000000ffff", 0.5),  # only the first 8 characters count
        ("zzzzzzzz", 0.0),  # not hex
        ("", 0.0),
        ("-1234567", 0.0),  # int() would accept a sign; a negative fraction would fire early
        ("+1234567", 0.0),
        ("1_234567", 0.0),
        (" 1234567", 0.0),
    ],
)
def test_jitter_fraction(task_id, frac):
    """The fraction is int(id[:8], 16) / 2**32 for hex ids and 0 for anything else."""
    assert jitter_fraction(task_id) == frac


def test_jitter_fraction_top_is_close_to_but_below_one():
    """ffffffff gives a fraction just under 1, never 1 itself."""
    assert 0.9999999 < jitter_fraction(TOP) < 1


# --- planned_time: claude, recurring -----------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "period", "delay"),
    [
        (HALF, timedelta(hours=1), timedelta(minutes=3)),  # 0.5 * 10% * 60 min
        ("40000000", timedelta(hours=1), timedelta(seconds=90)),  # 0.25 * 10% * 60 min
        (HALF, timedelta(days=1), timedelta(minutes=15)),  # 0.5 * 10% * 24 h = 72 min, capped
        (HALF, timedelta(minutes=1), timedelta(seconds=3)),  # 0.5 * 10% * 60 s
        (HALF, timedelta(minutes=5), timedelta(seconds=15)),
        (ZERO, timedelta(hours=1), timedelta(0)),
    ],
)
def test_claude_recurring_exact(task_id, period, delay):
    """Claude recurring delay is min(frac * 10% * period, 15 min), computed from the scheduled time."""
    assert _delay(CLAUDE, task_id, period) == delay


@pytest.mark.parametrize(
    ("period", "bound"),
    [
        (timedelta(hours=1), timedelta(minutes=6)),
        (timedelta(minutes=1), timedelta(seconds=6)),
        (timedelta(minutes=5), timedelta(seconds=30)),
    ],
)
def test_claude_recurring_stays_below_ten_percent(period, bound):
    """Even for the largest id the delay stays strictly below 10% of the period."""
    delay = _delay(CLAUDE, TOP, period)
    assert bound - timedelta(milliseconds=1) <= delay < bound


def test_claude_recurring_daily_capped_at_15_minutes():
    """A daily task never fires more than 15 minutes late, whatever its id."""
    for task_id in (HALF, TOP, "20000000"):
        assert _delay(CLAUDE, task_id, timedelta(days=1)) <= timedelta(minutes=15)
    assert _delay(CLAUDE, TOP, timedelta(days=1)) == timedelta(minutes=15)
    assert _delay(CLAUDE, "20000000", timedelta(days=1)) == timedelta(minutes=15)  # 0.125 * 2.4 h = 18 min


def test_recurring_without_following_is_unchanged():
    """A recurring fire with no next scheduled time (no period) is not moved."""
    assert _delay(CLAUDE, HALF, None) == timedelta(0)
    assert _delay(MAX10, HALF, None) == timedelta(0)


def test_delay_is_whole_milliseconds():
    """Planned times are truncated to whole milliseconds."""
    delay = _delay(CLAUDE, "12345678", timedelta(hours=1))
    assert delay.microseconds % 1000 == 0
    # 0x12345678 / 2**32 * 0.1 * 3_600_000 ms = 25599.99... ms -> 25599 ms
    assert delay == timedelta(milliseconds=int(0x12345678 / 2**32 * 0.1 * 3_600_000))


# --- planned_time: claude, one-shot ------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheduled", "expected"),
    [
        (datetime(2026, 6, 1, 9, 0, tzinfo=UTC), datetime(2026, 6, 1, 8, 59, 15, tzinfo=UTC)),  # :00
        (datetime(2026, 6, 1, 9, 30, tzinfo=UTC), datetime(2026, 6, 1, 9, 29, 15, tzinfo=UTC)),  # :30
        (datetime(2026, 6, 1, 9, 17, tzinfo=UTC), datetime(2026, 6, 1, 9, 17, tzinfo=UTC)),  # :17
        (datetime(2026, 6, 1, 9, 45, tzinfo=UTC), datetime(2026, 6, 1, 9, 45, tzinfo=UTC)),  # :45
        (datetime(2026, 6, 1, 9, 0, 30, tzinfo=UTC), datetime(2026, 6, 1, 9, 0, 30, tzinfo=UTC)),  # :00:30
    ],
)
def test_claude_oneshot_half_hours_fire_early(scheduled, expected):
    """Claude one-shots at :00 or :30 fire frac * 90 s early (45 s for frac 0.5); others are unchanged."""
    assert _oneshot(CLAUDE, HALF, scheduled) == expected


def test_claude_oneshot_uses_local_minute():
    """The :00/:30 rule looks at the wall clock in the task's zone (Kolkata is +05:30)."""
    kolkata = ZoneInfo("Asia/Kolkata")
    at_1430_local = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    at_1445_local = datetime(2026, 6, 1, 9, 15, tzinfo=UTC)
    assert _oneshot(CLAUDE, HALF, at_1430_local, zone=kolkata) == at_1430_local - timedelta(seconds=45)
    assert _oneshot(CLAUDE, HALF, at_1445_local, zone=kolkata) == at_1445_local


def test_claude_oneshot_never_before_created_at():
    """The early lead is clipped so a one-shot never fires before the task was created."""
    created = SCHEDULED - timedelta(seconds=10)
    assert _oneshot(CLAUDE, HALF, SCHEDULED, created_at=created) == created
    assert _oneshot(CLAUDE, TOP, SCHEDULED, created_at=SCHEDULED) == SCHEDULED


def test_claude_oneshot_lead_below_90s():
    """Even the largest id moves a one-shot less than 90 s early."""
    lead = SCHEDULED - _oneshot(CLAUDE, TOP, SCHEDULED)
    assert timedelta(seconds=89) < lead < timedelta(seconds=90)


# --- planned_time: max:DURATION and none -------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "period", "delay"),
    [
        (HALF, timedelta(hours=1), timedelta(minutes=5)),  # 0.5 * 10m
        ("40000000", timedelta(hours=1), timedelta(seconds=150)),  # 0.25 * 10m
        (HALF, timedelta(days=1), timedelta(minutes=5)),  # no 15-minute cap; the cap is 10m
        (HALF, timedelta(minutes=5), timedelta(seconds=75)),  # half the period (2m30s) * 0.5
        (HALF, timedelta(minutes=1), timedelta(seconds=15)),  # half the period (30s) * 0.5
    ],
)
def test_max_recurring(task_id, period, delay):
    """max:D delays recurring fires by frac * min(D, period / 2)."""
    assert _delay(MAX10, task_id, period) == delay


def test_max_recurring_never_reaches_half_the_period():
    """With max:D a recurring fire stays inside the first half of its period, so runs cannot overlap."""
    assert _delay(MAX10, TOP, timedelta(minutes=5)) < timedelta(seconds=150)


def test_max_oneshot_fires_late():
    """max:D moves a one-shot frac * D late (at :00 too; only claude fires early)."""
    assert _oneshot(MAX10, HALF, SCHEDULED) == SCHEDULED + timedelta(minutes=5)


@pytest.mark.parametrize("recurring", [True, False])
def test_none_is_unchanged(recurring):
    """Policy none never moves a fire."""
    following = SCHEDULED + timedelta(hours=1) if recurring else None
    planned = planned_time(
        NONE, TOP, SCHEDULED, recurring=recurring, following=following, created_at=CREATED, zone=UTCZ
    )
    assert planned == SCHEDULED


def test_same_id_same_offset():
    """The offset depends only on the id and the schedule: the same inputs always give the same time."""
    for scheduled in (SCHEDULED, SCHEDULED + timedelta(hours=5), SCHEDULED + timedelta(days=40)):
        first = _delay(CLAUDE, "3a7f01c2", timedelta(hours=1), scheduled=scheduled)
        assert _delay(CLAUDE, "3a7f01c2", timedelta(hours=1), scheduled=scheduled) == first
        assert first == _delay(CLAUDE, "3a7f01c2", timedelta(hours=1))
    assert _delay(CLAUDE, "3a7f01c2", timedelta(hours=1)) != _delay(CLAUDE, "9a7f01c2", timedelta(hours=1))


def test_jitter_in_the_repeated_hour_of_a_fall_back_stays_after_its_slot():
    """The second pass of 02:00-03:00 in Europe/Berlin (fold=1): the period and the delay are real time.

    Aware arithmetic within one zone is wall-clock arithmetic and drops the fold, so 02:55 CEST to
    02:00 CET was a period of -55 minutes, and 02:00 CET plus a delay came out as 02:00 CEST: an hour early.
    """
    from itertools import islice, pairwise

    from kairosd.core.schedule.cron import parse_cron
    from kairosd.core.schedule.fires import iter_fires

    zone = ZoneInfo("Europe/Berlin")
    slots = list(islice(iter_fires(parse_cron("*/5 * * * *"), datetime(2026, 10, 25, 0, 50, tzinfo=UTC), zone), 4))
    assert [s.astimezone(UTC).strftime("%H:%M") for s in slots] == ["00:55", "01:00", "01:05", "01:10"]
    policy = parse_jitter("max:1m")
    for scheduled, following in pairwise(slots):
        planned = planned_time(
            policy, "7a1e0003", scheduled, recurring=True, following=following, created_at=scheduled, zone=zone
        )
        delay = planned.astimezone(UTC) - scheduled.astimezone(UTC)
        assert timedelta(0) < delay <= timedelta(minutes=1), (scheduled, planned)


def test_a_jitter_spelling_is_parsed_once_and_a_bad_one_refused_every_time():
    """A catch-up pass asks for the policy of each of 10,000 tasks: the same spelling gives the same
    (frozen) policy without parsing it again; a bad spelling is refused each time, never remembered."""
    from kairosd.core.errors import InvalidTimeError
    from kairosd.core.schedule.jitter import parse_jitter

    assert parse_jitter("max:90s") is parse_jitter("max:90s")
    assert parse_jitter("claude") is parse_jitter("claude")
    for _ in range(2):
        with pytest.raises(InvalidTimeError):
            parse_jitter("max:2d")
