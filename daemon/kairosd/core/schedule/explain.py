"""Plain-English descriptions of cron expressions ("At 09:00 on Monday to Friday").

The wording comes from cronsim's explainer, fed our canonical form of the
expression (so names, macros and one-value ranges read the same way kairos
fires them). Pure: must not import anything that does I/O.
"""

from __future__ import annotations

from functools import lru_cache

from kairosd.core.schedule.cron import parse_cron


def explain(expr: str) -> str:
    return _explain_canonical(parse_cron(expr).normalized)


# Keyed by the canonical form, so the spellings of one schedule share an entry. Large enough for the
# distinct schedules of a big store: 4,096 entries keyed by the text thrashed on 10,000 distinct
# expressions (issue 28); an entry is ~0.2 KB, so a full cache is ~3 MB.
@lru_cache(maxsize=16_384)
def _explain_canonical(canonical: str) -> str:
    # On first use: only views need it, and cronsim is not needed to start (docs/performance.md).
    from cronsim.explain import Expression

    text = str(Expression(canonical.split()).explain())
    return text.replace(" through ", " to ")
