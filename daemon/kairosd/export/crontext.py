"""A task's cron expression spelled for engines that read standard 5-field cron (Kubernetes, GitHub).

Numbers only (no names, no ``@daily``), a full field as ``*``. cron's day rule
is kept where it can be: a day field that matches every day becomes ``*``, so
the other field alone decides, under both engines' rules. When both day fields
are restricted, kairos (Vixie cron) reads ``*/2`` as a field starting with
``*`` and ANDs the two, while the standard reading (and Kubernetes' parser,
which drops the star once there is a step) ORs them: such a task is refused.

Pure: no I/O.
"""

from __future__ import annotations

from kairosd.core.schedule.cron import CronExpr
from kairosd.export.common import Refused, runs, steady_step


def standard_cron(expr: CronExpr, task_id: str, engine: str) -> str:
    all_doms = len(expr.doms) == 31
    all_dows = len(expr.dows) == 7
    if expr.day_and and not all_doms and not all_dows:
        raise Refused(
            f"task {task_id}: {expr.source!r} restricts both day fields and one starts with '*', so kairos "
            f"requires both to match; {engine} reads the two fields as either matching"
        )
    fields = [
        _field(expr.minutes, 0, 59),
        _field(expr.hours, 0, 23),
        "*" if all_doms else _field(expr.doms, 1, 31, star_step=False),
        _field(expr.months, 1, 12),
        "*" if all_dows else _field(expr.dows, 0, 6, star_step=False),
    ]
    return " ".join(fields)


def _field(values: tuple[int, ...], low: int, high: int, *, star_step: bool = True) -> str:
    """One field; a day field never gets ``*/N``, which engines disagree on (see above)."""
    if len(values) == high - low + 1:
        return "*"
    step = steady_step(values, high)
    if step is not None:
        return f"*/{step}" if values[0] == low and star_step else f"{values[0]}-{high}/{step}"
    return ",".join(f"{a}-{b}" if b - a >= 2 else ",".join(str(v) for v in range(a, b + 1)) for a, b in runs(values))
