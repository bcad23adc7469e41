"""Plain-English descriptions of cron expressions ("At 09:00 on Monday to Friday").

The wording comes from cronsim's explainer, fed our canonical form of the
expression (so names, macros and one-value ranges read the same way kairos
fires them). Pure: must not import anything that does I/O.
"""

from __future__ import annotations

from functools import lru_cache

from kairosd.core.schedule.cron import parse_cron


@lru_cache(maxsize=4096)
def explain(expr: str) -> str:
    # On first use: only views need it, and cronsim is not needed to start (docs/performance.md).
    from cronsim.explain import Expression

    canonical = parse_cron(expr).normalized
    text = str(Expression(canonical.split()).explain())
    return text.replace(" through ", " to ")
