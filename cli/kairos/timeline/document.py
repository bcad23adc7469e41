"""The ``GET /v1/timeline`` answer as ``kairos timeline`` and ``kairos ui`` both take it: asked for with the
chart's bins, and cleaned before it is drawn.

The chart writes colour codes of its own, so nothing a task wrote (a name) may reach the terminal raw:
:func:`cleaned` passes every such text through :func:`kairos.output.clean`, as ``kairos list`` does.
May import :mod:`kairos.output` and :mod:`.layout`; no client, no argparse.
"""

from __future__ import annotations

from typing import Any

from kairos.output import clean
from kairos.timeline.layout import columns_for


def chart_query(width: int, query: dict[str, str] | None = None) -> dict[str, str]:
    """``query`` asking the daemon to count the planned fires in the cells of a chart ``width`` wide: the
    chart needs only how many fires each cell holds (a week of 1,000 tasks is 50,000 instants, not sent,
    printed and parsed). Give :func:`kairos.timeline.layout.layout` the same ``width``."""
    return {**(query or {}), "bins": str(columns_for(width))}


def cleaned(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every text a task or the daemon wrote made safe to print (see :func:`kairos.output.clean`)."""
    for task in doc.get("tasks") or []:
        task["id"] = clean(task["id"])
        if task.get("name") is not None:
            task["name"] = " ".join(clean(task["name"]).split())
    if doc.get("downtime_source"):
        doc["downtime_source"] = clean(doc["downtime_source"])
    return doc
